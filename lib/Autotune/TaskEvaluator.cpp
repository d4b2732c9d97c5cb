//===- TaskEvaluator.cpp - One task's candidates, within a budget -*- C++ -*-=//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/TaskEvaluator.h"

#include "kopt/Evaluator/WorkerClient.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

std::string mlir::kopt::getPlanHash(const rt::json::Value &plan) {
  return rt::hashBytes(rt::json::write(plan));
}

//===----------------------------------------------------------------------===//
// Stored attempts
//===----------------------------------------------------------------------===//

static constexpr const char *kBaselineTimesField = "baseline_times";

rt::json::Value
mlir::kopt::makeAttemptFeedback(const rt::EvalReport &report,
                                const std::optional<rt::Timing> &baseline) {
  rt::json::Value feedback = rt::toJson(report);
  if (baseline) {
    // The report's own `times` encoding, to be read back the same way.
    rt::EvalReport timed;
    timed.times = *baseline;
    rt::json::Value holder = rt::toJson(timed);
    if (const rt::json::Value *times = holder.find("times"))
      feedback.set(kBaselineTimesField, *times);
  }
  return feedback;
}

/// The report and baseline times of a stored attempt, when it was
/// evaluated and its feedback reads.
static std::optional<StoredReport>
readStoredReport(const rt::AttemptRecord &attempt) {
  if (!attempt.feedback.isObject() || attempt.plan.isNull())
    return std::nullopt;
  rt::Result<rt::EvalReport> report = rt::evalReportFromJson(attempt.feedback);
  if (!report)
    return std::nullopt;
  StoredReport stored;
  stored.report = std::move(*report);
  if (const rt::json::Value *times =
          attempt.feedback.find(kBaselineTimesField)) {
    // Read through a valid report that holds only these times.
    rt::EvalReport holder;
    holder.compiled = holder.valid = true;
    rt::json::Value value = rt::toJson(holder);
    value.set("times", *times);
    if (rt::Result<rt::EvalReport> timed = rt::evalReportFromJson(value))
      stored.baselineTimes = timed->times;
  }
  return stored;
}

std::map<std::string, StoredReport>
mlir::kopt::collectStoredReports(const std::vector<rt::AttemptRecord> &attempts,
                                 const rt::DeviceFingerprint &fingerprint) {
  std::map<std::string, StoredReport> reports;
  // In the order they were added: a later attempt of a plan replaces an
  // earlier one.
  for (const rt::AttemptRecord &attempt : attempts) {
    if (attempt.fingerprint != fingerprint)
      continue;
    if (std::optional<StoredReport> stored = readStoredReport(attempt))
      reports[getPlanHash(attempt.plan)] = std::move(*stored);
  }
  return reports;
}

//===----------------------------------------------------------------------===//
// The evaluator
//===----------------------------------------------------------------------===//

TaskEvaluator::TaskEvaluator(RequestMaker makeRequest, Sender send,
                             Options options,
                             std::map<std::string, StoredReport> stored,
                             std::string &note)
    : makeRequest(std::move(makeRequest)), sender(std::move(send)),
      options(options), stored(std::move(stored)), note(note) {}

double TaskEvaluator::getSecondsPerPlan() const {
  if (secondsPerPlan.size() > 1)
    return *std::max_element(secondsPerPlan.begin() + 1, secondsPerPlan.end());
  return secondsPerPlan.empty() ? 0 : secondsPerPlan.front();
}

rt::EvaluateMessage
TaskEvaluator::select(const rt::EvaluateMessage &request,
                      std::initializer_list<size_t> indices) {
  rt::EvaluateMessage selected = request;
  selected.candidates.clear();
  for (size_t index : indices)
    selected.candidates.push_back(request.candidates[index]);
  return selected;
}

void TaskEvaluator::noteIncumbent(const rt::EvalReport &report) {
  if (report.candidate > 0 && report.valid && !report.suspicious &&
      !rt::isTimingCut(report) && report.speedup)
    incumbentSpeedup = std::max(incumbentSpeedup, *report.speedup);
}

llvm::Expected<std::optional<TaskEvaluator::Answer>>
TaskEvaluator::send(rt::EvaluateMessage request, double estimate) {
  if (stopped)
    return std::nullopt;
  request.options.incumbentSpeedup = incumbentSpeedup;
  std::chrono::milliseconds timeout = options.evaluationTimeout;
  bool byDeadline = false;
  Clock::time_point start = Clock::now();
  if (options.deadline) {
    // Not started when it would end past the deadline.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        *options.deadline - start);
    if (left.count() <= 0 || std::chrono::duration<double>(estimate) >
                                 std::chrono::duration<double>(left)) {
      stopped = true;
      return std::nullopt;
    }
    if (left + options.grace < timeout) {
      timeout = left + options.grace;
      byDeadline = true;
    }
  }
  auto reports = sender(request, timeout);
  if (!reports)
    return reports.takeError();
  Answer answer;
  answer.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  bool workerFailed = false;
  for (const rt::EvalReport &report : *reports) {
    std::string reason = getWorkerFailureReason(report);
    // Abandoned at the deadline: not tried, and nothing more is.
    if (byDeadline && report.failedCheck == rt::FailedCheck::Timeout &&
        llvm::StringRef(reason).starts_with("timeout")) {
      stopped = true;
      return std::nullopt;
    }
    workerFailed |= !reason.empty();
  }
  // A crash or a hang says nothing of how long a plan takes.
  if (!workerFailed && !reports->empty())
    secondsPerPlan.push_back(answer.seconds / double(reports->size()));
  answer.reports = std::move(*reports);
  return std::optional<Answer>(std::move(answer));
}

