//===- ReferenceInterpreterTest.cpp - fp64 reference tests ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Codegen/ReferenceInterpreter.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

/// Builds the interpreter of `func`; fails the test on an error.
std::unique_ptr<ReferenceInterpreter> makeInterpreter(func::FuncOp func) {
  auto interpreter = ReferenceInterpreter::create(func);
  if (!interpreter) {
    ADD_FAILURE() << llvm::toString(interpreter.takeError());
    return nullptr;
  }
  return std::move(*interpreter);
}

/// Normal random inputs of the interpreter's argument sizes.
std::vector<std::vector<double>> randomInputs(const ReferenceInterpreter &ri,
                                              unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<std::vector<double>> inputs;
  for (unsigned i = 0; i < ri.getNumInputs(); ++i) {
    std::vector<double> &values =
        inputs.emplace_back(ri.getInputNumElements(i));
    for (double &v : values)
      v = normal(rng);
  }
  return inputs;
}

std::vector<std::vector<double>> evaluateAll(ReferenceInterpreter &ri,
                                             ArrayRef<std::vector<double>> in) {
  auto outputs = ri.evaluateAll(in);
  if (!outputs) {
    ADD_FAILURE() << llvm::toString(outputs.takeError());
    return {};
  }
  return std::move(*outputs);
}

std::vector<double> evaluatePoints(ReferenceInterpreter &ri,
                                   ArrayRef<std::vector<double>> in,
                                   unsigned output, ArrayRef<int64_t> points) {
  auto values = ri.evaluatePoints(in, output, points);
  if (!values) {
    ADD_FAILURE() << llvm::toString(values.takeError());
    return {};
  }
  return std::move(*values);
}

/// `count` distinct-ish random linear indices below `size`, plus the first
/// and last element.
std::vector<int64_t> randomPoints(int64_t size, unsigned count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, size - 1);
  std::vector<int64_t> points = {0, size - 1};
  for (unsigned i = 0; i < count; ++i)
    points.push_back(pick(rng));
  return points;
}

TEST(ReferenceInterpreterTest, ElementwiseChainMatchesHandValues) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @chain(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf16> {
  %init = tensor.empty() : tensor<2x3xf16>
  %r = linalg.generic {indexing_maps = [#map, #row, #map],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<2x3xf32>, tensor<3xf32>) outs(%init : tensor<2x3xf16>) {
  ^bb0(%in: f32, %bias: f32, %out: f16):
    %c2 = arith.constant 2.0 : f32
    %c0 = arith.constant 0.0 : f32
    %e = math.exp %in : f32
    %m = arith.mulf %e, %c2 : f32
    %s = arith.addf %m, %bias : f32
    %neg = arith.cmpf olt, %in, %c0 : f32
    %t = math.tanh %s : f32
    %v = arith.select %neg, %t, %s : f32
    %h = arith.truncf %v : f32 to f16
    linalg.yield %h : f16
  } -> tensor<2x3xf16>
  return %r : tensor<2x3xf16>
}
)mlir");
  auto ri = makeInterpreter(firstFunction(*module));
  ASSERT_TRUE(ri);
  std::vector<double> x = {-1.0, 0.5, 2.0, 0.0, -0.25, 1.5};
  std::vector<double> b = {0.1, -0.2, 0.3};
  auto outputs = evaluateAll(*ri, {x, b});
  ASSERT_EQ(outputs.size(), 1u);
  ASSERT_EQ(outputs[0].size(), 6u);
  for (int i = 0; i < 6; ++i) {
    double s = std::exp(x[i]) * 2.0 + b[i % 3];
    double expected = x[i] < 0.0 ? std::tanh(s) : s;
    // truncf is exact in the reference: no rounding to f16.
    EXPECT_DOUBLE_EQ(outputs[0][i], expected) << "element " << i;
  }
}

