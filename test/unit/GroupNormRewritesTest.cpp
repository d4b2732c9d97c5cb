//===- GroupNormRewritesTest.cpp - GroupNorm rewritten ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The rewrites that bring torch-mlir's GroupNorm into one fusion group, on
// its own exports (test/Inputs/frontend/torch_groupnorm.mlir and
// torch_groupnorm_silu_unet.mlir, over NCHW, and
// torch_linear_groupnorm_hardtanh.mlir, over a linear layer's features):
// kopt-fold-constant-gathers turns the gathers of the per-channel scale and
// shift into reshapes, and kopt-align-reduction-domains moves the
// normalisation into the statistics' domain. Each time the graph computes
// exactly what it computed before, in the fp64 reference interpreter, on
// random inputs, and in the end the normalisation shares the statistics'
// group. The same holds of the zoo's GPT-2 block, whose causal mask the
// second pass fuses into the attention scores' masking.
// test/Passes/fold-constant-gathers.mlir and
// align-reduction-domains.mlir check the rewrites' form and what they leave.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Analysis/GroupAttributes.h"
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

/// Random fp32 values for every argument of `func`.
std::vector<std::vector<double>> drawInputs(func::FuncOp func) {
  std::mt19937 random(7);
  std::normal_distribution<double> normal(0.5, 2.0);
  std::vector<std::vector<double>> inputs;
  for (Type type : func.getArgumentTypes()) {
    std::vector<double> values(cast<ShapedType>(type).getNumElements());
    for (double &value : values)
      value = float(normal(random));
    inputs.push_back(std::move(values));
  }
  return inputs;
}

/// The same ops on the same values: equal, not merely close.
void expectIdentical(const std::vector<std::vector<double>> &before,
                     const std::vector<std::vector<double>> &after) {
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(after.size(), 1u);
  ASSERT_EQ(before[0].size(), after[0].size());
  for (size_t i = 0; i < before[0].size(); ++i)
    ASSERT_EQ(before[0][i], after[0][i]) << "element " << i;
}

/// Loads test/Inputs/`name`.
OwningOpRef<ModuleOp> loadInput(MLIRContext &context, llvm::StringRef name) {
  std::string path =
      std::string(KOPT_SOURCE_DIR) + "/test/Inputs/" + name.str();
  llvm::SourceMgr sourceMgr;
  auto module = loadModelGraph(path, context, sourceMgr);
  if (!module) {
    ADD_FAILURE() << llvm::toString(module.takeError());
    return {};
  }
  return std::move(*module);
}

unsigned countExtracts(func::FuncOp func) {
  unsigned extracts = 0;
  func.walk([&](tensor::ExtractOp) { ++extracts; });
  return extracts;
}

TEST(FoldConstantGathersTest, TorchGroupNormComputesTheSame) {
  auto context = makeContext();
  OwningOpRef<ModuleOp> module =
      loadInput(*context, "frontend/torch_groupnorm.mlir");
  ASSERT_TRUE(module);
  func::FuncOp func = firstFunction(module.get());
  EXPECT_EQ(countExtracts(func), 2u);
  std::vector<std::vector<double>> inputs = drawInputs(func);
  std::vector<std::vector<double>> before = interpret(func, inputs);

  PassManager pm(context.get());
  pm.addNestedPass<func::FuncOp>(createFoldConstantGathersPass());
  ASSERT_TRUE(succeeded(pm.run(module.get())));
  func = firstFunction(module.get());
  EXPECT_EQ(countExtracts(func), 0u);
  unsigned tables = 0;
  func.walk([&](arith::ConstantOp constant) {
    if (auto type = dyn_cast<ShapedType>(constant.getType()))
      tables += type.getElementType().isInteger(64);
  });
  EXPECT_EQ(tables, 0u);
  expectIdentical(before, interpret(func, inputs));
}

/// The group kinds of `name` once planned, in order.
std::vector<std::string> plannedGroupKinds(MLIRContext &context,
                                           llvm::StringRef name) {
  OwningOpRef<ModuleOp> module =
      loadPlanned(context, ("test/Inputs/" + name).str());
  std::vector<std::string> kinds;
  if (!module)
    return kinds;
  for (func::FuncOp group : groupFunctions(module.get()))
    kinds.push_back(group->getAttrOfType<DictionaryAttr>(kFusionGroupAttrName)
                        .getAs<StringAttr>("kind")
                        .str());
  return kinds;
}

class AlignReductionDomainsTest
    : public ::testing::TestWithParam<
          std::pair<const char *, std::vector<std::string>>> {};

TEST_P(AlignReductionDomainsTest, ComputesTheSameInFewerGroups) {
  auto [name, expectedKinds] = GetParam();
  auto context = makeContext();
  OwningOpRef<ModuleOp> module = loadInput(*context, name);
  ASSERT_TRUE(module);
  func::FuncOp func = firstFunction(module.get());
  std::vector<std::vector<double>> inputs = drawInputs(func);
  std::vector<std::vector<double>> before = interpret(func, inputs);

  PassManager pm(context.get());
  pm.addNestedPass<func::FuncOp>(createFoldConstantGathersPass());
  pm.addNestedPass<func::FuncOp>(createAlignReductionDomainsPass());
  ASSERT_TRUE(succeeded(pm.run(module.get())));
  expectIdentical(before, interpret(firstFunction(module.get()), inputs));

  // The zoo's groups are counted by test/Tools/graphs/zoo-modules.test.
  if (!expectedKinds.empty()) {
    EXPECT_EQ(plannedGroupKinds(*context, name), expectedKinds);
  }
}

INSTANTIATE_TEST_SUITE_P(
    TorchGraphs, AlignReductionDomainsTest,
    ::testing::Values(
        // Statistics and normalisation in one group (they were two).
        std::make_pair("frontend/torch_groupnorm.mlir",
                       std::vector<std::string>{"reduction"}),
        std::make_pair("frontend/torch_groupnorm_silu_unet.mlir",
                       std::vector<std::string>{"reduction"}),
        // The linear layer, then GroupNorm with its weights and the
        // hardtanh (they were a reduction and an elementwise group).
        std::make_pair("frontend/torch_linear_groupnorm_hardtanh.mlir",
                       std::vector<std::string>{"contraction", "reduction"}),
        // The causal mask, built from positions over [S, S], fused into the
        // masking of the attention scores over [heads, S, S], which the
        // softmax reduces (it was a group of its own).
        std::make_pair("zoo/gpt2_block.mlir", std::vector<std::string>{})));

} // namespace
