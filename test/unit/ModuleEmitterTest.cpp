//===- ModuleEmitterTest.cpp - Runtime modules from graphs ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The module emitter behind `kopt compile --emit-module`, without a GPU or a
// database: a group takes the plan of its outcome, the others their
// baseline plans, ops outside the groups become groups of one, and the
// entry's arguments keep their names.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Autotune/ModuleEmitter.h"
#include "kopt/Codegen/Proposers.h"
#include "passes/Passes.h"

#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;
using namespace mlir::kopt;

namespace {

const char *kGraph = R"mlir(
func.func @bias_relu_sum(%x: tensor<64x128xf32>, %b: tensor<128xf32>) -> tensor<64xf32> {
  %init = tensor.empty() : tensor<64x128xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<64x128xf32>, tensor<128xf32>) outs(%init : tensor<64x128xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x128xf32>
  %zero = arith.constant 0.0 : f32
  %acc = tensor.empty() : tensor<64xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%acc : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.reduce ins(%0 : tensor<64x128xf32>) outs(%filled : tensor<64xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %t = arith.addf %in, %a : f32
      linalg.yield %t : f32
    }
  return %sum : tensor<64xf32>
}
)mlir";

TEST(ModuleEmitterTest, EmitsBaselinePlansWithoutOutcomes) {
  auto context = mlir::kopt::testing::makeContext();
  OwningOpRef<ModuleOp> module = mlir::kopt::testing::parse(*context, kGraph);
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(prepareModelGraph(*module)));

  OwningOpRef<ModuleOp> copy(module->clone());
  llvm::Error prepared = prepareRuntimeModuleGraph(*copy);
  ASSERT_FALSE(static_cast<bool>(prepared))
      << llvm::toString(std::move(prepared));

  std::string notes;
  llvm::raw_string_ostream os(notes);
  ModuleEmitOptions options;
  auto emitted = emitRuntimeModule(*copy, options, /*outcomes=*/{}, os);
  ASSERT_TRUE(static_cast<bool>(emitted))
      << llvm::toString(emitted.takeError());
  EXPECT_EQ(emitted->name, "bias_relu_sum");
  ASSERT_FALSE(emitted->plans.empty());
  for (const auto &plan : emitted->plans) {
    ASSERT_TRUE(plan.plan.has_value()) << plan.function;
    EXPECT_EQ(plan.plan->proposer, "baseline") << plan.function;
    EXPECT_TRUE(plan.binaries.empty()) << "no architecture: sources only";
  }
  EXPECT_NE(notes.find("baseline/"), std::string::npos) << notes;
}

/// The fused group of `module` (prepared), with an outcome that chose its
/// first built-in plan, stored for an `sm_90` with binaries of its own.
GroupOutcome chooseBuiltin(ModuleOp module) {
  func::FuncOp group;
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(kFusionGroupAttrName))
      group = func;
  EXPECT_TRUE(group);
  auto task = buildKernelTask(group);
  EXPECT_TRUE(static_cast<bool>(task)) << llvm::toString(task.takeError());
  Proposal builtin = proposeBuiltin(group, *task);
  EXPECT_FALSE(builtin.plans.empty());
  GroupOutcome outcome;
  outcome.function = group.getSymName().str();
  ChosenPlan chosen;
  chosen.task = *task;
  chosen.plan = builtin.plans.front();
  ::kopt::runtime::DeviceFingerprint fingerprint;
  fingerprint.computeCapability = "sm_90";
  chosen.storedFor = fingerprint;
  chosen.binaries = {
      {chosen.plan.sources.front().id, "sm_90", "stored cubin", "stored ptx"}};
  outcome.chosen = std::move(chosen);
  group->setAttr(
      kPlanAttrName,
      StringAttr::get(group.getContext(), outcome.chosen->plan.proposer + "/" +
                                              outcome.chosen->plan.variant));
  return outcome;
}