TEST(ReferenceInterpreterTest, IntegerAndMathOps) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
#map = affine_map<(d0) -> (d0)>
func.func @ints(%x: tensor<4xi32>, %y: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xf32>) {
  %i0 = tensor.empty() : tensor<4xi32>
  %f0 = tensor.empty() : tensor<4xf32>
  %r:2 = linalg.generic {indexing_maps = [#map, #map, #map, #map],
                         iterator_types = ["parallel"]}
      ins(%x, %y : tensor<4xi32>, tensor<4xf32>) outs(%i0, %f0 : tensor<4xi32>, tensor<4xf32>) {
  ^bb0(%a: i32, %f: f32, %o: i32, %p: f32):
    %c3 = arith.constant 3 : i32
    %q = arith.divsi %a, %c3 : i32
    %r = arith.remsi %a, %c3 : i32
    %m = arith.muli %q, %c3 : i32
    %s = arith.addi %m, %r : i32
    %mx = arith.maxsi %s, %r : i32
    %idx = linalg.index 0 : index
    %ii = arith.index_cast %idx : index to i32
    %sum = arith.addi %mx, %ii : i32
    %ff = arith.sitofp %a : i32 to f32
    %ab = math.absf %f : f32
    %sq = math.sqrt %ab : f32
    %pw = math.powf %sq, %ff : f32
    %fl = math.floor %f : f32
    %g = arith.addf %pw, %fl : f32
    linalg.yield %sum, %g : i32, f32
  } -> (tensor<4xi32>, tensor<4xf32>)
  return %r#0, %r#1 : tensor<4xi32>, tensor<4xf32>
}
)mlir");
  auto ri = makeInterpreter(firstFunction(*module));
  ASSERT_TRUE(ri);
  std::vector<double> x = {7, -7, 2, 0};
  std::vector<double> y = {4.0, -2.25, 0.5, 9.0};
  auto outputs = evaluateAll(*ri, {x, y});
  ASSERT_EQ(outputs.size(), 2u);
  for (int i = 0; i < 4; ++i) {
    int64_t a = static_cast<int64_t>(x[i]);
    int64_t q = a / 3, r = a % 3;
    EXPECT_EQ(outputs[0][i], static_cast<double>(std::max(q * 3 + r, r) + i));
    double g = std::pow(std::sqrt(std::fabs(y[i])), x[i]) + std::floor(y[i]);
    EXPECT_DOUBLE_EQ(outputs[1][i], g);
  }
}

TEST(ReferenceInterpreterTest, MatmulBiasReluMatchesNaiveLoop) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @mbr(%a: tensor<5x7xf32>, %b: tensor<7x4xf32>, %bias: tensor<4xf32>) -> tensor<5x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5x4xf32>) -> tensor<5x4xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<5x7xf32>, tensor<7x4xf32>) outs(%f : tensor<5x4xf32>) -> tensor<5x4xf32>
  %r = linalg.generic {indexing_maps = [#map, #row, #map],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<5x4xf32>, tensor<4xf32>) outs(%e : tensor<5x4xf32>) {
  ^bb0(%in: f32, %bi: f32, %out: f32):
    %s = arith.addf %in, %bi : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<5x4xf32>
  return %r : tensor<5x4xf32>
}
)mlir");
  auto ri = makeInterpreter(firstFunction(*module));
  ASSERT_TRUE(ri);
  auto inputs = randomInputs(*ri, 1);
  auto outputs = evaluateAll(*ri, inputs);
  ASSERT_EQ(outputs.size(), 1u);
  int clamped = 0;
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 4; ++j) {
      double acc = 0.0;
      for (int k = 0; k < 7; ++k)
        acc += inputs[0][i * 7 + k] * inputs[1][k * 4 + j];
      double expected = std::max(acc + inputs[2][j], 0.0);
      clamped += expected == 0.0;
      EXPECT_NEAR(outputs[0][i * 4 + j], expected, 1e-12);
    }
  }
  EXPECT_GT(clamped, 0) << "inputs should exercise the relu";
  std::vector<int64_t> points = {19, 0, 7, 7, 12};
  auto values = evaluatePoints(*ri, inputs, 0, points);
  ASSERT_EQ(values.size(), points.size());
  for (size_t p = 0; p < points.size(); ++p)
    EXPECT_EQ(values[p], outputs[0][points[p]]);
}