llvm::Expected<std::vector<std::optional<rt::EvalReport>>>
TaskEvaluator::evaluateRound(unsigned round,
                             const std::vector<const KernelPlan *> &plans,
                             const ReportSink &sink) {
  if (plans.empty())
    return std::vector<std::optional<rt::EvalReport>>();
  if (round == 0)
    return evaluateFirstRound(plans, sink);
  return evaluateLaterRound(plans, sink);
}

llvm::Expected<std::vector<std::optional<rt::EvalReport>>>
TaskEvaluator::evaluateFirstRound(const std::vector<const KernelPlan *> &plans,
                                  const ReportSink &sink) {
  std::vector<std::optional<rt::EvalReport>> results(plans.size());
  // Made when the first plan needs measuring: a resumed task may need
  // nothing measured at all.
  // The request, and with it the fp64 references, is made once; every
  // candidate's request beside the baseline reuses it.
  std::optional<rt::EvaluateMessage> request;
  double requestSeconds = 0;
  auto getRequest = [&]() -> const rt::EvaluateMessage & {
    if (!request) {
      Clock::time_point start = Clock::now();
      request = makeRequest(plans);
      requestSeconds =
          std::chrono::duration<double>(Clock::now() - start).count();
    }
    return *request;
  };
  // The baseline's request names the candidates still to measure, so the
  // worker compiles them while it evaluates the baseline.
  auto baselineRequest = [&] {
    rt::EvaluateMessage first = select(getRequest(), {0});
    for (size_t j = 1; j < plans.size(); ++j)
      if (!stored.count(getPlanHash(rt::toJson(*plans[j]))))
        first.compileAhead.push_back(request->candidates[j]);
    return first;
  };
  for (size_t i = 0; i < plans.size(); ++i) {
    ReportOrigin origin;
    origin.index = i;
    origin.count = plans.size();
    rt::EvalReport report;
    auto found = stored.find(getPlanHash(rt::toJson(*plans[i])));
    if (found != stored.end()) {
      report = found->second.report;
      origin.stored = true;
      origin.baselineTimes = found->second.baselineTimes;
    } else {
      // The baseline alone, then each candidate beside it.
      bool madeNow = !request;
      auto answer =
          i == 0 ? send(baselineRequest(), 0)
                 : send(select(getRequest(), {0, i}), 2 * getSecondsPerPlan());
      if (madeNow)
        origin.requestSeconds = requestSeconds;
      if (!answer)
        return answer.takeError();
      if (!*answer) {
        if (i == 0)
          return results; // nothing is measured without the baseline
        continue;         // a stored candidate after it may still be taken
      }
      report = std::move((*answer)->reports.back());
      origin.seconds = (*answer)->seconds;
      if (i > 0)
        origin.baselineTimes = (*answer)->reports.front().times;
    }
    report.candidate = int64_t(i);
    noteIncumbent(report);
    if (llvm::Error error = sink(i, report, origin))
      return std::move(error);
    results[i] = std::move(report);
    // The rounds fail on a baseline that fails: nothing more to measure.
    if (i == 0 && (!results[0]->valid || !results[0]->times))
      return results;
  }
  return results;
}

llvm::Expected<std::vector<std::optional<rt::EvalReport>>>
TaskEvaluator::evaluateLaterRound(const std::vector<const KernelPlan *> &plans,
                                  const ReportSink &sink) {
  std::vector<std::optional<rt::EvalReport>> results(plans.size());
  std::vector<ReportOrigin> origins(plans.size());
  Clock::time_point made = Clock::now();
  rt::EvaluateMessage request = makeRequest(plans);
  origins[0].requestSeconds =
      std::chrono::duration<double>(Clock::now() - made).count();
  auto answer = send(request, double(plans.size()) * getSecondsPerPlan());
  if (!answer)
    return answer.takeError();
  if (!*answer)
    return results;
  std::vector<rt::EvalReport> &reports = (*answer)->reports;
  // A worker that crashes or hangs takes the whole request with it: then
  // each candidate goes again beside the baseline alone, so only the
  // culprit fails (its report names the crash or the timeout).
  bool workerFailed = llvm::any_of(reports, [](const rt::EvalReport &report) {
    return !getWorkerFailureReason(report).empty();
  });
  if (!workerFailed || plans.size() <= 2) {
    for (size_t i = 0; i < plans.size(); ++i) {
      results[i] = std::move(reports[i]);
      origins[i].seconds = (*answer)->seconds;
      if (i > 0)
        origins[i].baselineTimes = results[0]->times;
    }
  } else {
    note += "a worker failure was isolated by evaluating the candidates one "
            "at a time; ";
    for (size_t i = 1; i < plans.size(); ++i) {
      auto pair = send(select(request, {0, i}), 2 * getSecondsPerPlan());
      if (!pair)
        return pair.takeError();
      if (!*pair)
        continue;
      std::vector<rt::EvalReport> &two = (*pair)->reports;
      if (!results[0] || !results[0]->valid) {
        results[0] = two.front();
        origins[0].seconds = (*pair)->seconds;
      }
      results[i] = std::move(two.back());
      origins[i].seconds = (*pair)->seconds;
      origins[i].baselineTimes = two.front().times;
    }
  }
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!results[i])
      continue;
    results[i]->candidate = int64_t(i);
    noteIncumbent(*results[i]);
    origins[i].index = i;
    origins[i].count = plans.size();
    if (llvm::Error error = sink(i, *results[i], origins[i]))
      return std::move(error);
  }
  return results;
}
