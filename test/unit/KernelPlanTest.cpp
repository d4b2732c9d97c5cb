//===- KernelPlanTest.cpp - Tests of KernelTask and KernelPlan --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Codegen/KernelTask.h"
#include "kopt/Codegen/Proposers.h"
#include "kopt/Support/ModelLoader.h"
#include "passes/Passes.h"

#include "kopt/Analysis/GroupAttributes.h"

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

TensorSpec tensor(std::string name, std::vector<int64_t> shape,
                  ElementType type = ElementType::F32) {
  TensorSpec spec;
  spec.name = std::move(name);
  spec.shape = std::move(shape);
  spec.elementType = type;
  return spec;
}

KernelTask vectorAddTask() {
  KernelTask task;
  task.key = std::string(64, 'a');
  task.name = "add";
  task.kind = "elementwise";
  task.inputs = {tensor("in0", {1024}), tensor("in1", {1024})};
  task.outputs = {tensor("out0", {1024})};
  task.mlir = "func.func @add() { return }";
  return task;
}

KernelPlan vectorAddPlan() {
  KernelPlan plan;
  plan.taskKey = std::string(64, 'a');
  plan.proposer = "builtin";
  plan.variant = "bs256";
  plan.sources = {{"main", "extern \"C\" __global__ void add() {}"}};
  PlanStep step;
  step.comment = "add";
  step.launch.source = "main";
  step.launch.entry = "add";
  step.launch.grid = {"cdiv(numel(out0), 256)", "1", "1"};
  step.launch.block = {"256", "1", "1"};
  step.launch.args = {"in0", "in1", "out0", "i32:1024"};
  plan.steps.push_back(step);
  return plan;
}

TEST(KernelPlanTest, EvaluatesLaunchExpressions) {
  std::map<std::string, TensorSpec> tensors = {
      {"x", tensor("x", {4, 1000, 3})}};
  auto eval = [&](llvm::StringRef text) {
    auto value = evaluatePlanExpression(std::string_view(text), tensors);
    EXPECT_TRUE(static_cast<bool>(value)) << text.str();
    return value ? *value : -1;
  };
  EXPECT_EQ(eval("numel(x)"), 12000);
  EXPECT_EQ(eval("dim(x, 1)"), 1000);
  EXPECT_EQ(eval("cdiv(numel(x), 256)"), 47);
  EXPECT_EQ(eval("min(cdiv(7, 2), 3) * (2 + 3) - 1"), 14);
  EXPECT_EQ(eval("max(1, dim(x, 2)) % 2"), 1);
  for (llvm::StringRef bad : {"numel(y)", "dim(x, 3)", "1 / 0", "cdiv(1, 0)",
                              "foo(1)", "(1 + 2", "1 +", "2 3"}) {
    auto value = evaluatePlanExpression(std::string_view(bad), tensors);
    EXPECT_FALSE(static_cast<bool>(value)) << bad.str();
  }
}

