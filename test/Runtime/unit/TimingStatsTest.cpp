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
  // Never fewer than asked for, even above the cap; unknown times change
  // nothing.
  EXPECT_EQ(sizeRepetitions(500, 1), 500u);
  EXPECT_EQ(sizeRepetitions(20, 0), 20u);
  EXPECT_EQ(sizeRepetitions(0, -1), 1u);
}

} // namespace
