//===- BatchIndependenceTest.cpp - Tests of the batch analysis --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Graphs with a dynamic batch whose samples are independent (elementwise
// ops, a linear layer on a flattened batch, torch-mlir's broadcast gathers,
// the zoo's ResNet-18 and BERT layer), and graphs whose samples are not,
// each refused with the op and the reason.
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/BatchIndependence.h"

#include "TestUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

/// Analyses the first function of `source`.
BatchAnalysis analyze(StringRef source) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> module = parse(*context, source);
  if (!module)
    return {};
  auto analysis = analyzeBatch(firstFunction(*module));
  if (!analysis) {
    ADD_FAILURE() << llvm::toString(analysis.takeError());
    return {};
  }
  return *analysis;
}

/// Expects `source` refused with a reason holding `text`.
void expectRefused(StringRef source, StringRef text) {
  BatchAnalysis analysis = analyze(source);
  EXPECT_FALSE(analysis.independent);
  EXPECT_NE(analysis.reason.find(text.str()), std::string::npos)
      << analysis.reason;
}

TEST(BatchIndependenceTest, ElementwiseWithShapeChecks) {
  BatchAnalysis analysis = analyze(R"mlir(
#m = affine_map<(d0, d1) -> (d0, d1)>
#w = affine_map<(d0, d1) -> (d1)>
func.func @f(%x: tensor<?x768xf32>, %b: tensor<768xf32>) -> tensor<?x768xf32> {
  %c0 = arith.constant 0 : index
  %c0_i64 = arith.constant 0 : i64
  %d = tensor.dim %x, %c0 : tensor<?x768xf32>
  %n = arith.index_cast %d : index to i64
  %ok = arith.cmpi sge, %n, %c0_i64 : i64
  cf.assert %ok, "negative values not allowed in new dimensions"
  %e = tensor.empty(%d) : tensor<?x768xf32>
  %r = linalg.generic {indexing_maps = [#m, #w, #m], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<?x768xf32>, tensor<768xf32>) outs(%e : tensor<?x768xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<?x768xf32>
  return %r : tensor<?x768xf32>
}
)mlir");
  EXPECT_TRUE(analysis.independent) << analysis.reason;
  EXPECT_EQ(analysis.arguments, (SmallVector<bool>{true, false}));
  EXPECT_EQ(analysis.results, (SmallVector<bool>{true}));
}

TEST(BatchIndependenceTest, LinearLayerOnAFlattenedBatch) {
  // ?x128x768 collapsed to (?*128)x768, a matmul with a weight, expanded
  // back with the size computed the way torch-mlir does.
  BatchAnalysis analysis = analyze(R"mlir(
#times128 = affine_map<()[s0] -> (s0 * 128)>
func.func @f(%x: tensor<?x128x768xf32>, %w: tensor<768x64xf32>) -> tensor<?x128x64xf32> {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %d = tensor.dim %x, %c0 : tensor<?x128x768xf32>
  %flat = tensor.collapse_shape %x [[0, 1], [2]] : tensor<?x128x768xf32> into tensor<?x768xf32>
  %rows = affine.apply #times128()[%d]
  %e = tensor.empty(%rows) : tensor<?x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %m = linalg.matmul ins(%flat, %w : tensor<?x768xf32>, tensor<768x64xf32>) outs(%f : tensor<?x64xf32>) -> tensor<?x64xf32>
  %b = arith.divsi %rows, %c128 : index
  %r = tensor.expand_shape %m [[0, 1], [2]] output_shape [%b, 128, 64] : tensor<?x64xf32> into tensor<?x128x64xf32>
  return %r : tensor<?x128x64xf32>
}
)mlir");
  EXPECT_TRUE(analysis.independent) << analysis.reason;
}

TEST(BatchIndependenceTest, TorchMlirBroadcastGather) {
  // A broadcast of a batch that torch-mlir writes as a gather whose
  // outermost index is 0 when the batch is 1, else the sample's own.
  BatchAnalysis analysis = analyze(R"mlir(
#m = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @f(%x: tensor<?x12x64xf32>) -> tensor<?x12x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d = tensor.dim %x, %c0 : tensor<?x12x64xf32>
  %e = tensor.empty(%d) : tensor<?x12x64xf32>
  %r = linalg.generic {indexing_maps = [#m], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<?x12x64xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = linalg.index 2 : index
    %one = arith.cmpi eq, %d, %c1 : index
    %s = arith.select %one, %c0, %i : index
    %v = tensor.extract %x[%s, %j, %k] : tensor<?x12x64xf32>
    linalg.yield %v : f32
  } -> tensor<?x12x64xf32>
  return %r : tensor<?x12x64xf32>
}
)mlir");
  EXPECT_TRUE(analysis.independent) << analysis.reason;
}

TEST(BatchIndependenceTest, ZooGraphs) {
  auto context = makeContext();
  for (StringRef file : {"test/Inputs/zoo/resnet18_dynbatch.mlir",
                         "test/Inputs/zoo/bert_base_layer_dynbatch.mlir"}) {
    std::string path = std::string(KOPT_SOURCE_DIR) + "/" + file.str();
    llvm::SourceMgr sourceMgr;
    auto module = loadModelGraph(path, *context, sourceMgr);
    ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
    auto analysis = analyzeBatch(firstFunction(**module));
    ASSERT_TRUE(bool(analysis)) << llvm::toString(analysis.takeError());
    EXPECT_TRUE(analysis->independent)
        << file.str() << ": " << analysis->reason;
    EXPECT_TRUE(analysis->arguments.front());
    EXPECT_TRUE(analysis->results.front());
  }
}

TEST(BatchIndependenceTest, RefusesAReductionOverTheBatch) {
  expectRefused(R"mlir(
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d1)>
func.func @f(%x: tensor<?x8xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<?x8xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
)mlir",
                "reduces over the batch");
}

TEST(BatchIndependenceTest, RefusesAReshapeMixingTheBatch) {
  // ?x8 into 2 x (?/2) x 8: the batch is no longer the leading factor.
  expectRefused(R"mlir(
func.func @f(%x: tensor<?x8xf32>) -> tensor<2x?x8xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %d = tensor.dim %x, %c0 : tensor<?x8xf32>
  %h = arith.divsi %d, %c2 : index
  %r = tensor.expand_shape %x [[0, 1], [2]] output_shape [2, %h, 8] : tensor<?x8xf32> into tensor<2x?x8xf32>
  return %r : tensor<2x?x8xf32>
}
)mlir",
                "does not keep the batch as the leading factor");
}

