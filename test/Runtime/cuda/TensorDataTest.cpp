//===- TensorDataTest.cpp - Tests of host tensor data -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/TensorData.h"
#include "kopt/Runtime/Cuda/PlanRunner.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace kopt::runtime;

namespace {

TEST(TensorDataTest, HalfRoundsToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  // Halfway between 65504 and 65536 (which overflows): ties to even, inf.
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(1e9f), 0x7c00);
  EXPECT_EQ(floatToHalf(-INFINITY), 0xfc00);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)),
            0x3c01);
  // Subnormals: 2^-24 is the smallest; 2^-25 ties to zero.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToHalf(1.5f * std::ldexp(1.0f, -25)), 0x0001);
  EXPECT_EQ(floatToHalf(3 * std::ldexp(1.0f, -25)), 0x0002);
  // Just below the smallest normal rounds up into it.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14) * (1.0f - 1e-7f)), 0x0400);
  uint16_t nan = floatToHalf(NAN);
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
}

TEST(TensorDataTest, EveryHalfRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    float value = halfToFloat(uint16_t(bits));
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(value))));
      continue;
    }
    ASSERT_EQ(floatToHalf(value), bits) << "bits " << bits;
  }
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
}

TEST(TensorDataTest, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(floatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBFloat16(-1.0f), 0xbf80);
  EXPECT_EQ(floatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(floatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(floatToBFloat16(3.0e38f), 0x7f62);
  EXPECT_EQ(floatToBFloat16(3.4028235e38f), 0x7f80); // Rounds to infinity.
  uint16_t nan = floatToBFloat16(NAN);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(nan)));
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    float value = bfloat16ToFloat(uint16_t(bits));
    if (!std::isnan(value)) {
      ASSERT_EQ(floatToBFloat16(value), bits) << "bits " << bits;
    }
  }
}

TEST(TensorDataTest, EncodesAndDecodesEveryType) {
  std::vector<double> values = {0.0, 1.0, -2.5, 100.5};
  for (ElementType type : {ElementType::F16, ElementType::BF16,
                           ElementType::F32, ElementType::F64}) {
    std::vector<uint8_t> bytes = encodeTensorData(type, values);
    EXPECT_EQ(int64_t(bytes.size()), 4 * getElementBytes(type));
    EXPECT_EQ(decodeTensorData(type, bytes), values)
        << stringifyElementType(type);
  }
  std::vector<double> integers = {0.0, 1.0, -3.0, 1e12, -1e12};
  EXPECT_EQ(decodeTensorData(ElementType::I8,
                             encodeTensorData(ElementType::I8, integers)),
            (std::vector<double>{0, 1, -3, 127, -128}));
  EXPECT_EQ(decodeTensorData(ElementType::I32,
                             encodeTensorData(ElementType::I32, {2.4, -2.6})),
            (std::vector<double>{2, -3}));
  EXPECT_EQ(decodeTensorData(ElementType::I1,
                             encodeTensorData(ElementType::I1, {0, 2, -1})),
            (std::vector<double>{0, 1, 1}));
}

TEST(TensorDataTest, RandomDataIsDeterministicAndStandardNormal) {
  TensorSpec tensor{"x", ElementType::F32, {100, 1000}};
  std::vector<uint8_t> first = makeRandomTensorData(tensor, 42);
  EXPECT_EQ(first, makeRandomTensorData(tensor, 42));
  EXPECT_NE(first, makeRandomTensorData(tensor, 43));
  std::vector<double> values = decodeTensorData(ElementType::F32, first);
  ASSERT_EQ(values.size(), 100000u);
  double sum = 0, squares = 0;
  for (double value : values) {
    sum += value;
    squares += value * value;
  }
  double mean = sum / values.size();
  double variance = squares / values.size() - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(variance, 1.0, 0.02);

  TensorSpec half{"h", ElementType::F16, {7}};
  EXPECT_EQ(makeRandomTensorData(half, 1).size(), 14u);
  TensorSpec flags{"b", ElementType::I1, {1000}};
  std::vector<double> bits =
      decodeTensorData(ElementType::I1, makeRandomTensorData(flags, 5));
  double ones = 0;
  for (double bit : bits)
    ones += bit;
  EXPECT_GT(ones, 400);
  EXPECT_LT(ones, 600);
}

TEST(TensorDataTest, SummarizesTimings) {
  PlanTiming timing = summarizeTimings({5, 1, 3, 2, 4});
  EXPECT_DOUBLE_EQ(timing.medianUs, 3);
  EXPECT_DOUBLE_EQ(timing.minUs, 1);
  EXPECT_DOUBLE_EQ(timing.p10Us, 1.4);
  EXPECT_DOUBLE_EQ(timing.p90Us, 4.6);
  EXPECT_EQ(timing.repetitions, 5u);
  EXPECT_DOUBLE_EQ(summarizeTimings({2, 4}).medianUs, 3);
  EXPECT_DOUBLE_EQ(summarizeTimings({7}).p90Us, 7);
  EXPECT_EQ(summarizeTimings({}).repetitions, 0u);
}

} // namespace