TEST(ReferenceInterpreterTest, SoftmaxRowsSumToOne) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @sm(%x: tensor<3x6xf32>) -> tensor<3x6xf32> {
  %e = tensor.empty() : tensor<3x6xf32>
  %r = linalg.softmax dimension(1) ins(%x : tensor<3x6xf32>) outs(%e : tensor<3x6xf32>) -> tensor<3x6xf32>
  return %r : tensor<3x6xf32>
}
)mlir");
  auto ri = makeInterpreter(firstFunction(*module));
  ASSERT_TRUE(ri);
  auto inputs = randomInputs(*ri, 2);
  // A large mean exposes unstable forms: exp(1000) overflows.
  for (int j = 0; j < 6; ++j)
    inputs[0][6 + j] += 1000.0;
  auto outputs = evaluateAll(*ri, inputs);
  ASSERT_EQ(outputs.size(), 1u);
  for (int i = 0; i < 3; ++i) {
    double sum = 0.0, denominator = 0.0;
    for (int j = 0; j < 6; ++j) {
      sum += outputs[0][i * 6 + j];
      denominator += std::exp(inputs[0][i * 6 + j] - inputs[0][i * 6]);
    }
    EXPECT_NEAR(sum, 1.0, 1e-12) << "row " << i;
    for (int j = 0; j < 6; ++j)
      EXPECT_NEAR(outputs[0][i * 6 + j],
                  std::exp(inputs[0][i * 6 + j] - inputs[0][i * 6]) /
                      denominator,
                  1e-12);
  }
  auto values = evaluatePoints(*ri, inputs, 0, {17, 3});
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0], outputs[0][17]);
  EXPECT_EQ(values[1], outputs[0][3]);
}

TEST(ReferenceInterpreterTest, LayerNormMatchesHandFormula) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @ln(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 8.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %sq = linalg.generic {indexing_maps = [#id, #red, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %mean = arith.divf %s, %n : f32
    %d = arith.subf %in, %mean : f32
    %d2 = arith.mulf %d, %d : f32
    %t = arith.addf %d2, %out : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #red, #red, #col, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum, %sq, %g, %b : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %s: f32, %v: f32, %gamma: f32, %beta: f32, %out: f32):
    %mean = arith.divf %s, %n : f32
    %var = arith.divf %v, %n : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    %d = arith.subf %in, %mean : f32
    %nd = arith.mulf %d, %r : f32
    %sc = arith.mulf %nd, %gamma : f32
    %o = arith.addf %sc, %beta : f32
    linalg.yield %o : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
)mlir");
  auto ri = makeInterpreter(firstFunction(*module));
  ASSERT_TRUE(ri);
  auto inputs = randomInputs(*ri, 3);
  auto outputs = evaluateAll(*ri, inputs);
  ASSERT_EQ(outputs.size(), 1u);
  for (int i = 0; i < 4; ++i) {
    double mean = 0.0, var = 0.0;
    for (int j = 0; j < 8; ++j)
      mean += inputs[0][i * 8 + j] / 8.0;
    for (int j = 0; j < 8; ++j)
      var += (inputs[0][i * 8 + j] - mean) * (inputs[0][i * 8 + j] - mean);
    var /= 8.0;
    for (int j = 0; j < 8; ++j) {
      double expected =
          (inputs[0][i * 8 + j] - mean) / std::sqrt(var + 1e-5) * inputs[1][j] +
          inputs[2][j];
      EXPECT_NEAR(outputs[0][i * 8 + j], expected, 1e-6) << i << "," << j;
    }
  }
  auto points = randomPoints(32, 10, 4);
  auto values = evaluatePoints(*ri, inputs, 0, points);
  ASSERT_EQ(values.size(), points.size());
  for (size_t p = 0; p < points.size(); ++p)
    EXPECT_EQ(values[p], outputs[0][points[p]]);
}

TEST(ReferenceInterpreterTest, TorchAttentionMaxArgmax) {
  auto context = makeContext();
  auto module =
      loadPlanned(*context, "test/Inputs/frontend/torch_attention.mlir");
  ASSERT_TRUE(module);
  // Find the group holding the two-result (max, argmax) reduction and make it
  // return both results.
  linalg::GenericOp maxArgmax;
  func::FuncOp group;
  for (func::FuncOp func : groupFunctions(*module))
    func.walk([&](linalg::GenericOp op) {
      if (op->getNumResults() == 2) {
        maxArgmax = op;
        group = func;
      }
    });
  ASSERT_TRUE(maxArgmax) << "no two-result reduction in torch_attention";
  auto ret = cast<func::ReturnOp>(group.getBody().front().getTerminator());
  ret->setOperands(maxArgmax->getResults());
  group.setFunctionType(FunctionType::get(
      context.get(), group.getArgumentTypes(), maxArgmax->getResultTypes()));

  auto ri = makeInterpreter(group);
  ASSERT_TRUE(ri);
  ASSERT_EQ(ri->getNumInputs(), 1u);
  ASSERT_EQ(ri->getNumOutputs(), 2u);
  ArrayRef<int64_t> shape = ri->getInputShape(0);
  ASSERT_EQ(shape.size(), 4u);
  int64_t rows = shape[0] * shape[1] * shape[2], cols = shape[3];
  auto inputs = randomInputs(*ri, 5);
  auto outputs = evaluateAll(*ri, inputs);
  ASSERT_EQ(outputs.size(), 2u);
  ASSERT_EQ(static_cast<int64_t>(outputs[0].size()), rows);
  for (int64_t r = 0; r < rows; ++r) {
    double best = -INFINITY;
    int64_t arg = 0;
    for (int64_t c = 0; c < cols; ++c) {
      if (inputs[0][r * cols + c] > best) {
        best = inputs[0][r * cols + c];
        arg = c;
      }
    }
    EXPECT_EQ(outputs[0][r], best) << "row " << r;
    EXPECT_EQ(outputs[1][r], static_cast<double>(arg)) << "row " << r;
  }
  auto values = evaluatePoints(*ri, inputs, 1, {rows - 1, 3});
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0], outputs[1][rows - 1]);
  EXPECT_EQ(values[1], outputs[1][3]);
}

