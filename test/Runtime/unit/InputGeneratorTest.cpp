//===- InputGeneratorTest.cpp - Tests of validation inputs ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Evaluator/InputGenerator.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <set>

using namespace kopt::runtime;

namespace {

struct Moments {
  double mean = 0.0;
  double stddev = 0.0;
};

Moments getMoments(const std::vector<double> &values) {
  Moments moments;
  for (double value : values)
    moments.mean += value;
  moments.mean /= double(values.size());
  double sum = 0.0;
  for (double value : values)
    sum += (value - moments.mean) * (value - moments.mean);
  moments.stddev = std::sqrt(sum / double(values.size() - 1));
  return moments;
}

constexpr uint64_t kCount = 100000;

TEST(InputGeneratorTest, DistributionsCycle) {
  std::vector<InputDistribution> five = getValidationDistributions(5);
  ASSERT_EQ(five.size(), 5u);
  EXPECT_EQ(five[0], InputDistribution::StandardNormal);
  EXPECT_EQ(five[1], InputDistribution::LargeMeanSmallSpread);
  EXPECT_EQ(five[2], InputDistribution::WideDynamicRange);
  EXPECT_EQ(five[3], InputDistribution::SmallIntegers);
  EXPECT_EQ(five[4], InputDistribution::StandardNormal);
  std::vector<InputDistribution> eight = getValidationDistributions(8);
  for (unsigned i = 0; i < 4; ++i)
    EXPECT_EQ(eight[i], eight[i + 4]);
  EXPECT_GE(kMinValidationSets, 5u);
  EXPECT_STREQ(getDistributionName(InputDistribution::WideDynamicRange),
               "wide-range");
}

TEST(InputGeneratorTest, SameSeedSameBytes) {
  TensorSpec tensor{"in0", ElementType::F32, {64, 33}};
  for (InputDistribution distribution : getValidationDistributions(4)) {
    std::vector<uint8_t> a = generateTensorData(tensor, distribution, 42);
    std::vector<uint8_t> b = generateTensorData(tensor, distribution, 42);
    std::vector<uint8_t> c = generateTensorData(tensor, distribution, 43);
    EXPECT_EQ(int64_t(a.size()), *tensor.getBytes());
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
  }
}

TEST(InputGeneratorTest, StandardNormalMoments) {
  Moments moments = getMoments(generateValues(
      ElementType::F64, kCount, InputDistribution::StandardNormal, 1));
  EXPECT_NEAR(moments.mean, 0.0, 0.02);
  EXPECT_NEAR(moments.stddev, 1.0, 0.02);
}

TEST(InputGeneratorTest, LargeMeanSmallSpreadMoments) {
  Moments f32 = getMoments(generateValues(
      ElementType::F32, kCount, InputDistribution::LargeMeanSmallSpread, 2));
  EXPECT_NEAR(f32.mean, 1000.0, 1e-3);
  EXPECT_NEAR(f32.stddev, 1e-2, 5e-4);
  // In f16 the spread widens to four ulps at 1000 (0.5 each), so the values
  // are not all equal.
  Moments f16 = getMoments(generateValues(
      ElementType::F16, kCount, InputDistribution::LargeMeanSmallSpread, 3));
  EXPECT_NEAR(f16.mean, 1000.0, 0.05);
  EXPECT_NEAR(f16.stddev, 2.0, 0.1);
}

TEST(InputGeneratorTest, WideDynamicRangeSpansElevenDecades) {
  std::vector<double> values = generateValues(
      ElementType::F64, kCount, InputDistribution::WideDynamicRange, 4);
  std::vector<double> exponents;
  size_t negative = 0;
  for (double value : values) {
    negative += value < 0;
    exponents.push_back(std::log2(std::fabs(value)));
  }
  Moments moments = getMoments(exponents);
  // Binary exponents uniform in [-19, 19), significands in [1, 2): log2 is
  // roughly uniform on [-19, 19], standard deviation 38 / sqrt(12).
  EXPECT_NEAR(moments.mean, 0.0, 0.1);
  EXPECT_NEAR(moments.stddev, 38.0 / std::sqrt(12.0), 0.1);
  EXPECT_NEAR(double(negative) / kCount, 0.5, 0.01);
  for (double exponent : exponents) {
    ASSERT_GE(exponent, -19.0);
    ASSERT_LT(exponent, 19.0);
  }
  // f16 keeps within its range (and off subnormals' worst precision).
  for (double value : generateValues(ElementType::F16, 10000,
                                     InputDistribution::WideDynamicRange, 5)) {
    ASSERT_TRUE(std::isfinite(value));
    ASSERT_LE(std::fabs(value), 16384.0);
    ASSERT_GE(std::fabs(value), std::ldexp(1.0, -13));
  }
}

TEST(InputGeneratorTest, ElementsDependOnlyOnSeedAndIndex) {
  // Any element can be drawn alone: the device draws them in parallel.
  for (InputDistribution distribution : getValidationDistributions(4)) {
    std::vector<double> values =
        generateValues(ElementType::F32, 257, distribution, 77);
    for (uint64_t i : {0, 1, 100, 256})
      EXPECT_EQ(values[i], drawValue(ElementType::F32, distribution, 77, i));
  }
  EXPECT_NE(drawBits(1, 0, 0), drawBits(1, 0, 1));
  EXPECT_NE(drawBits(1, 0, 0), drawBits(2, 0, 0));
  EXPECT_NE(drawBits(1, 0, 0), drawBits(1, 1, 0));
}

TEST(InputGeneratorTest, DrawValuesGivesDrawValueBitForBit) {
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < 20000; ++i)
    indices.push_back(i);
  for (int64_t i :
       {int64_t(1) << 31, (int64_t(1) << 40) + 7, (int64_t(1) << 62) - 1})
    indices.push_back(i);
  for (ElementType type : getAllElementTypes()) {
    for (InputDistribution distribution : getValidationDistributions(4)) {
      std::vector<double> values(indices.size());
      drawValues(type, distribution, 1234, indices.data(), indices.size(),
                 values.data());
      for (size_t i = 0; i < indices.size(); ++i) {
        double expected =
            drawValue(type, distribution, 1234, uint64_t(indices[i]));
        ASSERT_EQ(std::memcmp(&values[i], &expected, sizeof(double)), 0)
            << stringifyElementType(type) << " "
            << getDistributionName(distribution) << " index " << indices[i]
            << ": " << values[i] << " != " << expected;
      }
    }
  }
}

