//===- ElementCodecTest.cpp - Tests of element encoding ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Evaluator/ElementCodec.h"
#include "kopt/Runtime/Evaluator/InputGenerator.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace kopt::runtime;

namespace {

bool isHalfNaN(uint16_t bits) {
  return (bits & 0x7c00) == 0x7c00 && (bits & 0x3ff);
}

bool isBFloat16NaN(uint16_t bits) {
  return (bits & 0x7f80) == 0x7f80 && (bits & 0x7f);
}

double hardwareFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint32_t hardwareFloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

TEST(ElementCodecTest, NamesSizesAndKinds) {
  const char *names[] = {"f16", "bf16", "f32", "f64", "i1",
                         "i8",  "i16",  "i32", "i64"};
  size_t sizes[] = {2, 2, 4, 8, 1, 1, 2, 4, 8};
  ASSERT_EQ(getAllElementTypes().size(), 9u);
  for (size_t i = 0; i < 9; ++i) {
    ElementType type = getAllElementTypes()[i];
    EXPECT_STREQ(stringifyElementType(type), names[i]);
    EXPECT_EQ(getElementBytes(type), int64_t(sizes[i]));
    EXPECT_EQ(isFloatType(type), i < 4);
    EXPECT_EQ(isIntegerType(type), i >= 4);
    EXPECT_EQ(parseElementType(names[i]), type);
  }
}

TEST(ElementCodecTest, EveryHalfBitPatternRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    double value = halfToDouble(uint16_t(bits));
    uint16_t back = doubleToHalf(value);
    if (isHalfNaN(uint16_t(bits))) {
      EXPECT_TRUE(std::isnan(value)) << bits;
      EXPECT_TRUE(isHalfNaN(back)) << bits;
      EXPECT_EQ(back & 0x8000, bits & 0x8000) << bits;
      continue;
    }
    EXPECT_EQ(back, bits) << "half bits " << bits;
  }
}

TEST(ElementCodecTest, HalfValuesAreExactAndIncreasing) {
  EXPECT_EQ(halfToDouble(0x3c00), 1.0);
  EXPECT_EQ(halfToDouble(0xc000), -2.0);
  EXPECT_EQ(halfToDouble(0x7bff), 65504.0);
  EXPECT_EQ(halfToDouble(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(halfToDouble(0x0400), std::ldexp(1.0, -14));
  EXPECT_EQ(halfToDouble(0x3555), 0.333251953125);
  EXPECT_TRUE(std::isinf(halfToDouble(0x7c00)));
  EXPECT_TRUE(std::signbit(halfToDouble(0x8000)));
  // Consecutive positive finite patterns are strictly increasing values.
  for (uint16_t bits = 0; bits < 0x7c00; ++bits)
    EXPECT_LT(halfToDouble(bits), halfToDouble(uint16_t(bits + 1))) << bits;
}

TEST(ElementCodecTest, HalfRoundsToNearestEven) {
  EXPECT_EQ(doubleToHalf(65520.0), 0x7c00); // Tie above the max: infinity.
  EXPECT_EQ(doubleToHalf(65519.99), 0x7bff);
  EXPECT_EQ(doubleToHalf(-1e9), 0xfc00);
  EXPECT_EQ(doubleToHalf(1.0 + std::ldexp(1.0, -11)), 0x3c00);
  EXPECT_EQ(doubleToHalf(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -25)), 0x0000);
  EXPECT_EQ(doubleToHalf(1.5 * std::ldexp(1.0, -25)), 0x0001);
  EXPECT_EQ(doubleToHalf(3 * std::ldexp(1.0, -25)), 0x0002);
  EXPECT_EQ(doubleToHalf(1e-300), 0x0000);
  EXPECT_EQ(doubleToHalf(-0.0), 0x8000);
  // Just above a tie, by less than a float ulp: rounding through float first
  // would land on the tie and round down.
  EXPECT_EQ(doubleToHalf(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)),
            0x3c01);
}

TEST(ElementCodecTest, HalfRoundingPicksTheNearestValue) {
  SplitMix64 random(7);
  for (int i = 0; i < 20000; ++i) {
    double value = random.normal() * std::pow(10.0, 8 * random.uniform() - 5);
    uint16_t bits = doubleToHalf(value);
    if ((bits & 0x7fff) >= 0x7bff)
      continue; // Neighbours past the largest finite value.
    double chosen = std::fabs(halfToDouble(bits) - value);
    double up = std::fabs(halfToDouble(uint16_t(bits + 1)) - value);
    EXPECT_LE(chosen, up) << value;
    if ((bits & 0x7fff) != 0) {
      double down = std::fabs(halfToDouble(uint16_t(bits - 1)) - value);
      EXPECT_LE(chosen, down) << value;
      if (chosen == down || chosen == up) {
        EXPECT_EQ(bits & 1, 0) << "tie not to even at " << value;
      }
    }
  }
}

