//===- WarmCommand.cpp - kopt warm ------------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt warm FILES|DIRS --db DB`: offline cache warming. Plans the fusion
// groups of every graph, keeps each distinct task key once (the first group
// that has it), and tunes those that miss the database within the budget,
// printing its progress (ProgressPrinter.h). The worker threads take the
// tasks largest first (by the roofline time of their baseline, GroupCost.h),
// so that the longest tunings do not start last; the report keeps the order
// of the graphs. Every attempt is stored as soon as it is measured and every
// winner as soon as it is chosen, each in its own transaction, so a killed
// run loses only the candidate in flight and the next run continues where
// it stopped (stored tasks are hits, and stored attempts are not measured
// again).
//
// With `--replay=FILE`, a task that misses takes its entries from FILE (as
// `kopt db export` writes it) instead of being tuned, again one transaction
// per task, and no GPU is used: the test seam for this loop, and a way to
// distribute results tuned elsewhere.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "ProgressPrinter.h"
#include "TuneOptions.h"
#include "TuneReport.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Analysis/GroupCost.h"
#include "kopt/Autotune/Autotuner.h"
#include "kopt/Codegen/KernelTask.h"
#include "kopt/InitAll.h"
#include "kopt/Support/ModelFiles.h"
#include "kopt/Support/ModelLoader.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <thread>

using namespace mlir;
using namespace mlir::kopt;

namespace {
/// One parsed graph, kept alive while its groups are tuned.
struct Graph {
  std::string path;
  std::unique_ptr<MLIRContext> context;
  std::unique_ptr<llvm::SourceMgr> sourceMgr;
  std::unique_ptr<SourceMgrDiagnosticHandler> handler;
  OwningOpRef<ModuleOp> module;
};

/// A distinct task: the first group that has its key.
struct WarmTask {
  Graph *graph;
  func::FuncOp group;
  std::string key;
  /// The roofline time of its baseline, in seconds: how long it is expected
  /// to tune, relative to the others.
  double expectedSeconds = 0;
};

/// The indices of `tasks` in the order the workers take them: the largest
/// expected cost first, ties in the order of the graphs.
std::vector<size_t> orderLargestFirst(const std::vector<WarmTask> &tasks) {
  std::vector<size_t> order(tasks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tasks[a].expectedSeconds > tasks[b].expectedSeconds;
  });
  return order;
}

} // namespace

