//===- GemmForms.h - Matrix products a GEMM step computes -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Recognises the linalg ops that are (batched) matrix products on f32 and
// the layout each operand is stored in: named matmul and batch_matmul with
// their default or transposed indexing maps, and contraction-shaped
// linalg.generic ops alike, by their indexing maps, iterator types and
// multiply-accumulate body. A transpose that produces an operand (as
// torch-mlir writes nn.Linear's weight) is folded into the operand's
// layout, so that neither cuBLASLt nor a generated GEMM needs a transpose
// kernel before it.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_GEMMFORMS_H
#define KOPT_CODEGEN_GEMMFORMS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace mlir::kopt {

/// `C[batch..., m, n] = sum_k A[batch..., m, k] * B[batch..., k, n]`, every
/// tensor row-major with static shapes and f32 elements.
struct GemmForm {
  /// The operands as stored in memory: after folding the transposes that
  /// produced them.
  Value a, b;
  /// The product (the op's result).
  Value result;
  /// The batch dimensions, outermost in C and in the same order; empty for
  /// a plain GEMM.
  SmallVector<int64_t> batchShape;
  int64_t m = 0, n = 0, k = 0;
  /// A is stored `[batch..., K, M]` (else `[batch..., M, K]`); B is stored
  /// `[batch..., N, K]` (else `[batch..., K, N]`), as nn.Linear's weight.
  bool transposeA = false, transposeB = false;
  /// Whether each operand has the batch dimensions; one without them is
  /// shared by every batch.
  bool batchedA = true, batchedB = true;
  /// The transposes folded into `a` and `b`, in the order met.
  SmallVector<Operation *> foldedTransposes;

  /// The number of batches (1 for a plain GEMM).
  int64_t getBatch() const;
};

/// Returns the GEMM form of `op` when it is one: a linalg op with two
/// inputs and one init of static f32 tensors, a body that yields
/// `acc + a * b`, exactly one reduction loop (K) read by both inputs, one
/// parallel loop read by A and C only (M), one read by B and C only (N),
/// any number read by all three (batch), C indexed `(batch..., m, n)` and
/// each input by a permutation of its loops with the batch loops first in
/// C's order (or absent). Whatever the accumulator holds; a caller that
/// needs zeros checks. std::nullopt otherwise.
std::optional<GemmForm> matchGemmForm(Operation *op);

/// True if `op` is a transpose of the two innermost dimensions (a
/// linalg.transpose or its generic form) whose every user is a GEMM that
/// folds it into an operand's layout: nothing needs its result in memory.
bool isFoldedIntoGemms(Operation *op);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_GEMMFORMS_H
