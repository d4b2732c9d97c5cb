//===- TensorData.cpp - Host tensor data for plan runs ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/TensorData.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace kopt::runtime;

/// True for f16, bf16, f32 and f64.
static bool isFloat(ElementType type) {
  return type == ElementType::F16 || type == ElementType::BF16 ||
         type == ElementType::F32 || type == ElementType::F64;
}

static uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint16_t kopt::runtime::floatToHalf(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t exponent = (bits >> 23) & 0xffu;
  uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xffu) // Infinity or NaN (kept quiet, never infinity).
    return sign | 0x7c00u | (mantissa ? 0x200u | (mantissa >> 13) : 0u);
  // Unbiased exponent, then rebiased for binary16 (bias 15).
  int32_t halfExponent = int32_t(exponent) - 127 + 15;
  if (halfExponent >= 0x1f)
    return sign | 0x7c00u;
  if (halfExponent <= 0) {
    // Subnormal in binary16 (or zero): shift the full significand right,
    // rounding to nearest even on the bits shifted out.
    if (halfExponent < -10)
      return sign;
    uint32_t significand = mantissa | 0x800000u;
    uint32_t shift = uint32_t(14 - halfExponent);
    uint32_t half = significand >> shift;
    uint32_t remainder = significand & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (remainder > halfway || (remainder == halfway && (half & 1u)))
      ++half;
    return sign | uint16_t(half);
  }
  uint32_t half = (uint32_t(halfExponent) << 10) | (mantissa >> 13);
  uint32_t remainder = mantissa & 0x1fffu;
  // A carry out of the mantissa correctly bumps the exponent, up to infinity.
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u)))
    ++half;
  return sign | uint16_t(half);
}

float kopt::runtime::halfToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f)
    return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    float magnitude = std::ldexp(float(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return bitsFloat(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t kopt::runtime::floatToBFloat16(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu))
    return uint16_t((bits >> 16) | 0x40u); // Quiet NaN.
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t((bits + rounding) >> 16);
}

float kopt::runtime::bfloat16ToFloat(uint16_t bits) {
  return bitsFloat(uint32_t(bits) << 16);
}

//===----------------------------------------------------------------------===//
// Encoding and decoding
//===----------------------------------------------------------------------===//

template <typename T>
static void storeValue(std::vector<uint8_t> &bytes, size_t index, T value) {
  std::memcpy(bytes.data() + index * sizeof(T), &value, sizeof(T));
}

template <typename T>
static T loadValue(const uint8_t *bytes, size_t index) {
  T value;
  std::memcpy(&value, bytes + index * sizeof(T), sizeof(T));
  return value;
}

/// Rounds `value` to the nearest integer and clamps it into T's range (NaN
/// gives zero), so that no input makes the conversion undefined.
template <typename T>
static T toInteger(double value) {
  if (std::isnan(value))
    return 0;
  double rounded = std::nearbyint(value);
  if (rounded <= double(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  if (rounded >= double(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return T(rounded);
}

std::vector<uint8_t>
kopt::runtime::encodeTensorData(ElementType type,
                                const std::vector<double> &values) {
  std::vector<uint8_t> bytes(values.size() * getElementBytes(type));
  for (size_t i = 0; i < values.size(); ++i) {
    double value = values[i];
    switch (type) {
    case ElementType::F16:
      storeValue(bytes, i, floatToHalf(float(value)));
      break;
    case ElementType::BF16:
      storeValue(bytes, i, floatToBFloat16(float(value)));
      break;
    case ElementType::F32:
      storeValue(bytes, i, float(value));
      break;
    case ElementType::F64:
      storeValue(bytes, i, value);
      break;
    case ElementType::I1:
      storeValue(bytes, i, uint8_t(value != 0));
      break;
    case ElementType::I8:
      storeValue(bytes, i, toInteger<int8_t>(value));
      break;
    case ElementType::I16:
      storeValue(bytes, i, toInteger<int16_t>(value));
      break;
    case ElementType::I32:
      storeValue(bytes, i, toInteger<int32_t>(value));
      break;
    case ElementType::I64:
      storeValue(bytes, i, toInteger<int64_t>(value));
      break;
    }
  }
  return bytes;
}

std::vector<double> kopt::runtime::decodeTensorData(ElementType type,
                                                    const uint8_t *bytes,
                                                    size_t size) {
  size_t count = size / size_t(getElementBytes(type));
  std::vector<double> values(count);
  for (size_t i = 0; i < count; ++i) {
    switch (type) {
    case ElementType::F16:
      values[i] = halfToFloat(loadValue<uint16_t>(bytes, i));
      break;
    case ElementType::BF16:
      values[i] = bfloat16ToFloat(loadValue<uint16_t>(bytes, i));
      break;
    case ElementType::F32:
      values[i] = loadValue<float>(bytes, i);
      break;
    case ElementType::F64:
      values[i] = loadValue<double>(bytes, i);
      break;
    case ElementType::I1:
      values[i] = loadValue<uint8_t>(bytes, i) != 0;
      break;
    case ElementType::I8:
      values[i] = loadValue<int8_t>(bytes, i);
      break;
    case ElementType::I16:
      values[i] = loadValue<int16_t>(bytes, i);
      break;
    case ElementType::I32:
      values[i] = loadValue<int32_t>(bytes, i);
      break;
    case ElementType::I64:
      values[i] = double(loadValue<int64_t>(bytes, i));
      break;
    }
  }
  return values;
}

//===----------------------------------------------------------------------===//
// Random data
//===----------------------------------------------------------------------===//

namespace {
/// SplitMix64: small, fast, and fully specified, so streams are identical
/// everywhere.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1): 53 random bits, offset by half a step.
  double uniform() { return (double(next() >> 11) + 0.5) * 0x1.0p-53; }
  /// Standard normal by the Box-Muller transform.
  double normal() {
    double radius = std::sqrt(-2.0 * std::log(uniform()));
    return radius * std::cos(6.283185307179586 * uniform());
  }

private:
  uint64_t state;
};
} // namespace

std::vector<uint8_t>
kopt::runtime::makeRandomTensorData(const TensorSpec &tensor, uint64_t seed) {
  SplitMix64 random(seed);
  std::vector<double> values(size_t(tensor.getNumElements().value_or(0)));
  for (double &value : values) {
    if (isFloat(tensor.elementType))
      value = random.normal();
    else if (tensor.elementType == ElementType::I1)
      value = double(random.next() >> 63);
    else
      value = std::nearbyint(3.0 * random.normal());
  }
  return encodeTensorData(tensor.elementType, values);
}
