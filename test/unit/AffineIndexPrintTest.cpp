//===- AffineIndexPrintTest.cpp - Index expressions as C --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// printAffineExpr writes a floor division or remainder as the unsigned
// kopt_divu / kopt_modu only where its operand cannot be negative (indices
// count from 0), and as the signed floor (kopt_floordiv) or C's remainder
// where it can, as in a padded window's `oh * 2 - 1 + kh`.
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/CudaEmitter.h"

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::kopt;

namespace {

std::string print(AffineExpr expr) {
  return printAffineExpr(
      expr, [](unsigned position) { return "d" + std::to_string(position); });
}

TEST(AffineIndexPrintTest, NonNegativeOperandsDivideUnsigned) {
  MLIRContext context;
  AffineExpr d0 = getAffineDimExpr(0, &context);
  AffineExpr d1 = getAffineDimExpr(1, &context);
  EXPECT_EQ(print(d0.floorDiv(4)), "kopt_divu(d0, 4LL)");
  EXPECT_EQ(print(d0 % 8), "kopt_modu(d0, 8LL)");
  EXPECT_EQ(print((d0 * 8 + d1).floorDiv(64)),
            "kopt_divu(((d0 * 8LL) + d1), 64LL)");
  // Nested: the inner division's result is non-negative too.
  EXPECT_EQ(print((d0.floorDiv(3) + d1) % 5),
            "kopt_modu((kopt_divu(d0, 3LL) + d1), 5LL)");
}

TEST(AffineIndexPrintTest, PossiblyNegativeOperandsKeepTheSignedFloor) {
  MLIRContext context;
  AffineExpr d0 = getAffineDimExpr(0, &context);
  AffineExpr d1 = getAffineDimExpr(1, &context);
  // A padded window's input row, -1 at the border.
  AffineExpr window = d0 * 2 - 1 + d1;
  EXPECT_EQ(print(window.floorDiv(2)).rfind("kopt_floordiv<long long>(", 0),
            0u);
  EXPECT_EQ(print(window % 2).find("kopt_modu"), std::string::npos);
  EXPECT_EQ(print((d0 * -3 + d1).floorDiv(4)).rfind("kopt_floordiv", 0), 0u);
  // MLIR takes the multiple of 4 out of the division, and what is left
  // divides unsigned.
  EXPECT_EQ(print((d0 * -64 + d1).floorDiv(4)),
            "((d0 * -16LL) + kopt_divu(d1, 4LL))");
  // A ceiling division keeps its own helper.
  EXPECT_EQ(print(d0.ceilDiv(4)), "kopt_ceildiv<long long>(d0, 4LL)");
}

} // namespace
