//===- ReferenceDenseTest.cpp - Whole evaluation of the reference -*- C++ -*-//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `evaluateAll` computes every tensor of a whole graph into dense arrays
// (tight loops for the folds of convolutions, GEMMs and sums, lanes for
// other folds, element by element for the rest): its values must be those
// of the lazy evaluation of sampled points bit for bit, on any number of
// threads, on graphs with every convolution form (depthwise, grouped,
// strided, dilated, 1-D, 3-D), reductions over any dimension, softmaxes,
// attention and pads.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Codegen/ReferenceInterpreter.h"

#include <cstring>
#include <random>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

bool sameBits(double a, double b) { return std::memcmp(&a, &b, 8) == 0; }

/// Normal random inputs: sums of their products round, so a different
/// order of accumulation would show.
std::vector<std::vector<double>> normalInputs(const ReferenceInterpreter &ri,
                                              unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<std::vector<double>> inputs;
  for (unsigned i = 0; i < ri.getNumInputs(); ++i) {
    inputs.emplace_back(ri.getInputNumElements(i));
    for (double &value : inputs.back())
      value = normal(rng);
  }
  return inputs;
}

TEST(ReferenceDenseTest, WholeGraphsMatchSampledPointsOnAnyThreads) {
  auto context = makeContext();
  for (const char *file :
       {"test/Inputs/conv/forms.mlir", "test/Inputs/rows/forms.mlir",
        "test/Inputs/frontend/torch_attention.mlir",
        "test/Inputs/frontend/torch_conv_relu_pool.mlir",
        "test/Inputs/frontend/torch_layernorm_gelu.mlir",
        "test/Inputs/frontend/torch_mlp.mlir",
        "test/Tools/kopt-compile/groupnorm-dense-resource.mlir"}) {
    std::string path = std::string(KOPT_SOURCE_DIR) + "/" + file;
    llvm::SourceMgr sourceMgr;
    auto module = loadModelGraph(path, *context, sourceMgr);
    ASSERT_TRUE(static_cast<bool>(module))
        << llvm::toString(module.takeError());
    for (func::FuncOp func : (*module)->getOps<func::FuncOp>()) {
      SCOPED_TRACE(std::string(file) + " @" + func.getSymName().str());
      auto ri = ReferenceInterpreter::create(func);
      ASSERT_TRUE(static_cast<bool>(ri)) << llvm::toString(ri.takeError());
      auto inputs = normalInputs(**ri, 7);
      auto serial = (*ri)->evaluateAll(inputs, 1);
      ASSERT_TRUE(static_cast<bool>(serial))
          << llvm::toString(serial.takeError());
      auto parallel = (*ri)->evaluateAll(inputs, 3);
      ASSERT_TRUE(static_cast<bool>(parallel))
          << llvm::toString(parallel.takeError());
      for (unsigned o = 0; o < (*ri)->getNumOutputs(); ++o) {
        int64_t count = (*ri)->getOutputNumElements(o);
        ASSERT_EQ(int64_t((*serial)[o].size()), count);
        for (int64_t i = 0; i < count; ++i)
          ASSERT_TRUE(sameBits((*serial)[o][i], (*parallel)[o][i]))
              << "output " << o << " element " << i;
        std::mt19937_64 rng(o);
        std::uniform_int_distribution<int64_t> pick(0, count - 1);
        std::vector<int64_t> points = {0, count - 1};
        for (int i = 0; i < 200; ++i)
          points.push_back(pick(rng));
        auto lazy = (*ri)->evaluatePoints(inputs, o, points);
        ASSERT_TRUE(static_cast<bool>(lazy))
            << llvm::toString(lazy.takeError());
        for (size_t p = 0; p < points.size(); ++p)
          ASSERT_TRUE(sameBits((*lazy)[p], (*serial)[o][points[p]]))
              << "output " << o << " element " << points[p] << ": "
              << (*lazy)[p] << " lazily, " << (*serial)[o][points[p]]
              << " whole";
      }
    }
  }
}

} // namespace
