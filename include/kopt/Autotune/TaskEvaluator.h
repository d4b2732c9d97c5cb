//===- TaskEvaluator.h - One task's candidates, within a budget -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// How the autotuner has the plans of one task's rounds evaluated
// (docs/Autotune.md, "The budget" and "Stopped runs"):
//
// - Round 0 measures the baseline alone, then each candidate beside the
//   baseline in a request of its own, so that each report is known, and
//   stored, as soon as it is measured, and a killed run loses only the
//   candidate in flight.
// - A plan whose attempt an earlier run stored (same task key, fingerprint
//   and plan hash) is taken from the database, not measured again.
// - A later round (the `llm` proposer's) is one request, each candidate
//   again alone beside the baseline when a worker failure took the request.
// - With a deadline, a request is not started when the requests measured
//   for the task so far say it would end past the deadline, and one still
//   running a second after it is abandoned (its worker is killed): its
//   plans are not tried, and nothing after them is started.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_AUTOTUNE_TASKEVALUATOR_H
#define KOPT_AUTOTUNE_TASKEVALUATOR_H

#include "kopt/Autotune/Proposer.h"
#include "kopt/Runtime/KernelDatabase.h"

#include <chrono>
#include <map>

namespace mlir::kopt {

/// A report an earlier run stored with its attempt.
struct StoredReport {
  ::kopt::runtime::EvalReport report;
  /// The baseline's times in the request that measured it, when stored.
  std::optional<::kopt::runtime::Timing> baselineTimes;
};

/// The identity of a plan across runs: the hash of its `kopt.plan/1` JSON,
/// as the `kopt.plan_hash` attribute has it.
std::string getPlanHash(const ::kopt::runtime::json::Value &plan);

/// The feedback stored with an evaluated attempt: `report`'s JSON, plus
/// `baseline_times` when `baselineTimes` is given.
::kopt::runtime::json::Value makeAttemptFeedback(
    const ::kopt::runtime::EvalReport &report,
    const std::optional<::kopt::runtime::Timing> &baselineTimes);

/// The reports of `attempts` (of one task) that a tuning on `fingerprint`
/// may take instead of measuring again, by plan hash: evaluated attempts
/// on that fingerprint whose feedback reads as a report, the latest of
/// each plan.
std::map<std::string, StoredReport> collectStoredReports(
    const std::vector<::kopt::runtime::AttemptRecord> &attempts,
    const ::kopt::runtime::DeviceFingerprint &fingerprint);

/// Evaluates the plans of one task's rounds (see the file comment).
class TaskEvaluator {
public:
  using Clock = std::chrono::steady_clock;
  /// Sends `request` to a worker, giving up after `timeout` (the worker is
  /// then killed and the reports say `timeout`); numbers the request.
  using Sender =
      std::function<llvm::Expected<std::vector<::kopt::runtime::EvalReport>>(
          ::kopt::runtime::EvaluateMessage &request,
          std::chrono::milliseconds timeout)>;
  /// Makes the request of a round for `plans` ([0] the baseline), with its
  /// inputs' seed and references; the pairs of round 0 share it.
  using RequestMaker = std::function<::kopt::runtime::EvaluateMessage(
      const std::vector<const KernelPlan *> &plans)>;

  struct Options {
    /// The longest any request may take.
    std::chrono::milliseconds evaluationTimeout{600000};
    /// When the task's tuning ends; none for no limit.
    std::optional<Clock::time_point> deadline;
    /// How long a request may run past the deadline before it is
    /// abandoned.
    std::chrono::milliseconds grace{1000};
  };

  /// `note` collects remarks for the group's outcome.
  TaskEvaluator(RequestMaker makeRequest, Sender send, Options options,
                std::map<std::string, StoredReport> stored, std::string &note);

  /// The RoundEvaluator of runProposerRounds.
  llvm::Expected<std::vector<std::optional<::kopt::runtime::EvalReport>>>
  evaluateRound(unsigned round, const std::vector<const KernelPlan *> &plans,
                const ReportSink &sink);

private:
  /// What one request came to.
  struct Answer {
    std::vector<::kopt::runtime::EvalReport> reports;
    double seconds = 0;
  };

  llvm::Expected<std::vector<std::optional<::kopt::runtime::EvalReport>>>
  evaluateFirstRound(const std::vector<const KernelPlan *> &plans,
                     const ReportSink &sink);
  llvm::Expected<std::vector<std::optional<::kopt::runtime::EvalReport>>>
  evaluateLaterRound(const std::vector<const KernelPlan *> &plans,
                     const ReportSink &sink);
  /// Sends `request` unless it would end past the deadline by `estimate`
  /// seconds; none when it was not started or was abandoned at the
  /// deadline.
  llvm::Expected<std::optional<Answer>>
  send(::kopt::runtime::EvaluateMessage request, double estimate);
  /// `request` with only the candidates `indices` (of `request`'s).
  static ::kopt::runtime::EvaluateMessage
  select(const ::kopt::runtime::EvaluateMessage &request,
         std::initializer_list<size_t> indices);
  /// The seconds one plan takes to evaluate, from the requests so far: the
  /// slowest after the first, else the first, else 0.
  double getSecondsPerPlan() const;

  RequestMaker makeRequest;
  Sender sender;
  Options options;
  std::map<std::string, StoredReport> stored;
  std::string &note;
  /// Seconds per plan of each request answered so far without a worker
  /// failure, the first (the baseline alone, with the worker's start) first.
  std::vector<double> secondsPerPlan;
  /// Set once a request was not started or was abandoned: nothing more is.
  bool stopped = false;
  /// The largest speedup of a valid, trusted candidate so far (0: none):
  /// each request after the baseline's carries it, so that candidates that
  /// cannot come near it are timed briefly (the worker's timing cut).
  double incumbentSpeedup = 0;
  /// Takes `report` into `incumbentSpeedup`.
  void noteIncumbent(const ::kopt::runtime::EvalReport &report);
};

} // namespace mlir::kopt

#endif // KOPT_AUTOTUNE_TASKEVALUATOR_H
