//===- LlmSearch.h - Rounds of LLM proposals with feedback ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The LLM proposer's search (docs/Design.md, "Proposers"; docs/LLM.md). Each
// round asks the model for several diverse optimisation ideas in plain
// language, then for one implementation of each (the requests in parallel),
// parses the answers strictly, drops answers already seen (same source), and
// has the caller evaluate the new candidates beside the baseline and the
// current best (the seed) in one request, so every speedup is a ratio
// measured side by side. The fastest valid candidate seeds the next round,
// whose prompts carry the earlier attempts' feedback: parse and compile
// errors, the worst mismatching elements, times against the baseline and
// the physical floor. The search stops at its budget (rounds, candidates,
// tokens, wall time) or after a round that brings no gain.
//
// The search knows nothing of GPUs or databases: the caller evaluates (the
// autotuner, through its worker pool) and stores the attempts.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LLM_LLMSEARCH_H
#define KOPT_LLM_LLMSEARCH_H

#include "kopt/LLM/LlmProposer.h"
#include "kopt/Runtime/Protocol.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::kopt {

/// When the search stops.
struct SearchBudget {
  /// Rounds at most.
  unsigned rounds = 3;
  /// Ideas (and so implementations) asked for per round.
  unsigned ideasPerRound = 4;
  /// Candidates (parsed, distinct answers) over the whole search.
  unsigned maxCandidates = 16;
  /// Prompt plus answer tokens over the whole search; 0 for no limit.
  uint64_t maxTokens = 0;
  /// Seconds of the whole search, evaluations included; 0 for no limit.
  double maxSeconds = 0;
  /// Consecutive rounds without a gain after which the search stops.
  unsigned patience = 1;
  /// A round gains when a new candidate beats the seed by this factor in
  /// the same measurement.
  double minGain = 1.01;
};

/// Prices for the cost estimate, in any currency per million tokens; zero
/// prices give no estimate.
struct TokenPrices {
  double inputPerMillion = 0;
  double outputPerMillion = 0;
};

struct LlmSearchOptions {
  SearchBudget budget;
  PromptOptions prompt;
  AnswerOptions answer;
  /// Sent with each request.
  unsigned maxAnswerTokens = 8192;
  double temperature = 0.7;
  /// Requests in flight at once.
  unsigned parallelRequests = 4;
  TokenPrices prices;
  /// The model's name as configured, for the records when the provider
  /// reports none.
  std::string model;
};

/// One answer of the model for a kernel, and what became of it.
struct SearchAttempt {
  unsigned round = 0;
  /// Its index among the round's ideas (1-based).
  unsigned index = 0;
  std::string idea;
  /// The exchange as stored with the attempt (docs/LLM.md): model, round,
  /// idea, prompts, answer, token counts, latency, cost estimate, and the
  /// round's ideas exchange.
  ::kopt::runtime::json::Value exchange;
  /// The parsed plan; empty when the answer was refused (`failure`).
  std::optional<KernelPlan> plan;
  /// Why there is no plan or no evaluation: the provider's error, the
  /// parser's reason, or `duplicate of ...`.
  std::string failure;
  /// The evaluator's verdict, for an evaluated plan.
  std::optional<::kopt::runtime::EvalReport> report;
};

/// The plan and report of the current best candidate.
struct SearchSeed {
  KernelPlan plan;
  ::kopt::runtime::EvalReport report;
  /// The baseline's report in the request that measured `report`.
  ::kopt::runtime::EvalReport baselineReport;
};

/// Evaluates `candidates` in one request: [0] is the baseline, [1] the
/// seed (unless the seed is the baseline), then the new candidates. Returns
/// one report per candidate, in order, with speedups against [0].
using SearchEvaluator =
    std::function<llvm::Expected<std::vector<::kopt::runtime::EvalReport>>(
        const std::vector<const KernelPlan *> &candidates)>;

/// Prints one line of progress.
using SearchLog = std::function<void(const std::string &line)>;

struct SearchResult {
  std::vector<SearchAttempt> attempts;
  /// The best candidate at the end: an LLM attempt's plan when one beat
  /// the starting seed, the starting seed otherwise.
  SearchSeed best;
  /// Whether `best` is one of `attempts` (and which).
  std::optional<size_t> bestAttempt;
  unsigned rounds = 0;
  uint64_t promptTokens = 0;
  uint64_t completionTokens = 0;
  /// Why the search stopped, in words.
  std::string stopReason;
};

/// The search a round at a time, for a caller that evaluates on its own
/// schedule (the autotuner's `llm` proposer): `propose` asks the model for
/// a round's candidates, the caller evaluates them after the baseline in one
/// request, and `notify` takes the reports. runLlmSearch drives it with an
/// evaluator.
class LlmSearch {
public:
  /// Starts the search for `task` from `seed` (the fastest valid candidate
  /// so far; its report's speedup is against `baseline`). `task`,
  /// `baseline`, `provider` and `options` must outlive the search. Fails on
  /// options that allow no round, idea or candidate.
  static llvm::Expected<std::unique_ptr<LlmSearch>>
  create(const KernelTask &task, const KernelPlan &baseline,
         const ::kopt::runtime::EvalReport &baselineReport, SearchSeed seed,
         LlmProvider &provider, const LlmSearchOptions &options,
         SearchLog log = {});
  ~LlmSearch();

  /// Runs the next round's requests to the model and returns the plans to
  /// evaluate after the baseline: the seed unless it is the baseline, then
  /// the round's new candidates; none when no answer gave a new plan. Stops
  /// the search (`isDone`), returning none, when a budget is spent.
  std::vector<const KernelPlan *> propose();
  /// Takes the reports on the baseline and on what the last `propose`
  /// returned, in that order (none when it returned none), and decides
  /// whether another round follows. Does nothing after a `propose` that
  /// stopped the search. Fails, the round still open, when the number of
  /// reports is wrong.
  llvm::Error notify(const std::vector<::kopt::runtime::EvalReport> &reports);
  /// Whether the search has stopped (`getResult().stopReason` says why).
  bool isDone() const;
  /// The search so far.
  const SearchResult &getResult() const;
  /// The index in `getResult().attempts` of the last round's first attempt.
  size_t getRoundBegin() const;

  class Impl;

private:
  explicit LlmSearch(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// Runs the search for `task` from `seed` (the fastest valid candidate so
/// far; its report's speedup is against `baseline`) with `evaluate`. Fails
/// only when the evaluator fails as a whole; a provider error, an
/// unparsable answer or a failed candidate is an attempt with its reason.
llvm::Expected<SearchResult>
runLlmSearch(const KernelTask &task, const KernelPlan &baseline,
             const ::kopt::runtime::EvalReport &baselineReport, SearchSeed seed,
             LlmProvider &provider, const SearchEvaluator &evaluate,
             const LlmSearchOptions &options, const SearchLog &log = {});

/// The feedback line the next round's prompt gives for `attempt`.
std::string describeAttemptFeedback(const SearchAttempt &attempt);

/// Parses an ideas answer: numbered (`1.` or `1)`) or bulleted lines, at
/// most `count`, each trimmed and cut at 400 characters. An answer without
/// such lines gives none.
std::vector<std::string> parseIdeas(llvm::StringRef answer, unsigned count);

} // namespace mlir::kopt

#endif // KOPT_LLM_LLMSEARCH_H
