//===- Comparison.cpp - Output comparison against a reference ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Evaluator/Comparison.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

using namespace kopt::runtime;

namespace {
/// Keeps the K elements with the largest error, ties broken by the smaller
/// index, in a bounded heap whose top is the least bad element kept.
class WorstElements {
public:
  explicit WorstElements(size_t capacity) : capacity(capacity) {}

  void add(const ElementMismatch &element) {
    if (capacity == 0)
      return;
    if (heap.size() < capacity) {
      heap.push_back(element);
      std::push_heap(heap.begin(), heap.end(), isWorse);
      return;
    }
    if (!isWorse(element, heap.front()))
      return;
    std::pop_heap(heap.begin(), heap.end(), isWorse);
    heap.back() = element;
    std::push_heap(heap.begin(), heap.end(), isWorse);
  }

  /// The kept elements, worst first.
  std::vector<ElementMismatch> take() {
    std::sort(heap.begin(), heap.end(), isWorse);
    return std::move(heap);
  }

private:
  /// Strict order: a larger error is worse; equal errors rank by index.
  static bool isWorse(const ElementMismatch &a, const ElementMismatch &b) {
    if (a.absError != b.absError)
      return a.absError > b.absError;
    return a.index < b.index;
  }

  size_t capacity;
  std::vector<ElementMismatch> heap;
};

/// Accumulates a 2-norm with scaling (as LAPACK's dnrm2 does), so squares of
/// huge values do not overflow: the norm is scale * sqrt(sumOfSquares).
class ScaledNorm {
public:
  void add(double value) {
    double magnitude = std::fabs(value);
    if (magnitude == 0.0)
      return;
    if (scale < magnitude) {
      double ratio = scale / magnitude;
      sumOfSquares = 1.0 + sumOfSquares * ratio * ratio;
      scale = magnitude;
    } else {
      double ratio = magnitude / scale;
      sumOfSquares += ratio * ratio;
    }
  }
  double get() const { return scale * std::sqrt(sumOfSquares); }

private:
  double scale = 0.0;
  double sumOfSquares = 0.0;
};
} // namespace

static std::string describeElement(const ElementMismatch &element) {
  std::ostringstream stream;
  stream.precision(9);
  stream << "element " << element.index << ": expected " << element.expected
         << ", got " << element.actual;
  return stream.str();
}

static ComparisonResult sizeMismatch(size_t actual, size_t expected) {
  ComparisonResult result;
  result.numElements = std::min(actual, expected);
  result.relativeError = std::numeric_limits<double>::infinity();
  result.rmsError = std::numeric_limits<double>::infinity();
  result.message = "output has " + std::to_string(actual) +
                   " elements, the reference " + std::to_string(expected);
  return result;
}

ComparisonResult
kopt::runtime::compareValues(const std::vector<double> &actual,
                             const std::vector<double> &expected,
                             const Tolerance &tolerance, size_t maxWorst) {
  if (actual.size() != expected.size())
    return sizeMismatch(actual.size(), expected.size());
  ComparisonResult result;
  result.numElements = actual.size();
  constexpr double infinity = std::numeric_limits<double>::infinity();
  WorstElements worst(maxWorst);
  ScaledNorm errorNorm, referenceNorm;
  uint64_t numFinite = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double out = actual[i], ref = expected[i];
    bool outNaN = std::isnan(out), refNaN = std::isnan(ref);
    if (outNaN || refNaN) {
      if (outNaN != refNaN) {
        ++result.numSpecialMismatches;
        ++result.numDiffering;
        worst.add({i, ref, out, infinity});
      }
      continue;
    }
    if (std::isinf(out) || std::isinf(ref)) {
      if (out != ref) {
        ++result.numSpecialMismatches;
        ++result.numDiffering;
        worst.add({i, ref, out, infinity});
      }
      continue;
    }
    double difference = out - ref;
    double absError = std::fabs(difference);
    ++numFinite;
    errorNorm.add(absError);
    referenceNorm.add(ref);
    if (absError != 0.0) {
      ++result.numDiffering;
      worst.add({i, ref, out, absError});
    }
  }
  double error = errorNorm.get(), reference = referenceNorm.get();
  if (error == 0.0)
    result.relativeError = 0.0;
  else if (reference == 0.0)
    result.relativeError = infinity;
  else
    result.relativeError = error / reference;
  // error / sqrt(n) without squaring `error` (which may be huge).
  result.rmsError = numFinite ? error / std::sqrt(double(numFinite)) : 0.0;
  result.worst = worst.take();

  bool withinTolerance = result.relativeError <= tolerance.relative ||
                         result.rmsError <= tolerance.absolute;
  result.passed = result.numSpecialMismatches == 0 && withinTolerance;
  if (result.passed)
    return result;
  std::ostringstream message;
  message.precision(3);
  if (result.numSpecialMismatches) {
    message << result.numSpecialMismatches
            << " elements disagree on NaN or infinity";
  } else {
    message << "relative error norm " << result.relativeError << " > "
            << tolerance.relative << " and RMS error " << result.rmsError
            << " > " << tolerance.absolute;
  }
  if (!result.worst.empty())
    message << "; worst " << describeElement(result.worst.front());
  result.message = message.str();
  return result;
}

bool ComparisonSums::isConclusive() const {
  return std::isfinite(errorSquares) && std::isfinite(referenceSquares);
}