TEST(ElementCodecTest, EveryBFloat16BitPatternRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    double value = bfloat16ToDouble(uint16_t(bits));
    uint16_t back = doubleToBFloat16(value);
    if (isBFloat16NaN(uint16_t(bits))) {
      EXPECT_TRUE(std::isnan(value)) << bits;
      EXPECT_TRUE(isBFloat16NaN(back)) << bits;
      continue;
    }
    // bfloat16 is the top half of a float.
    EXPECT_EQ(value, hardwareFloat(bits << 16)) << bits;
    EXPECT_EQ(back, bits) << "bf16 bits " << bits;
  }
}

TEST(ElementCodecTest, BFloat16MatchesTheFloatRoundingRule) {
  // For values exact in float, round-to-nearest-even on the float bits.
  SplitMix64 random(11);
  for (int i = 0; i < 20000; ++i) {
    uint32_t bits = uint32_t(random.next());
    if ((bits & 0x7f800000u) == 0x7f800000u)
      continue;
    uint32_t expected = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    EXPECT_EQ(doubleToBFloat16(hardwareFloat(bits)), expected) << bits;
  }
}

TEST(ElementCodecTest, FloatMatchesTheHardwareCast) {
  SplitMix64 random(3);
  for (int i = 0; i < 20000; ++i) {
    double value = random.normal() * std::pow(10.0, 80 * random.uniform() - 40);
    EXPECT_EQ(doubleToFloatBits(value), hardwareFloatBits(float(value)))
        << value;
    EXPECT_EQ(floatBitsToDouble(doubleToFloatBits(value)),
              double(float(value)));
  }
  double maxFloat = std::numeric_limits<float>::max();
  double halfUlp = std::ldexp(1.0, 103);
  EXPECT_EQ(doubleToFloatBits(maxFloat + halfUlp / 2), 0x7f7fffffu);
  EXPECT_EQ(doubleToFloatBits(maxFloat + halfUlp), 0x7f800000u);
  EXPECT_EQ(doubleToFloatBits(-1e300), 0xff800000u);
}

TEST(ElementCodecTest, IntegersRoundAndSaturate) {
  auto roundTrip = [](ElementType type, double value) {
    uint8_t bytes[8] = {};
    encodeElement(type, value, bytes);
    return decodeElement(type, bytes);
  };
  EXPECT_EQ(roundTrip(ElementType::I8, 300.0), 127.0);
  EXPECT_EQ(roundTrip(ElementType::I8, -300.0), -128.0);
  EXPECT_EQ(roundTrip(ElementType::I8, 127.4), 127.0);
  EXPECT_EQ(roundTrip(ElementType::I8, 2.5), 2.0);
  EXPECT_EQ(roundTrip(ElementType::I8, 3.5), 4.0);
  EXPECT_EQ(roundTrip(ElementType::I16, -2.5), -2.0);
  EXPECT_EQ(roundTrip(ElementType::I16, 1e6), 32767.0);
  EXPECT_EQ(roundTrip(ElementType::I32, -1e12), -2147483648.0);
  EXPECT_EQ(roundTrip(ElementType::I32, std::nan("")), 0.0);
  EXPECT_EQ(roundTrip(ElementType::I64, -INFINITY), -std::ldexp(1.0, 63));

  uint8_t bytes[8];
  encodeElement(ElementType::I64, 1e19, bytes);
  EXPECT_EQ(decodeIntegerElement(ElementType::I64, bytes),
            std::numeric_limits<int64_t>::max());
  int64_t big = (int64_t(1) << 53) + 1; // Not representable as a double.
  std::memcpy(bytes, &big, sizeof(big));
  EXPECT_EQ(decodeIntegerElement(ElementType::I64, bytes), big);

  EXPECT_EQ(roundTrip(ElementType::I1, 0.5), 1.0);
  EXPECT_EQ(roundTrip(ElementType::I1, -3.0), 1.0);
  EXPECT_EQ(roundTrip(ElementType::I1, 0.0), 0.0);
  EXPECT_EQ(roundTrip(ElementType::I1, std::nan("")), 1.0);
  uint8_t nonCanonicalTrue = 2;
  EXPECT_EQ(decodeElement(ElementType::I1, &nonCanonicalTrue), 2.0);
}

TEST(ElementCodecTest, VectorsRoundTripInEveryType) {
  std::vector<double> values = {0.0, 1.0, -2.0, 7.0, -8.0, 100.0};
  for (ElementType type : getAllElementTypes()) {
    if (type == ElementType::I1)
      continue;
    std::vector<uint8_t> bytes = encodeElements(type, values);
    EXPECT_EQ(bytes.size(), values.size() * size_t(getElementBytes(type)));
    EXPECT_EQ(decodeElements(type, bytes), values)
        << stringifyElementType(type);
  }
  std::vector<uint8_t> odd = {0, 60, 0};
  EXPECT_EQ(decodeElements(ElementType::F16, odd).size(), 1u);
}

} // namespace
