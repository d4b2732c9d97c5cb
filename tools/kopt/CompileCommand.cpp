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
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "ProgressPrinter.h"
#include "TuneOptions.h"
#include "TuneReport.h"

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

/// Writes the tuned graph as the runtime module `line.emitModule`, with the
/// plans the autotuner chose (`outcomes`).
static int writeRuntimeModule(ModuleOp module, const Autotuner &tuner,
                              llvm::ArrayRef<GroupOutcome> outcomes,
                              const TuneCommandLine &line, llvm::StringRef path,
                              const ::kopt::runtime::ProtectedFiles &protect,
                              llvm::raw_ostream &os) {
  namespace rt = ::kopt::runtime;
  const rt::DeviceFingerprint *fingerprint = tuner.getFingerprint();
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
  // The module is made from a copy whose every compute op is in a group.
  OwningOpRef<ModuleOp> copy(module.clone());
  if (llvm::Error error = prepareRuntimeModuleGraph(*copy))
    return fail("cannot emit a runtime module: " +
                llvm::toString(std::move(error)));
  auto emitted = emitRuntimeModule(*copy, options, outcomes, os);
  if (!emitted)
    return fail("cannot emit a runtime module: " +
                llvm::toString(emitted.takeError()));
  if (rt::Status status =
          rt::saveRuntimeModule(*emitted, line.emitModule, protect);
      !status.isOk())
    return fail(status.message());
  os << "module: " << emitted->buffers.size() << " buffers, "
     << emitted->plans.size() << " plans, " << emitted->steps.size()
     << " steps\n";
  return 0;
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
  if (failed(prepareModelGraph(**module)))
    return 1;

  // The budget counts from the command's start.
  ProgressPrinter::Options progressOptions;
  progressOptions.start = start;
  if (line->budgetSeconds > 0) {
    line->autotune.deadline =
        start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(line->budgetSeconds));
    progressOptions.deadline = line->autotune.deadline;
  }
  for (auto func : (*module)->getOps<func::FuncOp>())
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
  std::vector<ReportRow> rows;
  auto groupStart = std::chrono::steady_clock::now();
  auto outcomes = autotuneModule(**module, **tuner, [&](const GroupOutcome &o) {
    auto now = std::chrono::steady_clock::now();
    progress.onGroupDone(
        &o, std::chrono::duration<double>(now - groupStart).count());
    groupStart = now;
  });
  progress.finish();
  if (!outcomes)
    return fail(llvm::toString(outcomes.takeError()));
  unsigned misses = 0;
  for (const GroupOutcome &outcome : *outcomes) {
    misses += outcome.source == GroupOutcome::Source::Baseline;
    rows.push_back({path, outcome});
  }
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

  if (!line->emitModule.empty())
    if (int status = writeRuntimeModule(**module, **tuner, *outcomes, *line,
                                        path, protect, reportStream))
      return status;

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
