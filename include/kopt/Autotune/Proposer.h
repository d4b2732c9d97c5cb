//===- Proposer.h - Proposers of candidate plans, as peers ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The one interface every proposer implements (docs/Design.md,
// "Proposers"). For each task the autotuner makes one proposer per name in
// `--proposers` and runs rounds (runProposerRounds): every proposer that is
// not done proposes candidates, the evaluator measures them beside the
// baseline, and every proposer is notified of the whole round's reports,
// its own candidates' among them. The baseline and builtin
// proposers propose once, in round 0; the LLM proposer waits for round 0's
// reports, then proposes in rounds with the evaluator's feedback until its
// budget is spent.
//
// The first proposer is the baseline's: its one plan is candidate 0 of every
// request, the plan every speedup is measured against.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_AUTOTUNE_PROPOSER_H
#define KOPT_AUTOTUNE_PROPOSER_H

#include "kopt/Autotune/Autotuner.h"
#include "kopt/Autotune/TuneProgress.h"
#include "kopt/Codegen/KernelTask.h"

#include "llvm/ADT/ArrayRef.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::kopt {

/// One candidate of a proposer's in a round.
struct Candidate {
  /// The plan to evaluate; none for an answer refused before evaluation
  /// (`failure` says why), which is kept as an attempt all the same.
  std::optional<KernelPlan> plan;
  std::string failure;
  /// Stored with the attempt: the LLM's prompts and answer; null for none.
  ::kopt::runtime::json::Value exchange;
  /// Measured again beside the new candidates, for comparison (the LLM's
  /// seed): not a new attempt, so neither stored nor counted.
  bool remeasured = false;
};

/// What the evaluator said about one round.
struct RoundReports {
  unsigned round = 0;
  /// Every plan evaluated in the round, [0] the baseline, and one report
  /// each, with speedups against [0]; both empty when the round evaluated
  /// nothing.
  std::vector<const KernelPlan *> plans;
  std::vector<::kopt::runtime::EvalReport> reports;
};

/// The candidate a proposer settled on after its rounds, measured beside
/// the best candidate before it.
struct ProposerChoice {
  const KernelPlan *plan = nullptr;
  const ::kopt::runtime::EvalReport *report = nullptr;
  /// The baseline's report in the request that measured `report`.
  const ::kopt::runtime::EvalReport *baselineReport = nullptr;
  /// Where it came from, for the database (model, prompt hash, round).
  ::kopt::runtime::Provenance provenance;
};

/// A proposer of candidate plans for one task.
class Proposer {
public:
  virtual ~Proposer();

  /// The name in `--proposers` and in the attempt records.
  virtual llvm::StringRef getName() const = 0;
  /// The candidates of round `round` (from 0); none when it has nothing to
  /// offer in this round. Fails when it cannot work on the task at all.
  virtual llvm::Expected<std::vector<Candidate>> propose(unsigned round) = 0;
  /// Takes the evaluator's reports on the round it last proposed in: `own`
  /// gives, for each of its candidates in order, the index of its plan in
  /// `reports.plans` (none for a refused or dropped one).
  virtual llvm::Error notify(const RoundReports &reports,
                             llvm::ArrayRef<std::optional<size_t>> own) = 0;
  /// Whether it has nothing more to propose.
  virtual bool isDone() const = 0;
  /// The candidate it settled on after rounds of its own, for the autotuner
  /// to take over round 0's winner when it clears the margin; none by
  /// default.
  virtual std::optional<ProposerChoice> getChoice() const;
  /// Adds what it did to `outcome` after the rounds (the LLM's summary and
  /// attempts); nothing by default.
  virtual void summarize(GroupOutcome &outcome) const;
};

/// Makes the proposers of one kind, one per task; made once per autotuner.
class ProposerFactory {
public:
  virtual ~ProposerFactory();

  /// The name in `--proposers`.
  virtual llvm::StringRef getName() const = 0;
  /// A proposer for `task`, the task of the outlined group `group`; they
  /// and this factory outlive it.
  virtual llvm::Expected<std::unique_ptr<Proposer>>
  create(func::FuncOp group, const KernelTask &task) = 0;
  /// Learns the architecture (`sm_90`) of the device tasks are tuned for.
  virtual void setArch(llvm::StringRef arch);
};

