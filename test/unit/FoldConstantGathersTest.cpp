//===- FoldConstantGathersTest.cpp - Gathers folded to reshapes -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// kopt-fold-constant-gathers on torch-mlir's own GroupNorm
// (test/Inputs/frontend/torch_groupnorm.mlir): the two gathers of the
// per-channel scale and shift become reshapes, their index tables go, and
// the graph computes exactly what it computed before, in the fp64
// reference interpreter, on random inputs.
// test/Passes/fold-constant-gathers.mlir checks the rewrite's form and the
// gathers it leaves.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Codegen/ReferenceInterpreter.h"
#include "kopt/Support/ModelLoader.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"

#include <random>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

/// Every result of `func` in fp64 on `inputs`.
std::vector<std::vector<double>>
interpret(func::FuncOp func, llvm::ArrayRef<std::vector<double>> inputs) {
  auto interpreter = ReferenceInterpreter::create(func);
  if (!interpreter) {
    ADD_FAILURE() << llvm::toString(interpreter.takeError());
    return {};
  }
  auto results = (*interpreter)->evaluateAll(inputs);
  if (!results) {
    ADD_FAILURE() << llvm::toString(results.takeError());
    return {};
  }
  return std::move(*results);
}

unsigned countExtracts(func::FuncOp func) {
  unsigned extracts = 0;
  func.walk([&](tensor::ExtractOp) { ++extracts; });
  return extracts;
}

TEST(FoldConstantGathersTest, TorchGroupNormComputesTheSame) {
  auto context = makeContext();
  std::string path = std::string(KOPT_SOURCE_DIR) +
                     "/test/Inputs/frontend/torch_groupnorm.mlir";
  llvm::SourceMgr sourceMgr;
  auto module = loadModelGraph(path, *context, sourceMgr);
  ASSERT_TRUE(static_cast<bool>(module)) << llvm::toString(module.takeError());
  func::FuncOp func = firstFunction(module->get());
  EXPECT_EQ(countExtracts(func), 2u);

  std::mt19937 random(7);
  std::normal_distribution<double> normal(0.5, 2.0);
  std::vector<std::vector<double>> inputs;
  for (Type type : func.getArgumentTypes()) {
    std::vector<double> values(cast<ShapedType>(type).getNumElements());
    for (double &value : values)
      value = float(normal(random));
    inputs.push_back(std::move(values));
  }
  std::vector<std::vector<double>> before = interpret(func, inputs);

  PassManager pm(context.get());
  pm.addNestedPass<func::FuncOp>(createFoldConstantGathersPass());
  ASSERT_TRUE(succeeded(pm.run(module->get())));
  func = firstFunction(module->get());
  EXPECT_EQ(countExtracts(func), 0u);
  unsigned tables = 0;
  func.walk([&](arith::ConstantOp constant) {
    if (auto type = dyn_cast<ShapedType>(constant.getType()))
      tables += type.getElementType().isInteger(64);
  });
  EXPECT_EQ(tables, 0u);

  std::vector<std::vector<double>> after = interpret(func, inputs);
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(after.size(), 1u);
  ASSERT_EQ(before[0].size(), after[0].size());
  // The same ops on the same values: equal, not merely close.
  for (size_t i = 0; i < before[0].size(); ++i)
    ASSERT_EQ(before[0][i], after[0][i]) << "element " << i;
}

} // namespace
