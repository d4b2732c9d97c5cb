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

//===----------------------------------------------------------------------===//
// The proposer
//===----------------------------------------------------------------------===//

namespace {

class LlmProposer final : public Proposer {
public:
  LlmProposer(const KernelTask &task, LlmProvider &provider,
              const LlmSearchOptions &options)
      : task(task), provider(provider), options(options) {}

  llvm::StringRef getName() const override { return "llm"; }

  llvm::Expected<std::vector<Candidate>> propose(unsigned round) override {
    // Round 0 is the others': the search starts from its reports.
    if (round == 0 || !search)
      return std::vector<Candidate>();
    std::vector<const KernelPlan *> plans = search->propose();
    if (search->isDone())
      return std::vector<Candidate>(); // a budget is spent
    const SearchResult &result = search->getResult();
    std::vector<Candidate> candidates;
    size_t fresh = 0;
    for (size_t i = search->getRoundBegin(); i < result.attempts.size(); ++i)
      fresh += result.attempts[i].plan.has_value();
    if (plans.size() > fresh) {
      Candidate seed;
      seed.plan = *plans.front();
      seed.remeasured = true;
      candidates.push_back(std::move(seed));
    }
    for (size_t i = search->getRoundBegin(); i < result.attempts.size(); ++i) {
      const SearchAttempt &attempt = result.attempts[i];
      Candidate candidate;
      candidate.plan = attempt.plan;
      candidate.failure = attempt.failure;
      candidate.exchange = attempt.exchange;
      candidates.push_back(std::move(candidate));
    }
    return candidates;
  }

  llvm::Error notify(const RoundReports &reports,
                     llvm::ArrayRef<std::optional<size_t>> own) override {
    if (reports.round == 0)
      return start(reports);
    if (!search)
      return llvm::Error::success();
    // The search wants the baseline's report, then its own in order.
    std::vector<rt::EvalReport> mine;
    for (const std::optional<size_t> &index : own)
      if (index) {
        if (mine.empty())
          mine.push_back(reports.reports.front());
        mine.push_back(reports.reports[*index]);
      }
    return withContext(search->notify(mine));
  }

  bool isDone() const override { return search && search->isDone(); }

  std::optional<ProposerChoice> getChoice() const override {
    if (!search || !search->getResult().bestAttempt)
      return std::nullopt;
    const SearchResult &result = search->getResult();
    const SearchAttempt &attempt = result.attempts[*result.bestAttempt];
    ProposerChoice choice;
    choice.plan = &result.best.plan;
    choice.report = &result.best.report;
    choice.baselineReport = &result.best.baselineReport;
    auto text = [&](std::string_view key) -> std::string {
      const rt::json::Value *value = attempt.exchange.find(key);
      const std::string *string = value ? value->getString() : nullptr;
      return string ? *string : "";
    };
    choice.provenance.model = text("model");
    choice.provenance.promptHash = text("prompt_hash");
    choice.provenance.round = int64_t(attempt.round);
    return choice;
  }

  void summarize(GroupOutcome &outcome) const override {
    if (!search)
      return;
    const SearchResult &result = search->getResult();
    unsigned evaluated = 0, valid = 0;
    for (const SearchAttempt &attempt : result.attempts) {
      if (attempt.report)
        ++evaluated;
      if (attempt.report && attempt.report->valid)
        ++valid;
      std::string line =
          llvm::formatv("llm round {0} idea {1}: ", attempt.round,
                        attempt.index)
              .str();
      if (attempt.plan)
        line += attempt.plan->variant + ": ";
      outcome.llmAttempts.push_back(line + describeAttemptVerdict(attempt));
    }
    outcome.llmSummary =
        llvm::formatv("llm: {0} round(s), {1} answer(s), {2} evaluated, {3} "
                      "valid, {4} tokens; stopped: {5}",
                      result.rounds, result.attempts.size(), evaluated, valid,
                      result.promptTokens + result.completionTokens,
                      result.stopReason)
            .str();
  }

private:
  /// Starts the search from round 0's reports.
  llvm::Error start(const RoundReports &reports) {
    // The seed: the fastest valid, trusted candidate so far, whether or not
    // it cleared the margin; the baseline when none did.
    size_t seed = 0;
    double best = 1.0;
    for (size_t i = 1; i < reports.reports.size() && i < reports.plans.size();
         ++i) {
      const rt::EvalReport &report = reports.reports[i];
      if (report.valid && !report.suspicious && !rt::isTimingCut(report) &&
          report.speedup && *report.speedup > best) {
        seed = i;
        best = *report.speedup;
      }
    }
    baseline = *reports.plans.front();
    SearchSeed from{*reports.plans[seed], reports.reports[seed],
                    reports.reports.front()};
    // Rounds take a while (a model's answers, then an evaluation): say so.
    SearchLog log = [name = task.name](const std::string &line) {
      llvm::errs() << "kopt: @" << name << " llm " << line << "\n";
    };
    auto created =
        LlmSearch::create(task, *baseline, reports.reports.front(),
                          std::move(from), provider, options, std::move(log));
    if (!created)
      return withContext(created.takeError());
    search = std::move(*created);
    return llvm::Error::success();
  }

  llvm::Error withContext(llvm::Error error) const {
    if (!error)
      return error;
    return llvm::createStringError("the llm search for @" + task.name + ": " +
                                   llvm::toString(std::move(error)));
  }

  const KernelTask &task;
  LlmProvider &provider;
  const LlmSearchOptions &options;
  std::optional<KernelPlan> baseline;
  std::unique_ptr<LlmSearch> search;
};

/// The provider and the search's options, shared by every task's proposer.
class LlmProposerFactory final : public ProposerFactory {
public:
  LlmProposerFactory(std::unique_ptr<LlmProvider> provider,
                     LlmSearchOptions search)
      : provider(std::move(provider)), search(std::move(search)) {}

  llvm::StringRef getName() const override { return "llm"; }

  llvm::Expected<std::unique_ptr<Proposer>>
  create(func::FuncOp, const KernelTask &task) override {
    return std::make_unique<LlmProposer>(task, *provider, search);
  }

  void setArch(llvm::StringRef arch) override {
    search.prompt.gpu = describeGpu(arch);
  }

private:
  std::unique_ptr<LlmProvider> provider;
  LlmSearchOptions search;
};

} // namespace

llvm::Expected<std::unique_ptr<ProposerFactory>>
mlir::kopt::makeLlmProposerFactory(const AutotuneOptions &options) {
  const LlmTuneOptions &llm = options.llm;
  if (llm.provider.empty())
    return llvm::createStringError(
        "the llm proposer needs a provider: --llm-provider=openai, command "
        "or replay (docs/LLM.md)");
  auto provider = createProvider(llm.provider, llm.providerOptions);
  if (!provider)
    return llvm::createStringError("the llm proposer's provider: " +
                                   llvm::toString(provider.takeError()));
  LlmSearchOptions search;
  search.budget = llm.budget;
  search.prices = llm.prices;
  search.parallelRequests = llm.parallelRequests;
  search.maxAnswerTokens = llm.maxAnswerTokens;
  search.temperature = llm.temperature;
  search.prompt.gpu = describeGpu("sm_90");
  search.answer.maxAnswerBytes = search.prompt.maxAnswerBytes;
  auto model = llm.providerOptions.find("model");
  if (model != llm.providerOptions.end())
    search.model = model->second;
  return std::make_unique<LlmProposerFactory>(std::move(*provider),
                                              std::move(search));
}
