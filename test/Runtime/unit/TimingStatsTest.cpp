//===- TimingStatsTest.cpp - Tests of timing statistics ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/TimingStats.h"

#include "gtest/gtest.h"

#include <cmath>
#include <set>

using namespace kopt::runtime;

namespace {

TEST(TimingStatsTest, QuantilesOfAKnownList) {
  // 1..11 shuffled: ranks are exact at p10, p50 and p90.
  TimingSummary summary = summarizeTimes({7, 3, 11, 1, 9, 5, 2, 10, 4, 8, 6});
  EXPECT_EQ(summary.count, 11u);
  EXPECT_DOUBLE_EQ(summary.min, 1.0);
  EXPECT_DOUBLE_EQ(summary.max, 11.0);
  EXPECT_DOUBLE_EQ(summary.median, 6.0);
  EXPECT_DOUBLE_EQ(summary.mean, 6.0);
  EXPECT_DOUBLE_EQ(summary.p10, 2.0);
  EXPECT_DOUBLE_EQ(summary.p90, 10.0);
  EXPECT_DOUBLE_EQ(summary.relativeSpread, 8.0 / 6.0);
}

TEST(TimingStatsTest, QuantilesInterpolate) {
  std::vector<double> sorted = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(quantileOfSorted(sorted, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantileOfSorted(sorted, 0.1), 1.3);
  EXPECT_DOUBLE_EQ(quantileOfSorted(sorted, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(quantileOfSorted(sorted, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantileOfSorted(sorted, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(quantileOfSorted({5}, 0.9), 5.0);
  TimingSummary even = summarizeTimes({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(even.median, 2.5);
}

TEST(TimingStatsTest, EmptyAndConstantLists) {
  TimingSummary empty = summarizeTimes({});
  EXPECT_EQ(empty.count, 0u);
  EXPECT_EQ(empty.median, 0.0);
  TimingSummary constant = summarizeTimes(std::vector<double>(20, 3.5));
  EXPECT_DOUBLE_EQ(constant.median, 3.5);
  EXPECT_DOUBLE_EQ(constant.relativeSpread, 0.0);
}

TEST(TimingStatsTest, InterleavingRunsEveryVariantRTimes) {
  const unsigned candidates = 3, repetitions = 20, variants = candidates + 1;
  std::vector<ScheduledRun> schedule =
      makeInterleavedSchedule(candidates, repetitions);
  ASSERT_EQ(schedule.size(), size_t(variants) * repetitions);
  std::vector<unsigned> count(variants), first(variants);
  std::set<std::pair<unsigned, unsigned>> seen;
  for (size_t i = 0; i < schedule.size(); ++i) {
    const ScheduledRun &run = schedule[i];
    ASSERT_LT(run.variant, variants);
    ++count[run.variant];
    // Each (variant, round) pair exactly once, rounds in order.
    EXPECT_TRUE(seen.insert({run.variant, run.round}).second);
    EXPECT_EQ(run.round, i / variants);
    if (i % variants == 0)
      ++first[run.variant];
  }
  for (unsigned variant = 0; variant < variants; ++variant) {
    EXPECT_EQ(count[variant], repetitions) << variant;
    // The leading slot rotates: each variant leads R / (K + 1) rounds.
    EXPECT_EQ(first[variant], repetitions / variants) << variant;
  }
  EXPECT_EQ(makeInterleavedSchedule(0, 5).size(), 5u);
  EXPECT_TRUE(makeInterleavedSchedule(4, 0).empty());
}

TEST(TimingStatsTest, SizesRepetitionsFromTheRunTime) {
  // A 3 ms kernel keeps the 20 asked for; a 30 us one gets enough runs for
  // the target's kernel time; a 1 us one stops at the cap.
  EXPECT_EQ(sizeRepetitions(20, 3000), 20u);
  EXPECT_EQ(sizeRepetitions(20, 30), unsigned(std::ceil(kTargetTimedUs / 30)));
  EXPECT_GT(sizeRepetitions(20, 30), sizeRepetitions(20, 300));
  EXPECT_EQ(sizeRepetitions(20, 1), kMaxSizedRepetitions);
  // Never fewer than asked for, even above the cap, unless the runs asked
  // for add up to more than kLongTimedUs: then enough for that, at least
  // kMinLongRepetitions. Unknown times change nothing.
  EXPECT_EQ(sizeRepetitions(500, 1), 500u);
  EXPECT_EQ(sizeRepetitions(20, 5000), 20u);  // 100 ms: kept
  EXPECT_EQ(sizeRepetitions(20, 10000), 10u); // 200 ms asked: 100 ms
  EXPECT_EQ(sizeRepetitions(20, 34000), kMinLongRepetitions);
  EXPECT_EQ(sizeRepetitions(3, 34000), 3u); // never more than asked
  EXPECT_EQ(sizeRepetitions(20, 1e6), kMinLongRepetitions);
  EXPECT_EQ(sizeRepetitions(20, 0), 20u);
  EXPECT_EQ(sizeRepetitions(0, -1), 1u);
}

} // namespace

namespace {

TEST(TimingStatsTest, CutsOnlyCandidatesTwiceAsSlowAsTheReference) {
  TimingCut slow = decideTimingCut(2000, 1000, 0, 20);
  EXPECT_TRUE(slow.cut);
  EXPECT_EQ(slow.repetitions, kCutRepetitions);
  EXPECT_DOUBLE_EQ(slow.slowdown, 2.0);

  TimingCut close = decideTimingCut(1999, 1000, 0, 20);
  EXPECT_FALSE(close.cut);
  EXPECT_EQ(close.repetitions, 20u);

  // An incumbent twice as fast as the baseline halves the reference...
  TimingCut behind = decideTimingCut(1000, 1000, 2.0, 20);
  EXPECT_TRUE(behind.cut);
  EXPECT_DOUBLE_EQ(behind.slowdown, 2.0);
  // ...one slower than the baseline does not raise it.
  EXPECT_FALSE(decideTimingCut(1500, 1000, 0.5, 20).cut);

  // Unknown times never cut, nor does a cut that saves nothing.
  EXPECT_FALSE(decideTimingCut(0, 1000, 0, 20).cut);
  EXPECT_FALSE(decideTimingCut(5000, 0, 0, 20).cut);
  TimingCut few = decideTimingCut(5000, 1000, 0, kCutRepetitions);
  EXPECT_FALSE(few.cut);
  EXPECT_EQ(few.repetitions, kCutRepetitions);
}

TEST(TimingStatsTest, ACutCandidateThatMeasuresFasterIsTimedInFull) {
  // Still at least 1.5 times the baseline in the short timing: it stands.
  EXPECT_TRUE(confirmTimingCut(1500, 1000, 0));
  EXPECT_TRUE(confirmTimingCut(30000, 1000, 0));
  // Slow in warm-up, but the timed runs say otherwise: full timing.
  EXPECT_FALSE(confirmTimingCut(1499, 1000, 0));
  EXPECT_FALSE(confirmTimingCut(900, 1000, 0));
  // Against an incumbent 2x faster than the baseline, the reference is
  // 500 us: 760 us stands, 700 us (faster than 1.5x the incumbent) does
  // not.
  EXPECT_TRUE(confirmTimingCut(760, 1000, 2.0));
  EXPECT_FALSE(confirmTimingCut(700, 1000, 2.0));
  // A baseline without a median confirms nothing.
  EXPECT_FALSE(confirmTimingCut(1000, 0, 0));
}

} // namespace
