//===- OnePassMoments.h - A row's variance in one pass ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A variance written out, as torch-mlir lowers LayerNorm and GroupNorm, sums
// the squared deviations from the row's mean, which is itself a sum over
// the row: two levels of reductions, so two passes over the row (two
// kernels, two reads from DRAM, in the split row form). The second moment
// can be had in the pass that computes the mean instead, from the sums of
// the deviations from a shift K and of their squares:
//
//   sum((g - m)^2) = S2 - S1^2 / N,  S1 = sum(g - K),  S2 = sum((g - K)^2),
//
// with m = sum(g) / N, both sums in f64. K is the row's first element g0, so
// the cancellation is bounded whatever the data's mean: (g0 - mean)^2 is at
// most the sum of the squared deviations M2, so S2 <= (N + 1) M2, and the
// difference loses at most log2(N + 1) of f64's 53 bits (21 bits for rows
// of a million elements), where the plain sum of squares loses the bits of
// (mean / std)^2. The sums combine by addition across threads and blocks,
// as every cooperative reduction does.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_ONEPASSMOMENTS_H
#define KOPT_CODEGEN_ONEPASSMOMENTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::kopt {

/// Rewrites in `func` each reduction of the form sum((g - m)^2), possibly
/// each square times or divided by a constant, where m = sum(g) / N is the
/// mean of the same g over the same row (N its length, the sums from
/// zero), into the one-pass form above: the shifted sums S1 and S2 as two
/// reductions that need no other, then S2 - S1^2 / N clamped at zero, in
/// f64, converted to the reduction's type. Anything else is left as it is.
/// Returns how many reductions it rewrote; ops left unused are erased.
unsigned rewriteOnePassMoments(func::FuncOp func);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_ONEPASSMOMENTS_H