TEST(ReferenceInterpreterTest, ConvReluPoolMatchesNaiveLoop) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @crp(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<2x4x7x7xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x7x7xf32>) -> tensor<2x4x7x7xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>) outs(%f : tensor<2x4x7x7xf32>) -> tensor<2x4x7x7xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c : tensor<2x4x7x7xf32>) outs(%e : tensor<2x4x7x7xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maxnumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x4x7x7xf32>
  %pe = tensor.empty() : tensor<2x4x3x3xf32>
  %pf = linalg.fill ins(%ninf : f32) outs(%pe : tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%r, %win : tensor<2x4x7x7xf32>, tensor<3x3xf32>) outs(%pf : tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  return %p : tensor<2x4x3x3xf32>
}
)mlir");
  auto ri = makeInterpreter(firstFunction(*module));
  ASSERT_TRUE(ri);
  auto inputs = randomInputs(*ri, 6);
  const std::vector<double> &x = inputs[0], &w = inputs[1];
  auto X = [&](int n, int c, int h, int v) {
    return x[((n * 3 + c) * 9 + h) * 9 + v];
  };
  auto W = [&](int f, int c, int h, int v) {
    return w[((f * 3 + c) * 3 + h) * 3 + v];
  };
  std::vector<double> relu(2 * 4 * 7 * 7);
  for (int n = 0; n < 2; ++n)
    for (int f = 0; f < 4; ++f)
      for (int h = 0; h < 7; ++h)
        for (int v = 0; v < 7; ++v) {
          double acc = 0.0;
          for (int c = 0; c < 3; ++c)
            for (int kh = 0; kh < 3; ++kh)
              for (int kw = 0; kw < 3; ++kw)
                acc += X(n, c, h + kh, v + kw) * W(f, c, kh, kw);
          relu[((n * 4 + f) * 7 + h) * 7 + v] = std::max(acc, 0.0);
        }
  auto outputs = evaluateAll(*ri, inputs);
  ASSERT_EQ(outputs.size(), 1u);
  ASSERT_EQ(outputs[0].size(), 2u * 4 * 3 * 3);
  for (int n = 0; n < 2; ++n)
    for (int f = 0; f < 4; ++f)
      for (int h = 0; h < 3; ++h)
        for (int v = 0; v < 3; ++v) {
          double best = -INFINITY;
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw)
              best = std::max(
                  best, relu[((n * 4 + f) * 7 + 2 * h + kh) * 7 + 2 * v + kw]);
          EXPECT_NEAR(outputs[0][((n * 4 + f) * 3 + h) * 3 + v], best, 1e-12);
        }
}

