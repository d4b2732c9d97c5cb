//===- CompileCommand.cpp - kopt compile ------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt compile FILE -o OUT.mlir --db DB`: parse, plan and outline fusion
// groups, run the autotuner over them (docs/Autotune.md) within the
// budget, printing its progress on stderr, write the rewritten graph and
// print the report (to stdout, or to stderr when the graph goes to stdout).
//
// A graph with a dynamic batch goes through all of that once per batch size
// of `--tune-shapes` (batch 1 by default), each time on a copy specialised
// to that size (kopt-specialize-batch); the module joins the programs of
// every size, and the rewritten graph holds every size's functions, named
// with a `_batch<N>` suffix.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "ProgressPrinter.h"
#include "TuneOptions.h"
#include "TuneReport.h"

#include "kopt/Analysis/BatchIndependence.h"
#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Autotune/Autotuner.h"
#include "kopt/Autotune/ModuleEmitter.h"
#include "kopt/Codegen/RuntimeStatus.h"
#include "kopt/InitAll.h"
#include "kopt/Runtime/OutputFile.h"
#include "kopt/Support/ModelLoader.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_os_ostream.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;
using namespace mlir::kopt;

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "kopt") << message << "\n";
  return 1;
}

/// The tuned graph as a runtime module, with the plans the autotuner chose
/// (`outcomes`); notes go to `os`.
static llvm::Expected<::kopt::runtime::RuntimeModule>
emitModule(ModuleOp module, const ModuleEmitOptions &options,
           llvm::ArrayRef<GroupOutcome> outcomes, llvm::raw_ostream &os) {
  // The module is made from a copy whose every compute op is in a group.
  OwningOpRef<ModuleOp> copy(module.clone());
  if (llvm::Error error = prepareRuntimeModuleGraph(*copy))
    return std::move(error);
  return emitRuntimeModule(*copy, options, outcomes, os);
}

/// How `line` asks for modules to be emitted; says so on `os`.
static ModuleEmitOptions getEmitOptions(const Autotuner &tuner,
                                        const TuneCommandLine &line,
                                        llvm::StringRef path,
                                        llvm::raw_ostream &os) {
  const ::kopt::runtime::DeviceFingerprint *fingerprint =
      tuner.getFingerprint();
  ModuleEmitOptions options;
  options.sourcePath = path.str();
  options.byReference = line.moduleByReference;
  options.arch = line.moduleArch;
  if (options.arch.empty() && fingerprint)
    options.arch = fingerprint->computeCapability;
  if (options.arch == "none")
    options.arch.clear();
  os << "module: writing '" << line.emitModule << "'"
     << (options.arch.empty() ? " (sources only)"
                              : " (binaries for " + options.arch + ")")
     << "\n";
  return options;
}

/// Saves `module` to `line.emitModule` and says what it holds.
static int saveModule(const ::kopt::runtime::RuntimeModule &module,
                      const TuneCommandLine &line,
                      const ::kopt::runtime::ProtectedFiles &protect,
                      llvm::raw_ostream &os) {
  if (::kopt::runtime::Status status =
          ::kopt::runtime::saveRuntimeModule(module, line.emitModule, protect);
      !status.isOk())
    return fail(status.message());
  for (const ::kopt::runtime::ModuleProgram *program : module.getPrograms()) {
    if (module.dynamicBatch)
      os << "module: batch " << program->batch << ": ";
    else
      os << "module: ";
    os << program->buffers.size() << " buffers, " << program->plans.size()
       << " plans, " << program->steps.size() << " steps\n";
  }
  return 0;
}

/// One batch size's copy of a graph with a dynamic batch.
struct BatchGraph {
  int64_t batch = 0;
  OwningOpRef<ModuleOp> module;
  std::vector<GroupOutcome> outcomes;
};

/// Copies of `module` specialised to each size of `sizes`, their fusion
/// groups planned.
static llvm::Expected<std::vector<BatchGraph>>
specializeBatchSizes(ModuleOp module, llvm::ArrayRef<int64_t> sizes) {
  std::vector<BatchGraph> graphs;
  for (int64_t size : sizes) {
    BatchGraph graph;
    graph.batch = size;
    graph.module = module.clone();
    PassManager pm(module.getContext());
    SpecializeBatchPassOptions options;
    options.batch = size;
    pm.addPass(createSpecializeBatchPass(options));
    if (failed(pm.run(*graph.module)))
      return llvm::createStringError("specialising the batch to " +
                                     std::to_string(size) + " failed");
    if (failed(prepareModelGraph(*graph.module)))
      return llvm::createStringError("planning the fusion groups at batch " +
                                     std::to_string(size) + " failed");
    graphs.push_back(std::move(graph));
  }
  return graphs;
}

