//===- BoundedAffineTest.cpp - Indices simplified with ranges ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// simplifyWithDimExtents removes only the divisions the ranges decide: the
// result equals the original at every point of the ranges (checked
// exhaustively on small ranges), and GroupNorm's reshaped read becomes
// `row * 2097152 + c`.
//
//===----------------------------------------------------------------------===//

#include "lib/Codegen/BoundedAffine.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::kopt;

namespace {

int64_t evaluate(AffineExpr expr, int64_t d0, int64_t d1) {
  AffineMap map = AffineMap::get(2, 0, expr);
  return map.compose({d0, d1})[0];
}

TEST(BoundedAffineTest, GroupNormReadBecomesLinear) {
  MLIRContext context;
  AffineExpr row = getAffineDimExpr(0, &context);
  AffineExpr c = getAffineDimExpr(1, &context);
  AffineExpr flat = row * 2097152 + c;
  AffineExpr read = flat + flat.floorDiv(16777216) * 16777216 +
                    (c % 262144).floorDiv(262144) * 262144 -
                    (row * 8 + c.floorDiv(262144)).floorDiv(64) * 16777216;
  AffineExpr simple =
      simplifyAffineExpr(simplifyWithDimExtents(read, {64, 2097152}), 2, 0);
  EXPECT_EQ(simple, flat);
  // Without the ranges nothing is decided.
  EXPECT_NE(simplifyAffineExpr(simplifyWithDimExtents(read, {}), 2, 0), flat);
}

TEST(BoundedAffineTest, AgreesWithTheOriginalEverywhereInRange) {
  MLIRContext context;
  AffineExpr d0 = getAffineDimExpr(0, &context);
  AffineExpr d1 = getAffineDimExpr(1, &context);
  const int64_t e0 = 12, e1 = 20;
  std::vector<AffineExpr> exprs = {
      (d0 * 20 + d1).floorDiv(40),
      (d0 * 20 + d1).floorDiv(20),
      (d0 * 20 + d1) % 20,
      (d0 * 4 + d1.floorDiv(5)).floorDiv(8),
      (d1 % 20).floorDiv(20),
      (d0 * 6 + d1).floorDiv(12),
      (d0 * 3 + d1 * 2).floorDiv(7),
      (d0 - d1).floorDiv(4),
      (d0 * 20 + d1 - 5).floorDiv(20),
      (d0 * 8 + d1 % 8) % 16,
  };
  for (AffineExpr expr : exprs) {
    AffineExpr simple = simplifyWithDimExtents(expr, {e0, e1});
    for (int64_t i = 0; i < e0; ++i)
      for (int64_t j = 0; j < e1; ++j)
        ASSERT_EQ(evaluate(simple, i, j), evaluate(expr, i, j))
            << "at (" << i << ", " << j << ")";
  }
  // The decided ones lose their divisions.
  EXPECT_EQ(simplifyWithDimExtents((d1 % 20).floorDiv(20), {e0, e1}),
            getAffineConstantExpr(0, &context));
  EXPECT_EQ(
      simplifyAffineExpr(
          simplifyWithDimExtents((d0 * 20 + d1).floorDiv(40), {e0, e1}), 2, 0),
      d0.floorDiv(2));
}

} // namespace
