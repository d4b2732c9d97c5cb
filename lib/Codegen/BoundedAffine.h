//===- BoundedAffine.h - Affine indices simplified with ranges --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A read through reshapes linearises a delinearised index: GroupNorm's
// statistics over x.view(N, G, C/G * H * W) read element
//   (row * 2097152 + c) + ((row * 2097152 + c) floordiv 16777216) * 16777216
//     - ((row * 8 + c floordiv 262144) floordiv 64) * 16777216 + ...
// which is `row * 2097152 + c` once one knows that c < 2097152, but not
// before: MLIR's simplification knows nothing of the dimensions' ranges,
// and the kernel computed several 64-bit divisions per element, which made
// it compute-bound at half the copy bandwidth. Given each dimension's
// extent, these rules remove such divisions exactly:
//   - e floordiv k is a constant when e's range lies within one multiple of
//     k, and e mod k is e when e's range lies within [0, k);
//   - (a * X + r) floordiv k = X floordiv (k / a) when a divides k and
//     r's range lies within [0, a).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_BOUNDEDAFFINE_H
#define KOPT_LIB_CODEGEN_BOUNDEDAFFINE_H

#include "mlir/IR/AffineExpr.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace mlir::kopt {

/// `expr` with the floordivs and mods its dimensions' ranges decide
/// removed. Dimension `d` ranges over [0, extents[d]) where `d <
/// extents.size()` and `extents[d] > 0`, and is unbounded otherwise.
AffineExpr simplifyWithDimExtents(AffineExpr expr,
                                  llvm::ArrayRef<int64_t> extents);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_BOUNDEDAFFINE_H
