//===- TaskEvaluatorTest.cpp - One task's candidates, in a budget -*- C++ -*-=//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The task evaluator with a scripted sender in place of the workers: the
// order of requests, stored attempts taken instead of measured, and the
// deadline (requests not started, and one abandoned).
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/TaskEvaluator.h"

#include "gmock/gmock.h"

#include <algorithm>
#include <thread>

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;
using std::chrono::milliseconds;
using ::testing::ElementsAre;
using Clock = std::chrono::steady_clock;

namespace {

KernelPlan makePlan(const std::string &proposer, const std::string &variant) {
  KernelPlan plan;
  plan.proposer = proposer;
  plan.variant = variant;
  return plan;
}

/// The variant of a plan in a request.
std::string variantOf(const rt::json::Value &plan) {
  const rt::json::Value *variant = plan.find("variant");
  return variant && variant->getString() ? *variant->getString() : "?";
}

/// A sender in place of the workers: each request takes `workMs`, or
/// `slowMs` when it holds a plan named `slow`; past its timeout it is
/// abandoned as a worker would be (every report a `timeout`), and a plan
/// named `crash` crashes the whole request. Valid plans take 10 us, the
/// baseline 20 us, a plan named `fast` 5 us; one named `cut` says 2 us but
/// was timing-cut (it could not win).
struct ScriptedSender {
  int workMs = 0;
  int slowMs = 0;
  std::vector<std::vector<std::string>> requests;
  /// The incumbent speedup each request carried.
  std::vector<double> incumbents;
  /// The plans each request asked the worker to compile ahead.
  std::vector<std::vector<std::string>> compileAhead;
  std::vector<milliseconds> timeouts;

  TaskEvaluator::Sender get() {
    return [this](rt::EvaluateMessage &request, milliseconds timeout)
               -> llvm::Expected<std::vector<rt::EvalReport>> {
      std::vector<std::string> names;
      int ms = workMs;
      bool crash = false;
      for (const rt::json::Value &plan : request.candidates) {
        names.push_back(variantOf(plan));
        if (names.back() == "slow")
          ms = slowMs;
        crash |= names.back() == "crash";
      }
      requests.push_back(names);
      incumbents.push_back(request.options.incumbentSpeedup);
      std::vector<std::string> ahead;
      for (const rt::json::Value &plan : request.compileAhead)
        ahead.push_back(variantOf(plan));
      compileAhead.push_back(ahead);
      timeouts.push_back(timeout);
      std::this_thread::sleep_for(std::min(milliseconds(ms), timeout));
      std::vector<rt::EvalReport> reports(request.candidates.size());
      for (size_t i = 0; i < reports.size(); ++i) {
        rt::EvalReport &report = reports[i];
        report.candidate = int64_t(i);
        if (milliseconds(ms) > timeout || crash) {
          report.failedCheck = milliseconds(ms) > timeout
                                   ? rt::FailedCheck::Timeout
                                   : rt::FailedCheck::Crash;
          report.evidence.set(
              "worker_failure",
              crash
                  ? "crash: signal 6 (Aborted)"
                  : "timeout after " + std::to_string(timeout.count()) + " ms");
          continue;
        }
        report.compiled = report.valid = true;
        rt::Timing times;
        times.medianUs = i == 0 ? 20.0 : 10.0;
        if (names[i] == "fast")
          times.medianUs = 5.0;
        if (names[i] == "cut") {
          times.medianUs = 2.0;
          report.evidence.set("timing_cut", rt::json::Value::object());
        }
        report.times = times;
        report.speedup = 20.0 / times.medianUs;
      }
      return reports;
    };
  }
};

/// Runs one round over `variants` (the first the baseline's) and records
/// what the sink heard.
struct Round {
  std::vector<KernelPlan> owned;
  std::vector<const KernelPlan *> plans;
  std::vector<std::string> heard;
  std::vector<ReportOrigin> origins;
  unsigned requestsMade = 0;

  explicit Round(const std::vector<std::string> &variants) {
    for (size_t i = 0; i < variants.size(); ++i)
      owned.push_back(makePlan(i == 0 ? "baseline" : "builtin", variants[i]));
    for (const KernelPlan &plan : owned)
      plans.push_back(&plan);
  }

  TaskEvaluator::RequestMaker maker() {
    return [this](const std::vector<const KernelPlan *> &all) {
      ++requestsMade;
      rt::EvaluateMessage request;
      for (const KernelPlan *plan : all)
        request.candidates.push_back(rt::toJson(*plan));
      return request;
    };
  }

