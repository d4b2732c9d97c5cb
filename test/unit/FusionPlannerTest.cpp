//===- FusionPlannerTest.cpp - Tests of fusion group formation --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Analysis/FusionPlanner.h"

#include <chrono>
#include <string>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

FusionPlan planFirstFunction(ModuleOp module) {
  return planFusionGroups(firstFunction(module).getBody().front());
}

TEST(FusionPlannerTest, MatmulAbsorbsElementwiseEpilogue) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %bias: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8x32xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%fill : tensor<8x32xf32>) -> tensor<8x32xf32>
  %add = linalg.add ins(%mm, %bias : tensor<8x32xf32>, tensor<8x32xf32>) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %relu = linalg.max ins(%add, %fill : tensor<8x32xf32>, tensor<8x32xf32>) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %relu : tensor<8x32xf32>
}
)mlir");
  ASSERT_TRUE(module);
  FusionPlan plan = planFirstFunction(*module);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].kind, OpKind::Contraction);
  ASSERT_EQ(plan.groups[0].ops.size(), 3u);
  EXPECT_EQ(plan.groups[0].ops[0]->getName().getStringRef(), "linalg.matmul");
  EXPECT_EQ(plan.groups[0].ops[2]->getName().getStringRef(), "linalg.max");
}

TEST(FusionPlannerTest, MatmulTakesTheTransposeOfItsWeight) {
  // nn.Linear as torch-mlir writes it: the weight [N, K] transposed, then
  // the matmul. The transpose joins (GEMMs read the weight as stored); one
  // that something else uses too stays out.
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @f(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %v: tensor<32x16xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<16x32xf32>
  %init = tensor.empty() : tensor<8x32xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%et : tensor<16x32xf32>) permutation = [1, 0]
  %mm = linalg.matmul ins(%x, %wt : tensor<8x16xf32>, tensor<16x32xf32>) outs(%fill : tensor<8x32xf32>) -> tensor<8x32xf32>
  %vt = linalg.transpose ins(%v : tensor<32x16xf32>) outs(%et : tensor<16x32xf32>) permutation = [1, 0]
  %mm2 = linalg.matmul ins(%x, %vt : tensor<8x16xf32>, tensor<16x32xf32>) outs(%fill : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %mm, %mm2, %vt : tensor<8x32xf32>, tensor<8x32xf32>, tensor<16x32xf32>
}
)mlir");
  ASSERT_TRUE(module);
  FusionPlan plan = planFirstFunction(*module);
  ASSERT_EQ(plan.groups.size(), 2u);
  ASSERT_EQ(plan.groups[0].ops.size(), 2u);
  EXPECT_EQ(plan.groups[0].ops[0]->getName().getStringRef(),
            "linalg.transpose");
  EXPECT_EQ(plan.groups[0].ops[1]->getName().getStringRef(), "linalg.matmul");
  // %vt is also returned: it stays out of the second matmul's group.
  ASSERT_EQ(plan.groups[1].ops.size(), 1u);
  EXPECT_EQ(plan.groups[1].ops[0]->getName().getStringRef(), "linalg.matmul");
}

