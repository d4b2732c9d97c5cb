//===- LlmTuning.cpp - The LLM proposer inside the autotuner ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "LlmTuning.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

llvm::Expected<std::unique_ptr<LlmTuner>>
LlmTuner::create(const LlmTuneOptions &options, const std::string &arch) {
  if (options.provider.empty())
    return llvm::createStringError(
        "the llm proposer needs a provider: --llm-provider=openai, command "
        "or replay (docs/LLM.md)");
  auto provider = createProvider(options.provider, options.providerOptions);
  if (!provider)
    return llvm::createStringError("the llm proposer's provider: " +
                                   llvm::toString(provider.takeError()));
  LlmSearchOptions search;
  search.budget = options.budget;
  search.prices = options.prices;
  search.parallelRequests = options.parallelRequests;
  search.maxAnswerTokens = options.maxAnswerTokens;
  search.temperature = options.temperature;
  search.prompt.gpu = describeGpu(arch);
  search.answer.maxAnswerBytes = search.prompt.maxAnswerBytes;
  auto model = options.providerOptions.find("model");
  if (model != options.providerOptions.end())
    search.model = model->second;
  return std::unique_ptr<LlmTuner>(
      new LlmTuner(std::move(*provider), std::move(search)));
}

std::string mlir::kopt::describeAttemptVerdict(const SearchAttempt &attempt) {
  if (!attempt.report) {
    // The first line, cut, is enough for a report; the records keep all.
    llvm::StringRef failure =
        llvm::StringRef(attempt.failure).split('\n').first;
    if (failure.size() > 160)
      return failure.take_front(157).str() + "...";
    return failure.str();
  }
  const rt::EvalReport &report = *attempt.report;
  if (!report.valid)
    return std::string("rejected: ") +
           rt::stringifyFailedCheck(report.failedCheck);
  std::string text = "valid";
  if (report.times)
    text += llvm::formatv(", {0:F2} us", report.times->medianUs).str();
  if (report.speedup)
    text += llvm::formatv(", {0:F2}x the baseline", *report.speedup).str();
  if (report.suspicious)
    text += ", suspicious timing (not trusted)";
  return text;
}

llvm::Expected<SearchResult> LlmTuner::run(
    const KernelTask &task, const std::vector<KernelPlan> &plans,
    const std::vector<rt::EvalReport> &reports, const SearchEvaluator &evaluate,
    const std::function<llvm::Error(const SearchAttempt &)> &storeAttempt,
    GroupOutcome &outcome) {
  // The seed: the fastest valid, trusted candidate so far, whether or not
  // it cleared the margin; the baseline when none did.
  size_t seed = 0;
  double best = 1.0;
  for (size_t i = 1; i < reports.size() && i < plans.size(); ++i) {
    const rt::EvalReport &report = reports[i];
    if (report.valid && !report.suspicious && report.speedup &&
        *report.speedup > best) {
      seed = i;
      best = *report.speedup;
    }
  }
  SearchSeed start{plans[seed], reports[seed], reports[0]};
  // Rounds take a while (a model's answers, then an evaluation): say so.
  SearchLog log = [&](const std::string &line) {
    llvm::errs() << "kopt: @" << outcome.function << " llm " << line << "\n";
  };
  auto result = runLlmSearch(task, plans[0], reports[0], std::move(start),
                             *provider, evaluate, search, log);
  if (!result)
    return result.takeError();
  unsigned evaluated = 0, valid = 0;
  for (const SearchAttempt &attempt : result->attempts) {
    if (llvm::Error error = storeAttempt(attempt))
      return std::move(error);
    if (attempt.report)
      ++evaluated;
    if (attempt.report && attempt.report->valid)
      ++valid;
    std::string line =
        llvm::formatv("llm round {0} idea {1}: ", attempt.round, attempt.index)
            .str();
    if (attempt.plan)
      line += attempt.plan->variant + ": ";
    outcome.llmAttempts.push_back(line + describeAttemptVerdict(attempt));
  }
  outcome.evaluatedCandidates += evaluated;
  outcome.validCandidates += valid;
  outcome.llmSummary =
      llvm::formatv("llm: {0} round(s), {1} answer(s), {2} evaluated, {3} "
                    "valid, {4} tokens; stopped: {5}",
                    result->rounds, result->attempts.size(), evaluated, valid,
                    result->promptTokens + result->completionTokens,
                    result->stopReason)
          .str();
  return result;
}