TEST(ModuleEmitterTest, TakesThePlansTheAutotunerChose) {
  auto context = mlir::kopt::testing::makeContext();
  OwningOpRef<ModuleOp> module = mlir::kopt::testing::parse(*context, kGraph);
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(prepareModelGraph(*module)));
  GroupOutcome outcome = chooseBuiltin(*module);
  ASSERT_TRUE(outcome.chosen.has_value());
  OwningOpRef<ModuleOp> copy(module->clone());
  llvm::Error prepared = prepareRuntimeModuleGraph(*copy);
  ASSERT_FALSE(static_cast<bool>(prepared))
      << llvm::toString(std::move(prepared));

  // Inline, with the stored binaries: they are for the target.
  std::string notes;
  llvm::raw_string_ostream os(notes);
  ModuleEmitOptions options;
  options.arch = "sm_90";
  auto emitted = emitRuntimeModule(*copy, options, {outcome}, os);
  ASSERT_TRUE(static_cast<bool>(emitted))
      << llvm::toString(emitted.takeError());
  const ::kopt::runtime::ModulePlan *tuned = nullptr;
  for (const auto &plan : emitted->plans)
    if (plan.function == outcome.function)
      tuned = &plan;
  ASSERT_NE(tuned, nullptr);
  EXPECT_EQ(tuned->key, outcome.chosen->task.key);
  ASSERT_TRUE(tuned->plan.has_value());
  EXPECT_EQ(tuned->plan->variant, outcome.chosen->plan.variant);
  ASSERT_EQ(tuned->binaries.size(), 1u);
  EXPECT_EQ(tuned->binaries.front().cubin, "stored cubin");
  EXPECT_NE(notes.find("@" + outcome.function + ": builtin/"),
            std::string::npos)
      << notes;

  // By reference: the record's key and fingerprint, no plan inline.
  options.byReference = true;
  options.arch.clear();
  emitted = emitRuntimeModule(*copy, options, {outcome}, os);
  ASSERT_TRUE(static_cast<bool>(emitted))
      << llvm::toString(emitted.takeError());
  for (const auto &plan : emitted->plans) {
    if (plan.function != outcome.function)
      continue;
    ASSERT_TRUE(plan.reference.has_value());
    EXPECT_EQ(plan.reference->computeCapability, "sm_90");
    EXPECT_FALSE(plan.plan.has_value());
  }
}

TEST(ModuleEmitterTest, RefusesATunedGroupWithoutItsOutcome) {
  auto context = mlir::kopt::testing::makeContext();
  OwningOpRef<ModuleOp> module = mlir::kopt::testing::parse(*context, kGraph);
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(prepareModelGraph(*module)));
  GroupOutcome outcome = chooseBuiltin(*module);
  OwningOpRef<ModuleOp> copy(module->clone());
  llvm::Error prepared = prepareRuntimeModuleGraph(*copy);
  ASSERT_FALSE(static_cast<bool>(prepared))
      << llvm::toString(std::move(prepared));
  std::string notes;
  llvm::raw_string_ostream os(notes);
  auto emitted = emitRuntimeModule(*copy, ModuleEmitOptions(), {}, os);
  ASSERT_FALSE(static_cast<bool>(emitted));
  EXPECT_NE(llvm::toString(emitted.takeError())
                .find("which no outcome of the autotuner's carries"),
            std::string::npos);
}

/// Emits the module of `source` with baseline plans; fails the test on an
/// error.
std::optional<::kopt::runtime::RuntimeModule> emitGraph(MLIRContext &context,
                                                        const char *source) {
  OwningOpRef<ModuleOp> module = mlir::kopt::testing::parse(context, source);
  if (!module || failed(prepareModelGraph(*module))) {
    ADD_FAILURE() << "the graph does not load";
    return std::nullopt;
  }
  if (llvm::Error error = prepareRuntimeModuleGraph(*module)) {
    ADD_FAILURE() << llvm::toString(std::move(error));
    return std::nullopt;
  }
  std::string notes;
  llvm::raw_string_ostream os(notes);
  auto emitted = emitRuntimeModule(*module, ModuleEmitOptions(),
                                   /*outcomes=*/{}, os);
  if (!emitted) {
    ADD_FAILURE() << llvm::toString(emitted.takeError());
    return std::nullopt;
  }
  return std::move(*emitted);
}