TEST(BatchIndependenceTest, RefusesATransposeOfTheBatch) {
  expectRefused(R"mlir(
func.func @f(%x: tensor<?x8xf32>) -> tensor<8x?xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%d) : tensor<8x?xf32>
  %r = linalg.transpose ins(%x : tensor<?x8xf32>) outs(%e : tensor<8x?xf32>) permutation = [1, 0]
  return %r : tensor<8x?xf32>
}
)mlir",
                "moves the batch into dimension 1");
}

TEST(BatchIndependenceTest, RefusesReadingAnotherSample) {
  // Each sample reads the next one.
  expectRefused(R"mlir(
#m = affine_map<(d0, d1) -> (d0, d1)>
func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%d) : tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#m], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x8xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %n = arith.addi %i, %c1 : index
    %v = tensor.extract %x[%n, %j] : tensor<?x8xf32>
    linalg.yield %v : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
)mlir",
                "reads other samples of argument #0");
}

TEST(BatchIndependenceTest, RefusesTheSampleIndexAsAValue) {
  expectRefused(R"mlir(
#m = affine_map<(d0, d1) -> (d0, d1)>
func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%d) : tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %n = arith.index_cast %i : index to i64
    %f = arith.sitofp %n : i64 to f32
    %s = arith.addf %in, %f : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
)mlir",
                "uses the index of the batch loop as a value");
}

TEST(BatchIndependenceTest, RefusesTheBatchSizeAsAValue) {
  // x / batch: the mean over the batch, written by hand.
  expectRefused(R"mlir(
func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x8xf32>
  %n = arith.index_cast %d : index to i64
  %v = arith.sitofp %n : i64 to f32
  %e = tensor.empty(%d) : tensor<?x8xf32>
  %r = linalg.fill ins(%v : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
)mlir",
                "takes the batch size as a value");
}

TEST(BatchIndependenceTest, RefusesAWeightIndexedByTheBatch) {
  // A per-sample weight of a fixed size: the batch loop indexes it.
  expectRefused(R"mlir(
#m = affine_map<(d0, d1) -> (d0, d1)>
func.func @f(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%d) : tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#m, #m, #m], iterator_types = ["parallel", "parallel"]} ins(%x, %w : tensor<?x8xf32>, tensor<4x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%in: f32, %wt: f32, %out: f32):
    %s = arith.mulf %in, %wt : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
)mlir",
                "indexes dimension 0 of argument #1 by the batch loop");
}

TEST(BatchIndependenceTest, RefusesOtherDynamicDimensions) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> module = parse(*context, R"mlir(
func.func @f(%x: tensor<4x?xf32>) -> tensor<4x?xf32> {
  return %x : tensor<4x?xf32>
}
)mlir");
  auto analysis = analyzeBatch(firstFunction(*module));
  ASSERT_FALSE(bool(analysis));
  EXPECT_EQ(llvm::toString(analysis.takeError()),
            "argument #0 has a dynamic dimension 1; kopt takes only a "
            "dynamic batch (the outermost dimension)");
}

} // namespace