TEST(FusionPlannerTest, RefusesMergeThatWouldCreateCycle) {
  // %e1 -> (reduction outside the chain) -> %e3, and %e1 -> %e3 directly:
  // putting %e1 and %e3 in one group would make it depend on itself
  // through the reduction, so the reduction's group must not swallow both
  // ends unless it is one group with them.
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @f(%x: tensor<4x8xf32>, %y: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x8xf32>
  %initmm = tensor.empty() : tensor<4x16xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%initmm : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e1 = linalg.exp ins(%x : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%e1, %y : tensor<4x8xf32>, tensor<8x16xf32>) outs(%fill : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e2 = linalg.negf ins(%e1 : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm2 = linalg.matmul ins(%e2, %y : tensor<4x8xf32>, tensor<8x16xf32>) outs(%mm : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %mm2 : tensor<4x16xf32>
}
)mlir");
  ASSERT_TRUE(module);
  FusionPlan plan = planFirstFunction(*module);
  // Each matmul is a group; %e1 and %e2 chain together; no group holds
  // both matmuls (the second reads the first as its accumulator, which is
  // fine) or an elementwise op and a matmul that sandwich another group.
  for (const FusionGroup &group : plan.groups) {
    unsigned matmuls = llvm::count_if(group.ops, [](Operation *op) {
      return op->getName().getStringRef() == "linalg.matmul";
    });
    EXPECT_LE(matmuls, 1u);
  }
  bool chained = llvm::any_of(plan.groups, [](const FusionGroup &group) {
    return group.kind == OpKind::Elementwise && group.ops.size() == 2;
  });
  EXPECT_TRUE(chained);
}

TEST(FusionPlannerTest, SkipsDynamicShapesWithReason) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @f(%x: tensor<?x8xf32>, %init: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %e = linalg.exp ins(%x : tensor<?x8xf32>) outs(%init : tensor<?x8xf32>) -> tensor<?x8xf32>
  %n = linalg.negf ins(%e : tensor<?x8xf32>) outs(%init : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %n : tensor<?x8xf32>
}
)mlir");
  ASSERT_TRUE(module);
  FusionPlan plan = planFirstFunction(*module);
  EXPECT_TRUE(plan.groups.empty());
  ASSERT_EQ(plan.skipped.size(), 2u);
  EXPECT_NE(plan.skipped[0].reason.find("dynamic shape"), std::string::npos);
}

TEST(FusionPlannerTest, LoneElementwiseOpIsNotAGroup) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %init = tensor.empty() : tensor<8xf32>
  %e = linalg.exp ins(%x : tensor<8xf32>) outs(%init : tensor<8xf32>) -> tensor<8xf32>
  return %e : tensor<8xf32>
}
)mlir");
  ASSERT_TRUE(module);
  EXPECT_TRUE(planFirstFunction(*module).groups.empty());
}

/// A chain of `count` elementwise ops, as bench/gen_chain.py writes it.
std::string makeChain(unsigned count) {
  const char *shape = "tensor<4x8xf32>";
  std::string text = std::string("func.func @chain(%x: ") + shape + ") -> " +
                     shape + " {\n  %init = tensor.empty() : " + shape + "\n";
  std::string previous = "%x";
  for (unsigned i = 0; i < count; ++i) {
    const char *op = i % 2 ? "linalg.negf" : "linalg.exp";
    text += "  %v" + std::to_string(i) + " = " + op + " ins(" + previous +
            " : " + shape + ") outs(%init : " + shape + ") -> " + shape + "\n";
    previous = "%v" + std::to_string(i);
  }
  return text + "  return " + previous + " : " + shape + "\n}\n";
}

/// Seconds `planFusionGroups` takes on a chain of `count` ops, which must
/// become one group.
double timeChain(MLIRContext &context, unsigned count) {
  auto module = parse(context, makeChain(count));
  if (!module)
    return 0;
  auto start = std::chrono::steady_clock::now();
  FusionPlan plan = planFirstFunction(*module);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_EQ(plan.groups.size(), 1u);
  if (!plan.groups.empty()) {
    EXPECT_EQ(plan.groups[0].ops.size(), count);
  }
  return seconds;
}

TEST(FusionPlannerTest, PlansALongChainInLinearTime) {
  // The cycle check once looked at the whole group for every op that
  // joined: 30,000 chained ops took minutes. Four times the ops must now
  // take well under the sixteen times a quadratic planner would.
  auto context = makeContext();
  double small = timeChain(*context, 3000);
  double large = timeChain(*context, 12000);
  EXPECT_LT(large, 8 * small + 0.05) << small << " s, then " << large << " s";
  EXPECT_LT(timeChain(*context, 30000), 10.0);
}

} // namespace