TEST(ReferenceInterpreterTest, PaddedConvBiasPoolMatchesNaiveLoop) {
  // A group as the planner forms it from torch-mlir's padded convolution
  // with a bias and a padded max-pool: the zero pad, the bias broadcast
  // the convolution accumulates into, ReLU, the -inf pad and the pooling.
  // The reference must read the pads as the naive loop's bounds checks.
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @padded(%x: tensor<2x3x7x6xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %xp = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x3x7x6xf32> to tensor<2x3x9x8xf32>
  %e = tensor.empty() : tensor<2x4x7x6xf32>
  %br = linalg.broadcast ins(%b : tensor<4xf32>) outs(%e : tensor<2x4x7x6xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%xp, %w : tensor<2x3x9x8xf32>, tensor<4x3x3x3xf32>) outs(%br : tensor<2x4x7x6xf32>) -> tensor<2x4x7x6xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c : tensor<2x4x7x6xf32>) outs(%e : tensor<2x4x7x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maxnumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x4x7x6xf32>
  %rp = tensor.pad %r low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<2x4x7x6xf32> to tensor<2x4x9x8xf32>
  %pe = tensor.empty() : tensor<2x4x4x3xf32>
  %pf = linalg.fill ins(%ninf : f32) outs(%pe : tensor<2x4x4x3xf32>) -> tensor<2x4x4x3xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%rp, %win : tensor<2x4x9x8xf32>, tensor<3x3xf32>) outs(%pf : tensor<2x4x4x3xf32>) -> tensor<2x4x4x3xf32>
  return %p : tensor<2x4x4x3xf32>
}
)mlir");
  auto ri = makeInterpreter(firstFunction(*module));
  ASSERT_TRUE(ri);
  auto inputs = randomInputs(*ri, 11);
  const std::vector<double> &x = inputs[0], &w = inputs[1], &b = inputs[2];
  // The input read with its zero padding of 1.
  auto X = [&](int n, int c, int h, int v) {
    h -= 1;
    v -= 1;
    if (h < 0 || h >= 7 || v < 0 || v >= 6)
      return 0.0;
    return x[((n * 3 + c) * 7 + h) * 6 + v];
  };
  auto W = [&](int f, int c, int h, int v) {
    return w[((f * 3 + c) * 3 + h) * 3 + v];
  };
  std::vector<double> relu(2 * 4 * 7 * 6);
  for (int n = 0; n < 2; ++n)
    for (int f = 0; f < 4; ++f)
      for (int h = 0; h < 7; ++h)
        for (int v = 0; v < 6; ++v) {
          double acc = b[f];
          for (int c = 0; c < 3; ++c)
            for (int kh = 0; kh < 3; ++kh)
              for (int kw = 0; kw < 3; ++kw)
                acc += X(n, c, h + kh, v + kw) * W(f, c, kh, kw);
          relu[((n * 4 + f) * 7 + h) * 6 + v] = std::max(acc, 0.0);
        }
  // The ReLU read with its -inf padding of 1.
  auto R = [&](int n, int f, int h, int v) -> double {
    h -= 1;
    v -= 1;
    if (h < 0 || h >= 7 || v < 0 || v >= 6)
      return -INFINITY;
    return relu[((n * 4 + f) * 7 + h) * 6 + v];
  };
  std::vector<double> expected(2 * 4 * 4 * 3);
  for (int n = 0; n < 2; ++n)
    for (int f = 0; f < 4; ++f)
      for (int h = 0; h < 4; ++h)
        for (int v = 0; v < 3; ++v) {
          double best = -INFINITY;
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw)
              best = std::max(best, R(n, f, 2 * h + kh, 2 * v + kw));
          expected[((n * 4 + f) * 4 + h) * 3 + v] = best;
        }
  auto outputs = evaluateAll(*ri, inputs);
  ASSERT_EQ(outputs.size(), 1u);
  ASSERT_EQ(outputs[0].size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(outputs[0][i], expected[i], 1e-12) << "element " << i;
  // Every element on demand too, the corners (which read padding) among
  // them.
  std::vector<int64_t> points(expected.size());
  std::iota(points.begin(), points.end(), 0);
  auto values = evaluatePoints(*ri, inputs, 0, points);
  ASSERT_EQ(values.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(values[i], expected[i], 1e-12) << "point " << i;
}

TEST(ReferenceInterpreterTest, GroupedConvIntoReshapedEmptyMatchesNaiveLoop) {
  // torch-mlir's grouped convolution (RegNet, ResNeXt): the zeros it
  // accumulates into fill an empty tensor reshaped to [N, G, C/G, H, W].
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @grouped(%x: tensor<1x2x3x6x6xf32>, %w: tensor<2x3x3x3x3xf32>) -> tensor<1x2x3x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x4x4xf32>
  %es = tensor.expand_shape %e [[0], [1, 2], [3], [4]] output_shape [1, 2, 3, 4, 4] : tensor<1x6x4x4xf32> into tensor<1x2x3x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%es : tensor<1x2x3x4x4xf32>) -> tensor<1x2x3x4x4xf32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x2x3x6x6xf32>, tensor<2x3x3x3x3xf32>) outs(%f : tensor<1x2x3x4x4xf32>) -> tensor<1x2x3x4x4xf32>
  return %c : tensor<1x2x3x4x4xf32>
}
)mlir");
  auto ri = makeInterpreter(firstFunction(*module));
  ASSERT_TRUE(ri);
  auto inputs = randomInputs(*ri, 7);
  const std::vector<double> &x = inputs[0], &w = inputs[1];
  std::vector<double> expected;
  for (int g = 0; g < 2; ++g)
    for (int f = 0; f < 3; ++f)
      for (int h = 0; h < 4; ++h)
        for (int v = 0; v < 4; ++v) {
          double acc = 0.0;
          for (int c = 0; c < 3; ++c)
            for (int kh = 0; kh < 3; ++kh)
              for (int kw = 0; kw < 3; ++kw)
                acc += x[((g * 3 + c) * 6 + h + kh) * 6 + v + kw] *
                       w[(((g * 3 + f) * 3 + c) * 3 + kh) * 3 + kw];
          expected.push_back(acc);
        }
  auto outputs = evaluateAll(*ri, inputs);
  ASSERT_EQ(outputs.size(), 1u);
  ASSERT_EQ(outputs[0].size(), expected.size());
  std::vector<int64_t> points(expected.size());
  std::iota(points.begin(), points.end(), 0);
  std::vector<double> sampled = evaluatePoints(*ri, inputs, 0, points);
  ASSERT_EQ(sampled.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(outputs[0][i], expected[i], 1e-12) << "element " << i;
    EXPECT_EQ(sampled[i], outputs[0][i]) << "element " << i;
  }
}

