//===- ElementCodec.h - Element types and their storage bytes ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The evaluator moves tensors to and from the device as raw bytes, row-major,
// in the tensor's element type, and does its arithmetic on doubles. This file
// converts between doubles and the storage bytes of a task's element types
// (docs/KernelPlan.md), with the rounding written out here so that every
// machine encodes the same inputs to the same bits:
//
// - f16, bf16 and f32 round a double directly to the nearest representable
//   value, ties to even (no double rounding through float). Overflow gives
//   infinity, exactly where IEEE 754 says so; NaN stays a quiet NaN keeping
//   the top bits of its payload.
// - Integers round to nearest, ties to even, then saturate to the type's range;
//   NaN encodes as 0 (so that no input makes the conversion undefined).
// - i1 is one byte: 1 for any non-zero value (NaN included), 0 for zero. It
//   decodes as the raw byte, so a non-canonical "true" (2..255) written by a
//   kernel shows up as a mismatch against a reference's 1.
//
// Decoding is exact for every type except i64 values beyond 2^53, which lose
// low bits as doubles; `decodeIntegerElement` reads integers exactly. The
// element types themselves are the task's (kopt/Runtime/TaskPlan.h).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_EVALUATOR_ELEMENTCODEC_H
#define KOPT_RUNTIME_EVALUATOR_ELEMENTCODEC_H

#include "kopt/Runtime/TaskPlan.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kopt::runtime {

// `ElementType`, `stringifyElementType`, `parseElementType`,
// `getElementBytes` and `TensorSpec` come from kopt/Runtime/TaskPlan.h.

/// Every element type, in declaration order (for tests and tables).
const std::vector<ElementType> &getAllElementTypes();
/// True for f16, bf16, f32 and f64.
bool isFloatType(ElementType type);
/// True for i1, i8, i16, i32 and i64: outputs that must match exactly.
bool isIntegerType(ElementType type);

/// IEEE binary16 bits of `value`, rounded to nearest even.
uint16_t doubleToHalf(double value);
/// The exact value of IEEE binary16 bits `bits`.
double halfToDouble(uint16_t bits);
/// bfloat16 bits of `value`, rounded to nearest even.
uint16_t doubleToBFloat16(double value);
/// The exact value of bfloat16 bits `bits`.
double bfloat16ToDouble(uint16_t bits);
/// IEEE binary32 bits of `value`, rounded to nearest even (also for values
/// beyond the float range, where a plain cast would be undefined).
uint32_t doubleToFloatBits(double value);
/// The exact value of IEEE binary32 bits `bits`.
double floatBitsToDouble(uint32_t bits);

/// Writes `value` as one `type` element to `out`, which must hold
/// `getElementBytes(type)` bytes.
void encodeElement(ElementType type, double value, uint8_t *out);
/// Reads one `type` element from `in`.
double decodeElement(ElementType type, const uint8_t *in);
/// Reads one integer element of `type` from `in` exactly (i1 gives the raw
/// byte); for float types, the value truncated toward zero and saturated.
int64_t decodeIntegerElement(ElementType type, const uint8_t *in);

/// Encodes `values` as consecutive `type` elements.
std::vector<uint8_t> encodeElements(ElementType type,
                                    const std::vector<double> &values);
/// Decodes `bytes` as consecutive `type` elements; trailing bytes that do
/// not fill an element are ignored.
std::vector<double> decodeElements(ElementType type,
                                   const std::vector<uint8_t> &bytes);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_EVALUATOR_ELEMENTCODEC_H
