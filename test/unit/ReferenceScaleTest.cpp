//===- ReferenceScaleTest.cpp - The fp64 reference at real sizes -*- C++
//-*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What keeps sampled points of the fp64 reference cheap on tensors of a
// gigabyte: inputs read on demand, element by element; a row's reduction
// computed once for all the points of the row; and threads that change no
// value.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Codegen/ReferenceInterpreter.h"

#include <atomic>
#include <cstring>
#include <numeric>
#include <random>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

/// Small integers times 1/8 from a hash of (salt, index), counting the
/// elements read.
class CountingInput final : public ReferenceInput {
public:
  explicit CountingInput(uint64_t salt) : salt(salt) {}
  void read(ArrayRef<int64_t> indices, double *values) const override {
    reads += indices.size();
    for (auto [i, index] : llvm::enumerate(indices)) {
      uint64_t z = (uint64_t(index) + salt) * 0x9e3779b97f4a7c15ull;
      z ^= z >> 31;
      values[i] = double(int64_t(z % 17) - 8) / 8.0;
    }
  }
  mutable std::atomic<uint64_t> reads{0};

private:
  uint64_t salt;
};

std::unique_ptr<ReferenceInterpreter> makeInterpreter(func::FuncOp func) {
  auto interpreter = ReferenceInterpreter::create(func);
  if (!interpreter) {
    ADD_FAILURE() << llvm::toString(interpreter.takeError());
    return nullptr;
  }
  return std::move(*interpreter);
}

std::vector<int64_t> randomPoints(int64_t size, unsigned count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, size - 1);
  std::vector<int64_t> points = {0, size - 1};
  for (unsigned i = 0; i < count; ++i)
    points.push_back(pick(rng));
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  return points;
}

bool sameBits(double a, double b) { return std::memcmp(&a, &b, 8) == 0; }

/// 2^28 elements per tensor: a gigabyte of f32 each, never materialised.
TEST(ReferenceScaleTest, InputsAreReadOnlyWherePointsNeedThem) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @add(%x: tensor<16384x16384xf32>, %y: tensor<16384x16384xf32>) -> tensor<16384x16384xf32> {
  %e = tensor.empty() : tensor<16384x16384xf32>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<16384x16384xf32>, tensor<16384x16384xf32>) outs(%e : tensor<16384x16384xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<16384x16384xf32>
  return %r : tensor<16384x16384xf32>
}
)mlir");
  auto ri = makeInterpreter(firstFunction(*module));
  ASSERT_TRUE(ri);
  CountingInput x(1), y(2);
  auto points = randomPoints(int64_t(1) << 28, 1000, 3);
  for (unsigned threads : {1u, 4u}) {
    x.reads = y.reads = 0;
    auto values = ri->evaluatePoints({&x, &y}, 0, points, threads);
    ASSERT_TRUE(static_cast<bool>(values))
        << llvm::toString(values.takeError());
    EXPECT_EQ(x.reads, points.size());
    EXPECT_EQ(y.reads, points.size());
    for (size_t p = 0; p < points.size(); p += 97) {
      double a, b;
      x.read(points[p], &a);
      y.read(points[p], &b);
      EXPECT_EQ((*values)[p], a + b);
    }
  }
}