TEST(ReferenceInterpreterTest, PadsSlicesAndConcatenationsMoveElements) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @moves(%x: tensor<2x3xf32>, %y: tensor<2x2xf32>) -> (tensor<4x6xf32>, tensor<2xf32>, tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) {
  %c = arith.constant 7.0 : f32
  %p = tensor.pad %x low[1, 2] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %c : f32
  } : tensor<2x3xf32> to tensor<4x6xf32>
  %s = tensor.extract_slice %x[1, 0] [1, 2] [1, 2] : tensor<2x3xf32> to tensor<2xf32>
  %i = tensor.insert_slice %y into %x[0, 1] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<2x3xf32>
  %k = tensor.concat dim(1) %x, %y : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x5xf32>
  %z = tensor.extract_slice %y[0, 0] [1, 2] [1, 1] : tensor<2x2xf32> to tensor<2xf32>
  %j = tensor.insert_slice %z into %x[1, 0] [1, 2] [1, 2] : tensor<2xf32> into tensor<2x3xf32>
  return %p, %s, %i, %k, %j : tensor<4x6xf32>, tensor<2xf32>, tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>
}
)mlir");
  auto ri = makeInterpreter(firstFunction(*module));
  ASSERT_TRUE(ri);
  std::vector<double> x = {0, 1, 2, 3, 4, 5}, y = {10, 11, 12, 13};
  std::vector<std::vector<double>> expected(5);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 6; ++c)
      expected[0].push_back(
          r >= 1 && r < 3 && c >= 2 && c < 5 ? x[(r - 1) * 3 + (c - 2)] : 7.0);
  expected[1] = {3, 5};
  expected[2] = {0, 10, 11, 3, 12, 13};
  expected[3] = {0, 1, 2, 10, 11, 3, 4, 5, 12, 13};
  expected[4] = {0, 1, 2, 10, 4, 11};
  auto outputs = evaluateAll(*ri, {x, y});
  ASSERT_EQ(outputs.size(), 5u);
  for (unsigned o = 0; o < 5; ++o) {
    EXPECT_EQ(outputs[o], expected[o]) << "output " << o;
    std::vector<int64_t> points(expected[o].size());
    std::iota(points.begin(), points.end(), 0);
    EXPECT_EQ(evaluatePoints(*ri, {x, y}, o, points), expected[o])
        << "output " << o;
  }
}

