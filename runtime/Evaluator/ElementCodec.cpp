//===- ElementCodec.cpp - Element types and their storage bytes -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Evaluator/ElementCodec.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace kopt::runtime;

const std::vector<ElementType> &kopt::runtime::getAllElementTypes() {
  static const std::vector<ElementType> types = {
      ElementType::F16, ElementType::BF16, ElementType::F32,
      ElementType::F64, ElementType::I1,   ElementType::I8,
      ElementType::I16, ElementType::I32,  ElementType::I64};
  return types;
}

bool kopt::runtime::isFloatType(ElementType type) {
  return type == ElementType::F16 || type == ElementType::BF16 ||
         type == ElementType::F32 || type == ElementType::F64;
}

bool kopt::runtime::isIntegerType(ElementType type) {
  return !isFloatType(type);
}

//===----------------------------------------------------------------------===//
// Narrow binary floating-point formats
//===----------------------------------------------------------------------===//

namespace {
/// A binary interchange format narrower than double: `mantissaBits` stored
/// fraction bits, exponent bias `bias` (so normal exponents run from
/// 1 - bias to bias), with the sign in bit `mantissaBits + exponentBits`.
struct NarrowFormat {
  int mantissaBits;
  int exponentBits;
  int bias;
};

constexpr NarrowFormat kHalf = {10, 5, 15};
constexpr NarrowFormat kBFloat16 = {7, 8, 127};
constexpr NarrowFormat kFloat = {23, 8, 127};
} // namespace

