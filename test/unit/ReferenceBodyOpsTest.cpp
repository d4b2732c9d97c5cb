//===- ReferenceBodyOpsTest.cpp - fp64 reference of body ops ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The reference interpreter on what torch-mlir puts in linalg bodies beyond
// plain arithmetic: gathers through tensor.extract (clamped, as the CUDA
// code clamps), linalg.index arithmetic, cf.assert (not checked), and the
// rarer arith and math ops, against hand-computed values.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Codegen/ReferenceInterpreter.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

/// An argument held in memory, read on demand.
class VectorInput final : public ReferenceInput {
public:
  explicit VectorInput(const std::vector<double> &values) : values(values) {}
  void read(ArrayRef<int64_t> indices, double *out) const override {
    for (auto [i, index] : llvm::enumerate(indices))
      out[i] = values[index];
  }

private:
  const std::vector<double> &values;
};

/// Every output of `func` on `in`, evaluated whole; each is checked against
/// its every element sampled, on one thread and on three.
std::vector<std::vector<double>> evaluate(func::FuncOp func,
                                          ArrayRef<std::vector<double>> in) {
  auto interpreter = ReferenceInterpreter::create(func);
  if (!interpreter) {
    ADD_FAILURE() << llvm::toString(interpreter.takeError());
    return {};
  }
  auto outputs = (*interpreter)->evaluateAll(in);
  if (!outputs) {
    ADD_FAILURE() << llvm::toString(outputs.takeError());
    return {};
  }
  // Sampled points agree with the whole evaluation.
  for (unsigned o = 0; o < outputs->size(); ++o) {
    std::vector<int64_t> points((*outputs)[o].size());
    for (size_t i = 0; i < points.size(); ++i)
      points[i] = static_cast<int64_t>(i);
    auto sampled = (*interpreter)->evaluatePoints(in, o, points);
    if (!sampled) {
      ADD_FAILURE() << llvm::toString(sampled.takeError());
      return {};
    }
    EXPECT_EQ(*sampled, (*outputs)[o]);
    std::vector<VectorInput> inputs(in.begin(), in.end());
    std::vector<const ReferenceInput *> pointers;
    for (const VectorInput &input : inputs)
      pointers.push_back(&input);
    auto threaded = (*interpreter)->evaluatePoints(pointers, o, points, 3);
    if (!threaded) {
      ADD_FAILURE() << llvm::toString(threaded.takeError());
      return {};
    }
    EXPECT_EQ(*threaded, (*outputs)[o]);
  }
  return std::move(*outputs);
}

TEST(ReferenceBodyOpsTest, EmbeddingLookupClampsIdsAndIgnoresAsserts) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
#ids = affine_map<(d0, d1) -> (d0)>
#out = affine_map<(d0, d1) -> (d0, d1)>
func.func @lookup(%ids: tensor<4xi64>, %table: tensor<3x2xf32>) -> tensor<4x2xf32> {
  %c0 = arith.constant 0 : i64
  %c3 = arith.constant 3 : index
  %c0i = arith.constant 0 : index
  %rows = tensor.dim %table, %c0i : tensor<3x2xf32>
  %ok = arith.cmpi eq, %rows, %c3 : index
  cf.assert %ok, "a shape check the reference skips"
  %e = tensor.empty() : tensor<4x2xf32>
  %r = linalg.generic {indexing_maps = [#ids, #out], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%id: i64, %o: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 1 : index
    %lt = arith.cmpi slt, %i, %c3 : index
    cf.assert %lt, "index must be smaller than dim size"
    %ge = arith.cmpi sge, %id, %c0 : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %v = tensor.extract %table[%i, %j] : tensor<3x2xf32>
    linalg.yield %v : f32
  } -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}
)mlir");
  ASSERT_TRUE(module);
  std::vector<double> table = {10, 11, 20, 21, 30, 31};
  // Ids past either end read the nearest row.
  auto outputs = evaluate(firstFunction(*module), {{2, 0, -5, 7}, table});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0], (std::vector<double>{30, 31, 10, 11, 10, 11, 30, 31}));
}

TEST(ReferenceBodyOpsTest, GatherFromAProducerAndAConstant) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
#id = affine_map<(d0) -> (d0)>
func.func @gather(%x: tensor<4xf32>) -> tensor<4xf32> {
  %table = arith.constant dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32>
  %c3 = arith.constant 3 : index
  %e = tensor.empty() : tensor<4xf32>
  %twice = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
      outs(%e : tensor<4xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %k = arith.subi %c3, %i : index
    %a = tensor.extract %twice[%k] : tensor<4xf32>
    %b = tensor.extract %table[%i] : tensor<4xf32>
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
)mlir");
  ASSERT_TRUE(module);
  auto outputs = evaluate(firstFunction(*module), {{1, 2, 3, 4}});
  ASSERT_EQ(outputs.size(), 1u);
  // Reversed and doubled, times 1, 2, 4, 8.
  EXPECT_EQ(outputs[0], (std::vector<double>{8, 12, 16, 16}));
}

