//===- TensorData.h - Host tensor data for plan runs ------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Tensors cross the host/device boundary as raw bytes, row-major, in the
// tensor's element type. This file converts between those bytes and doubles
// (with f16/bf16 rounding done on the host, round to nearest even) and draws
// deterministic pseudo-random inputs: the generator and the normal transform
// are written here, so the same seed gives the same bytes on every machine
// and standard library.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_TENSORDATA_H
#define KOPT_RUNTIME_CUDA_TENSORDATA_H

#include "kopt/Runtime/TaskPlan.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kopt::runtime {

/// IEEE binary16 bits of `value`, rounded to nearest even (overflow gives
/// infinity, NaN stays a quiet NaN).
uint16_t floatToHalf(float value);
/// The float value of IEEE binary16 bits `bits` (exact).
float halfToFloat(uint16_t bits);
/// bfloat16 bits of `value`, rounded to nearest even (NaN stays NaN).
uint16_t floatToBFloat16(float value);
/// The float value of bfloat16 bits `bits` (exact).
float bfloat16ToFloat(uint16_t bits);

/// Encodes `values` as `type` elements (integers are rounded to nearest and
/// wrap like a C cast of an in-range value; i1 stores `value != 0`).
std::vector<uint8_t> encodeTensorData(ElementType type,
                                      const std::vector<double> &values);
/// Decodes the `size` raw `bytes` of `type` elements into doubles; `size`
/// should be a multiple of the element size (extra bytes are ignored).
std::vector<double> decodeTensorData(ElementType type, const uint8_t *bytes,
                                     size_t size);
/// Decodes `bytes`, as the pointer-and-size overload.
inline std::vector<double> decodeTensorData(ElementType type,
                                            const std::vector<uint8_t> &bytes) {
  return decodeTensorData(type, bytes.data(), bytes.size());
}

/// Deterministic pseudo-random contents for `tensor` from `seed`: standard
/// normal values for float types (rounded to the type), round(3 * normal)
/// clamped to the type's range for integers, and fair coin flips for i1.
std::vector<uint8_t> makeRandomTensorData(const TensorSpec &tensor,
                                          uint64_t seed);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CUDA_TENSORDATA_H
