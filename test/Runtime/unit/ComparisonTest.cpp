//===- ComparisonTest.cpp - Tests of output comparison ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Evaluator/Comparison.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace kopt::runtime;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

Tolerance relativeOnly(double relative) { return Tolerance{relative, 0.0}; }

TEST(ComparisonTest, RelativeErrorNormAtTheBoundary) {
  // ||ref|| = 5 and ||out - ref|| = 0.5, exactly: relative error 0.1.
  std::vector<double> expected = {3.0, 4.0};
  std::vector<double> actual = {3.0, 4.5};
  ComparisonResult atBound = compareValues(actual, expected, relativeOnly(0.1));
  EXPECT_TRUE(atBound.passed) << atBound.message;
  EXPECT_EQ(atBound.relativeError, 0.1);
  EXPECT_TRUE(atBound.message.empty());
  ComparisonResult belowBound =
      compareValues(actual, expected, relativeOnly(0.0999));
  EXPECT_FALSE(belowBound.passed);
  EXPECT_NE(belowBound.message.find("relative error norm"), std::string::npos)
      << belowBound.message;
}

TEST(ComparisonTest, ExactOutputsPass) {
  std::vector<double> values = {1.0, -2.0, 0.0, 1e30};
  ComparisonResult result = compareValues(values, values, relativeOnly(0.0));
  EXPECT_TRUE(result.passed);
  EXPECT_EQ(result.relativeError, 0.0);
  EXPECT_EQ(result.numDiffering, 0u);
  EXPECT_TRUE(result.worst.empty());
}

TEST(ComparisonTest, AbsoluteFloorCoversCancellation) {
  // The reference is almost zero: the relative error is 100%, but the RMS
  // error is 1e-9.
  std::vector<double> expected = {1e-9, -1e-9};
  std::vector<double> actual = {2e-9, -2e-9};
  EXPECT_FALSE(compareValues(actual, expected, Tolerance{1e-5, 1e-10}).passed);
  ComparisonResult result =
      compareValues(actual, expected, Tolerance{1e-5, 1e-8});
  EXPECT_TRUE(result.passed);
  EXPECT_NEAR(result.relativeError, 1.0, 1e-12);
  EXPECT_NEAR(result.rmsError, 1e-9, 1e-20);
  // A zero reference with any error has an infinite relative error.
  EXPECT_EQ(compareValues({1e-3}, {0.0}, relativeOnly(1.0)).relativeError,
            kInf);
}

TEST(ComparisonTest, HugeValuesDoNotOverflowTheNorms) {
  std::vector<double> expected = {1e300, 1e300};
  std::vector<double> actual = {1e300, 1.0000001e300};
  ComparisonResult result = compareValues(actual, expected, relativeOnly(1e-6));
  EXPECT_TRUE(std::isfinite(result.relativeError));
  EXPECT_NEAR(result.relativeError, 1e-7 / std::sqrt(2.0), 1e-12);
  EXPECT_TRUE(result.passed);
}

TEST(ComparisonTest, NaNRules) {
  Tolerance loose{1.0, 1.0};
  ComparisonResult outNaN = compareValues({1.0, kNaN}, {1.0, 2.0}, loose);
  EXPECT_FALSE(outNaN.passed);
  EXPECT_EQ(outNaN.numSpecialMismatches, 1u);
  ASSERT_EQ(outNaN.worst.size(), 1u);
  EXPECT_EQ(outNaN.worst[0].index, 1u);
  EXPECT_EQ(outNaN.worst[0].absError, kInf);
  EXPECT_NE(outNaN.message.find("NaN"), std::string::npos);

  EXPECT_FALSE(compareValues({1.0, 2.0}, {1.0, kNaN}, loose).passed);
  ComparisonResult both = compareValues({kNaN, 2.0}, {kNaN, 2.0}, loose);
  EXPECT_TRUE(both.passed);
  EXPECT_EQ(both.numDiffering, 0u);
}

TEST(ComparisonTest, InfinitiesMustMatchExactly) {
  Tolerance loose{1.0, 1.0};
  EXPECT_TRUE(compareValues({kInf, -kInf}, {kInf, -kInf}, loose).passed);
  EXPECT_FALSE(compareValues({kInf}, {-kInf}, loose).passed);
  EXPECT_FALSE(compareValues({1e308}, {kInf}, loose).passed);
  ComparisonResult finiteRef = compareValues({kInf}, {1e308}, loose);
  EXPECT_FALSE(finiteRef.passed);
  EXPECT_EQ(finiteRef.numSpecialMismatches, 1u);
  EXPECT_FALSE(compareValues({kNaN}, {kInf}, loose).passed);
}

