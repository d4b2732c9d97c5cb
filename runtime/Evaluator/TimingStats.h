//===- TimingStats.h - Statistics and schedules of timed runs ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The arithmetic of the timing protocol (docs/Design.md "Evaluator", "Timing
// protocol"): the median of at least 20 repetitions is reported with the
// minimum and the p10/p90 quantiles, and the relative spread (p90 - p10) /
// median says how noisy the measurement was. Baseline and candidates are timed
// interleaved, one repetition of each per round, so clock and thermal drift hit
// all of them alike; the order within a round rotates so that no variant always
// runs first (right after the L2 flush) or after the same neighbour.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_EVALUATOR_TIMINGSTATS_H
#define KOPT_RUNTIME_EVALUATOR_TIMINGSTATS_H

#include <cstddef>
#include <vector>

namespace kopt::runtime {

/// The fewest timed repetitions per variant.
constexpr unsigned kMinTimedRepetitions = 20;

/// Timed repetitions are sized so that each variant's timed runs add up to
/// about this much kernel time (docs/Evaluator.md, "The evaluation
/// engine"): a 30 us kernel gets more repetitions than a 3 ms one...
constexpr double kTargetTimedUs = 5000;
/// ...but never more than this many.
constexpr unsigned kMaxSizedRepetitions = 200;

/// The timed repetitions for a variant whose untimed run takes `runUs`
/// microseconds (the slowest variant's, measured during warm-up): enough
/// for `kTargetTimedUs` of kernel time, at most `kMaxSizedRepetitions`, and
/// never fewer than `requested` (at least 1). An unknown `runUs` (0 or
/// less) gives `requested`.
unsigned sizeRepetitions(unsigned requested, double runUs);

/// A summary of one variant's times (all in the unit of the input).
struct TimingSummary {
  /// Times summarised; the other fields are 0 when it is 0.
  size_t count = 0;
  double min = 0.0;
  double max = 0.0;
  double mean = 0.0;
  double median = 0.0;
  double p10 = 0.0;
  double p90 = 0.0;
  /// (p90 - p10) / median (0 when the median is 0).
  double relativeSpread = 0.0;
};

/// The `q` quantile (0 <= q <= 1) of `sorted` (ascending, not empty), by
/// linear interpolation between the closest ranks: position q * (n - 1).
double quantileOfSorted(const std::vector<double> &sorted, double q);

/// Summarises `times` (any order).
TimingSummary summarizeTimes(std::vector<double> times);

/// One run in an interleaved schedule.
struct ScheduledRun {
  /// 0 for the baseline, 1..K for the candidates.
  unsigned variant = 0;
  /// The round, 0..R-1: the run is the variant's `round`-th repetition.
  unsigned round = 0;
};

/// The order in which to time a baseline and `numCandidates` candidates,
/// `repetitions` times each: R rounds, each running every variant once,
/// round r starting at variant r mod (K + 1).
std::vector<ScheduledRun> makeInterleavedSchedule(unsigned numCandidates,
                                                  unsigned repetitions);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_EVALUATOR_TIMINGSTATS_H