ComparisonResult
kopt::runtime::judgeComparisonSums(const ComparisonSums &sums, bool integer,
                                   const Tolerance &tolerance) {
  ComparisonResult result;
  result.numElements = sums.numElements;
  result.numSpecialMismatches = sums.numSpecialMismatches;
  result.numDiffering = sums.numDiffering;
  constexpr double infinity = std::numeric_limits<double>::infinity();
  double error = std::sqrt(sums.errorSquares);
  double reference = std::sqrt(sums.referenceSquares);
  if (error == 0.0 && (!integer || sums.numDiffering == 0))
    result.relativeError = 0.0;
  else if (reference == 0.0)
    result.relativeError = infinity;
  else
    result.relativeError = error / reference;
  uint64_t count = integer ? sums.numElements : sums.numFinite;
  result.rmsError = count ? error / std::sqrt(double(count)) : 0.0;
  std::ostringstream message;
  message.precision(3);
  if (integer) {
    result.passed = sums.numDiffering == 0;
    if (!result.passed)
      message << sums.numDiffering
              << " integer elements differ (exact match required)";
  } else {
    bool withinTolerance = result.relativeError <= tolerance.relative ||
                           result.rmsError <= tolerance.absolute;
    result.passed = sums.numSpecialMismatches == 0 && withinTolerance;
    if (sums.numSpecialMismatches)
      message << sums.numSpecialMismatches
              << " elements disagree on NaN or infinity";
    else if (!result.passed)
      message << "relative error norm " << result.relativeError << " > "
              << tolerance.relative << " and RMS error " << result.rmsError
              << " > " << tolerance.absolute;
  }
  result.message = message.str();
  return result;
}

ComparisonResult
kopt::runtime::compareIntegers(const std::vector<int64_t> &actual,
                               const std::vector<int64_t> &expected,
                               size_t maxWorst) {
  if (actual.size() != expected.size())
    return sizeMismatch(actual.size(), expected.size());
  ComparisonResult result;
  result.numElements = actual.size();
  WorstElements worst(maxWorst);
  ScaledNorm errorNorm, referenceNorm;
  for (size_t i = 0; i < actual.size(); ++i) {
    referenceNorm.add(double(expected[i]));
    if (actual[i] == expected[i])
      continue;
    ++result.numDiffering;
    // The difference in double: exact enough for ranking, and no overflow.
    double absError = std::fabs(double(actual[i]) - double(expected[i]));
    errorNorm.add(absError);
    worst.add({i, double(expected[i]), double(actual[i]), absError});
  }
  double error = errorNorm.get(), reference = referenceNorm.get();
  if (result.numDiffering == 0)
    result.relativeError = 0.0;
  else if (reference == 0.0)
    result.relativeError = std::numeric_limits<double>::infinity();
  else
    result.relativeError = error / reference;
  result.rmsError =
      actual.empty() ? 0.0 : error / std::sqrt(double(actual.size()));
  result.worst = worst.take();
  result.passed = result.numDiffering == 0;
  if (!result.passed)
    result.message = std::to_string(result.numDiffering) +
                     " integer elements differ (exact match required); "
                     "worst " +
                     describeElement(result.worst.front());
  return result;
}

ComparisonResult
kopt::runtime::compareOutputBytes(ElementType type,
                                  const std::vector<uint8_t> &actual,
                                  const std::vector<uint8_t> &expected,
                                  const Tolerance &tolerance, size_t maxWorst) {
  if (isFloatType(type))
    return compareValues(decodeElements(type, actual),
                         decodeElements(type, expected), tolerance, maxWorst);
  size_t width = size_t(getElementBytes(type));
  auto decode = [&](const std::vector<uint8_t> &bytes) {
    std::vector<int64_t> values(bytes.size() / width);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = decodeIntegerElement(type, bytes.data() + i * width);
    return values;
  };
  return compareIntegers(decode(actual), decode(expected), maxWorst);
}

RunComparison kopt::runtime::compareRuns(ElementType type,
                                         const std::vector<uint8_t> &first,
                                         const std::vector<uint8_t> &second,
                                         size_t maxReported) {
  RunComparison result;
  size_t width = size_t(getElementBytes(type));
  size_t common = std::min(first.size(), second.size()) / width;
  size_t longest = (std::max(first.size(), second.size()) + width - 1) / width;
  for (size_t i = 0; i < common; ++i) {
    const uint8_t *a = first.data() + i * width;
    const uint8_t *b = second.data() + i * width;
    if (std::memcmp(a, b, width) == 0)
      continue;
    ++result.numDiffering;
    if (result.firstDifferences.size() < maxReported)
      result.firstDifferences.push_back(
          {i, decodeElement(type, a), decodeElement(type, b)});
  }
  result.numDiffering += longest - common;
  result.identical = first == second;
  // Equal sizes that end in a partial element can differ only there.
  if (!result.identical && result.numDiffering == 0)
    result.numDiffering = 1;
  if (result.identical)
    return result;
  std::ostringstream message;
  message.precision(9);
  if (first.size() != second.size())
    message << "runs wrote " << first.size() << " and " << second.size()
            << " bytes; ";
  message << result.numDiffering << " elements differ between two runs";
  if (!result.firstDifferences.empty()) {
    const RunDifference &difference = result.firstDifferences.front();
    message << "; first at element " << difference.index << ": "
            << difference.first << " then " << difference.second;
  }
  result.message = message.str();
  return result;
}
