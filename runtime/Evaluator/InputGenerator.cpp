//===- InputGenerator.cpp - Validation input sets ---------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/InputGenerator.h"

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

uint64_t kopt::runtime::drawBits(uint64_t seed, uint64_t index, unsigned lane) {
  // The counter-th output of SplitMix64 started at `seed`.
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (index * 4 + lane + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Irwin-Hall: twelve 16-bit uniforms, centred. Mean 0, variance 1 (to one
/// part in 2^32), bounded by 6; an integer times 2^-16, so exact.
static double drawNormal(uint64_t seed, uint64_t index) {
  int64_t sum = 0;
  for (unsigned lane = 0; lane < 3; ++lane) {
    uint64_t bits = drawBits(seed, index, lane);
    for (unsigned chunk = 0; chunk < 4; ++chunk)
      sum += int64_t((bits >> (16 * chunk)) & 0xffff);
  }
  // Each uniform is (chunk + 0.5) / 2^16; twelve of them sum to 6 on average.
  return std::ldexp(double(sum - 393210), -16);
}

double kopt::runtime::drawFloat(ElementType type,
                                InputDistribution distribution, uint64_t seed,
                                uint64_t index) {
  switch (distribution) {
  case InputDistribution::StandardNormal:
    return drawNormal(seed, index);
  case InputDistribution::LargeMeanSmallSpread: {
    constexpr double mean = 1000.0;
    double spread = getLargeMeanSpread(type);
    // Two roundings, never fused (this file and the device generator are
    // compiled without contraction), so host and device agree bitwise.
    double offset = spread * drawNormal(seed, index);
    return mean + offset;
  }
  case InputDistribution::WideDynamicRange: {
    // A random binary exponent in [-max, max), a random 52-bit significand
    // and a random sign: every operation is exact.
    int maxExponent = getWideRangeMaxExponent(type);
    uint64_t bits = drawBits(seed, index, 0);
    int exponent =
        int((bits & 0xffffffffu) % uint64_t(2 * maxExponent)) - maxExponent;
    double significand =
        1.0 + std::ldexp(double(drawBits(seed, index, 1) >> 12), -52);
    double magnitude = std::ldexp(significand, exponent);
    return (bits >> 63) ? -magnitude : magnitude;
  }
  case InputDistribution::SmallIntegers:
    return double(int64_t(drawBits(seed, index, 0) % 17) - 8);
  }
  return 0.0;
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
