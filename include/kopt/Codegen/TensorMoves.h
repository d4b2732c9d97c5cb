//===- TensorMoves.h - Pads, slices and concatenations ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The tensor ops that move elements without computing: `tensor.pad`,
// `tensor.insert_slice` and `tensor.concat` place whole tensors at offsets
// of their result (a placement), `tensor.extract_slice` reads a strided
// window of its source. The CUDA emitter and the fp64 reference interpreter
// both read these ops through this one description, on static shapes only.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_TENSORMOVES_H
#define KOPT_CODEGEN_TENSORMOVES_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/Support/Error.h"

namespace mlir::kopt {

/// A tensor written into a window of a result: result coordinate `c` of
/// dimension `d` reads source coordinate `(c - offsets[d]) / strides[d]`
/// when that divides exactly and is in range.
struct PlacedTensor {
  Value source;
  /// Per result dimension.
  llvm::SmallVector<int64_t> offsets, strides;
  /// Per result dimension, the source dimension it reads, or -1 where the
  /// source has no such dimension (a rank-reducing insert_slice): there the
  /// coordinate must equal the offset.
  llvm::SmallVector<int64_t> sourceDims;
};

/// How a pad, insert_slice or concat builds its result: the first piece
/// that covers an element gives it; elsewhere `fallback` (insert_slice's
/// destination, a tensor of the result's shape) or `padding` (a pad's
/// scalar) does. A concatenation's pieces cover it whole.
struct Placement {
  llvm::SmallVector<PlacedTensor> pieces;
  Value fallback;
  Value padding;
};

/// A strided window of a tensor (`tensor.extract_slice`): result
/// coordinate `c` of the source dimension `j` kept as result dimension
/// `resultDims[j]` reads source coordinate `offsets[j] + c * strides[j]`; a
/// dropped dimension (`resultDims[j] == -1`) reads `offsets[j]`.
struct SliceRead {
  Value source;
  llvm::SmallVector<int64_t> offsets, strides, resultDims;
};

/// True for `tensor.pad`, `tensor.insert_slice` and `tensor.concat`.
bool isPlacementOp(Operation *op);
/// True for the ops `getPlacement` and `getSliceRead` describe.
bool isTensorMoveOp(Operation *op);

/// The placement of a pad, insert_slice or concat; an error for dynamic
/// shapes, offsets or strides, and for a pad whose body yields anything but
/// one value defined outside it.
llvm::Expected<Placement> getPlacement(Operation *op);

/// The window a static `tensor.extract_slice` reads.
llvm::Expected<SliceRead> getSliceRead(Operation *op);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_TENSORMOVES_H