/// The proposers known by name.
class ProposerRegistry {
public:
  /// Makes the factory of one kind for an autotuner with `options`.
  using Maker = std::function<llvm::Expected<std::unique_ptr<ProposerFactory>>(
      const AutotuneOptions &options)>;

  /// Registers `maker` under `name`, after those registered before.
  void add(llvm::StringRef name, Maker maker);
  /// The maker registered under `name`; an error listing the names when
  /// there is none (`unknown proposer 'x' (available: a, b)`).
  llvm::Expected<const Maker *> lookup(llvm::StringRef name) const;
  /// The names, in the order they were registered.
  std::vector<std::string> getNames() const;

private:
  std::vector<std::pair<std::string, Maker>> makers;
};

/// kopt's proposers: `baseline`, `builtin` and `llm`.
ProposerRegistry createProposerRegistry();

//===----------------------------------------------------------------------===//
// Rounds
//===----------------------------------------------------------------------===//

/// Takes the report on `plans[index]` of a round as soon as it is known.
using ReportSink = std::function<llvm::Error(
    size_t index, const ::kopt::runtime::EvalReport &report,
    const ReportOrigin &origin)>;

/// Evaluates the plans of round `round` ([0] the baseline), giving each
/// report to `sink` as soon as it is known: one report per plan, in order,
/// with speedups against [0], and none for a plan it did not try (the
/// tuning budget ran out).
using RoundEvaluator = std::function<
    llvm::Expected<std::vector<std::optional<::kopt::runtime::EvalReport>>>(
        unsigned round, const std::vector<const KernelPlan *> &plans,
        const ReportSink &sink)>;

/// One attempt to keep: a proposer's candidate, with its report when it was
/// evaluated.
struct ProposerAttempt {
  llvm::StringRef proposer;
  unsigned round = 0;
  const Candidate *candidate = nullptr;
  const ::kopt::runtime::EvalReport *report = nullptr;
  /// How `report` came about (set with it).
  const ReportOrigin *origin = nullptr;
};

/// Keeps one attempt (the autotuner stores it in the kernel database).
using AttemptSink = std::function<llvm::Error(const ProposerAttempt &)>;

/// What the rounds came to.
struct RoundsResult {
  /// Round 0's evaluated plans, [0] the baseline, and their reports; both
  /// empty when the budget ran out before the baseline was measured.
  std::vector<KernelPlan> firstPlans;
  std::vector<::kopt::runtime::EvalReport> firstReports;
  /// Rounds run, round 0 included.
  unsigned rounds = 0;
  /// Attempts evaluated and found valid, over all rounds.
  unsigned evaluated = 0;
  unsigned valid = 0;
  /// The plans the evaluator did not try (`proposer/variant`), and whether
  /// that stopped the rounds (the tuning budget ran out).
  std::vector<std::string> notTried;
  bool budgetSpent = false;
};

/// Runs rounds for the task of the outlined function `function` until
/// every proposer is done: each round takes the candidates of the
/// proposers not done yet, has `evaluate` measure their plans after the
/// baseline (skipped when there are none), gives `keep` each new attempt
/// as soon as its report is known (and the refused ones after them), and
/// notifies those proposers of the plans that were evaluated. Round 0
/// evaluates at most `maxFirstRound` plans, the baseline's among them; the
/// candidates after those are dropped. A plan the evaluator did not try is
/// dropped too, and listed in `notTried`; the rounds then stop, and when
/// it was round 0's baseline nothing else is done. The first proposer is
/// the baseline's: its first plan of round 0 is candidate 0 of every
/// request, and the tuning fails unless it passes round 0's evaluation.
/// Fails when a proposer or an evaluation fails.
llvm::Expected<RoundsResult>
runProposerRounds(llvm::StringRef function,
                  llvm::ArrayRef<Proposer *> proposers,
                  const RoundEvaluator &evaluate, const AttemptSink &keep,
                  unsigned maxFirstRound);

} // namespace mlir::kopt

#endif // KOPT_AUTOTUNE_PROPOSER_H