static uint64_t doubleBits(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

/// Rounds `value` to `format`, ties to even, and returns its bits. The value
/// is scaled by a power of two (exact) so that its quantum - the spacing of
/// the format at its magnitude, fixed at the subnormal spacing below the
/// smallest normal - becomes 1, and `std::nearbyint` then rounds in the
/// default round-to-nearest-even mode.
static uint64_t roundToNarrow(double value, const NarrowFormat &format) {
  const int m = format.mantissaBits;
  const uint64_t signBit = uint64_t(1) << (m + format.exponentBits);
  const uint64_t exponentMask = (uint64_t(1) << format.exponentBits) - 1;
  const uint64_t infinityBits = exponentMask << m;
  uint64_t sign = (doubleBits(value) >> 63) ? signBit : 0;
  if (std::isnan(value)) {
    // A quiet NaN that keeps the top payload bits of the double's NaN.
    uint64_t payload =
        (doubleBits(value) & ((uint64_t(1) << 52) - 1)) >> (52 - m);
    return sign | infinityBits | (uint64_t(1) << (m - 1)) | payload;
  }
  double magnitude = std::fabs(value);
  if (std::isinf(magnitude))
    return sign | infinityBits;
  if (magnitude == 0.0)
    return sign;
  const int minExponent = 1 - format.bias;
  const int maxExponent = format.bias;
  int frexpExponent;
  (void)std::frexp(magnitude, &frexpExponent);
  int exponent = frexpExponent - 1; // magnitude in [2^exponent, 2^(e+1)).
  if (exponent > maxExponent)
    return sign | infinityBits;
  if (exponent < minExponent)
    exponent = minExponent;
  // Below the smallest normal the quantum stays the subnormal spacing, so
  // tiny values round to a subnormal or to zero.
  double scaled = std::ldexp(magnitude, m - exponent);
  uint64_t significand = uint64_t(std::nearbyint(scaled));
  if (significand == (uint64_t(2) << m)) {
    // Rounding carried into the next binade.
    significand >>= 1;
    ++exponent;
    if (exponent > maxExponent)
      return sign | infinityBits;
  }
  if (significand < (uint64_t(1) << m))
    return sign | significand; // Subnormal or zero.
  uint64_t biased = uint64_t(exponent + format.bias);
  return sign | (biased << m) | (significand - (uint64_t(1) << m));
}

/// The exact value of `bits` in `format`.
static double narrowToDouble(uint64_t bits, const NarrowFormat &format) {
  const int m = format.mantissaBits;
  const uint64_t exponentMask = (uint64_t(1) << format.exponentBits) - 1;
  bool negative = (bits >> (m + format.exponentBits)) & 1;
  uint64_t exponent = (bits >> m) & exponentMask;
  uint64_t mantissa = bits & ((uint64_t(1) << m) - 1);
  double magnitude;
  if (exponent == exponentMask) {
    if (mantissa == 0) {
      magnitude = std::numeric_limits<double>::infinity();
    } else {
      // Carry the payload into the double's NaN, quiet bit set.
      uint64_t nanBits = 0x7ff8000000000000ull | (mantissa << (52 - m));
      std::memcpy(&magnitude, &nanBits, sizeof(magnitude));
    }
  } else if (exponent == 0) {
    magnitude = std::ldexp(double(mantissa), 1 - format.bias - m);
  } else {
    magnitude = std::ldexp(double(mantissa | (uint64_t(1) << m)),
                           int(exponent) - format.bias - m);
  }
  return negative ? -magnitude : magnitude;
}

uint16_t kopt::runtime::doubleToHalf(double value) {
  return uint16_t(roundToNarrow(value, kHalf));
}

double kopt::runtime::halfToDouble(uint16_t bits) {
  return narrowToDouble(bits, kHalf);
}

uint16_t kopt::runtime::doubleToBFloat16(double value) {
  return uint16_t(roundToNarrow(value, kBFloat16));
}

double kopt::runtime::bfloat16ToDouble(uint16_t bits) {
  return narrowToDouble(bits, kBFloat16);
}

uint32_t kopt::runtime::doubleToFloatBits(double value) {
  return uint32_t(roundToNarrow(value, kFloat));
}

double kopt::runtime::floatBitsToDouble(uint32_t bits) {
  return narrowToDouble(bits, kFloat);
}

//===----------------------------------------------------------------------===//
// Elements
//===----------------------------------------------------------------------===//

template <typename T>
static void store(uint8_t *out, T value) {
  std::memcpy(out, &value, sizeof(T));
}

template <typename T>
static T load(const uint8_t *in) {
  T value;
  std::memcpy(&value, in, sizeof(T));
  return value;
}

/// Rounds `value` to nearest (ties to even) and saturates it to T's range;
/// NaN gives 0.
template <typename T>
static T saturateToInteger(double value) {
  if (std::isnan(value))
    return 0;
  double rounded = std::nearbyint(value);
  // The bounds as doubles: min is a power of two (exact), and max + 1 is too,
  // so `>= max + 1` is the exact overflow test even for i64.
  double lowest = double(std::numeric_limits<T>::min());
  double beyondHighest = -lowest;
  if (rounded <= lowest)
    return std::numeric_limits<T>::min();
  if (rounded >= beyondHighest)
    return std::numeric_limits<T>::max();
  return T(rounded);
}

void kopt::runtime::encodeElement(ElementType type, double value,
                                  uint8_t *out) {
  switch (type) {
  case ElementType::F16:
    store(out, doubleToHalf(value));
    return;
  case ElementType::BF16:
    store(out, doubleToBFloat16(value));
    return;
  case ElementType::F32:
    store(out, doubleToFloatBits(value));
    return;
  case ElementType::F64:
    store(out, value);
    return;
  case ElementType::I1:
    store(out, uint8_t(value != 0.0));
    return;
  case ElementType::I8:
    store(out, saturateToInteger<int8_t>(value));
    return;
  case ElementType::I16:
    store(out, saturateToInteger<int16_t>(value));
    return;
  case ElementType::I32:
    store(out, saturateToInteger<int32_t>(value));
    return;
  case ElementType::I64:
    store(out, saturateToInteger<int64_t>(value));
    return;
  }
}

double kopt::runtime::decodeElement(ElementType type, const uint8_t *in) {
  switch (type) {
  case ElementType::F16:
    return halfToDouble(load<uint16_t>(in));
  case ElementType::BF16:
    return bfloat16ToDouble(load<uint16_t>(in));
  case ElementType::F32:
    return floatBitsToDouble(load<uint32_t>(in));
  case ElementType::F64:
    return load<double>(in);
  case ElementType::I1:
    return double(load<uint8_t>(in));
  case ElementType::I8:
    return double(load<int8_t>(in));
  case ElementType::I16:
    return double(load<int16_t>(in));
  case ElementType::I32:
    return double(load<int32_t>(in));
  case ElementType::I64:
    return double(load<int64_t>(in));
  }
  return 0.0;
}

int64_t kopt::runtime::decodeIntegerElement(ElementType type,
                                            const uint8_t *in) {
  switch (type) {
  case ElementType::I1:
    return load<uint8_t>(in);
  case ElementType::I8:
    return load<int8_t>(in);
  case ElementType::I16:
    return load<int16_t>(in);
  case ElementType::I32:
    return load<int32_t>(in);
  case ElementType::I64:
    return load<int64_t>(in);
  case ElementType::F16:
  case ElementType::BF16:
  case ElementType::F32:
  case ElementType::F64:
    return saturateToInteger<int64_t>(std::trunc(decodeElement(type, in)));
  }
  return 0;
}

std::vector<uint8_t>
kopt::runtime::encodeElements(ElementType type,
                              const std::vector<double> &values) {
  size_t width = size_t(getElementBytes(type));
  std::vector<uint8_t> bytes(values.size() * width);
  for (size_t i = 0; i < values.size(); ++i)
    encodeElement(type, values[i], bytes.data() + i * width);
  return bytes;
}

std::vector<double>
kopt::runtime::decodeElements(ElementType type,
                              const std::vector<uint8_t> &bytes) {
  size_t width = size_t(getElementBytes(type));
  std::vector<double> values(bytes.size() / width);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = decodeElement(type, bytes.data() + i * width);
  return values;
}
