//===- TimingStats.cpp - Statistics and schedules of timed runs -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/TimingStats.h"

#include <algorithm>
#include <cmath>

using namespace kopt::runtime;

double kopt::runtime::quantileOfSorted(const std::vector<double> &sorted,
                                       double q) {
  if (sorted.empty())
    return 0.0;
  q = std::min(1.0, std::max(0.0, q));
  double position = q * double(sorted.size() - 1);
  size_t below = size_t(std::floor(position));
  size_t above = std::min(below + 1, sorted.size() - 1);
  double fraction = position - double(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

TimingSummary kopt::runtime::summarizeTimes(std::vector<double> times) {
  TimingSummary summary;
  if (times.empty())
    return summary;
  std::sort(times.begin(), times.end());
  summary.count = times.size();
  summary.min = times.front();
  summary.max = times.back();
  double sum = 0.0;
  for (double time : times)
    sum += time;
  summary.mean = sum / double(times.size());
  summary.median = quantileOfSorted(times, 0.5);
  summary.p10 = quantileOfSorted(times, 0.1);
  summary.p90 = quantileOfSorted(times, 0.9);
  if (summary.median != 0.0)
    summary.relativeSpread = (summary.p90 - summary.p10) / summary.median;
  return summary;
}

std::vector<ScheduledRun>
kopt::runtime::makeInterleavedSchedule(unsigned numCandidates,
                                       unsigned repetitions) {
  unsigned numVariants = numCandidates + 1;
  std::vector<ScheduledRun> schedule;
  schedule.reserve(size_t(numVariants) * repetitions);
  for (unsigned round = 0; round < repetitions; ++round)
    for (unsigned slot = 0; slot < numVariants; ++slot)
      schedule.push_back({(round + slot) % numVariants, round});
  return schedule;
}

unsigned kopt::runtime::sizeRepetitions(unsigned requested, double runUs) {
  requested = std::max(1u, requested);
  if (!(runUs > 0))
    return requested;
  double wanted = std::ceil(kTargetTimedUs / runUs);
  unsigned sized = wanted >= double(kMaxSizedRepetitions) ? kMaxSizedRepetitions
                                                          : unsigned(wanted);
  if (runUs * double(requested) > kLongTimedUs) {
    // Long runs: the kernel time, not the count, gives the confidence.
    double enough = std::ceil(kLongTimedUs / runUs);
    return std::max(
        std::min(requested, kMinLongRepetitions),
        std::min(requested,
                 unsigned(std::max(enough, double(kMinLongRepetitions)))));
  }
  return std::max(requested, sized);
}

double kopt::runtime::getCutReferenceUs(double baselineUs,
                                        double incumbentSpeedup) {
  return incumbentSpeedup > 1 ? baselineUs / incumbentSpeedup : baselineUs;
}

TimingCut kopt::runtime::decideTimingCut(double candidateRunUs,
                                         double baselineRunUs,
                                         double incumbentSpeedup,
                                         unsigned fullRepetitions) {
  TimingCut decision;
  decision.repetitions = fullRepetitions;
  double reference = getCutReferenceUs(baselineRunUs, incumbentSpeedup);
  if (!(candidateRunUs > 0) || !(reference > 0))
    return decision;
  decision.slowdown = candidateRunUs / reference;
  if (decision.slowdown >= kCutSlowdown && fullRepetitions > kCutRepetitions) {
    decision.cut = true;
    decision.repetitions = kCutRepetitions;
  }
  return decision;
}

bool kopt::runtime::confirmTimingCut(double candidateMedianUs,
                                     double baselineMedianUs,
                                     double incumbentSpeedup) {
  double reference = getCutReferenceUs(baselineMedianUs, incumbentSpeedup);
  return reference > 0 && candidateMedianUs >= kCutConfirmSlowdown * reference;
}
