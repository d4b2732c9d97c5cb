//===- OnePassMomentsTest.cpp - A row's variance in one pass ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// rewriteOnePassMoments rewrites exactly the reductions of squared
// deviations from the same row's mean, and the rewritten graph computes
// what the original does: the fp64 reference interpreter gives the same
// outputs for both on data whose mean is 1e8 times its spread, where a
// variance from the plain sums of the values and of their squares would
// have lost every bit to cancellation.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Codegen/OnePassMoments.h"
#include "kopt/Codegen/ReferenceInterpreter.h"
#include "mlir/IR/Verifier.h"

#include <cmath>
#include <random>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

/// Normal values around `mean`.
std::vector<std::vector<double>> inputsAround(const ReferenceInterpreter &ri,
                                              double mean) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal(mean, 1.0);
  std::vector<std::vector<double>> inputs;
  for (unsigned i = 0; i < ri.getNumInputs(); ++i) {
    inputs.emplace_back(ri.getInputNumElements(i));
    for (double &value : inputs.back())
      value = normal(rng);
  }
  return inputs;
}

/// The largest difference between the outputs of `original` and
/// `rewritten`, relative to the largest magnitude of the original's.
double relativeDifference(func::FuncOp original, func::FuncOp rewritten,
                          double mean) {
  auto before = ReferenceInterpreter::create(original);
  auto after = ReferenceInterpreter::create(rewritten);
  EXPECT_TRUE(before && after);
  if (!before || !after) {
    llvm::consumeError(before.takeError());
    llvm::consumeError(after.takeError());
    return INFINITY;
  }
  auto inputs = inputsAround(**before, mean);
  auto expected = (*before)->evaluateAll(inputs, 0);
  auto actual = (*after)->evaluateAll(inputs, 0);
  EXPECT_TRUE(expected && actual);
  if (!expected || !actual) {
    llvm::consumeError(expected.takeError());
    llvm::consumeError(actual.takeError());
    return INFINITY;
  }
  double largest = 0, difference = 0;
  for (auto [want, got] : llvm::zip(*expected, *actual))
    for (auto [a, b] : llvm::zip(want, got)) {
      largest = std::max(largest, std::abs(a));
      difference = std::max(difference, std::abs(a - b));
    }
  return difference / largest;
}

/// Clones `func` into a module of its own.
OwningOpRef<ModuleOp> cloneAlone(func::FuncOp func) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(func.getLoc());
  module->push_back(cast<func::FuncOp>(func->clone()));
  return module;
}

TEST(OnePassMomentsTest, RewritesTheRowFormsLayerNormsAndKeepsTheirValues) {
  auto context = makeContext();
  std::string path =
      std::string(KOPT_SOURCE_DIR) + "/test/Inputs/rows/forms.mlir";
  llvm::SourceMgr sourceMgr;
  auto module = loadModelGraph(path, *context, sourceMgr);
  ASSERT_TRUE(static_cast<bool>(module)) << llvm::toString(module.takeError());
  unsigned rewritten = 0;
  for (func::FuncOp func : (*module)->getOps<func::FuncOp>()) {
    llvm::StringRef name = func.getSymName();
    SCOPED_TRACE(name.str());
    // The batched form's rows are too long to interpret quickly.
    if (name == "layernorm_batched_rows")
      continue;
    OwningOpRef<ModuleOp> copy = cloneAlone(func);
    func::FuncOp twin = firstFunction(*copy);
    unsigned count = rewriteOnePassMoments(twin);
    bool layernorm = name.starts_with("layernorm_");
    EXPECT_EQ(count, layernorm ? 1u : 0u);
    if (!count)
      continue;
    ++rewritten;
    EXPECT_TRUE(succeeded(verify(twin)));
    // The f32 forms as exact math, and the f64 one as it is, at its mean.
    for (double mean : {0.0, 1e8})
      EXPECT_LT(relativeDifference(func, twin, mean), 1e-6) << "mean " << mean;
  }
  EXPECT_EQ(rewritten, 3u);
}

/// A variance over the rows of `%x` about the mean of `meanOf`'s rows,
/// its sum divided by `count`: `summand`, lines of a body over the
/// deviation `%d` that define `%q`, gives what is summed.
std::string varianceSource(llvm::StringRef meanOf, llvm::StringRef count,
                           llvm::StringRef summand) {
  return (R"(
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func @variance(%x: tensor<4x37xf32>, %y: tensor<4x37xf32>) -> tensor<4x1xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant )" +
          count + R"( : f32
  %half = arith.constant 0.5 : f32
  %es = tensor.empty() : tensor<4x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<4x1xf32>) -> tensor<4x1xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins()" +
          meanOf + R"( : tensor<4x37xf32>) outs(%fs : tensor<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<4x1xf32>
  %v = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %s : tensor<4x37xf32>, tensor<4x1xf32>) outs(%fs : tensor<4x1xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %m = arith.divf %sum, %n : f32
    %d = arith.subf %in, %m : f32
    )" + summand +
          R"(
    %a = arith.addf %q, %out : f32
    linalg.yield %a : f32
  } -> tensor<4x1xf32>
  return %v : tensor<4x1xf32>
}
)")
      .str();
}

TEST(OnePassMomentsTest, RewritesScaledSquaresOfTheSameRowsMean) {
  auto context = makeContext();
  for (llvm::StringRef summand :
       {"%q = arith.mulf %d, %d : f32",
        "%q0 = arith.mulf %d, %d : f32\n    %q = arith.mulf %half, %q0 : f32",
        "%q0 = arith.mulf %d, %d : f32\n    %q = arith.divf %q0, %half : "
        "f32"}) {
    SCOPED_TRACE(summand.str());
    OwningOpRef<ModuleOp> module =
        parse(*context, varianceSource("%x", "37.0", summand));
    ASSERT_TRUE(module);
    func::FuncOp original = firstFunction(*module);
    OwningOpRef<ModuleOp> copy = cloneAlone(original);
    func::FuncOp twin = firstFunction(*copy);
    EXPECT_EQ(rewriteOnePassMoments(twin), 1u);
    EXPECT_TRUE(succeeded(verify(twin)));
    for (double mean : {0.0, 1e8})
      EXPECT_LT(relativeDifference(original, twin, mean), 1e-9)
          << "mean " << mean;
  }
}

TEST(OnePassMomentsTest, LeavesOtherReductionsAlone) {
  auto context = makeContext();
  struct Case {
    const char *why, *meanOf, *count, *summand;
  };
  for (const Case &form : {
           Case{"the mean of another tensor", "%y", "37.0",
                "%q = arith.mulf %d, %d : f32"},
           Case{"divided by N - 1", "%x", "36.0",
                "%q = arith.mulf %d, %d : f32"},
           Case{"not a square", "%x", "37.0", "%q = arith.mulf %d, %in : f32"},
           Case{"a cube", "%x", "37.0",
                "%q0 = arith.mulf %d, %d : f32\n    %q = arith.mulf %q0, %d : "
                "f32"},
           Case{"a square plus a constant", "%x", "37.0",
                "%q0 = arith.mulf %d, %d : f32\n    %q = arith.addf %q0, "
                "%half : f32"},
       }) {
    SCOPED_TRACE(form.why);
    OwningOpRef<ModuleOp> module =
        parse(*context, varianceSource(form.meanOf, form.count, form.summand));
    ASSERT_TRUE(module);
    EXPECT_EQ(rewriteOnePassMoments(firstFunction(*module)), 0u);
  }
}

} // namespace
