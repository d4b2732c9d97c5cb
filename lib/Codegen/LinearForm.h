//===- LinearForm.h - Affine expressions as linear forms --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Indexing-map results read as `offset + sum(coeffs[d] * d)`: shared by the
// convolution matcher and the fp64 reference interpreter.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_LINEARFORM_H
#define KOPT_LIB_CODEGEN_LINEARFORM_H

#include "mlir/IR/AffineExpr.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace mlir::kopt {

/// Adds `scale * expr` to a linear form over the loop dimensions (`coeffs`
/// indexed by dimension, plus `offset`); false when `expr` is not linear.
bool addLinearForm(AffineExpr expr, int64_t scale,
                   SmallVectorImpl<int64_t> &coeffs, int64_t &offset);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_LINEARFORM_H
