//===- TuneOptions.cpp - Options of kopt compile and kopt warm --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "TuneOptions.h"

#include "Commands.h"

#include "kopt/Runtime/KernelDatabase.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"

using namespace mlir;
using namespace mlir::kopt;
namespace cl = llvm::cl;

static cl::SubCommand compileCommand(
    "compile", "Plan fusion groups, tune them (or take them from the kernel "
               "database) and write the rewritten graph");
static cl::SubCommand warmCommand(
    "warm", "Tune the distinct fusion groups of many graphs into the kernel "
            "database (offline cache warming)");

// compile
static cl::opt<std::string> compileInput(cl::Positional, cl::Required,
                                         cl::desc("<model.mlir>"),
                                         cl::sub(compileCommand));
static cl::opt<std::string>
    outputFile("o", cl::desc("Write the rewritten graph here ('-': stdout)"),
               cl::value_desc("file"), cl::init("-"), cl::sub(compileCommand));
static cl::opt<bool> requireCacheHit(
    "require-cache-hit",
    cl::desc("Fail when any group misses the database, and write nothing "
             "(pinned, reproducible builds)"),
    cl::sub(compileCommand));
static cl::opt<std::string> emitModule(
    "emit-module",
    cl::desc("Also write the graph as a runtime module for libkoptrt and "
             "kopt-run (docs/RuntimeModule.md)"),
    cl::value_desc("file.kmod"), cl::init(""), cl::sub(compileCommand));
static cl::opt<bool> moduleByReference(
    "module-by-reference",
    cl::desc("Refer to the kernel database's records for tuned plans instead "
             "of copying them into the module"),
    cl::sub(compileCommand));
static cl::opt<std::string> moduleArch(
    "module-arch",
    cl::desc("Build the module's binaries for this architecture (default: "
             "the target's; 'none': sources only, compiled when loaded)"),
    cl::value_desc("sm_XX"), cl::init(""), cl::sub(compileCommand));

// warm
static cl::list<std::string>
    warmInputs(cl::Positional, cl::OneOrMore,
               cl::desc("<model.mlir or folder of them>..."),
               cl::sub(warmCommand));
static cl::opt<double>
    budget("budget",
           cl::desc("Seconds of work (0: no limit): after them warm starts "
                    "no new task, and compile tunes no more groups (they "
                    "keep the baseline); what was stored stays"),
           cl::value_desc("seconds"), cl::init(0), cl::sub(warmCommand),
           cl::sub(compileCommand));
static cl::opt<std::string> replay(
    "replay",
    cl::desc("Store the entries of FILE (as 'kopt db export' writes them) "
             "for the tasks that miss, instead of tuning them: for tests and "
             "for distributing results tuned elsewhere"),
    cl::value_desc("FILE.jsonl"), cl::init(""), cl::sub(warmCommand));
static cl::opt<bool> enqueue(
    "enqueue",
    cl::desc("Tune nothing here: queue the tasks that miss as jobs in the "
             "database (postgresql://) for GPU workers ('kopt "
             "serve-worker'); the same as compile's --tune=enqueue"),
    cl::sub(warmCommand));

// both
static cl::opt<std::string>
    databasePath("db",
                 cl::desc("The kernel database: a SQLite file or a "
                          "postgresql:// URL, without a password (default: "
                          "$KOPT_DB, else kopt.db)"),
                 cl::value_desc("file or URL"), cl::init("kopt.db"),
                 cl::sub(compileCommand), cl::sub(warmCommand));
static cl::opt<std::string>
    tuneMode("tune",
             cl::desc("When to tune: never, missing (default), always, or "
                      "enqueue (queue the misses for GPU workers; needs a "
                      "postgresql:// database)"),
             cl::init("missing"), cl::sub(compileCommand));
static cl::opt<std::string>
    report("report", cl::desc("Report format: text (default) or json"),
           cl::init("text"), cl::sub(compileCommand), cl::sub(warmCommand));