TEST(ReferenceInterpreterTest, RejectsBadInputsAndUnsupportedOps) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @sm(%x: tensor<3x6xf32>) -> tensor<3x6xf32> {
  %e = tensor.empty() : tensor<3x6xf32>
  %r = linalg.softmax dimension(1) ins(%x : tensor<3x6xf32>) outs(%e : tensor<3x6xf32>) -> tensor<3x6xf32>
  return %r : tensor<3x6xf32>
}
func.func @bad(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant 0 : index
  %v = tensor.extract %x[%c] : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%v : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %f : tensor<4xf32>
}
)mlir");
  auto ri = makeInterpreter(firstFunction(*module));
  ASSERT_TRUE(ri);
  std::vector<double> shortInput(5, 0.0);
  auto wrongSize = ri->evaluateAll({shortInput});
  ASSERT_FALSE(wrongSize);
  EXPECT_NE(llvm::toString(wrongSize.takeError()).find("input #0 has 5"),
            std::string::npos);
  auto wrongCount = ri->evaluateAll({});
  ASSERT_FALSE(wrongCount);
  llvm::consumeError(wrongCount.takeError());
  std::vector<double> input(18, 1.0);
  auto outOfRange = ri->evaluatePoints({input}, 0, {18});
  ASSERT_FALSE(outOfRange);
  llvm::consumeError(outOfRange.takeError());
  auto noOutput = ri->evaluatePoints({input}, 1, {0});
  ASSERT_FALSE(noOutput);
  llvm::consumeError(noOutput.takeError());

  auto bad = *std::next(module->getOps<func::FuncOp>().begin());
  auto unsupported = ReferenceInterpreter::create(bad);
  ASSERT_FALSE(unsupported);
  EXPECT_NE(llvm::toString(unsupported.takeError()).find("tensor.extract"),
            std::string::npos);
}

/// Every group of every small frontend model: sampled points agree with a
/// full evaluation.
TEST(ReferenceInterpreterTest, FrontendGroupsPointsMatchFullEvaluation) {
  auto context = makeContext();
  for (const char *file : {"test/Inputs/frontend/torch_attention.mlir",
                           "test/Inputs/frontend/torch_conv_relu_pool.mlir",
                           "test/Inputs/frontend/torch_layernorm_gelu.mlir",
                           "test/Inputs/frontend/torch_mlp.mlir"}) {
    auto module = loadPlanned(*context, file);
    ASSERT_TRUE(module);
    auto groups = groupFunctions(*module);
    EXPECT_FALSE(groups.empty()) << file;
    for (func::FuncOp group : groups) {
      SCOPED_TRACE(std::string(file) + " @" + group.getSymName().str());
      auto ri = makeInterpreter(group);
      ASSERT_TRUE(ri);
      auto inputs = randomInputs(*ri, 7);
      auto outputs = evaluateAll(*ri, inputs);
      ASSERT_EQ(outputs.size(), ri->getNumOutputs());
      for (unsigned o = 0; o < ri->getNumOutputs(); ++o) {
        auto points = randomPoints(ri->getOutputNumElements(o), 50, 8 + o);
        auto values = evaluatePoints(*ri, inputs, o, points);
        ASSERT_EQ(values.size(), points.size());
        for (size_t p = 0; p < points.size(); ++p) {
          EXPECT_TRUE(std::isfinite(values[p]));
          EXPECT_EQ(values[p], outputs[o][points[p]]) << "point " << points[p];
        }
      }
    }
  }
}