int mlir::kopt::runWarmCommand() {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  auto line = getWarmCommandLine();
  if (!line) {
    llvm::WithColor::error(llvm::errs(), "kopt")
        << llvm::toString(line.takeError()) << "\n";
    return 2;
  }
  auto files = collectModelFiles(line->inputs);
  if (!files) {
    llvm::WithColor::error(llvm::errs(), "kopt")
        << llvm::toString(files.takeError()) << "\n";
    return 1;
  }
  DialectRegistry registry;
  registerAllDialects(registry);

  // Every graph's groups; each key once.
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<WarmTask> tasks;
  std::set<std::string> seen;
  unsigned groupCount = 0, badFiles = 0;
  for (const std::string &path : *files) {
    auto graph = std::make_unique<Graph>();
    graph->path = path;
    graph->context = std::make_unique<MLIRContext>(registry);
    graph->context->printOpOnDiagnostic(false);
    graph->sourceMgr = std::make_unique<llvm::SourceMgr>();
    graph->handler = std::make_unique<SourceMgrDiagnosticHandler>(
        *graph->sourceMgr, graph->context.get(), llvm::errs());
    auto module = loadModelGraph(path, *graph->context, *graph->sourceMgr);
    if (!module) {
      llvm::WithColor::error(llvm::errs(), "kopt")
          << llvm::toString(module.takeError()) << "\n";
      ++badFiles;
      continue;
    }
    graph->module = std::move(*module);
    if (failed(prepareModelGraph(*graph->module))) {
      ++badFiles;
      continue;
    }
    for (auto func : graph->module->getOps<func::FuncOp>()) {
      if (!func->hasAttr(kFusionGroupAttrName))
        continue;
      ++groupCount;
      auto task = buildKernelTask(func);
      if (!task) {
        llvm::consumeError(task.takeError());
        continue;
      }
      if (seen.insert(task->key).second)
        tasks.push_back(
            {graph.get(), func, task->key,
             computeGroupCost(func, DeviceRoofline::h200()).secondsUnfused});
    }
    graphs.push_back(std::move(graph));
  }

  // The budget counts from the command's start.
  ProgressPrinter::Options progressOptions;
  progressOptions.prefix = "kopt warm";
  progressOptions.start = start;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (line->budgetSeconds > 0)
    deadline =
        start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(line->budgetSeconds));
  line->autotune.deadline = deadline;
  progressOptions.deadline = deadline;
  progressOptions.total = unsigned(tasks.size());
  progressOptions.enabled = line->progress;
  progressOptions.live = llvm::sys::Process::StandardErrIsDisplayed();
  ProgressPrinter progress(llvm::errs(), progressOptions);
  line->autotune.onProgress = [&](const TuneProgress &event) {
    progress.onProgress(event);
  };
  auto tuner = Autotuner::create(line->autotune);
  if (!tuner) {
    llvm::WithColor::error(llvm::errs(), "kopt")
        << llvm::toString(tuner.takeError()) << "\n";
    return 1;
  }
  llvm::errs() << "kopt warm: " << files->size() << " graphs, " << groupCount
               << " groups, " << tasks.size() << " distinct tasks; "
               << (*tuner)->describeTarget() << "\n";
  if (!line->autotune.replayPath.empty())
    llvm::errs() << "kopt warm: tasks that miss are stored from '"
                 << line->autotune.replayPath
                 << "' when it has them, and are not tuned\n";
  else if (line->autotune.mode == TuneMode::Enqueue)
    llvm::errs() << "kopt warm: tasks that miss are queued for GPU workers "
                    "('kopt serve-worker'), not tuned here\n";
  else if (!(*tuner)->hasDevice())
    llvm::errs() << "kopt warm: no GPU: nothing can be tuned here; missing "
                    "tasks are listed as missed\n";

  // One thread per worker (GPU): the autotuner serializes everything but
  // the evaluations, which overlap, one per device.
  unsigned threads = std::min<unsigned>((*tuner)->getWorkerCount(),
                                        std::max<size_t>(1, tasks.size()));
  if (threads > 1)
    llvm::errs() << "kopt warm: " << threads << " workers, one per GPU\n";
  // A box with two GPU models: each task is stored for the one it ran on.
  std::set<std::string> kinds;
  std::string kindList;
  for (const auto &fingerprint : (*tuner)->getDeviceFingerprints())
    if (kinds.insert(fingerprint.hash()).second)
      kindList += (kinds.size() > 1 ? ", " : "") +
                  fingerprint.computeCapability + " (fingerprint " +
                  fingerprint.hash() + ")";
  if (kinds.size() > 1)
    llvm::errs() << "kopt warm: " << kinds.size()
                 << " kinds of GPU: " << kindList
                 << "; each task is tuned and stored for the GPU it runs on\n";
  progress.setThreads(threads);
  std::vector<std::optional<ReportRow>> results(tasks.size());
  std::vector<bool> startedTasks(tasks.size());
  std::mutex progressMutex;
  std::vector<size_t> order = orderLargestFirst(tasks);
  std::atomic<size_t> next{0};
  unsigned failures = 0;
  auto work = [&] {
    while (true) {
      size_t index;
      {
        std::lock_guard<std::mutex> lock(progressMutex);
        if (deadline && std::chrono::steady_clock::now() >= *deadline)
          return;
        if (next >= order.size())
          return;
        index = order[next++];
        startedTasks[index] = true;
      }
      WarmTask &task = tasks[index];
      auto taskStart = std::chrono::steady_clock::now();
      auto outcome = (*tuner)->processGroup(task.group);
      double taskSeconds = std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - taskStart)
                               .count();
      std::lock_guard<std::mutex> lock(progressMutex);
      if (!outcome) {
        ++failures;
        progress.printLine("kopt warm: " + task.graph->path + ": @" +
                           task.group.getSymName().str() + ": " +
                           llvm::toString(outcome.takeError()));
        progress.onGroupDone(nullptr, taskSeconds);
        continue;
      }
      if (!outcome->warning.empty())
        progress.printLine("kopt warm: warning: " + task.graph->path + ": " +
                           outcome->warning);
      if (outcome->tuningFailed) {
        ++failures;
        // The progress line says it otherwise.
        if (!line->progress)
          progress.printLine("kopt warm: " + task.graph->path + ": @" +
                             outcome->function + ": " + outcome->note);
      }
      progress.onGroupDone(&*outcome, taskSeconds);
      // The report needs no plans; a warm run may see many groups.
      outcome->chosen.reset();
      results[index] = ReportRow{task.graph->path, std::move(*outcome)};
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i)
    pool.emplace_back(work);
  work();
  for (std::thread &thread : pool)
    thread.join();
  progress.finish();
  // In the order of the graphs, whatever order the tasks finished in.
  std::vector<ReportRow> rows;
  for (std::optional<ReportRow> &row : results)
    if (row)
      rows.push_back(std::move(*row));
  std::vector<NotStartedTask> notStarted;
  for (size_t i = 0; i < tasks.size(); ++i)
    if (!startedTasks[i])
      notStarted.push_back({tasks[i].graph->path,
                            tasks[i].group.getSymName().str(), tasks[i].key});

  std::string target = (*tuner)->describeTarget();
  if (line->jsonReport)
    llvm::outs() << llvm::formatv(
        "{0:2}\n", toJsonReport(rows, target, elapsed(), notStarted));
  else
    printTuneReport(llvm::outs(), rows, target, elapsed(), notStarted);
  if (failures || badFiles)
    llvm::outs() << failures << " tasks failed, " << badFiles
                 << " graphs could not be read\n";
  return failures || badFiles ? 1 : 0;
}
