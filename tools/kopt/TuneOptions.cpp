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

#include <algorithm>
#include <cstdlib>

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

static cl::opt<std::string> tuneShapes(
    "tune-shapes",
    cl::desc("For a graph with a dynamic batch: the batch sizes to "
             "specialise and tune kernels for, as batch=1,8,32 (default: "
             "batch=1). The module holds a program per size and runs other "
             "sizes as chunks of them when the samples are independent "
             "(docs/RuntimeModule.md)"),
    cl::value_desc("batch=N,..."), cl::init(""), cl::sub(compileCommand));

// warm
static cl::list<std::string>
    warmInputs(cl::Positional, cl::OneOrMore,
               cl::desc("<model.mlir or folder of them>..."),
               cl::sub(warmCommand));
static cl::opt<double> budget(
    "budget",
    cl::desc("Seconds for the whole command (0: no limit), a deadline: no "
             "candidate is started that would end past it and one still "
             "running then is abandoned; each group keeps the best valid "
             "candidate measured by then, later groups (warm: tasks) are "
             "not tuned, the report names what was not tried, and what was "
             "measured stays in the database for the next run"),
    cl::value_desc("seconds"), cl::init(0), cl::sub(warmCommand),
    cl::sub(compileCommand));
static cl::opt<double> groupBudget(
    "group-budget",
    cl::desc("Seconds one group may be tuned for (0: no limit), a deadline "
             "like --budget's"),
    cl::value_desc("seconds"), cl::init(0), cl::sub(warmCommand),
    cl::sub(compileCommand));
static cl::opt<bool> quiet(
    "quiet",
    cl::desc("Print no progress lines on stderr (--report=json prints none "
             "either)"),
    cl::sub(warmCommand), cl::sub(compileCommand));
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
    "proposers",
    cl::desc("Comma-separated proposers: baseline (always runs), builtin, "
             "llm (default: baseline,builtin)"),
    cl::init("baseline,builtin"), cl::sub(compileCommand),
    cl::sub(warmCommand));

// The llm proposer (docs/LLM.md).
static cl::OptionCategory
    llmCategory("The llm proposer (with --proposers=...,llm)");
static cl::opt<std::string> llmProvider(
    "llm-provider",
    cl::desc("Who answers: openai, command or replay (default: openai when "
             "KOPT_LLM_ENDPOINT is set)"),
    cl::value_desc("kind"), cl::cat(llmCategory), cl::sub(compileCommand),
    cl::sub(warmCommand));
static cl::list<std::string> llmOptions(
    "llm-option",
    cl::desc("A provider option as key=value (repeatable), e.g. dir=answers "
             "for replay, model=NAME for openai; the API key comes from "
             "KOPT_LLM_API_KEY only"),
    cl::value_desc("key=value"), cl::cat(llmCategory), cl::sub(compileCommand),
    cl::sub(warmCommand));
static cl::opt<unsigned>
    llmRounds("llm-rounds", cl::desc("Search rounds at most (default 3)"),
              cl::init(3), cl::cat(llmCategory), cl::sub(compileCommand),
              cl::sub(warmCommand));
static cl::opt<unsigned>
    llmIdeas("llm-ideas",
             cl::desc("Ideas, and so kernels, asked for per round (default 4)"),
             cl::init(4), cl::cat(llmCategory), cl::sub(compileCommand),
             cl::sub(warmCommand));
static cl::opt<unsigned> llmMaxCandidates(
    "llm-max-candidates",
    cl::desc("Distinct LLM candidates per task over the search (default 16)"),
    cl::init(16), cl::cat(llmCategory), cl::sub(compileCommand),
    cl::sub(warmCommand));
static cl::opt<uint64_t>
    llmMaxTokens("llm-max-tokens",
                 cl::desc("Prompt plus answer tokens per task (0: no limit)"),
                 cl::init(0), cl::cat(llmCategory), cl::sub(compileCommand),
                 cl::sub(warmCommand));
static cl::opt<double>
    llmMaxSeconds("llm-max-seconds",
                  cl::desc("Seconds of search per task (0: no limit)"),
                  cl::init(0), cl::cat(llmCategory), cl::sub(compileCommand),
                  cl::sub(warmCommand));
static cl::opt<unsigned> llmPatience(
    "llm-patience",
    cl::desc("Stop after this many rounds in a row without a gain (default "
             "1)"),
    cl::init(1), cl::cat(llmCategory), cl::sub(compileCommand),
    cl::sub(warmCommand));
static cl::opt<unsigned> llmParallel("llm-parallel",
                                     cl::desc("Requests in flight (default 4)"),
                                     cl::init(4), cl::cat(llmCategory),
                                     cl::sub(compileCommand),
                                     cl::sub(warmCommand));