TEST(KernelPlanTest, RoundTripsThroughJson) {
  KernelPlan plan = vectorAddPlan();
  PlanStep gemm;
  gemm.kind = PlanStep::Kind::Gemm;
  gemm.gemm = {"in0", "in1", "out0", "", 2, 4, 8, 16, true, false, "relu"};
  plan.steps.push_back(gemm);
  gemm.gemm.scale = 0.125;
  plan.steps.push_back(gemm);
  plan.temporaries.push_back(tensor("tmp0", {2, 3}, ElementType::BF16));
  plan.steps.push_back(plan.steps[0]);
  plan.steps[3].launch.cluster = 16;
  plan.steps.push_back(plan.steps[0]);
  plan.steps[4].launch.cooperative = true;
  // A launch without a cluster, or not cooperative, keeps the JSON it had
  // before those fields.
  ::kopt::runtime::json::Value json = toJson(plan);
  EXPECT_EQ(json.find("steps")->at(0).find("cluster"), nullptr);
  EXPECT_NE(json.find("steps")->at(3).find("cluster"), nullptr);
  EXPECT_EQ(json.find("steps")->at(0).find("cooperative"), nullptr);
  EXPECT_NE(json.find("steps")->at(4).find("cooperative"), nullptr);
  // A GEMM's scale of 1 is not written, so plans before it are unchanged.
  EXPECT_EQ(json.find("steps")->at(1).find("scale"), nullptr);
  EXPECT_NE(json.find("steps")->at(2).find("scale"), nullptr);
  auto parsed = ::kopt::runtime::kernelPlanFromJson(toJson(plan));
  ASSERT_TRUE(static_cast<bool>(parsed)) << parsed.status().message();
  EXPECT_EQ(parsed->variant, "bs256");
  ASSERT_EQ(parsed->steps.size(), 5u);
  EXPECT_EQ(parsed->steps[0].launch.grid[0], "cdiv(numel(out0), 256)");
  EXPECT_EQ(parsed->steps[0].launch.cluster, 1);
  EXPECT_EQ(parsed->steps[3].launch.cluster, 16);
  EXPECT_FALSE(parsed->steps[0].launch.cooperative);
  EXPECT_TRUE(parsed->steps[4].launch.cooperative);
  EXPECT_EQ(parsed->steps[1].gemm.scale, 1.0);
  EXPECT_EQ(parsed->steps[2].gemm.scale, 0.125);
  EXPECT_EQ(parsed->steps[0].launch.args, plan.steps[0].launch.args);
  EXPECT_EQ(parsed->steps[1].kind, PlanStep::Kind::Gemm);
  EXPECT_EQ(parsed->steps[1].gemm.batch, 2);
  EXPECT_TRUE(parsed->steps[1].gemm.transposeA);
  EXPECT_EQ(parsed->steps[1].gemm.activation, "relu");
  ASSERT_EQ(parsed->temporaries.size(), 1u);
  EXPECT_EQ(parsed->temporaries[0], plan.temporaries[0]);
}

TEST(KernelPlanTest, RejectsWrongSchema) {
  ::kopt::runtime::json::Value value = toJson(vectorAddPlan());
  value.set("schema", ::kopt::runtime::json::Value("kopt.plan/999"));
  auto parsed = ::kopt::runtime::kernelPlanFromJson(value);
  ASSERT_FALSE(static_cast<bool>(parsed));
  EXPECT_NE(parsed.status().message().find("kopt.plan/1"), std::string::npos);
}

TEST(KernelPlanTest, VerifyCatchesBadPlans) {
  KernelTask task = vectorAddTask();
  EXPECT_TRUE(verifyPlan(vectorAddPlan(), task).isOk());

  auto expectError = [&](KernelPlan plan, llvm::StringRef needle) {
    ::kopt::runtime::Status status = verifyPlan(plan, task);
    ASSERT_FALSE(status.isOk()) << needle.str();
    std::string text = status.message();
    EXPECT_NE(text.find(needle.str()), std::string::npos) << text;
  };
  KernelPlan unknownTensor = vectorAddPlan();
  unknownTensor.steps[0].launch.args[1] = "nope";
  expectError(unknownTensor, "unknown tensor 'nope'");
  KernelPlan tooManyThreads = vectorAddPlan();
  tooManyThreads.steps[0].launch.block = {"64", "32", "1"};
  expectError(tooManyThreads, "2048 threads");
  KernelPlan unknownSource = vectorAddPlan();
  unknownSource.steps[0].launch.source = "other";
  expectError(unknownSource, "unknown source");
  KernelPlan clash = vectorAddPlan();
  clash.temporaries.push_back(tensor("in0", {4}));
  expectError(clash, "used twice");
  KernelPlan badGemm = vectorAddPlan();
  PlanStep gemm;
  gemm.kind = PlanStep::Kind::Gemm;
  gemm.gemm = {"in0", "in1", "out0", "", 1, 16, 32, 32, false, false, "none"};
  badGemm.steps.push_back(gemm);
  expectError(badGemm, "do not match");
  // A cooperative grid of clusters: the runtime cuts it to whole clusters.
  KernelPlan cooperativeCluster = vectorAddPlan();
  cooperativeCluster.steps[0].launch.cooperative = true;
  cooperativeCluster.steps[0].launch.cluster = 2;
  cooperativeCluster.steps[0].launch.grid[0] = "2";
  EXPECT_TRUE(verifyPlan(cooperativeCluster, task).isOk());
  cooperativeCluster.steps[0].launch.grid[0] = "3";
  expectError(cooperativeCluster, "is not a multiple of the cluster of 2");
  KernelPlan cooperativeRows = vectorAddPlan();
  cooperativeRows.steps[0].launch.cooperative = true;
  cooperativeRows.steps[0].launch.grid = {"4", "2", "1"};
  expectError(cooperativeRows,
              "a cooperative launch's grid is one-dimensional (size 2 on "
              "axis 1)");
  KernelPlan cooperative = vectorAddPlan();
  cooperative.steps[0].launch.cooperative = true;
  EXPECT_TRUE(verifyPlan(cooperative, task).isOk());
}

