//===- Comparison.h - Output comparison against a reference -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Decides whether a candidate's output matches the reference (docs/Design.md
// "Evaluator", points 2, 3, 5 and 7) and keeps the evidence the proposer is
// shown when it does not.
//
// Float outputs pass when every special value agrees and
//
//   ||out - ref||_2 / ||ref||_2 <= relative   or   rms(out - ref) <= absolute
//
// over the elements where both are finite; the absolute floor covers outputs
// near cancellation, whose reference norm is tiny. A NaN where the reference
// is a number (or a number where it is NaN) is a mismatch; NaN against NaN is
// fine; infinities must match exactly, sign included. Integer outputs (and
// i1) must match exactly. The norms are accumulated with scaling, so huge
// values do not overflow them.
//
// `compareRuns` checks determinism: two runs on the same inputs must agree
// bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_EVALUATOR_COMPARISON_H
#define KOPT_RUNTIME_EVALUATOR_COMPARISON_H

#include "kopt/Runtime/Evaluator/ElementCodec.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kopt::runtime {

// `Tolerance` (relative error norm bound, RMS absolute floor) is the task's,
// from kopt/Runtime/TaskPlan.h.

/// The elements reported as evidence by default.
constexpr size_t kDefaultWorstElements = 8;

/// One element of an output, as evidence of a mismatch.
struct ElementMismatch {
  /// Row-major linear index into the output.
  uint64_t index = 0;
  /// The reference value.
  double expected = 0.0;
  /// The candidate's value.
  double actual = 0.0;
  /// |actual - expected|; infinity where a NaN or infinity disagrees.
  double absError = 0.0;
};

/// The verdict on one output.
struct ComparisonResult {
  /// True when the output matches within the tolerance.
  bool passed = false;
  /// ||out - ref|| / ||ref|| over the finite pairs (0 when both norms are 0,
  /// infinity when only the reference norm is).
  double relativeError = 0.0;
  /// RMS of |out - ref| over the finite pairs.
  double rmsError = 0.0;
  /// Elements compared.
  uint64_t numElements = 0;
  /// Elements whose NaN or infinity disagrees with the reference.
  uint64_t numSpecialMismatches = 0;
  /// Elements that differ at all (for integers: the mismatches).
  uint64_t numDiffering = 0;
  /// Up to K differing elements, largest error first (special mismatches
  /// first of all, then by index).
  std::vector<ElementMismatch> worst;
  /// One line saying why the output failed; empty when it passed.
  std::string message;
};

/// The reductions a comparison's verdict rests on, as a parallel pass over
/// the device computes them (DeviceChecks): plain sums of squares instead of
/// `compareValues`'s scaled norms, so they can overflow for outputs near
/// the double range; `isConclusive` says when they did not.
struct ComparisonSums {
  uint64_t numElements = 0;
  uint64_t numSpecialMismatches = 0;
  uint64_t numDiffering = 0;
  /// Pairs where both elements are finite (float types only).
  uint64_t numFinite = 0;
  /// Sums over the finite pairs of (out - ref)^2 and of ref^2.
  double errorSquares = 0.0;
  double referenceSquares = 0.0;

  bool isConclusive() const;
};

/// The verdict `compareValues` (`integer` false) or `compareIntegers` would
/// give, from `sums` alone: no worst elements, and a message only on
/// failure. Valid when `sums.isConclusive()`.
ComparisonResult judgeComparisonSums(const ComparisonSums &sums, bool integer,
                                     const Tolerance &tolerance);

/// Compares float output `actual` with reference `expected` under
/// `tolerance`, keeping the `maxWorst` worst elements.
ComparisonResult compareValues(const std::vector<double> &actual,
                               const std::vector<double> &expected,
                               const Tolerance &tolerance,
                               size_t maxWorst = kDefaultWorstElements);

/// Compares integer outputs exactly.
ComparisonResult compareIntegers(const std::vector<int64_t> &actual,
                                 const std::vector<int64_t> &expected,
                                 size_t maxWorst = kDefaultWorstElements);

/// Compares raw output bytes of `type`: integer types exactly (as integers,
/// so i64 beyond 2^53 too), float types through `compareValues`.
ComparisonResult compareOutputBytes(ElementType type,
                                    const std::vector<uint8_t> &actual,
                                    const std::vector<uint8_t> &expected,
                                    const Tolerance &tolerance,
                                    size_t maxWorst = kDefaultWorstElements);

/// One element where two runs differ.
struct RunDifference {
  /// Row-major linear index.
  uint64_t index = 0;
  /// The element in the first and in the second run, decoded.
  double first = 0.0;
  double second = 0.0;
};

/// The verdict on two runs of the same inputs.
struct RunComparison {
  /// True when the two runs are bitwise equal.
  bool identical = false;
  /// Elements whose bytes differ (a size mismatch counts every element of
  /// the longer run past the shorter one).
  uint64_t numDiffering = 0;
  /// The first differing elements, by index.
  std::vector<RunDifference> firstDifferences;
  /// One line saying how the runs differ; empty when identical.
  std::string message;
};

/// Compares two runs' output bytes of `type` bit for bit, reporting the first
/// `maxReported` differing elements.
RunComparison compareRuns(ElementType type, const std::vector<uint8_t> &first,
                          const std::vector<uint8_t> &second,
                          size_t maxReported = kDefaultWorstElements);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_EVALUATOR_COMPARISON_H