TEST(ComparisonTest, WorstElementsComeLargestErrorFirst) {
  std::vector<double> expected(10, 1.0);
  std::vector<double> actual = expected;
  actual[2] = 1.5;  // error 0.5
  actual[7] = 4.0;  // error 3
  actual[4] = 0.0;  // error 1
  actual[9] = 2.0;  // error 1, later index
  actual[5] = kNaN; // special: worst of all
  ComparisonResult result =
      compareValues(actual, expected, relativeOnly(1e-5), 4);
  EXPECT_EQ(result.numDiffering, 5u);
  ASSERT_EQ(result.worst.size(), 4u);
  EXPECT_EQ(result.worst[0].index, 5u);
  EXPECT_EQ(result.worst[1].index, 7u);
  EXPECT_EQ(result.worst[1].expected, 1.0);
  EXPECT_EQ(result.worst[1].actual, 4.0);
  EXPECT_EQ(result.worst[1].absError, 3.0);
  EXPECT_EQ(result.worst[2].index, 4u);
  EXPECT_EQ(result.worst[3].index, 9u);
  EXPECT_NE(result.message.find("element 5"), std::string::npos)
      << result.message;
}

TEST(ComparisonTest, SizeMismatchFails) {
  ComparisonResult result = compareValues({1.0}, {1.0, 2.0}, Tolerance{});
  EXPECT_FALSE(result.passed);
  EXPECT_FALSE(result.message.empty());
}

TEST(ComparisonTest, IntegersMustMatchExactly) {
  std::vector<int64_t> expected = {1, 2, 3, 4};
  EXPECT_TRUE(compareIntegers(expected, expected).passed);
  std::vector<int64_t> actual = {1, 2, 4, 4};
  ComparisonResult result = compareIntegers(actual, expected);
  EXPECT_FALSE(result.passed);
  EXPECT_EQ(result.numDiffering, 1u);
  ASSERT_EQ(result.worst.size(), 1u);
  EXPECT_EQ(result.worst[0].index, 2u);

  // Through bytes: an off-by-one i32 fails whatever the tolerance, and i64
  // values beyond 2^53 are compared exactly.
  Tolerance loose{1.0, 1e9};
  std::vector<double> ref = {100, 200};
  std::vector<double> out = {100, 201};
  EXPECT_FALSE(compareOutputBytes(ElementType::I32,
                                  encodeElements(ElementType::I32, out),
                                  encodeElements(ElementType::I32, ref), loose)
                   .passed);
  int64_t big = int64_t(1) << 53;
  std::vector<uint8_t> a(8), b(8);
  int64_t bigPlusOne = big + 1;
  std::memcpy(a.data(), &big, 8);
  std::memcpy(b.data(), &bigPlusOne, 8);
  EXPECT_FALSE(compareOutputBytes(ElementType::I64, a, b, loose).passed);
  EXPECT_TRUE(compareOutputBytes(ElementType::I64, a, a, loose).passed);
  // A non-canonical bool (2) is not the reference's 1.
  EXPECT_FALSE(
      compareOutputBytes(ElementType::I1, {1, 2}, {1, 1}, loose).passed);
}

TEST(ComparisonTest, FloatBytesUseTheTolerance) {
  std::vector<double> ref = {1.0, 2.0, 3.0};
  std::vector<double> out = {1.0, 2.0, 3.001953125}; // One f16 ulp at 3.
  std::vector<uint8_t> refBytes = encodeElements(ElementType::F16, ref);
  std::vector<uint8_t> outBytes = encodeElements(ElementType::F16, out);
  EXPECT_TRUE(compareOutputBytes(ElementType::F16, outBytes, refBytes,
                                 relativeOnly(1e-3))
                  .passed);
  EXPECT_FALSE(compareOutputBytes(ElementType::F16, outBytes, refBytes,
                                  relativeOnly(1e-4))
                   .passed);
}