TEST(KernelPlanTest, TaskFromOutlinedGroupAndTolerance) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @f(%x: tensor<8x4096xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.reduce ins(%x : tensor<8x4096xf32>) outs(%fill : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }
  return %s : tensor<8xf32>
}
)mlir");
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(prepareModelGraph(*module)));
  func::FuncOp group;
  for (auto func : module->getOps<func::FuncOp>())
    if (func->hasAttr(kFusionGroupAttrName))
      group = func;
  ASSERT_TRUE(group);
  auto task = buildKernelTask(group);
  ASSERT_TRUE(static_cast<bool>(task)) << llvm::toString(task.takeError());
  EXPECT_EQ(task->kind, "reduction");
  ASSERT_EQ(task->inputs.size(), 1u);
  EXPECT_EQ(task->inputs[0].shape, (std::vector<int64_t>{8, 4096}));
  EXPECT_EQ(task->outputs[0].getBytes(), 32);
  // fp32 with a 4096-long sum: about 1e-5, not looser than 1e-4.
  EXPECT_GE(task->tolerance.relative, 1e-5);
  EXPECT_LE(task->tolerance.relative, 1e-4);
  auto parsed = ::kopt::runtime::kernelTaskFromJson(toJson(*task));
  ASSERT_TRUE(static_cast<bool>(parsed));
  EXPECT_EQ(parsed->key, task->key);
  EXPECT_EQ(parsed->outputs[0], task->outputs[0]);

  // Integers must match exactly; f16 is looser than f32.
  EXPECT_EQ(deriveTolerance(ElementType::I32, 100, "fp32").relative, 0.0);
  EXPECT_GT(deriveTolerance(ElementType::F16, 100, "fp32").relative,
            deriveTolerance(ElementType::F32, 100, "fp32").relative);
  EXPECT_GT(deriveTolerance(ElementType::F32, 100, "tf32").relative,
            deriveTolerance(ElementType::F32, 100, "fp32").relative);

  // The baseline plans this group as one row kernel; the built-in offers
  // several block sizes of one fused kernel.
  auto baseline = proposeBaseline(group, *task);
  ASSERT_TRUE(static_cast<bool>(baseline))
      << llvm::toString(baseline.takeError());
  EXPECT_TRUE(verifyPlan(*baseline, *task).isOk());
  EXPECT_EQ(baseline->countLaunches(), 1u);
  Proposal builtin = proposeBuiltin(group, *task);
  EXPECT_GE(builtin.plans.size(), 3u);
  for (const KernelPlan &plan : builtin.plans) {
    EXPECT_EQ(plan.countLaunches(), 1u);
    EXPECT_NE(plan.sources[0].code.find("__shfl_xor_sync"), std::string::npos);
  }
}

TEST(KernelPlanTest, RefusesDynamicShapes) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @g(%x: tensor<?xf32>) -> tensor<?xf32> attributes {kopt.key = "k"} {
  return %x : tensor<?xf32>
}
)mlir");
  ASSERT_TRUE(module);
  auto task = buildKernelTask(firstFunction(*module));
  ASSERT_FALSE(static_cast<bool>(task));
  EXPECT_NE(llvm::toString(task.takeError()).find("statically"),
            std::string::npos);
}

} // namespace
