//===- GemmFormsTest.cpp - Matrix products a GEMM step computes -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// matchGemmForm on the forms front ends write (named and generic, either
// operand transposed through its map or by a transpose op, batched and
// shared operands) and on near misses; and the baseline's cuBLASLt step
// for a weight transposed either way: one call with the transpose flag, no
// transpose kernel.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Codegen/GemmForms.h"
#include "kopt/Codegen/KernelTask.h"
#include "kopt/Codegen/Proposers.h"

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

constexpr llvm::StringLiteral kForms = R"mlir(
#mk = affine_map<(m, n, k) -> (m, k)>
#km = affine_map<(m, n, k) -> (k, m)>
#kn = affine_map<(m, n, k) -> (k, n)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#nm = affine_map<(m, n, k) -> (n, m)>
#bmk = affine_map<(b, m, n, k) -> (b, m, k)>
#bnk = affine_map<(b, m, n, k) -> (b, n, k)>
#bmn = affine_map<(b, m, n, k) -> (b, m, n)>
#kn4 = affine_map<(b, m, n, k) -> (k, n)>
func.func @plain(%a: tensor<16x8xf32>, %b: tensor<8x32xf32>, %c: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x32xf32>) outs(%c : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}
func.func @bt_maps(%a: tensor<16x8xf32>, %b: tensor<32x8xf32>, %c: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%a, %b : tensor<16x8xf32>, tensor<32x8xf32>) outs(%c : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}
func.func @bt_op(%a: tensor<16x8xf32>, %w: tensor<32x8xf32>, %c: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %e = tensor.empty() : tensor<8x32xf32>
  %t = linalg.transpose ins(%w : tensor<32x8xf32>) outs(%e : tensor<8x32xf32>) permutation = [1, 0]
  %0 = linalg.matmul ins(%a, %t : tensor<16x8xf32>, tensor<8x32xf32>) outs(%c : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}
func.func @at_generic(%a: tensor<8x16xf32>, %b: tensor<8x32xf32>, %c: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = linalg.generic {indexing_maps = [#km, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<8x16xf32>, tensor<8x32xf32>) outs(%c : tensor<16x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %y, %x : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}
func.func @batched_bt(%a: tensor<4x16x8xf32>, %b: tensor<4x32x8xf32>, %c: tensor<4x16x32xf32>) -> tensor<4x16x32xf32> {
  %0 = linalg.generic {indexing_maps = [#bmk, #bnk, #bmn], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%a, %b : tensor<4x16x8xf32>, tensor<4x32x8xf32>) outs(%c : tensor<4x16x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x16x32xf32>
  return %0 : tensor<4x16x32xf32>
}
func.func @shared_b(%a: tensor<4x16x8xf32>, %b: tensor<8x32xf32>, %c: tensor<4x16x32xf32>) -> tensor<4x16x32xf32> {
  %0 = linalg.generic {indexing_maps = [#bmk, #kn4, #bmn], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%a, %b : tensor<4x16x8xf32>, tensor<8x32xf32>) outs(%c : tensor<4x16x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x16x32xf32>
  return %0 : tensor<4x16x32xf32>
}
func.func @batch_matmul(%a: tensor<4x16x8xf32>, %b: tensor<4x8x32xf32>, %c: tensor<4x16x32xf32>) -> tensor<4x16x32xf32> {
  %0 = linalg.batch_matmul ins(%a, %b : tensor<4x16x8xf32>, tensor<4x8x32xf32>) outs(%c : tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
  return %0 : tensor<4x16x32xf32>
}
func.func @miss_output_transposed(%a: tensor<16x8xf32>, %b: tensor<8x32xf32>, %c: tensor<32x16xf32>) -> tensor<32x16xf32> {
  %0 = linalg.generic {indexing_maps = [#mk, #kn, #nm], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<16x8xf32>, tensor<8x32xf32>) outs(%c : tensor<32x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<32x16xf32>
  return %0 : tensor<32x16xf32>
}
func.func @miss_not_multiply_add(%a: tensor<16x8xf32>, %b: tensor<8x32xf32>, %c: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<16x8xf32>, tensor<8x32xf32>) outs(%c : tensor<16x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.addf %x, %y : f32
    %s = arith.maximumf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}
func.func @miss_f16(%a: tensor<16x8xf16>, %b: tensor<8x32xf16>, %c: tensor<16x32xf16>) -> tensor<16x32xf16> {
  %0 = linalg.matmul ins(%a, %b : tensor<16x8xf16>, tensor<8x32xf16>) outs(%c : tensor<16x32xf16>) -> tensor<16x32xf16>
  return %0 : tensor<16x32xf16>
}
)mlir";

/// The one op of `func` with two inputs and a reduction loop.
Operation *findContraction(func::FuncOp func) {
  Operation *found = nullptr;
  func.walk([&](linalg::LinalgOp op) {
    if (!found && op.getNumDpsInputs() == 2 && op.getNumReductionLoops() > 0)
      found = op;
  });
  return found;
}

struct Expected {
  const char *function;
  std::vector<int64_t> batchShape;
  bool transposeA, transposeB, batchedA, batchedB;
  size_t folded;
};

TEST(GemmFormsTest, RecognisesProductsAndTheirOperandLayouts) {
  auto context = makeContext();
  auto module = parse(*context, kForms);
  ASSERT_TRUE(module);
  const Expected forms[] = {
      {"plain", {}, false, false, true, true, 0},
      {"bt_maps", {}, false, true, true, true, 0},
      {"bt_op", {}, false, true, true, true, 1},
      {"at_generic", {}, true, false, true, true, 0},
      {"batched_bt", {4}, false, true, true, true, 0},
      {"shared_b", {4}, false, false, true, false, 0},
      {"batch_matmul", {4}, false, false, true, true, 0},
  };
  for (const Expected &expected : forms) {
    SCOPED_TRACE(expected.function);
    auto func = module->lookupSymbol<func::FuncOp>(expected.function);
    ASSERT_TRUE(func);
    std::optional<GemmForm> form = matchGemmForm(findContraction(func));
    ASSERT_TRUE(form.has_value());
    EXPECT_EQ(form->m, 16);
    EXPECT_EQ(form->n, 32);
    EXPECT_EQ(form->k, 8);
    EXPECT_EQ(
        std::vector<int64_t>(form->batchShape.begin(), form->batchShape.end()),
        expected.batchShape);
    EXPECT_EQ(form->transposeA, expected.transposeA);
    EXPECT_EQ(form->transposeB, expected.transposeB);
    EXPECT_EQ(form->batchedA, expected.batchedA);
    EXPECT_EQ(form->batchedB, expected.batchedB);
    EXPECT_EQ(form->foldedTransposes.size(), expected.folded);
    // The operands are the function's arguments: the transpose folded.
    EXPECT_TRUE(isa<BlockArgument>(form->a));
    EXPECT_TRUE(isa<BlockArgument>(form->b));
  }
  // The transpose feeds only the GEMM that folds it.
  auto btOp = module->lookupSymbol<func::FuncOp>("bt_op");
  Operation *transpose = &btOp.getBody().front().front();
  while (!isa<linalg::TransposeOp>(transpose))
    transpose = transpose->getNextNode();
  EXPECT_TRUE(isFoldedIntoGemms(transpose));
  EXPECT_FALSE(isFoldedIntoGemms(findContraction(btOp)));
}

TEST(GemmFormsTest, RefusesNearMisses) {
  auto context = makeContext();
  auto module = parse(*context, kForms);
  ASSERT_TRUE(module);
  for (const char *name :
       {"miss_output_transposed", "miss_not_multiply_add", "miss_f16"}) {
    SCOPED_TRACE(name);
    auto func = module->lookupSymbol<func::FuncOp>(name);
    ASSERT_TRUE(func);
    EXPECT_FALSE(matchGemmForm(findContraction(func)).has_value());
  }
}

/// The task and group of the one fusion group of `source`.
struct PlannedGroup {
  OwningOpRef<ModuleOp> module;
  func::FuncOp group;
  KernelTask task;
};

PlannedGroup planGroup(MLIRContext &context, llvm::StringRef source) {
  PlannedGroup planned;
  planned.module = parse(context, source);
  if (!planned.module)
    return planned;
  EXPECT_TRUE(succeeded(prepareModelGraph(*planned.module)));
  for (auto func : planned.module->getOps<func::FuncOp>())
    if (func->hasAttr(kFusionGroupAttrName))
      planned.group = func;
  EXPECT_TRUE(planned.group);
  if (!planned.group)
    return planned;
  auto task = buildKernelTask(planned.group);
  EXPECT_TRUE(static_cast<bool>(task)) << llvm::toString(task.takeError());
  if (task)
    planned.task = *task;
  return planned;
}

constexpr llvm::StringLiteral kLinearMaps = R"mlir(
func.func @linear(%x: tensor<64x96xf32>, %w: tensor<48x96xf32>) -> tensor<64x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x48xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  %0 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<64x96xf32>, tensor<48x96xf32>) outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %0 : tensor<64x48xf32>
}
)mlir";

constexpr llvm::StringLiteral kLinearTranspose = R"mlir(
func.func @linear(%x: tensor<64x96xf32>, %w: tensor<48x96xf32>) -> tensor<64x48xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<96x48xf32>
  %t = linalg.transpose ins(%w : tensor<48x96xf32>) outs(%et : tensor<96x48xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<64x48xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  %0 = linalg.matmul ins(%x, %t : tensor<64x96xf32>, tensor<96x48xf32>) outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %0 : tensor<64x48xf32>
}
)mlir";

TEST(GemmFormsTest, BaselineTakesATransposedWeightAsOneLibraryCall) {
  auto context = makeContext();
  for (llvm::StringRef source : {kLinearMaps, kLinearTranspose}) {
    PlannedGroup planned = planGroup(*context, source);
    ASSERT_TRUE(planned.group);
    auto baseline = proposeBaseline(planned.group, planned.task);
    ASSERT_TRUE(static_cast<bool>(baseline))
        << llvm::toString(baseline.takeError());
    EXPECT_TRUE(verifyPlan(*baseline, planned.task).isOk());
    ASSERT_EQ(baseline->steps.size(), 1u);
    const PlanStep &step = baseline->steps[0];
    ASSERT_EQ(step.kind, PlanStep::Kind::Gemm);
    // A is x [64, 96] and B the weight as stored, [48, 96].
    const TensorSpec *a = planned.task.findTensor(step.gemm.a);
    const TensorSpec *b = planned.task.findTensor(step.gemm.b);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->shape, (std::vector<int64_t>{64, 96}));
    EXPECT_EQ(b->shape, (std::vector<int64_t>{48, 96}));
    EXPECT_FALSE(step.gemm.transposeA);
    EXPECT_TRUE(step.gemm.transposeB);
    EXPECT_EQ(step.gemm.m, 64);
    EXPECT_EQ(step.gemm.n, 48);
    EXPECT_EQ(step.gemm.k, 96);
    EXPECT_EQ(baseline->countLaunches(), 0u);
  }
}

} // namespace