/// The runtime module of every batch size's tuned graph in `graphs`, joined.
static llvm::Expected<::kopt::runtime::RuntimeModule>
emitBatchModule(std::vector<BatchGraph> &graphs, const BatchAnalysis &batch,
                const ModuleEmitOptions &options, llvm::raw_ostream &os) {
  std::vector<BatchProgram> programs;
  for (BatchGraph &graph : graphs) {
    os << "module: batch " << graph.batch << ":\n";
    auto program = emitModule(*graph.module, options, graph.outcomes, os);
    if (!program)
      return program.takeError();
    programs.push_back({graph.batch, std::move(*program)});
  }
  return joinBatchPrograms(std::move(programs), batch);
}

/// The rewritten graph of every batch size in one module: each size's
/// functions renamed with the suffix `_batch<N>`.
static OwningOpRef<ModuleOp> mergeBatchGraphs(std::vector<BatchGraph> &graphs,
                                              MLIRContext &context) {
  OwningOpRef<ModuleOp> merged = ModuleOp::create(UnknownLoc::get(&context));
  for (BatchGraph &graph : graphs) {
    SymbolTable symbols(*graph.module);
    std::string suffix = "_batch" + std::to_string(graph.batch);
    for (auto func :
         llvm::make_early_inc_range(graph.module->getOps<func::FuncOp>()))
      if (failed(symbols.rename(func, (func.getSymName() + suffix).str())))
        func.emitWarning("kopt: could not rename the function for batch " +
                         std::to_string(graph.batch));
    for (Operation &op :
         llvm::make_early_inc_range(graph.module->getBody()->getOperations()))
      op.moveBefore(merged->getBody(), merged->getBody()->end());
  }
  return merged;
}

