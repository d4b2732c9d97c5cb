//===- OpClassification.h - What kind of op a linalg op is ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Fusion planning sees a model graph as a sequence of ops of a few kinds. This
// file names those kinds and decides, for any operation, which kind it is, or
// why kopt leaves it alone.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_ANALYSIS_OPCLASSIFICATION_H
#define KOPT_ANALYSIS_OPCLASSIFICATION_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::kopt {

/// The role an operation plays in fusion planning.
enum class OpKind {
  /// Every loop parallel, indexing maps projected permutations: named
  /// elementwise ops, linalg.generic maps, broadcasts, transposes, copies,
  /// non-constant fills.
  Elementwise,
  /// At least one reduction loop and projected-permutation maps
  /// (linalg.reduce, reducing linalg.generic).
  Reduction,
  /// `linalg.softmax`.
  Softmax,
  /// matmul, batch_matmul and contraction-like generics.
  Contraction,
  /// A convolution: any named linalg convolution (1-D, 2-D or 3-D, plain,
  /// grouped or depthwise) or a generic of the same shape.
  Convolution,
  /// Max, min or sum pooling over a 1-D, 2-D or 3-D window.
  Pooling,
  /// `tensor.expand_shape` / `tensor.collapse_shape`: free in row-major
  /// layout. A reshape joins the group of its producer when a member of that
  /// group consumes it; it never starts a group.
  Reshape,
  /// A linalg op kopt does not fuse; `reason` says why.
  Unsupported,
  /// Not a linalg op (constants, tensor.empty, reshapes, calls): never a
  /// group member.
  Other,
};

/// Returns a lower-case name for `kind`, as used in attributes and reports.
llvm::StringRef stringifyOpKind(OpKind kind);

/// The classification of one operation.
struct OpClassification {
  OpKind kind = OpKind::Other;
  /// Why the op is `Unsupported`; empty otherwise.
  std::string reason;
  /// Static sizes of the op's iteration space (loop ranges), outermost first.
  llvm::SmallVector<int64_t> domain;
  /// For reductions and softmax: the sizes of the parallel (row) dimensions,
  /// in loop order. Empty for other kinds.
  llvm::SmallVector<int64_t> rowDomain;
  /// For reductions and softmax: which loops reduce (true) or run in
  /// parallel (false).
  llvm::SmallVector<bool> reducedLoops;
};

/// Classifies `op`. Ops other than linalg ops and reshapes are `Other`.
OpClassification classifyOp(Operation *op);

/// Returns true if `op` is cheap to recompute and so is cloned into every
/// group that uses it instead of becoming a group input: scalar or splat
/// constants, `tensor.empty` and reshapes of it, and `linalg.fill` of such
/// a constant into such an empty tensor.
bool isCheapToClone(Operation *op);

/// The source tensor of `op` when `op` transposes the two innermost
/// dimensions of a tensor of rank 2 or more (a `linalg.transpose`, or a
/// parallel `linalg.generic` copying its one input through that
/// permutation); a null value otherwise. A GEMM reads an operand such an op
/// produces in place, as stored, so the transpose is never computed
/// (docs/FusionGroups.md, docs/Codegen.md).
Value getInnermostTransposeSource(Operation *op);

/// True if `op` is a `tensor.pad` kopt can pull into the group of the
/// convolution or pooling op that reads it: static shapes and padding, and
/// a padding value that is a scalar constant (zero before a convolution,
/// -inf or the lowest value before a max-pool). Such a pad is never
/// computed on its own: cuDNN takes zero padding as its own parameter, and
/// generated kernels read the unpadded tensor with bounds checks
/// (docs/FusionGroups.md).
bool isFusiblePad(Operation *op);

/// `shape` without its unit dimensions: `[4, 128, 1]` and `[4, 128]` iterate
/// the same points, which is what fusion compatibility is about.
llvm::SmallVector<int64_t> dropUnitDims(llvm::ArrayRef<int64_t> shape);

/// `value` without the `tensor.expand_shape` and `tensor.collapse_shape` ops
/// around it: the tensor it is a row-major view of.
Value throughReshapes(Value value);

/// True if `op` only widens its one input elementwise: a `linalg.generic`
/// with identity maps whose body is one `arith.extf` of the input (torch's
/// casts to f64 before a norm's statistics).
bool isWideningCast(Operation *op);

/// True if `op` is a linalg op whose body takes (a, b, acc) and yields
/// `acc + a * b` in floats (either order of each): the multiply-add of a
/// GEMM or a convolution.
bool isMultiplyAccumulate(Operation *op);

/// Returns a short human-readable description of `op` for reports, such as
/// `linalg.matmul` or `linalg.generic{arith.addf,math.exp}`.
std::string describeOp(Operation *op);

} // namespace mlir::kopt

#endif // KOPT_ANALYSIS_OPCLASSIFICATION_H
