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
// proposer), evaluates them in one request, keeps every new attempt in the
// order the proposers offered them, and notifies the proposers. The
// baseline must pass round 0's evaluation: every speedup is against it.
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
    RoundReports reports;
    reports.round = round;
    if (round > 0)
      reports.plans.push_back(&result.firstPlans.front());
    size_t firstNew = reports.plans.size();
    std::vector<std::vector<std::optional<size_t>>> own(active.size());
    for (size_t p = 0; p < active.size(); ++p)
      for (const Candidate &candidate : offered[p]) {
        std::optional<size_t> index;
        bool room = round > 0 || reports.plans.size() < maxFirstRound;
        if (candidate.plan && room) {
          index = reports.plans.size();
          reports.plans.push_back(&*candidate.plan);
        }
        own[p].push_back(index);
      }
    if (reports.plans.size() > firstNew) {
      auto evaluated = evaluate(reports.plans);
      if (!evaluated)
        return evaluated.takeError();
      if (evaluated->size() != reports.plans.size())
        return llvm::createStringError(
            "the evaluator returned " + std::to_string(evaluated->size()) +
            " reports for " + std::to_string(reports.plans.size()) +
            " candidates");
      reports.reports = std::move(*evaluated);
    } else {
      reports.plans.clear();
    }

    // Every new attempt is kept, with its report as the proposer's
    // feedback; a dropped candidate is not an attempt.
    for (size_t p = 0; p < active.size(); ++p)
      for (size_t c = 0; c < offered[p].size(); ++c) {
        const Candidate &candidate = offered[p][c];
        if (candidate.remeasured || (candidate.plan && !own[p][c]))
          continue;
        const rt::EvalReport *report =
            own[p][c] ? &reports.reports[*own[p][c]] : nullptr;
        if (llvm::Error error =
                keep({active[p]->getName(), round, &candidate, report}))
          return std::move(error);
        result.evaluated += report != nullptr;
        result.valid += report && report->valid;
      }
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
  }
  return result;
}