  std::vector<std::optional<rt::EvalReport>> run(TaskEvaluator &evaluator,
                                                 unsigned round = 0) {
    ReportSink sink = [this](size_t index, const rt::EvalReport &report,
                             const ReportOrigin &origin) {
      EXPECT_EQ(report.candidate, int64_t(index));
      heard.push_back(owned[index].variant);
      origins.push_back(origin);
      return llvm::Error::success();
    };
    auto reports = evaluator.evaluateRound(round, plans, sink);
    EXPECT_TRUE(static_cast<bool>(reports))
        << llvm::toString(reports.takeError());
    return reports ? std::move(*reports)
                   : std::vector<std::optional<rt::EvalReport>>();
  }
};

TEST(TaskEvaluatorTest, BaselineAloneThenEachCandidateBesideIt) {
  ScriptedSender sender;
  Round round({"b", "v1", "v2"});
  std::string note;
  TaskEvaluator evaluator(round.maker(), sender.get(), {}, {}, note);
  auto reports = round.run(evaluator);
  EXPECT_THAT(sender.requests,
              ElementsAre(ElementsAre("b"), ElementsAre("b", "v1"),
                          ElementsAre("b", "v2")));
  EXPECT_THAT(round.heard, ElementsAre("b", "v1", "v2"));
  // One request (one set of fp64 references) for the whole round.
  EXPECT_EQ(round.requestsMade, 1u);
  // The baseline's request has the worker compile the candidates ahead;
  // the candidates' requests ask for nothing more.
  EXPECT_THAT(sender.compileAhead, ElementsAre(ElementsAre("v1", "v2"),
                                               ElementsAre(), ElementsAre()));
  ASSERT_EQ(reports.size(), 3u);
  for (const auto &report : reports)
    ASSERT_TRUE(report && report->valid);
  EXPECT_DOUBLE_EQ(*reports[2]->speedup, 2.0);
  // Each candidate knows the baseline's times beside it.
  EXPECT_FALSE(round.origins[0].baselineTimes);
  ASSERT_TRUE(round.origins[1].baselineTimes);
  EXPECT_DOUBLE_EQ(round.origins[1].baselineTimes->medianUs, 20.0);
  EXPECT_EQ(round.origins[2].index, 2u);
  EXPECT_EQ(round.origins[2].count, 3u);
}

TEST(TaskEvaluatorTest, EachRequestCarriesTheBestSpeedupSoFar) {
  ScriptedSender sender;
  Round round({"b", "v1", "cut", "fast", "v2"});
  std::string note;
  TaskEvaluator evaluator(round.maker(), sender.get(), {}, {}, note);
  round.run(evaluator);
  // None before a candidate was measured; then the best valid, trusted
  // speedup: a timing-cut report never counts, whatever it says.
  EXPECT_THAT(sender.incumbents, ElementsAre(0.0, 0.0, 2.0, 2.0, 4.0));
  // A later round's request carries it too.
  Round later({"b", "v3"});
  TaskEvaluator::RequestMaker maker = later.maker();
  TaskEvaluator again(maker, sender.get(), {}, {}, note);
  later.run(again, 1);
  EXPECT_EQ(sender.incumbents.back(), 0.0);
  later.run(evaluator, 1);
  EXPECT_EQ(sender.incumbents.back(), 4.0);
}

TEST(TaskEvaluatorTest, StoredReportsAreTakenNotMeasured) {
  ScriptedSender sender;
  Round round({"b", "v1", "v2"});
  std::map<std::string, StoredReport> stored;
  StoredReport v1;
  v1.report.valid = false;
  v1.report.failedCheck = rt::FailedCheck::OutputMismatch;
  stored[getPlanHash(rt::toJson(round.owned[1]))] = v1;
  std::string note;
  TaskEvaluator evaluator(round.maker(), sender.get(), {}, stored, note);
  auto reports = round.run(evaluator);
  EXPECT_THAT(sender.requests,
              ElementsAre(ElementsAre("b"), ElementsAre("b", "v2")));
  // A stored candidate is not compiled ahead either.
  EXPECT_THAT(sender.compileAhead.front(), ElementsAre("v2"));
  EXPECT_THAT(round.heard, ElementsAre("b", "v1", "v2"));
  EXPECT_FALSE(round.origins[0].stored);
  EXPECT_TRUE(round.origins[1].stored);
  ASSERT_TRUE(reports[1]);
  EXPECT_EQ(reports[1]->failedCheck, rt::FailedCheck::OutputMismatch);

  // With everything stored, nothing is sent, and no request is even made.
  stored[getPlanHash(rt::toJson(round.owned[0]))] =
      StoredReport{*reports[0], std::nullopt};
  stored[getPlanHash(rt::toJson(round.owned[2]))] =
      StoredReport{*reports[2], std::nullopt};
  ScriptedSender idle;
  Round again({"b", "v1", "v2"});
  TaskEvaluator resumed(again.maker(), idle.get(), {}, stored, note);
  auto all = again.run(resumed);
  EXPECT_TRUE(idle.requests.empty());
  EXPECT_EQ(again.requestsMade, 0u);
  EXPECT_THAT(again.heard, ElementsAre("b", "v1", "v2"));
}

TEST(TaskEvaluatorTest, NothingStartsThatWouldEndPastTheDeadline) {
  ScriptedSender sender;
  sender.workMs = 150;
  Round round({"b", "v1", "v2", "v3", "v4", "v5"});
  std::string note;
  TaskEvaluator::Options options;
  Clock::time_point start = Clock::now();
  options.deadline = start + milliseconds(400);
  options.grace = milliseconds(100);
  TaskEvaluator evaluator(round.maker(), sender.get(), options, {}, note);
  auto reports = round.run(evaluator);
  double elapsedMs =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  // The baseline ran; what was not started is none, and after the first
  // plan not tried, none is.
  ASSERT_EQ(reports.size(), 6u);
  ASSERT_TRUE(reports[0] && reports[0]->valid);
  EXPECT_FALSE(reports.back().has_value());
  auto firstNone = std::find_if(reports.begin(), reports.end(),
                                [](const auto &r) { return !r; });
  EXPECT_TRUE(
      std::all_of(firstNone, reports.end(), [](const auto &r) { return !r; }));
  EXPECT_EQ(round.heard.size(), size_t(firstNone - reports.begin()));
  // Every request was started with the deadline as its limit (and the
  // grace), and the round ended by the deadline and the grace.
  for (milliseconds timeout : sender.timeouts)
    EXPECT_LE(timeout.count(), 400 + 100);
  EXPECT_LT(elapsedMs, 400 + 100 + 50);
}

TEST(TaskEvaluatorTest, ARequestRunningAtTheDeadlineIsAbandoned) {
  ScriptedSender sender;
  sender.workMs = 10;
  sender.slowMs = 5000;
  Round round({"b", "slow", "v2"});
  std::string note;
  TaskEvaluator::Options options;
  Clock::time_point start = Clock::now();
  options.deadline = start + milliseconds(300);
  options.grace = milliseconds(100);
  TaskEvaluator evaluator(round.maker(), sender.get(), options, {}, note);
  auto reports = round.run(evaluator);
  double elapsedMs =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  // The slow candidate was abandoned a grace after the deadline: not a
  // timeout of its own, just not tried, and nothing was started after it.
  EXPECT_LT(elapsedMs, 300 + 100 + 200);
  ASSERT_TRUE(reports[0]);
  EXPECT_FALSE(reports[1]);
  EXPECT_FALSE(reports[2]);
  EXPECT_THAT(round.heard, ElementsAre("b"));
  EXPECT_EQ(sender.requests.size(), 2u);
}

TEST(TaskEvaluatorTest, AWorkerFailureInALaterRoundIsIsolated) {
  ScriptedSender sender;
  Round round({"b", "k1", "crash", "k3"});
  std::string note;
  TaskEvaluator evaluator(round.maker(), sender.get(), {}, {}, note);
  auto reports = round.run(evaluator, /*round=*/1);
  EXPECT_THAT(sender.requests,
              ElementsAre(ElementsAre("b", "k1", "crash", "k3"),
                          ElementsAre("b", "k1"), ElementsAre("b", "crash"),
                          ElementsAre("b", "k3")));
  ASSERT_EQ(reports.size(), 4u);
  EXPECT_TRUE(reports[1]->valid);
  EXPECT_EQ(reports[2]->failedCheck, rt::FailedCheck::Crash);
  EXPECT_TRUE(reports[3]->valid);
  EXPECT_NE(note.find("isolated"), std::string::npos);
}

TEST(TaskEvaluatorTest, StoredReportsComeFromTheSameDeviceLatestFirst) {
  rt::DeviceFingerprint here;
  here.computeCapability = "sm_90";
  rt::DeviceFingerprint elsewhere = here;
  elsewhere.smCount = 7;
  KernelPlan plan = makePlan("builtin", "v1");
  auto attempt = [&](const rt::DeviceFingerprint &fingerprint, double us,
                     std::optional<double> baselineUs) {
    rt::AttemptRecord record;
    record.fingerprint = fingerprint;
    record.plan = rt::toJson(plan);
    rt::EvalReport report;
    report.compiled = report.valid = true;
    rt::Timing times;
    times.medianUs = us;
    times.repetitions = 20;
    report.times = times;
    std::optional<rt::Timing> baseline;
    if (baselineUs) {
      baseline = times;
      baseline->medianUs = *baselineUs;
    }
    record.feedback = makeAttemptFeedback(report, baseline);
    return record;
  };
  rt::AttemptRecord refused;
  refused.fingerprint = here;
  refused.failedCheck = "refused";
  refused.feedback = rt::json::Value::object();
  refused.feedback.set("reason", "no code");
  auto reports = collectStoredReports(
      {attempt(here, 12.0, 30.0), attempt(here, 11.0, 33.0),
       attempt(elsewhere, 5.0, std::nullopt), refused},
      here);
  ASSERT_EQ(reports.size(), 1u);
  const StoredReport &stored = reports.begin()->second;
  EXPECT_EQ(reports.begin()->first, getPlanHash(rt::toJson(plan)));
  EXPECT_DOUBLE_EQ(stored.report.times->medianUs, 11.0);
  ASSERT_TRUE(stored.baselineTimes);
  EXPECT_DOUBLE_EQ(stored.baselineTimes->medianUs, 33.0);
}

} // namespace