static cl::opt<std::string> proposers(
    "proposers", cl::desc("Comma-separated proposers beyond the baseline"),
    cl::init("builtin"), cl::sub(compileCommand), cl::sub(warmCommand));
static cl::opt<unsigned>
    maxCandidates("max-candidates",
                  cl::desc("Candidates per task, the baseline included"),
                  cl::init(16), cl::sub(compileCommand), cl::sub(warmCommand));
static cl::opt<std::string>
    precision("precision", cl::desc("Precision policy: fp32, tf32 or bf16"),
              cl::init("fp32"), cl::sub(compileCommand), cl::sub(warmCommand));
static cl::opt<double> minSpeedup(
    "min-speedup",
    cl::desc("A candidate must beat the baseline's median by this factor to "
             "win (default 1.03)"),
    cl::init(1.03), cl::sub(compileCommand), cl::sub(warmCommand));
static cl::opt<std::string>
    target("target",
           cl::desc("Without a GPU, or with --replay: the device "
                    "fingerprint to look up (see 'kopt db list')"),
           cl::init(""), cl::sub(compileCommand), cl::sub(warmCommand));

bool mlir::kopt::isCompileCommandSelected() {
  return static_cast<bool>(compileCommand);
}

bool mlir::kopt::isWarmCommandSelected() {
  return static_cast<bool>(warmCommand);
}

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static llvm::Expected<TuneCommandLine> getCommon() {
  TuneCommandLine line;
  AutotuneOptions &options = line.autotune;
  options.databasePath = databasePath;
  std::string fromEnvironment = ::kopt::runtime::getDatabaseFromEnvironment();
  if (!databasePath.getNumOccurrences() && !fromEnvironment.empty())
    options.databasePath = fromEnvironment;
  else if (::kopt::runtime::hasPassword(databasePath))
    return makeError(
        "refusing a password in --db (it would land in shell histories, "
        "process lists and logs); give it in PGPASSWORD, ~/.pgpass or a "
        "service file (PGSERVICEFILE, 'postgresql:///?service=NAME') "
        "instead");
  std::optional<TuneMode> mode = parseTuneMode(tuneMode);
  if (!mode)
    return makeError("--tune must be never, missing, always or enqueue, not "
                     "'" +
                     tuneMode + "'");
  options.mode = *mode;
  options.proposers.clear();
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(proposers).split(names, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef name : names)
    options.proposers.push_back(name.trim().str());
  options.maxCandidates = maxCandidates;
  options.precision = precision;
  if (!(minSpeedup >= 1.0))
    return makeError("--min-speedup must be at least 1");
  options.minSpeedup = minSpeedup;
  options.target = target;
  if (report != "text" && report != "json")
    return makeError("--report must be text or json, not '" + report + "'");
  line.jsonReport = report == "json";
  return line;
}

llvm::Expected<TuneCommandLine> mlir::kopt::getCompileCommandLine() {
  auto line = getCommon();
  if (!line)
    return line.takeError();
  line->inputs = {compileInput};
  line->output = outputFile;
  line->requireCacheHit = requireCacheHit;
  line->emitModule = emitModule;
  line->moduleByReference = moduleByReference;
  line->moduleArch = moduleArch;
  if (budget < 0)
    return makeError("--budget must not be negative");
  line->autotune.tuningBudgetSeconds = budget;
  return line;
}

llvm::Expected<TuneCommandLine> mlir::kopt::getWarmCommandLine() {
  auto line = getCommon();
  if (!line)
    return line.takeError();
  line->inputs.assign(warmInputs.begin(), warmInputs.end());
  if (budget < 0)
    return makeError("--budget must not be negative");
  line->budgetSeconds = budget;
  line->autotune.replayPath = replay;
  if (enqueue) {
    if (!replay.empty())
      return makeError("--enqueue and --replay do not go together");
    line->autotune.mode = TuneMode::Enqueue;
  }
  return line;
}
