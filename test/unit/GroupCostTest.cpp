//===- GroupCostTest.cpp - Tests of the group cost model --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Analysis/GroupCost.h"

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

TEST(GroupCostTest, CountsBytesAndFlopsOfElementwiseChain) {
  auto context = makeContext();
  // exp then negate over 1M f32: 4 MB in, 4 MB out, one 4 MB intermediate.
  auto module = parse(*context, R"mlir(
func.func @f(%x: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %init = tensor.empty() : tensor<1024x1024xf32>
  %e = linalg.exp ins(%x : tensor<1024x1024xf32>) outs(%init : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %n = linalg.negf ins(%e : tensor<1024x1024xf32>) outs(%init : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %n : tensor<1024x1024xf32>
}
)mlir");
  ASSERT_TRUE(module);
  DeviceRoofline device = DeviceRoofline::h200();
  GroupCost cost = computeGroupCost(firstFunction(*module), device);
  const int64_t mb4 = 4 * 1024 * 1024;
  EXPECT_EQ(cost.bytesFused, 2 * mb4);
  EXPECT_EQ(cost.bytesUnfused, 4 * mb4);
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 1024 * 1024);
  EXPECT_FALSE(cost.computeBound);
  EXPECT_NEAR(cost.speedupBound, 2.0, 1e-9);
}

TEST(GroupCostTest, LargeMatmulIsComputeBound) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @f(%a: tensor<4096x4096xf32>, %b: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4096x4096xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<4096x4096xf32>, tensor<4096x4096xf32>) outs(%fill : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  return %mm : tensor<4096x4096xf32>
}
)mlir");
  ASSERT_TRUE(module);
  GroupCost cost =
      computeGroupCost(firstFunction(*module), DeviceRoofline::h200());
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 4096 * 4096 * 4096);
  EXPECT_TRUE(cost.computeBound);
  // The fill is folded into the matmul: nothing to gain.
  EXPECT_EQ(cost.bytesUnfused, cost.bytesFused);
  EXPECT_NEAR(cost.speedupBound, 1.0, 1e-9);
}

TEST(GroupCostTest, GatheredTableCountsTheElementsRead) {
  auto context = makeContext();
  // 256 ids look up rows of 768 f32 in a table of 30522 rows: the group
  // reads 256 * 768 elements of the table (768 KB), not all 94 MB of it;
  // a table smaller than what is looked up is read once.
  auto module = parse(*context, R"mlir(
#ids = affine_map<(d0, d1) -> (d0)>
#out = affine_map<(d0, d1) -> (d0, d1)>
func.func @f(%ids: tensor<256xi64>, %table: tensor<30522x768xf32>, %small: tensor<4x768xf32>) -> (tensor<256x768xf32>, tensor<256x768xf32>) {
  %e = tensor.empty() : tensor<256x768xf32>
  %r:2 = linalg.generic {indexing_maps = [#ids, #out, #out], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<256xi64>) outs(%e, %e : tensor<256x768xf32>, tensor<256x768xf32>) {
  ^bb0(%id: i64, %o: f32, %p: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<30522x768xf32>
    %w = tensor.extract %small[%i, %j] : tensor<4x768xf32>
    linalg.yield %v, %w : f32, f32
  } -> (tensor<256x768xf32>, tensor<256x768xf32>)
  return %r#0, %r#1 : tensor<256x768xf32>, tensor<256x768xf32>
}
)mlir");
  ASSERT_TRUE(module);
  GroupCost cost =
      computeGroupCost(firstFunction(*module), DeviceRoofline::h200());
  int64_t ids = 256 * 8, rows = 256 * 768 * 4, small = 4 * 768 * 4;
  EXPECT_EQ(cost.bytesFused, ids + rows + small + 2 * rows);
}

TEST(GroupCostTest, TensorBytes) {
  auto context = makeContext();
  Builder b(context.get());
  EXPECT_EQ(getTensorBytes(RankedTensorType::get({2, 3}, b.getF16Type())), 12);
  EXPECT_EQ(getTensorBytes(RankedTensorType::get({8}, b.getI1Type())), 8);
  EXPECT_EQ(getTensorBytes(b.getF32Type()), 0);
}

TEST(GroupCostTest, TensorBytesOfIndexAndComplex) {
  auto context = makeContext();
  Builder b(context.get());
  // Index has no int-or-float bit width; asking for one crashed.
  EXPECT_EQ(getTensorBytes(RankedTensorType::get({64, 64}, b.getIndexType())),
            64 * 64 * 8);
  EXPECT_EQ(getTensorBytes(
                RankedTensorType::get({4}, ComplexType::get(b.getF32Type()))),
            4 * 8);
}

} // namespace