TEST(ReferenceBodyOpsTest, ReductionGathersFromAReduction) {
  auto context = makeContext();
  // A bag of embeddings: each output sums the rows of a table that its ids
  // pick, the table's rows themselves reduced first (memoised elements that
  // the gathers read, a block of ids at a time).
  auto module = parse(*context, R"mlir(
#table = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
func.func @bag(%ids: tensor<3x4xi64>, %t: tensor<5x6xf32>) -> tensor<3xf32> {
  %zero = arith.constant 0.0 : f32
  %e5 = tensor.empty() : tensor<5xf32>
  %f5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<5xf32>) -> tensor<5xf32>
  %rows = linalg.generic {indexing_maps = [#table, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%t : tensor<5x6xf32>) outs(%f5 : tensor<5xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<5xf32>
  %e3 = tensor.empty() : tensor<3xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %bag = linalg.generic {indexing_maps = [#table, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%ids : tensor<3x4xi64>) outs(%f3 : tensor<3xf32>) {
  ^bb0(%id: i64, %acc: f32):
    %k = arith.index_cast %id : i64 to index
    %v = tensor.extract %rows[%k] : tensor<5xf32>
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %bag : tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(module);
  std::vector<double> table(30);
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = double(i % 6) + 10.0 * double(i / 6);
  // Row r sums to 15 + 60 r; ids past either end read the nearest row.
  auto outputs = evaluate(firstFunction(*module),
                          {{0, 1, 2, 3, 4, 4, 9, -1, 2, 2, 2, 2}, table});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0], (std::vector<double>{60 + 360, 60 + 720, 60 + 480}));
}

TEST(ReferenceBodyOpsTest, AdaptiveAveragePoolMatchesNaiveLoop) {
  auto context = makeContext();
  // torch-mlir's form: a sum over the largest window, masked to each output
  // element's own window, then a division by its size.
  auto module = parse(*context, R"mlir(
#win = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#acc = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @pool(%x: tensor<5x7xf32>) -> tensor<2x3xf32> {
  %zero = arith.constant 0.0 : f32
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %window = tensor.empty() : tensor<3x3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %sum = linalg.generic {indexing_maps = [#win, #acc], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%window : tensor<3x3xf32>) outs(%f : tensor<2x3xf32>) {
  ^bb0(%w: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ki = linalg.index 2 : index
    %kj = linalg.index 3 : index
    %i5 = arith.muli %i, %c5 : index
    %hs = arith.floordivsi %i5, %c2 : index
    %i1 = arith.addi %i, %c1 : index
    %i15 = arith.muli %i1, %c5 : index
    %he = arith.ceildivsi %i15, %c2 : index
    %h = arith.addi %hs, %ki : index
    %hin = arith.cmpi slt, %h, %he : index
    %hc = arith.select %hin, %h, %hs : index
    %j7 = arith.muli %j, %c7 : index
    %ws = arith.floordivsi %j7, %c3 : index
    %j1 = arith.addi %j, %c1 : index
    %j17 = arith.muli %j1, %c7 : index
    %we = arith.ceildivsi %j17, %c3 : index
    %v = arith.addi %ws, %kj : index
    %vin = arith.cmpi slt, %v, %we : index
    %vc = arith.select %vin, %v, %ws : index
    %in = arith.andi %hin, %vin : i1
    %x1 = tensor.extract %x[%hc, %vc] : tensor<5x7xf32>
    %s = arith.addf %out, %x1 : f32
    %r = arith.select %in, %s, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %avg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%s: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %i5 = arith.muli %i, %c5 : index
    %hs = arith.floordivsi %i5, %c2 : index
    %i1 = arith.addi %i, %c1 : index
    %i15 = arith.muli %i1, %c5 : index
    %he = arith.ceildivsi %i15, %c2 : index
    %j7 = arith.muli %j, %c7 : index
    %ws = arith.floordivsi %j7, %c3 : index
    %j1 = arith.addi %j, %c1 : index
    %j17 = arith.muli %j1, %c7 : index
    %we = arith.ceildivsi %j17, %c3 : index
    %dh = arith.subi %he, %hs : index
    %dw = arith.subi %we, %ws : index
    %count = arith.muli %dh, %dw : index
    %ci = arith.index_cast %count : index to i64
    %cf = arith.sitofp %ci : i64 to f32
    %a = arith.divf %s, %cf : f32
    linalg.yield %a : f32
  } -> tensor<2x3xf32>
  return %avg : tensor<2x3xf32>
}
)mlir");
  ASSERT_TRUE(module);
  std::vector<double> x(35);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(double(i));
  auto outputs = evaluate(firstFunction(*module), {x});
  ASSERT_EQ(outputs.size(), 1u);
  ASSERT_EQ(outputs[0].size(), 6u);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      int hs = i * 5 / 2, he = ((i + 1) * 5 + 1) / 2;
      int ws = j * 7 / 3, we = ((j + 1) * 7 + 2) / 3;
      double sum = 0;
      for (int h = hs; h < he; ++h)
        for (int w = ws; w < we; ++w)
          sum += x[h * 7 + w];
      EXPECT_NEAR(outputs[0][i * 3 + j], sum / ((he - hs) * (we - ws)), 1e-12)
          << i << "," << j;
    }
}

TEST(ReferenceBodyOpsTest, RareArithAndMathOpsMatchHandValues) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
#id = affine_map<(d0) -> (d0)>
func.func @ops(%x: tensor<1xf32>, %k: tensor<1xi32>, %h: tensor<1xf16>) -> (tensor<1xf32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi32>, tensor<1xf32>, tensor<1xi1>, tensor<1xi1>, tensor<1xf32>, tensor<1xi32>) {
  %ef = tensor.empty() : tensor<1xf32>
  %ei = tensor.empty() : tensor<1xi32>
  %e8 = tensor.empty() : tensor<1xi8>
  %eb = tensor.empty() : tensor<1xi1>
  %hi = arith.constant 1.0 : f32
  %c3 = arith.constant 3 : i32
  %c4 = arith.constant 4 : i32
  %c0x40 = arith.constant 64 : i8
  %c1 = arith.constant 1 : i16
  %clamp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<1xf32>) outs(%ef : tensor<1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.copysign %hi, %a : f32
    linalg.yield %v : f32
  } -> tensor<1xf32>
  %ceil = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%k : tensor<1xi32>) outs(%ei : tensor<1xi32>) {
  ^bb0(%a: i32, %o: i32):
    %v = arith.ceildivui %a, %c4 : i32
    linalg.yield %v : i32
  } -> tensor<1xi32>
  %clz = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%k : tensor<1xi32>) outs(%ei : tensor<1xi32>) {
  ^bb0(%a: i32, %o: i32):
    %v = math.ctlz %a : i32
    linalg.yield %v : i32
  } -> tensor<1xi32>
  %ctz = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%e8 : tensor<1xi8>) {
  ^bb0(%o: i8):
    %v = math.cttz %c0x40 : i8
    linalg.yield %v : i8
  } -> tensor<1xi8>
  %pop = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%e8 : tensor<1xi8>) {
  ^bb0(%o: i8):
    %m = arith.constant -1 : i8
    %v = math.ctpop %m : i8
    linalg.yield %v : i8
  } -> tensor<1xi8>
  %bits = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<1xf32>) outs(%ei : tensor<1xi32>) {
  ^bb0(%a: f32, %o: i32):
    %v = arith.bitcast %a : f32 to i32
    linalg.yield %v : i32
  } -> tensor<1xi32>
  %back = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%ef : tensor<1xf32>) {
  ^bb0(%o: f32):
    %i = arith.constant 1065353216 : i32
    %v = arith.bitcast %i : i32 to f32
    linalg.yield %v : f32
  } -> tensor<1xf32>
  %normal = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%h : tensor<1xf16>) outs(%eb : tensor<1xi1>) {
  ^bb0(%a: f16, %o: i1):
    %v = math.isnormal %a : f16
    linalg.yield %v : i1
  } -> tensor<1xi1>
  %subnormal = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%eb : tensor<1xi1>) {
  ^bb0(%o: i1):
    %t = arith.bitcast %c1 : i16 to f16
    %v = math.isnormal %t : f16
    linalg.yield %v : i1
  } -> tensor<1xi1>
  %powi = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<1xf32>) outs(%ef : tensor<1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.fpowi %a, %c3 : f32, i32
    linalg.yield %v : f32
  } -> tensor<1xf32>
  %ipow = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%k : tensor<1xi32>) outs(%ei : tensor<1xi32>) {
  ^bb0(%a: i32, %o: i32):
    %v = math.ipowi %a, %c3 : i32
    linalg.yield %v : i32
  } -> tensor<1xi32>
  return %clamp, %ceil, %clz, %ctz, %pop, %bits, %back, %normal, %subnormal, %powi, %ipow : tensor<1xf32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi32>, tensor<1xf32>, tensor<1xi1>, tensor<1xi1>, tensor<1xf32>, tensor<1xi32>
}
)mlir");
  ASSERT_TRUE(module);
  auto outputs = evaluate(firstFunction(*module), {{-2.0}, {9}, {0.5}});
  ASSERT_EQ(outputs.size(), 11u);
  EXPECT_EQ(outputs[0][0], -1.0);          // copysign(1, -2)
  EXPECT_EQ(outputs[1][0], 3.0);           // ceildivui(9, 4)
  EXPECT_EQ(outputs[2][0], 28.0);          // ctlz(9) in 32 bits
  EXPECT_EQ(outputs[3][0], 6.0);           // cttz(0x40)
  EXPECT_EQ(outputs[4][0], 8.0);           // ctpop(0xff)
  EXPECT_EQ(outputs[5][0], -1073741824.0); // bits of -2.0f: 0xc0000000
  EXPECT_EQ(outputs[6][0], 1.0);           // 0x3f800000 as f32
  EXPECT_EQ(outputs[7][0], 1.0);           // 0.5 is a normal f16
  EXPECT_EQ(outputs[8][0], 0.0);           // the smallest f16 subnormal
  EXPECT_EQ(outputs[9][0], -8.0);          // (-2)^3
  EXPECT_EQ(outputs[10][0], 729.0);        // 9^3
}

} // namespace