TEST(ModuleEmitterTest, AReturnedViewIsTheOutputWithoutACopy) {
  auto context = mlir::kopt::testing::makeContext();
  auto emitted = emitGraph(*context, R"mlir(
func.func @heads(%a: tensor<8x16x16xf32>, %b: tensor<8x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<8x16x16xf32>, tensor<8x16x8xf32>) outs(%f : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %r = tensor.expand_shape %m [[0, 1], [2], [3]] output_shape [2, 4, 16, 8] : tensor<8x16x8xf32> into tensor<2x4x16x8xf32>
  return %r : tensor<2x4x16x8xf32>
}
)mlir");
  ASSERT_TRUE(emitted);
  ASSERT_EQ(emitted->steps.size(), 1u);
  const auto &step = emitted->steps.front();
  ASSERT_EQ(step.kind, ::kopt::runtime::ModuleStep::Kind::Plan);
  ASSERT_EQ(emitted->outputs, std::vector<std::string>{"out0"});
  const auto *output = emitted->findBuffer("out0");
  ASSERT_TRUE(output);
  EXPECT_EQ(output->kind, ::kopt::runtime::ModuleBuffer::Kind::Output);
  EXPECT_EQ(output->tensor.shape, (std::vector<int64_t>{2, 4, 16, 8}));
  // The batch matmul writes the output's bytes through a view of them.
  const auto *written = emitted->findBuffer(step.outputs.front());
  ASSERT_TRUE(written);
  EXPECT_EQ(written->kind, ::kopt::runtime::ModuleBuffer::Kind::Alias);
  EXPECT_EQ(written->aliasOf, "out0");
}

TEST(ModuleEmitterTest, PadsSlicesAndConcatenationsAreGroupsOfOne) {
  auto context = mlir::kopt::testing::makeContext();
  auto emitted = emitGraph(*context, R"mlir(
func.func @moves(%x: tensor<2x3xf32>, %y: tensor<2x2xf32>) -> (tensor<4x6xf32>, tensor<2xf32>, tensor<2x3xf32>, tensor<2x5xf32>) {
  %c = arith.constant 0.0 : f32
  %p = tensor.pad %x low[1, 2] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %c : f32
  } : tensor<2x3xf32> to tensor<4x6xf32>
  %s = tensor.extract_slice %x[1, 0] [1, 2] [1, 2] : tensor<2x3xf32> to tensor<2xf32>
  %i = tensor.insert_slice %y into %x[0, 1] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<2x3xf32>
  %k = tensor.concat dim(1) %x, %y : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x5xf32>
  return %p, %s, %i, %k : tensor<4x6xf32>, tensor<2xf32>, tensor<2x3xf32>, tensor<2x5xf32>
}
)mlir");
  ASSERT_TRUE(emitted);
  ASSERT_EQ(emitted->plans.size(), 4u);
  ASSERT_EQ(emitted->steps.size(), 4u);
  for (const auto &plan : emitted->plans) {
    ASSERT_TRUE(plan.plan.has_value()) << plan.function;
    ASSERT_EQ(plan.plan->steps.size(), 1u) << plan.function;
    EXPECT_NE(plan.plan->steps.front().launch.entry.find("_move_"),
              std::string::npos)
        << plan.function;
  }
  for (const auto &step : emitted->steps)
    EXPECT_EQ(step.kind, ::kopt::runtime::ModuleStep::Kind::Plan);
}

TEST(ModuleEmitterTest, RefusesAGraphWithSeveralEntries) {
  auto context = mlir::kopt::testing::makeContext();
  OwningOpRef<ModuleOp> module = mlir::kopt::testing::parse(*context, R"mlir(
func.func @a(%x: tensor<8xf32>) -> tensor<8xf32> { return %x : tensor<8xf32> }
func.func @b(%x: tensor<8xf32>) -> tensor<8xf32> { return %x : tensor<8xf32> }
)mlir");
  ASSERT_TRUE(module);
  llvm::Error error = prepareRuntimeModuleGraph(*module);
  ASSERT_TRUE(static_cast<bool>(error));
  EXPECT_NE(llvm::toString(std::move(error)).find("several public functions"),
            std::string::npos);
}

} // namespace