/// Softmax as torch-mlir decomposes it, over 8 rows of 2^20: every point
/// of a row shares the row's maximum and sum, so each row is read twice
/// (maximum, then sum) whatever the number of points and threads.
TEST(ReferenceScaleTest, PointsOfARowShareItsReductions) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func @softmax(%x: tensor<8x1048576xf32>) -> tensor<8x1048576xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x1xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<8x1xf32>) -> tensor<8x1xf32>
  %m = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x1048576xf32>) outs(%fm : tensor<8x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8x1xf32>
  %e = tensor.empty() : tensor<8x1048576xf32>
  %ex = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<8x1048576xf32>, tensor<8x1xf32>) outs(%e : tensor<8x1048576xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.subf %a, %b : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<8x1048576xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x1xf32>) -> tensor<8x1xf32>
  %s = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<8x1048576xf32>) outs(%fs : tensor<8x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8x1xf32>
  %q = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %s : tensor<8x1048576xf32>, tensor<8x1xf32>) outs(%e : tensor<8x1048576xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x1048576xf32>
  return %q : tensor<8x1048576xf32>
}
)mlir");
  auto ri = makeInterpreter(firstFunction(*module));
  ASSERT_TRUE(ri);
  constexpr int64_t rows = 8, rowSize = 1 << 20;
  auto points = randomPoints(rows * rowSize, 2000, 5);
  std::vector<double> first;
  for (unsigned threads : {1u, 3u}) {
    CountingInput x(7);
    auto values = ri->evaluatePoints({&x}, 0, points, threads);
    ASSERT_TRUE(static_cast<bool>(values))
        << llvm::toString(values.takeError());
    // Each row for its maximum and for its sum, and each point once more.
    EXPECT_EQ(x.reads, uint64_t(2 * rows * rowSize) + points.size());
    if (first.empty()) {
      first = *values;
      continue;
    }
    for (size_t p = 0; p < points.size(); ++p)
      ASSERT_TRUE(sameBits(first[p], (*values)[p])) << "point " << points[p];
  }
}

/// Every group of the frontend models and the examples: the values of
/// sampled points are the same bit for bit on one thread and on several,
/// read on demand or from memory.
TEST(ReferenceScaleTest, ThreadsChangeNoValue) {
  auto context = makeContext();
  for (const char *file :
       {"test/Inputs/frontend/torch_attention.mlir",
        "test/Inputs/frontend/torch_conv_relu_pool.mlir",
        "test/Inputs/frontend/torch_layernorm_gelu.mlir",
        "test/Inputs/frontend/torch_mlp.mlir", "examples/attention_block.mlir",
        "examples/conv_block.mlir", "examples/layernorm_gelu.mlir",
        "examples/mlp_block.mlir", "examples/tosa_mlp.mlir"}) {
    auto module = loadPlanned(*context, file);
    ASSERT_TRUE(module);
    for (func::FuncOp group : groupFunctions(*module)) {
      SCOPED_TRACE(std::string(file) + " @" + group.getSymName().str());
      auto ri = makeInterpreter(group);
      ASSERT_TRUE(ri);
      std::vector<std::unique_ptr<CountingInput>> inputs;
      std::vector<const ReferenceInput *> pointers;
      std::vector<std::vector<double>> inMemory;
      for (unsigned i = 0; i < ri->getNumInputs(); ++i) {
        inputs.push_back(std::make_unique<CountingInput>(11 + i));
        pointers.push_back(inputs.back().get());
        std::vector<int64_t> all(ri->getInputNumElements(i));
        std::iota(all.begin(), all.end(), 0);
        inMemory.emplace_back(all.size());
        inputs.back()->read(all, inMemory.back().data());
      }
      for (unsigned o = 0; o < ri->getNumOutputs(); ++o) {
        auto points = randomPoints(ri->getOutputNumElements(o), 300, 20 + o);
        auto serial = ri->evaluatePoints(inMemory, o, points);
        ASSERT_TRUE(static_cast<bool>(serial))
            << llvm::toString(serial.takeError());
        for (unsigned threads : {1u, 2u, 5u}) {
          auto values = ri->evaluatePoints(pointers, o, points, threads);
          ASSERT_TRUE(static_cast<bool>(values))
              << llvm::toString(values.takeError());
          for (size_t p = 0; p < points.size(); ++p)
            ASSERT_TRUE(sameBits((*serial)[p], (*values)[p]))
                << threads << " threads, point " << points[p] << ": "
                << (*serial)[p] << " != " << (*values)[p];
        }
      }
    }
  }
}

} // namespace
