//===- InputGenerator.cpp - Validation input sets ---------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Evaluator/InputGenerator.h"

#include <cmath>

using namespace kopt::runtime;

const char *kopt::runtime::getDistributionName(InputDistribution distribution) {
  switch (distribution) {
  case InputDistribution::StandardNormal:
    return "normal";
  case InputDistribution::LargeMeanSmallSpread:
    return "large-mean";
  case InputDistribution::WideDynamicRange:
    return "wide-range";
  case InputDistribution::SmallIntegers:
    return "small-int";
  }
  return "unknown";
}

std::vector<InputDistribution>
kopt::runtime::getValidationDistributions(unsigned numSets) {
  static const InputDistribution all[] = {
      InputDistribution::StandardNormal,
      InputDistribution::LargeMeanSmallSpread,
      InputDistribution::WideDynamicRange, InputDistribution::SmallIntegers};
  constexpr unsigned numDistributions = sizeof(all) / sizeof(all[0]);
  std::vector<InputDistribution> result;
  result.reserve(numSets);
  for (unsigned i = 0; i < numSets; ++i)
    result.push_back(all[i % numDistributions]);
  return result;
}

//===----------------------------------------------------------------------===//
// Random numbers
//===----------------------------------------------------------------------===//

uint64_t SplitMix64::next() {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() {
  return (double(next() >> 11) + 0.5) * 0x1.0p-53;
}

double SplitMix64::normal() {
  double radius = std::sqrt(-2.0 * std::log(uniform()));
  return radius * std::cos(6.283185307179586 * uniform());
}

int64_t SplitMix64::uniformInteger(int64_t low, int64_t high) {
  uint64_t span = uint64_t(high) - uint64_t(low) + 1;
  if (span == 0) // The full 64-bit range.
    return int64_t(next());
  // Rejection sampling keeps every value equally likely.
  uint64_t limit = ~uint64_t(0) - (~uint64_t(0) % span);
  uint64_t bits;
  do {
    bits = next();
  } while (bits >= limit);
  return int64_t(uint64_t(low) + bits % span);
}

uint64_t kopt::runtime::deriveSeed(uint64_t seed, uint64_t index) {
  SplitMix64 mixer(seed ^ (index * 0xd1b54a32d192ed03ull));
  mixer.next();
  return mixer.next();
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

/// The spacing of `type`'s values at `value` (for float types).
static double unitInLastPlace(ElementType type, double value) {
  int exponent;
  (void)std::frexp(value, &exponent);
  int mantissaBits = 52;
  if (type == ElementType::F16)
    mantissaBits = 10;
  else if (type == ElementType::BF16)
    mantissaBits = 7;
  else if (type == ElementType::F32)
    mantissaBits = 23;
  return std::ldexp(1.0, exponent - 1 - mantissaBits);
}

int64_t kopt::runtime::getIntegerBound(ElementType type) {
  switch (type) {
  case ElementType::I8:
    return 8;
  case ElementType::I16:
    return 16;
  default:
    return 1000;
  }
}

double kopt::runtime::getLargeMeanSpread(ElementType type) {
  return std::fmax(1e-2, 4.0 * unitInLastPlace(type, 1000.0));
}

int kopt::runtime::getWideRangeMaxExponent(ElementType type) {
  return type == ElementType::F16 ? 13 : 19;
}

// The functions below that the loops of `drawValues` call are static, so the
// compiler inlines them there; the public ones wrap them.

/// `drawBits`.
static uint64_t mixBits(uint64_t seed, uint64_t index, unsigned lane) {
  // The counter-th output of SplitMix64 started at `seed`.
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (index * 4 + lane + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t kopt::runtime::drawBits(uint64_t seed, uint64_t index, unsigned lane) {
  return mixBits(seed, index, lane);
}

/// The sum of the four 16-bit chunks of `bits`.
static uint64_t sumChunks(uint64_t bits) {
  uint64_t pairs =
      (bits & 0x0000ffff0000ffffull) + ((bits >> 16) & 0x0000ffff0000ffffull);
  return (pairs & 0xffffffffull) + (pairs >> 32);
}

/// Irwin-Hall: twelve 16-bit uniforms, centred. Mean 0, variance 1 (to one
/// part in 2^32), bounded by 6; an integer times 2^-16, so exact.
static double drawNormal(uint64_t seed, uint64_t index) {
  int64_t sum = int64_t(sumChunks(mixBits(seed, index, 0)) +
                        sumChunks(mixBits(seed, index, 1)) +
                        sumChunks(mixBits(seed, index, 2)));
  // Each uniform is (chunk + 0.5) / 2^16; twelve of them sum to 6 on average.
  // The scaling by a power of two is exact.
  return double(sum - 393210) * 0x1.0p-16;
}

/// The large-mean distribution with standard deviation `spread`.
static double drawLargeMean(double spread, uint64_t seed, uint64_t index) {
  constexpr double mean = 1000.0;
  // Two roundings, never fused (this file and the device generator are
  // compiled without contraction), so host and device agree bitwise.
  double offset = spread * drawNormal(seed, index);
  return mean + offset;
}

/// The wide-range distribution with exponents in [-maxExponent, maxExponent).
static double drawWideRange(int maxExponent, uint64_t seed, uint64_t index) {
  // A random binary exponent in [-max, max), a random 52-bit significand
  // and a random sign: every operation is exact.
  uint64_t bits = mixBits(seed, index, 0);
  int exponent =
      int((bits & 0xffffffffu) % uint64_t(2 * maxExponent)) - maxExponent;
  double significand = 1.0 + double(mixBits(seed, index, 1) >> 12) * 0x1.0p-52;
  double magnitude = std::ldexp(significand, exponent);
  return (bits >> 63) ? -magnitude : magnitude;
}

static double drawSmallInteger(uint64_t seed, uint64_t index) {
  return double(int64_t(mixBits(seed, index, 0) % 17) - 8);
}

/// `drawFloat`.
static double drawFloatValue(ElementType type, InputDistribution distribution,
                             uint64_t seed, uint64_t index) {
  switch (distribution) {
  case InputDistribution::StandardNormal:
    return drawNormal(seed, index);
  case InputDistribution::LargeMeanSmallSpread:
    return drawLargeMean(getLargeMeanSpread(type), seed, index);
  case InputDistribution::WideDynamicRange:
    return drawWideRange(getWideRangeMaxExponent(type), seed, index);
  case InputDistribution::SmallIntegers:
    return drawSmallInteger(seed, index);
  }
  return 0.0;
}

double kopt::runtime::drawFloat(ElementType type,
                                InputDistribution distribution, uint64_t seed,
                                uint64_t index) {
  return drawFloatValue(type, distribution, seed, index);
}

double kopt::runtime::drawValue(ElementType type,
                                InputDistribution distribution, uint64_t seed,
                                uint64_t index) {
  if (type == ElementType::I1)
    return double(drawBits(seed, index, 0) >> 63);
  if (isIntegerType(type)) {
    int64_t bound = getIntegerBound(type);
    uint64_t span = uint64_t(2 * bound + 1);
    return double(int64_t(drawBits(seed, index, 0) % span) - bound);
  }
  uint8_t element[8];
  // Round to the type so the values are exactly what the device sees.
  encodeElement(type, drawFloat(type, distribution, seed, index), element);
  return decodeElement(type, element);
}

/// `value` (a draw) rounded to f32 as `encodeElement` and `decodeElement`
/// round it: by the hardware conversion, which rounds to nearest even too,
/// where the result is a normal f32 or zero; by the codec elsewhere.
static double roundToFloat(double value) {
  double magnitude = std::fabs(value);
  if (magnitude == 0.0 || (magnitude >= 0x1.0p-126 && magnitude < 0x1.0p127))
    return double(float(value));
  uint8_t element[4];
  encodeElement(ElementType::F32, value, element);
  return decodeElement(ElementType::F32, element);
}

/// `values[i] = draw(indices[i])`, rounded to f32 when `toFloat`.
template <typename Draw>
static void drawEach(const int64_t *indices, size_t count, double *values,
                     bool toFloat, Draw draw) {
  if (toFloat) {
    for (size_t i = 0; i < count; ++i)
      values[i] = roundToFloat(draw(uint64_t(indices[i])));
    return;
  }
  for (size_t i = 0; i < count; ++i)
    values[i] = draw(uint64_t(indices[i]));
}

void kopt::runtime::drawValues(ElementType type, InputDistribution distribution,
                               uint64_t seed, const int64_t *indices,
                               size_t count, double *values) {
  if (type != ElementType::F32 && type != ElementType::F64) {
    for (size_t i = 0; i < count; ++i)
      values[i] = drawValue(type, distribution, seed, uint64_t(indices[i]));
    return;
  }
  // Encoding a double loses nothing; f32 rounds.
  bool toFloat = type == ElementType::F32;
  switch (distribution) {
  case InputDistribution::StandardNormal:
    return drawEach(indices, count, values, toFloat,
                    [&](uint64_t index) { return drawNormal(seed, index); });
  case InputDistribution::LargeMeanSmallSpread: {
    double spread = getLargeMeanSpread(type);
    return drawEach(indices, count, values, toFloat, [&](uint64_t index) {
      return drawLargeMean(spread, seed, index);
    });
  }
  case InputDistribution::WideDynamicRange: {
    int maxExponent = getWideRangeMaxExponent(type);
    return drawEach(indices, count, values, toFloat, [&](uint64_t index) {
      return drawWideRange(maxExponent, seed, index);
    });
  }
  case InputDistribution::SmallIntegers:
    return drawEach(indices, count, values, toFloat, [&](uint64_t index) {
      return drawSmallInteger(seed, index);
    });
  }
}

std::vector<double>
kopt::runtime::generateValues(ElementType type, uint64_t numElements,
                              InputDistribution distribution, uint64_t seed) {
  std::vector<double> values(numElements);
  for (uint64_t i = 0; i < numElements; ++i)
    values[i] = drawValue(type, distribution, seed, i);
  return values;
}

std::vector<uint8_t> kopt::runtime::generateTensorData(
    const TensorSpec &tensor, InputDistribution distribution, uint64_t seed) {
  return encodeElements(
      tensor.elementType,
      generateValues(tensor.elementType,
                     uint64_t(tensor.getNumElements().value_or(0)),
                     distribution, seed));
}

std::vector<std::vector<uint8_t>>
kopt::runtime::generateInputSet(const std::vector<TensorSpec> &inputs,
                                InputDistribution distribution, uint64_t seed) {
  std::vector<std::vector<uint8_t>> set;
  set.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    set.push_back(
        generateTensorData(inputs[i], distribution, deriveSeed(seed, i)));
  return set;
}
