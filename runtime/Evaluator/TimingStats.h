//===- TimingStats.h - Statistics and schedules of timed runs ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The arithmetic of the timing protocol (docs/Design.md "Evaluator", "Timing
// protocol"): the median of at least 20 repetitions (5 for a candidate
// that cannot win, the timing cut) is reported with the
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

/// A variant whose runs are long needs fewer of them for the same
/// confidence: `requested` runs are cut down to enough for this much kernel
/// time...
constexpr double kLongTimedUs = 100000;
/// ...but to no fewer than these (a 20 ms GEMM is timed 5 times, 100 ms).
constexpr unsigned kMinLongRepetitions = 5;

/// The timed repetitions for a variant whose untimed run takes `runUs`
/// microseconds (the slowest variant's, measured during warm-up): enough
/// for `kTargetTimedUs` of kernel time, at most `kMaxSizedRepetitions`, and
/// not fewer than `requested` (at least 1) unless `requested` runs would
/// take more than `kLongTimedUs`: then enough for `kLongTimedUs`, at least
/// `kMinLongRepetitions`. An unknown `runUs` (0 or less) gives `requested`.
unsigned sizeRepetitions(unsigned requested, double runUs);

/// The timing cut (docs/Evaluator.md, "Timing a candidate that cannot
/// win"): a candidate whose warm-up runs take at least `kCutSlowdown` times
/// the reference's is timed `kCutRepetitions` times, beside the baseline,
/// instead of the full repetitions...
constexpr double kCutSlowdown = 2.0;
constexpr unsigned kCutRepetitions = 5;
/// ...and keeps that short timing only when its median is still at least
/// `kCutConfirmSlowdown` times the reference's; otherwise it is timed in
/// full.
constexpr double kCutConfirmSlowdown = 1.5;

/// The time a candidate must come near to have a chance of winning: the
/// baseline's `baselineUs`, or, when a candidate of the task already ran
/// `incumbentSpeedup` times faster than the baseline (more than 1), the
/// time that speedup gives against this baseline.
double getCutReferenceUs(double baselineUs, double incumbentSpeedup);

/// What the warm-up decides about a candidate's timing.
struct TimingCut {
  /// Timed `kCutRepetitions` times instead of the full repetitions.
  bool cut = false;
  /// The timed repetitions it gets for now.
  unsigned repetitions = 0;
  /// Its run time over the reference's (`getCutReferenceUs`); 0 when a
  /// time is unknown.
  double slowdown = 0;
};

/// The timing of a candidate whose warm-up run took `candidateRunUs`
/// against the baseline's `baselineRunUs`, when the variants would get
/// `fullRepetitions`: cut when it is at least `kCutSlowdown` times slower
/// than the reference and the cut saves repetitions; unknown times (0 or
/// less) never cut.
TimingCut decideTimingCut(double candidateRunUs, double baselineRunUs,
                          double incumbentSpeedup, unsigned fullRepetitions);

/// Whether a cut stands after the short timing: the candidate's median
/// `candidateMedianUs` is still at least `kCutConfirmSlowdown` times the
/// reference (from the baseline's median `baselineMedianUs`). When it is
/// not, the short timing does not show that it cannot win, and it is timed
/// in full.
bool confirmTimingCut(double candidateMedianUs, double baselineMedianUs,
                      double incumbentSpeedup);

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