int mlir::kopt::runCompileCommand() {
  auto start = std::chrono::steady_clock::now();
  auto line = getCompileCommandLine();
  if (!line) {
    llvm::WithColor::error(llvm::errs(), "kopt")
        << llvm::toString(line.takeError()) << "\n";
    return 2;
  }
  const std::string &path = line->inputs.front();
  // Refused before any tuning: an output that would overwrite the input or
  // the kernel database.
  ::kopt::runtime::ProtectedFiles protect;
  protect.addInput(path);
  protect.addDatabase(line->autotune.databasePath);
  for (const std::string &output : {line->output, line->emitModule})
    if (!output.empty())
      if (::kopt::runtime::Status status = protect.check(output);
          !status.isOk())
        return fail(status.message());
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, llvm::errs());
  auto module = loadModelGraph(path, context, sourceMgr);
  if (!module)
    return fail(llvm::toString(module.takeError()));

  // A dynamic batch: the entry's arguments have dynamic shapes.
  std::optional<BatchAnalysis> batch;
  if (auto entry = findEntryFunction(**module); !entry) {
    llvm::consumeError(entry.takeError());
  } else if (hasDynamicShape(*entry)) {
    if (containsTosa(**module)) {
      PassManager pm(&context);
      addTosaLoweringPasses(pm);
      if (failed(pm.run(**module)))
        return 1;
      entry = findEntryFunction(**module);
      if (!entry)
        return fail(llvm::toString(entry.takeError()));
    }
    auto analysis = analyzeBatch(*entry);
    if (!analysis)
      return fail("@" + entry->getSymName() + ": " +
                  llvm::toString(analysis.takeError()));
    batch = std::move(*analysis);
  }
  if (!batch && !line->tuneShapes.empty())
    return fail("--tune-shapes: the graph has no dynamic batch (no argument "
                "of its entry function has a dynamic dimension)");
  std::vector<int64_t> sizes = line->tuneShapes;
  if (sizes.empty())
    sizes = {1};
  std::vector<BatchGraph> graphs;
  if (batch) {
    auto specialised = specializeBatchSizes(**module, sizes);
    if (!specialised)
      return fail(llvm::toString(specialised.takeError()));
    graphs = std::move(*specialised);
  } else if (failed(prepareModelGraph(**module))) {
    return 1;
  }
  // The graphs to tune: each batch size's, else the one.
  std::vector<std::pair<ModuleOp, std::string>> tuned;
  for (BatchGraph &graph : graphs)
    tuned.emplace_back(*graph.module,
                       path + " [batch=" + std::to_string(graph.batch) + "]");
  if (!batch)
    tuned.emplace_back(**module, path);

  // The budget counts from the command's start.
  ProgressPrinter::Options progressOptions;
  progressOptions.start = start;
  if (line->budgetSeconds > 0) {
    line->autotune.deadline =
        start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(line->budgetSeconds));
    progressOptions.deadline = line->autotune.deadline;
  }
  for (auto &[graph, label] : tuned)
    for (auto func : graph.getOps<func::FuncOp>())
      progressOptions.total += func->hasAttr(kFusionGroupAttrName);
  progressOptions.enabled = line->progress;
  progressOptions.live = llvm::sys::Process::StandardErrIsDisplayed();
  ProgressPrinter progress(llvm::errs(), progressOptions);
  line->autotune.onProgress = [&](const TuneProgress &event) {
    progress.onProgress(event);
  };
  auto tuner = Autotuner::create(line->autotune);
  if (!tuner)
    return fail(llvm::toString(tuner.takeError()));
  // The report goes where the graph does not.
  bool graphToStdout = line->output == "-";
  llvm::raw_ostream &reportStream = graphToStdout ? llvm::errs() : llvm::outs();
  if (batch) {
    std::string list;
    for (int64_t size : sizes)
      list += (list.empty() ? "" : ", ") + std::to_string(size);
    reportStream << "dynamic batch: specialised for batch " << list << "; "
                 << (batch->independent
                         ? "samples are independent: any batch size runs, as "
                           "chunks of these"
                         : "samples not proven independent (" + batch->reason +
                               "): only these sizes run")
                 << "\n";
  }
  std::vector<ReportRow> rows;
  std::vector<GroupOutcome> outcomes;
  auto groupStart = std::chrono::steady_clock::now();
  for (auto [index, entry] : llvm::enumerate(tuned)) {
    auto &[graph, label] = entry;
    auto graphOutcomes =
        autotuneModule(graph, **tuner, [&](const GroupOutcome &o) {
          auto now = std::chrono::steady_clock::now();
          progress.onGroupDone(
              &o, std::chrono::duration<double>(now - groupStart).count());
          groupStart = now;
        });
    if (!graphOutcomes) {
      progress.finish();
      return fail(llvm::toString(graphOutcomes.takeError()));
    }
    for (const GroupOutcome &outcome : *graphOutcomes)
      rows.push_back({label, outcome});
    if (batch)
      graphs[index].outcomes = std::move(*graphOutcomes);
    else
      outcomes = std::move(*graphOutcomes);
  }
  progress.finish();
  unsigned misses = 0;
  for (const ReportRow &row : rows)
    misses += row.outcome.source == GroupOutcome::Source::Baseline;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::string target = (*tuner)->describeTarget();
  if (line->jsonReport)
    reportStream << llvm::formatv("{0:2}\n",
                                  toJsonReport(rows, target, seconds));
  else
    printTuneReport(reportStream, rows, target, seconds);
  reportStream.flush();

  if (line->requireCacheHit && misses)
    return fail(llvm::Twine(misses) + " of " + llvm::Twine(rows.size()) +
                " groups missed the kernel database and --require-cache-hit "
                "is set; nothing was written");

  if (!line->emitModule.empty()) {
    ModuleEmitOptions options =
        getEmitOptions(**tuner, *line, path, reportStream);
    auto emitted = batch
                       ? emitBatchModule(graphs, *batch, options, reportStream)
                       : emitModule(**module, options, outcomes, reportStream);
    if (!emitted)
      return fail("cannot emit a runtime module: " +
                  llvm::toString(emitted.takeError()));
    if (int status = saveModule(*emitted, *line, protect, reportStream))
      return status;
  }
  if (batch)
    *module = mergeBatchGraphs(graphs, context);

  // Standard output may hold the report's lines already.
  llvm::outs().flush();
  auto output = ::kopt::runtime::OutputFile::open(line->output, protect);
  if (!output)
    return fail(output.status().message());
  {
    llvm::raw_os_ostream os((*output)->stream());
    (*module)->print(os);
    os << "\n";
  }
  if (::kopt::runtime::Status status = (*output)->commit(); !status.isOk())
    return fail(status.message());
  return 0;
}
