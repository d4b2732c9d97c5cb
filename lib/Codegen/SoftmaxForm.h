//===- SoftmaxForm.h - Softmaxes written out op by op -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// torch-mlir lowers `torch.softmax` to five linalg.generics rather than one
// linalg.softmax: the row maximum m of x, x - m, its exponential e, the row
// sum s of e, and e / s. Eager PyTorch runs that softmax as one kernel, so
// the baseline must too: this recognises the form so that its ops are
// tagged like the parts of a decomposed linalg.softmax.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_SOFTMAXFORM_H
#define KOPT_LIB_CODEGEN_SOFTMAXFORM_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::kopt {

/// Tags the ops of every written-out softmax in `func` with
/// kSoftmaxPartAttrName (PlanBuilder.h), numbering them from `firstId`.
/// Only a softmax whose intermediate values nothing else reads is tagged.
/// Returns how many it tagged.
unsigned tagWrittenOutSoftmaxes(func::FuncOp func, int64_t firstId);

/// One tagged softmax: its ops, the value it gives (the part read outside
/// it) and its row reduction, over `rows` rows of `length` elements.
struct SoftmaxParts {
  SmallVector<Operation *> ops;
  Value result;
  linalg::GenericOp reduction;
  int64_t rows = 1, length = 1;
  /// The reduction's one input where the rows are contiguous f32 rows of
  /// it, laid out as the result's (a row-major identity map, the last loop
  /// the only reduction): what the long-row kernels (OnlineSoftmax.h,
  /// ClusterSoftmax.h) read. Null otherwise.
  Value contiguousInput;
};

/// The softmax whose parts carry the same kSoftmaxPartAttrName as `part`,
/// among `ops`; nullopt where it has no single result or no reduction.
std::optional<SoftmaxParts> findSoftmaxParts(Operation *part,
                                             llvm::ArrayRef<Operation *> ops);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_SOFTMAXFORM_H
