//===- LinearForm.cpp - Affine expressions as linear forms ----------------===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "LinearForm.h"

using namespace mlir;

bool mlir::kopt::addLinearForm(AffineExpr expr, int64_t scale,
                               SmallVectorImpl<int64_t> &coeffs,
                               int64_t &offset) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
    coeffs[dim.getPosition()] += scale;
    return true;
  }
  if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
    offset += scale * constant.getValue();
    return true;
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return false;
  if (binary.getKind() == AffineExprKind::Add)
    return addLinearForm(binary.getLHS(), scale, coeffs, offset) &&
           addLinearForm(binary.getRHS(), scale, coeffs, offset);
  if (binary.getKind() != AffineExprKind::Mul)
    return false;
  if (auto rhs = dyn_cast<AffineConstantExpr>(binary.getRHS()))
    return addLinearForm(binary.getLHS(), scale * rhs.getValue(), coeffs,
                         offset);
  if (auto lhs = dyn_cast<AffineConstantExpr>(binary.getLHS()))
    return addLinearForm(binary.getRHS(), scale * lhs.getValue(), coeffs,
                         offset);
  return false;
}