TEST(InputGeneratorTest, SmallIntegersAreExactInEveryFloatType) {
  for (ElementType type : {ElementType::F16, ElementType::BF16,
                           ElementType::F32, ElementType::F64}) {
    std::vector<double> values =
        generateValues(type, 10000, InputDistribution::SmallIntegers, 6);
    std::set<double> seen(values.begin(), values.end());
    EXPECT_EQ(seen.size(), 17u) << stringifyElementType(type);
    EXPECT_EQ(*seen.begin(), -8.0);
    EXPECT_EQ(*seen.rbegin(), 8.0);
    EXPECT_NEAR(getMoments(values).mean, 0.0, 0.15);
  }
}

TEST(InputGeneratorTest, ValuesAreAlreadyRoundedToTheType) {
  for (ElementType type : getAllElementTypes()) {
    for (InputDistribution distribution : getValidationDistributions(4)) {
      std::vector<double> values = generateValues(type, 1000, distribution, 9);
      EXPECT_EQ(decodeElements(type, encodeElements(type, values)), values)
          << stringifyElementType(type) << " "
          << getDistributionName(distribution);
    }
  }
}

TEST(InputGeneratorTest, IntegerTensorsStayInASafeRange) {
  struct Case {
    ElementType type;
    double bound;
  } cases[] = {{ElementType::I8, 8},
               {ElementType::I16, 16},
               {ElementType::I32, 1000},
               {ElementType::I64, 1000}};
  for (const Case &c : cases) {
    std::vector<double> values =
        generateValues(c.type, 20000, InputDistribution::WideDynamicRange, 10);
    std::set<double> seen(values.begin(), values.end());
    EXPECT_EQ(*seen.begin(), -c.bound) << stringifyElementType(c.type);
    EXPECT_EQ(*seen.rbegin(), c.bound) << stringifyElementType(c.type);
  }
  std::vector<double> bools = generateValues(
      ElementType::I1, 20000, InputDistribution::SmallIntegers, 11);
  double ones = 0;
  for (double value : bools) {
    ASSERT_TRUE(value == 0.0 || value == 1.0);
    ones += value;
  }
  EXPECT_NEAR(ones / 20000, 0.5, 0.02);
}

TEST(InputGeneratorTest, InputSetUsesOneStreamPerTensor) {
  std::vector<TensorSpec> inputs = {{"in0", ElementType::F32, {16, 16}},
                                    {"in1", ElementType::F32, {16, 16}},
                                    {"in2", ElementType::I1, {7}}};
  std::vector<std::vector<uint8_t>> set =
      generateInputSet(inputs, InputDistribution::StandardNormal, 5);
  ASSERT_EQ(set.size(), 3u);
  EXPECT_EQ(set[0].size(), 1024u);
  EXPECT_EQ(set[2].size(), 7u);
  EXPECT_NE(set[0], set[1]);
  EXPECT_EQ(set,
            generateInputSet(inputs, InputDistribution::StandardNormal, 5));
  EXPECT_NE(deriveSeed(5, 0), deriveSeed(5, 1));
  EXPECT_NE(deriveSeed(5, 0), deriveSeed(6, 0));
}

TEST(InputGeneratorTest, UniformIntegerCoversItsBounds) {
  SplitMix64 random(12);
  std::set<int64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    int64_t value = random.uniformInteger(-2, 2);
    ASSERT_GE(value, -2);
    ASSERT_LE(value, 2);
    seen.insert(value);
  }
  EXPECT_EQ(seen.size(), 5u);
}

} // namespace
