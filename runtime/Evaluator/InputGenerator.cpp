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

/// The symmetric range integer tensors of `type` are drawn from.
static int64_t getIntegerBound(ElementType type) {
  switch (type) {
  case ElementType::I8:
    return 8;
  case ElementType::I16:
    return 16;
  default:
    return 1000;
  }
}

static double drawFloat(SplitMix64 &random, ElementType type,
                        InputDistribution distribution) {
  switch (distribution) {
  case InputDistribution::StandardNormal:
    return random.normal();
  case InputDistribution::LargeMeanSmallSpread: {
    constexpr double mean = 1000.0;
    double spread = std::fmax(1e-2, 4.0 * unitInLastPlace(type, mean));
    return mean + spread * random.normal();
  }
  case InputDistribution::WideDynamicRange: {
    double maxExponent = type == ElementType::F16 ? 4.0 : 6.0;
    double sign = (random.next() >> 63) ? -1.0 : 1.0;
    double exponent = -maxExponent + 2.0 * maxExponent * random.uniform();
    return sign * std::pow(10.0, exponent);
  }
  case InputDistribution::SmallIntegers:
    return double(random.uniformInteger(-8, 8));
  }
  return 0.0;
}

std::vector<double>
kopt::runtime::generateValues(ElementType type, uint64_t numElements,
                              InputDistribution distribution, uint64_t seed) {
  SplitMix64 random(seed);
  std::vector<double> values(numElements);
  std::vector<uint8_t> element(size_t(getElementBytes(type)));
  for (double &value : values) {
    if (type == ElementType::I1) {
      value = double(random.next() >> 63);
    } else if (isIntegerType(type)) {
      int64_t bound = getIntegerBound(type);
      value = double(random.uniformInteger(-bound, bound));
    } else {
      // Round to the type so the values are exactly what the device sees.
      encodeElement(type, drawFloat(random, type, distribution),
                    element.data());
      value = decodeElement(type, element.data());
    }
  }
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