static cl::opt<double> llmPriceInput(
    "llm-price-input",
    cl::desc("Price per million prompt tokens, for the cost estimate"),
    cl::init(0), cl::cat(llmCategory), cl::sub(compileCommand),
    cl::sub(warmCommand));
static cl::opt<double> llmPriceOutput(
    "llm-price-output",
    cl::desc("Price per million answer tokens, for the cost estimate"),
    cl::init(0), cl::cat(llmCategory), cl::sub(compileCommand),
    cl::sub(warmCommand));
static cl::opt<unsigned>
    maxCandidates("max-candidates",
                  cl::desc("Candidates per task, the baseline included"),
                  cl::init(16), cl::sub(compileCommand), cl::sub(warmCommand));
static cl::opt<std::string>
    precision("precision",
              cl::desc("Precision policy: fp32 (fp32 accuracy, tensor-core "
                       "3xTF32 GEMMs allowed when measured as accurate), "
                       "fp32-ieee (IEEE fp32 arithmetic only), tf32 or bf16"),
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

/// Fills `options.llm` from the --llm-* options.
static llvm::Error readLlmOptions(AutotuneOptions &options) {
  LlmTuneOptions &llm = options.llm;
  llm.provider = llmProvider;
  if (llm.provider.empty() && std::getenv("KOPT_LLM_ENDPOINT"))
    llm.provider = "openai";
  for (llvm::StringRef option : llmOptions)
    if (llvm::Error error = addProviderOption(llm.providerOptions, option))
      return makeError("--llm-option " + llvm::toString(std::move(error)));
  if (llmRounds < 1 || llmIdeas < 1 || llmMaxCandidates < 1 || llmParallel < 1)
    return makeError("--llm-rounds, --llm-ideas, --llm-max-candidates and "
                     "--llm-parallel must be at least 1");
  if (llmMaxSeconds < 0 || llmPriceInput < 0 || llmPriceOutput < 0)
    return makeError("--llm-max-seconds and the prices must not be negative");
  llm.budget.rounds = llmRounds;
  llm.budget.ideasPerRound = llmIdeas;
  llm.budget.maxCandidates = llmMaxCandidates;
  llm.budget.maxTokens = llmMaxTokens;
  llm.budget.maxSeconds = llmMaxSeconds;
  llm.budget.patience = std::max(1u, unsigned(llmPatience));
  llm.parallelRequests = llmParallel;
  llm.prices.inputPerMillion = llmPriceInput;
  llm.prices.outputPerMillion = llmPriceOutput;
  return llvm::Error::success();
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
  options.proposers = splitProposerList(proposers);
  if (llvm::Error error = readLlmOptions(options))
    return std::move(error);
  options.maxCandidates = maxCandidates;
  options.precision = precision;
  if (!(minSpeedup >= 1.0))
    return makeError("--min-speedup must be at least 1");
  options.minSpeedup = minSpeedup;
  options.target = target;
  if (report != "text" && report != "json")
    return makeError("--report must be text or json, not '" + report + "'");
  line.jsonReport = report == "json";
  line.progress = !line.jsonReport && !quiet;
  if (!(budget >= 0) || !(groupBudget >= 0))
    return makeError("--budget and --group-budget must not be negative");
  line.budgetSeconds = budget;
  options.groupBudgetSeconds = groupBudget;
  return line;
}

llvm::Expected<std::vector<int64_t>>
mlir::kopt::parseTuneShapes(llvm::StringRef text) {
  auto bad = [&](const llvm::Twine &why) {
    return makeError("--tune-shapes takes batch=N[,N...], such as "
                     "batch=1,8,32; '" +
                     text + "' " + why);
  };
  llvm::StringRef list = text;
  if (!list.consume_front("batch="))
    return bad("does not start with 'batch=' (only the batch is "
               "specialised)");
  std::vector<int64_t> sizes;
  llvm::SmallVector<llvm::StringRef> items;
  list.split(items, ',');
  for (llvm::StringRef item : items) {
    int64_t size = 0;
    if (item.trim().getAsInteger(10, size) || size < 1 || size > (1 << 20))
      return bad("has '" + item + "', not a size from 1 to 1048576");
    sizes.push_back(size);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
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
  if (!tuneShapes.empty()) {
    auto sizes = parseTuneShapes(tuneShapes);
    if (!sizes)
      return sizes.takeError();
    line->tuneShapes = std::move(*sizes);
  }
  return line;
}

llvm::Expected<TuneCommandLine> mlir::kopt::getWarmCommandLine() {
  auto line = getCommon();
  if (!line)
    return line.takeError();
  line->inputs.assign(warmInputs.begin(), warmInputs.end());
  line->autotune.replayPath = replay;
  if (enqueue) {
    if (!replay.empty())
      return makeError("--enqueue and --replay do not go together");
    line->autotune.mode = TuneMode::Enqueue;
  }
  return line;
}
