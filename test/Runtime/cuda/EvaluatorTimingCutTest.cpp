//===- EvaluatorTimingCutTest.cpp - Timing candidates that cannot win -*- C++
//-*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The timing cut on the GPU: a candidate far slower than the baseline (or
// than an incumbent) is timed kCutRepetitions times and says so; one that
// is slow only while it warms up is timed in full.
//
//===----------------------------------------------------------------------===//

#include "EvaluatorTestUtils.h"

#include "runtime/Evaluator/TimingStats.h"

using namespace kopt::runtime;
using namespace kopt::runtime::evaltest;

namespace {

/// Correct, and hundreds of times slower than the baseline.
const std::string kSleepy = makeWaitingAdd("", "true");

/// The same, waiting only in its first 11 calls: the 8 validation runs and
/// the warm-up (5 ms, so about 3 runs) are slow, the timed runs fast.
const std::string kSlowToStart = makeWaitingAdd(
    "__device__ unsigned kopt_calls;", "atomicAdd(&kopt_calls, 1u) < 11u");

const json::Value *getCut(const EvalReport &report) {
  return report.evidence.find("timing_cut");
}

using EvaluatorTimingCutTest = EvaluatorTest;

} // namespace

TEST_F(EvaluatorTimingCutTest, ACandidateThatCannotWinIsTimedBriefly) {
  std::vector<KernelPlan> plans = {makePlan("baseline", kBaseline),
                                   makePlan("sleepy", kSleepy)};
  auto reports =
      evaluateCandidates(*context, makeTask(), plans, quickOptions());
  ASSERT_TRUE(bool(reports)) << reports.status().message();
  const EvalReport &sleepy = (*reports)[1];
  ASSERT_TRUE(sleepy.valid) << json::write(sleepy.evidence);
  ASSERT_TRUE(sleepy.times && sleepy.speedup);
  EXPECT_EQ(sleepy.times->repetitions, int64_t(kCutRepetitions));
  EXPECT_LT(*sleepy.speedup, 1.0 / kCutConfirmSlowdown);
  const json::Value *cut = getCut(sleepy);
  ASSERT_NE(cut, nullptr) << json::write(sleepy.evidence);
  EXPECT_EQ(*cut->find("reference")->getString(), "baseline");
  EXPECT_GE(*cut->find("warmup_slowdown")->getNumber(), kCutSlowdown);
  EXPECT_GE(*cut->find("timed_slowdown")->getNumber(), kCutConfirmSlowdown);
  // Timed side by side: the baseline got the same rounds, no more.
  ASSERT_TRUE((*reports)[0].times);
  EXPECT_EQ((*reports)[0].times->repetitions, int64_t(kCutRepetitions));
  EXPECT_EQ(getCut((*reports)[0]), nullptr);

  // Beside a candidate that can win, the baseline is timed in full and
  // the slow one still briefly.
  plans.push_back(makePlan("vectorised", kVectorised, 4));
  reports = evaluateCandidates(*context, makeTask(), plans, quickOptions());
  ASSERT_TRUE(bool(reports)) << reports.status().message();
  ASSERT_TRUE((*reports)[0].times && (*reports)[1].times &&
              (*reports)[2].times);
  EXPECT_GE((*reports)[0].times->repetitions, 20);
  EXPECT_EQ((*reports)[1].times->repetitions, int64_t(kCutRepetitions));
  EXPECT_GE((*reports)[2].times->repetitions, 20);
  EXPECT_EQ(getCut((*reports)[2]), nullptr);
}

TEST_F(EvaluatorTimingCutTest, ACutCandidateThatMeasuresFastIsTimedInFull) {
  std::vector<KernelPlan> plans = {makePlan("baseline", kBaseline),
                                   makePlan("slow-to-start", kSlowToStart)};
  auto reports =
      evaluateCandidates(*context, makeTask(), plans, quickOptions());
  ASSERT_TRUE(bool(reports)) << reports.status().message();
  const EvalReport &report = (*reports)[1];
  ASSERT_TRUE(report.valid) << json::write(report.evidence);
  EXPECT_EQ(getCut(report), nullptr) << json::write(report.evidence);
  const json::Value *rescinded = report.evidence.find("timing_cut_rescinded");
  ASSERT_NE(rescinded, nullptr) << json::write(report.evidence);
  EXPECT_GE(*rescinded->find("warmup_slowdown")->getNumber(), kCutSlowdown);
  EXPECT_LT(*rescinded->find("timed_slowdown")->getNumber(),
            kCutConfirmSlowdown);
  ASSERT_TRUE(report.times);
  EXPECT_GE(report.times->repetitions, 20);
  EXPECT_GE((*reports)[0].times->repetitions, 20);
}

TEST_F(EvaluatorTimingCutTest, AnIncumbentFarAheadCutsTheRest) {
  // An earlier candidate of the task ran 1000 times faster than the
  // baseline: an honest one about as fast as the baseline cannot win.
  std::vector<KernelPlan> plans = {makePlan("baseline", kBaseline),
                                   makePlan("vectorised", kVectorised, 4)};
  EvaluatorOptions options = quickOptions();
  options.incumbentSpeedup = 1000;
  auto reports = evaluateCandidates(*context, makeTask(), plans, options);
  ASSERT_TRUE(bool(reports)) << reports.status().message();
  const EvalReport &report = (*reports)[1];
  ASSERT_TRUE(report.valid) << json::write(report.evidence);
  const json::Value *cut = getCut(report);
  ASSERT_NE(cut, nullptr) << json::write(report.evidence);
  EXPECT_EQ(*cut->find("reference")->getString(), "incumbent");
  EXPECT_EQ(report.times->repetitions, int64_t(kCutRepetitions));

  // Without the incumbent it is timed in full.
  reports = evaluateCandidates(*context, makeTask(), plans, quickOptions());
  ASSERT_TRUE(bool(reports)) << reports.status().message();
  EXPECT_EQ(getCut((*reports)[1]), nullptr);
  EXPECT_GE((*reports)[1].times->repetitions, 20);
}
