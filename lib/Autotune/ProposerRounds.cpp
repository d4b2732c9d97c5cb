//===- ProposerRounds.cpp - Rounds of proposals and evaluations -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each round asks the proposers that are not done for candidates, numbers
// their plans after the baseline (round 0's first plan of the first
// proposer), has them evaluated, keeps every new attempt as soon as its
// report is known, and notifies the proposers. The baseline must pass
// round 0's evaluation: every speedup is against it. A plan the evaluator
// did not try (the tuning budget ran out) is dropped, and ends the rounds.
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/Proposer.h"

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

llvm::Expected<RoundsResult>
mlir::kopt::runProposerRounds(llvm::StringRef function,
                              llvm::ArrayRef<Proposer *> proposers,
                              const RoundEvaluator &evaluate,
                              const AttemptSink &keep, unsigned maxFirstRound) {
  RoundsResult result;
  for (unsigned round = 0;; ++round) {
    std::vector<Proposer *> active;
    for (Proposer *proposer : proposers)
      if (!proposer->isDone())
        active.push_back(proposer);
    if (active.empty())
      break;
    std::vector<std::vector<Candidate>> offered;
    for (Proposer *proposer : active) {
      auto candidates = proposer->propose(round);
      if (!candidates)
        return candidates.takeError();
      offered.push_back(std::move(*candidates));
    }
    if (round == 0 &&
        (active.front() != proposers.front() || offered.front().empty() ||
         !offered.front().front().plan))
      return llvm::createStringError("the " + proposers.front()->getName() +
                                     " proposer gave @" + function +
                                     " no plan to measure the others against");

    // The plans in request order, the baseline's first.
    std::vector<const KernelPlan *> plans;
    if (round > 0)
      plans.push_back(&result.firstPlans.front());
    size_t firstNew = plans.size();
    std::vector<std::vector<std::optional<size_t>>> own(active.size());
    // The candidate of each plan (none for the baseline after round 0).
    std::vector<std::optional<std::pair<size_t, size_t>>> owner(plans.size());
    for (size_t p = 0; p < active.size(); ++p)
      for (size_t c = 0; c < offered[p].size(); ++c) {
        const Candidate &candidate = offered[p][c];
        std::optional<size_t> index;
        bool room = round > 0 || plans.size() < maxFirstRound;
        if (candidate.plan && room) {
          index = plans.size();
          plans.push_back(&*candidate.plan);
          owner.emplace_back(std::make_pair(p, c));
        }
        own[p].push_back(index);
      }

    // Every new attempt is kept as soon as its report is known, with the
    // report as the proposer's feedback; a remeasured plan is not a new
    // attempt, and a dropped candidate is none at all.
    ReportSink sink = [&](size_t index, const rt::EvalReport &report,
                          const ReportOrigin &origin) -> llvm::Error {
      if (index >= owner.size() || !owner[index])
        return llvm::Error::success();
      auto [p, c] = *owner[index];
      const Candidate &candidate = offered[p][c];
      if (candidate.remeasured)
        return llvm::Error::success();
      if (llvm::Error error =
              keep({active[p]->getName(), round, &candidate, &report, &origin}))
        return error;
      ++result.evaluated;
      result.valid += report.valid;
      return llvm::Error::success();
    };
    std::vector<std::optional<rt::EvalReport>> evaluated;
    if (plans.size() > firstNew) {
      auto reports = evaluate(round, plans, sink);
      if (!reports)
        return reports.takeError();
      if (reports->size() != plans.size())
        return llvm::createStringError(
            "the evaluator returned " + std::to_string(reports->size()) +
            " reports for " + std::to_string(plans.size()) + " candidates");
      evaluated = std::move(*reports);
    }

    // The proposers hear of the plans that were evaluated only.
    RoundReports reports;
    reports.round = round;
    std::vector<std::optional<size_t>> renumbered(evaluated.size());
    for (size_t i = 0; i < evaluated.size(); ++i) {
      if (!evaluated[i]) {
        if (i > 0 || round == 0)
          result.notTried.push_back(plans[i]->proposer + "/" +
                                    plans[i]->variant);
        continue;
      }
      renumbered[i] = reports.plans.size();
      reports.plans.push_back(plans[i]);
      reports.reports.push_back(std::move(*evaluated[i]));
    }
    if (evaluated.size() > reports.plans.size())
      result.budgetSpent = true;
    // Refused answers are attempts too, without a report.
    for (size_t p = 0; p < active.size(); ++p)
      for (const Candidate &candidate : offered[p])
        if (!candidate.plan)
          if (llvm::Error error =
                  keep({active[p]->getName(), round, &candidate, nullptr}))
            return std::move(error);
    if (!evaluated.empty() && !evaluated.front()) {
      // Nothing is measured without the baseline: the budget ran out.
      result.rounds = round + 1;
      return result;
    }
    for (std::vector<std::optional<size_t>> &indices : own)
      for (std::optional<size_t> &index : indices)
        if (index)
          index = renumbered[*index];
    if (round == 0) {
      const rt::EvalReport &baseline = reports.reports.front();
      if (!baseline.valid || !baseline.times)
        return llvm::createStringError(
            "the baseline of @" + function + " failed its own evaluation (" +
            rt::stringifyFailedCheck(baseline.failedCheck) +
            "): " + rt::json::write(baseline.evidence));
      for (const KernelPlan *plan : reports.plans)
        result.firstPlans.push_back(*plan);
      result.firstReports = reports.reports;
    }
    for (size_t p = 0; p < active.size(); ++p)
      if (llvm::Error error = active[p]->notify(reports, own[p]))
        return std::move(error);
    result.rounds = round + 1;
    if (result.budgetSpent)
      break;
  }
  return result;
}