/// Every group of every example, at full size: 50 sampled points evaluated
/// together agree with the same points evaluated one call each (cold caches).
TEST(ReferenceInterpreterTest, ExampleGroupsSampledPointsAreConsistent) {
  auto context = makeContext();
  for (const char *file :
       {"examples/attention_block.mlir", "examples/conv_block.mlir",
        "examples/layernorm_gelu.mlir", "examples/mlp_block.mlir",
        "examples/tosa_mlp.mlir"}) {
    auto module = loadPlanned(*context, file);
    ASSERT_TRUE(module);
    auto groups = groupFunctions(*module);
    EXPECT_FALSE(groups.empty()) << file;
    for (func::FuncOp group : groups) {
      SCOPED_TRACE(std::string(file) + " @" + group.getSymName().str());
      auto ri = makeInterpreter(group);
      ASSERT_TRUE(ri);
      auto inputs = randomInputs(*ri, 9);
      for (unsigned o = 0; o < ri->getNumOutputs(); ++o) {
        auto points = randomPoints(ri->getOutputNumElements(o), 48, 10 + o);
        auto values = evaluatePoints(*ri, inputs, o, points);
        ASSERT_EQ(values.size(), points.size());
        for (size_t p = points.size(); p-- > 0;) {
          auto single = evaluatePoints(*ri, inputs, o, {points[p]});
          ASSERT_EQ(single.size(), 1u);
          EXPECT_TRUE(std::isfinite(values[p]));
          EXPECT_EQ(values[p], single[0]) << "point " << points[p];
        }
      }
    }
  }
}

/// Sampled checking of a large GEMM costs K multiply-adds per point.
TEST(ReferenceInterpreterTest, LargeGemmSampledPointsAreFast) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @gemm(%a: tensor<1024x8192xf32>, %b: tensor<8192x8192xf32>) -> tensor<1024x8192xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x8192xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x8192xf32>) -> tensor<1024x8192xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<1024x8192xf32>, tensor<8192x8192xf32>) outs(%f : tensor<1024x8192xf32>) -> tensor<1024x8192xf32>
  return %mm : tensor<1024x8192xf32>
}
)mlir");
  auto ri = makeInterpreter(firstFunction(*module));
  ASSERT_TRUE(ri);
  constexpr int64_t M = 1024, N = 8192, K = 8192;
  // Cheap deterministic inputs: small integers times 1/8, so every product
  // and sum is exact in double and the naive check is exact too.
  std::vector<std::vector<double>> inputs(2);
  inputs[0].resize(M * K);
  inputs[1].resize(K * N);
  uint64_t state = 12345;
  for (auto &values : inputs)
    for (double &v : values) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      v = static_cast<double>(static_cast<int64_t>(state >> 60) - 8) / 8.0;
    }
  auto points = randomPoints(M * N, 1998, 11);
  auto start = std::chrono::steady_clock::now();
  auto values = evaluatePoints(*ri, inputs, 0, points);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("[ timing ] 2000 points of a 1024x8192x8192 GEMM: %.3f s\n",
              seconds);
  ASSERT_EQ(values.size(), points.size());
  EXPECT_LT(seconds, 30.0);
  for (size_t p = 0; p < points.size(); p += 97) {
    int64_t i = points[p] / N, j = points[p] % N;
    double acc = 0.0;
    for (int64_t k = 0; k < K; ++k)
      acc += inputs[0][i * K + k] * inputs[1][k * N + j];
    EXPECT_EQ(values[p], acc) << "point " << points[p];
  }
}

} // namespace