TEST(ComparisonTest, RunsMustBeBitwiseEqual) {
  std::vector<double> values = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<uint8_t> first = encodeElements(ElementType::F32, values);
  RunComparison same = compareRuns(ElementType::F32, first, first);
  EXPECT_TRUE(same.identical);
  EXPECT_TRUE(same.message.empty());

  std::vector<uint8_t> second = first;
  second[5 * 4] ^= 1;        // Lowest mantissa bit of element 5.
  second[7 * 4 + 3] ^= 0x80; // Sign of element 7.
  RunComparison different = compareRuns(ElementType::F32, first, second, 1);
  EXPECT_FALSE(different.identical);
  EXPECT_EQ(different.numDiffering, 2u);
  ASSERT_EQ(different.firstDifferences.size(), 1u);
  EXPECT_EQ(different.firstDifferences[0].index, 5u);
  EXPECT_EQ(different.firstDifferences[0].first, 6.0);
  EXPECT_NE(different.firstDifferences[0].second, 6.0);
  EXPECT_NE(different.message.find("element 5"), std::string::npos)
      << different.message;

  // Two NaNs with different payloads are different bits.
  std::vector<uint8_t> nanA = encodeElements(ElementType::F32, {kNaN});
  std::vector<uint8_t> nanB = nanA;
  nanB[0] ^= 1;
  EXPECT_FALSE(compareRuns(ElementType::F32, nanA, nanB).identical);

  std::vector<uint8_t> shorter(first.begin(), first.end() - 4);
  RunComparison truncated = compareRuns(ElementType::F32, first, shorter);
  EXPECT_FALSE(truncated.identical);
  EXPECT_EQ(truncated.numDiffering, 1u);
}

/// The sums the device comparison would reduce to, computed here.
ComparisonSums sumUp(const std::vector<double> &actual,
                     const std::vector<double> &expected) {
  ComparisonSums sums;
  sums.numElements = actual.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    double out = actual[i], ref = expected[i];
    if (std::isnan(out) || std::isnan(ref) || std::isinf(out) ||
        std::isinf(ref)) {
      bool agree = (std::isnan(out) && std::isnan(ref)) || out == ref;
      sums.numSpecialMismatches += !agree;
      sums.numDiffering += !agree;
      continue;
    }
    ++sums.numFinite;
    sums.numDiffering += out != ref;
    sums.errorSquares += (out - ref) * (out - ref);
    sums.referenceSquares += ref * ref;
  }
  return sums;
}

TEST(ComparisonTest, SumsGiveTheSameVerdictAsTheFullComparison) {
  Tolerance tolerance;
  std::vector<double> expected = {1.0, -2.0, 3.0, 0.5, 100.0};
  std::vector<std::vector<double>> cases = {
      expected,
      {1.0, -2.0, 3.0, 0.5, 100.0 + 1e-5},
      {1.0, -2.0, 3.1, 0.5, 100.0},
      {1.0, std::nan(""), 3.0, 0.5, 100.0},
      {1.0, -2.0, 3.0, 0.5, std::numeric_limits<double>::infinity()}};
  for (const std::vector<double> &actual : cases) {
    ComparisonResult full = compareValues(actual, expected, tolerance);
    ComparisonSums sums = sumUp(actual, expected);
    ASSERT_TRUE(sums.isConclusive());
    ComparisonResult judged = judgeComparisonSums(sums, false, tolerance);
    EXPECT_EQ(judged.passed, full.passed);
    EXPECT_EQ(judged.numSpecialMismatches, full.numSpecialMismatches);
    EXPECT_EQ(judged.numDiffering, full.numDiffering);
    EXPECT_NEAR(judged.relativeError, full.relativeError,
                1e-12 * (1 + full.relativeError));
    EXPECT_EQ(judged.message.empty(), full.passed);
  }
  // Zero reference, non-zero error: infinitely wrong.
  ComparisonSums zero = sumUp({1e-3}, {0.0});
  EXPECT_EQ(judgeComparisonSums(zero, false, tolerance).relativeError,
            std::numeric_limits<double>::infinity());
  // Overflowed sums are not conclusive: the host must decide.
  ComparisonSums huge = sumUp({1e200}, {-1e200});
  EXPECT_FALSE(huge.isConclusive());
}

TEST(ComparisonTest, IntegerSumsRequireExactMatch) {
  Tolerance tolerance;
  ComparisonSums same;
  same.numElements = 4;
  same.referenceSquares = 30;
  EXPECT_TRUE(judgeComparisonSums(same, true, tolerance).passed);
  ComparisonSums off = same;
  off.numDiffering = 1;
  off.errorSquares = 1;
  ComparisonResult verdict = judgeComparisonSums(off, true, tolerance);
  EXPECT_FALSE(verdict.passed);
  EXPECT_NE(verdict.message.find("1 integer elements differ"),
            std::string::npos);
}

} // namespace
