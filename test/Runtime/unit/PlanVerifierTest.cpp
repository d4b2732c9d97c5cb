//===- PlanVerifierTest.cpp - Tests of plan verification --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/PlanVerifier.h"

#include "gtest/gtest.h"

using namespace kopt::runtime;

namespace {

TensorSpec f32(const std::string &name, std::vector<int64_t> shape) {
  return TensorSpec{name, ElementType::F32, std::move(shape)};
}

KernelTask vectorAddTask() {
  KernelTask task;
  task.key = task.name = "add";
  task.inputs = {f32("in0", {1024}), f32("in1", {1024})};
  task.outputs = {f32("out0", {1024})};
  return task;
}

KernelPlan vectorAddPlan() {
  KernelPlan plan;
  plan.taskKey = "add";
  plan.proposer = "builtin";
  plan.sources = {{"main", "extern \"C\" __global__ void add() {}"}};
  PlanStep step;
  step.launch.source = "main";
  step.launch.entry = "add";
  step.launch.grid = {"cdiv(numel(out0), 256)", "1", "1"};
  step.launch.block = {"256", "1", "1"};
  step.launch.args = {"in0", "in1", "out0", "i32:1024"};
  plan.steps = {step};
  return plan;
}

TEST(PlanVerifierTest, EvaluatesLaunchExpressions) {
  std::map<std::string, TensorSpec> tensors = {{"x", f32("x", {4, 1000, 3})}};
  auto eval = [&](const std::string &text) -> int64_t {
    auto value = evaluatePlanExpression(text, tensors);
    EXPECT_TRUE(value.isOk()) << text << ": " << value.status().message();
    return value ? *value : -1;
  };
  EXPECT_EQ(eval("numel(x)"), 12000);
  EXPECT_EQ(eval(" dim( x , 1 ) "), 1000);
  EXPECT_EQ(eval("cdiv(numel(x), 256)"), 47);
  EXPECT_EQ(eval("min(cdiv(7, 2), 3) * (2 + 3) - 1"), 14);
  EXPECT_EQ(eval("max(1, dim(x, 2)) % 2"), 1);
  EXPECT_EQ(eval("-3 + 10 / 3"), 0);
  for (const char *bad :
       {"numel(y)", "dim(x, 3)", "1 / 0", "cdiv(1, 0)", "foo(1)", "(1 + 2",
        "1 +", "2 3", "99999999999999999999"}) {
    auto value = evaluatePlanExpression(bad, tensors);
    ASSERT_FALSE(value.isOk()) << bad;
    EXPECT_EQ(value.status().code(), StatusCode::InvalidArgument);
    EXPECT_EQ(value.status().message().rfind(
                  std::string("in expression '") + bad + "': ", 0),
              0u)
        << value.status().message();
  }
  EXPECT_EQ(evaluatePlanExpression("numel(y)", tensors).status().message(),
            "in expression 'numel(y)': unknown tensor 'y'");
}

TEST(PlanVerifierTest, RecognisesScalarLiterals) {
  EXPECT_TRUE(isScalarLiteral("i32:4"));
  EXPECT_TRUE(isScalarLiteral("f64:0.5"));
  EXPECT_FALSE(isScalarLiteral("i16:4"));
  EXPECT_FALSE(isScalarLiteral("x"));
}

TEST(PlanVerifierTest, CatchesBadPlans) {
  KernelTask task = vectorAddTask();
  EXPECT_TRUE(verifyPlan(vectorAddPlan(), task).isOk());
  auto expectError = [&](const KernelPlan &plan, const std::string &message) {
    Status status = verifyPlan(plan, task);
    EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
    EXPECT_EQ(status.message(), message);
  };
  KernelPlan plan = vectorAddPlan();
  plan.steps[0].launch.args[1] = "nope";
  expectError(plan, "step 0 refers to unknown tensor 'nope'");
  plan = vectorAddPlan();
  plan.steps[0].launch.block = {"64", "32", "1"};
  expectError(plan, "step 0: 2048 threads per block (max 1024)");
  plan = vectorAddPlan();
  plan.steps[0].launch.grid[1] = "0";
  expectError(plan, "step 0: grid/block size out of range on axis 1 (0, 1)");
  plan = vectorAddPlan();
  plan.steps[0].launch.source = "other";
  expectError(plan, "step 0: unknown source 'other'");
  plan = vectorAddPlan();
  plan.steps[0].launch.sharedBytes = 300 * 1024;
  expectError(plan, "step 0: dynamic shared memory 307200 out of range");
  plan = vectorAddPlan();
  plan.steps[0].launch.cluster = 4;
  EXPECT_TRUE(verifyPlan(plan, task).isOk());
  plan.steps[0].launch.cluster = 17;
  expectError(plan, "step 0: cluster of 17 blocks out of range (1 to 16)");
  plan.steps[0].launch.cluster = 16;
  expectError(plan, "step 0: grid size 4 is not a multiple of the cluster of "
                    "16 blocks");
  plan = vectorAddPlan();
  plan.temporaries = {f32("in0", {4})};
  expectError(plan, "tensor name 'in0' is used twice");

  PlanStep gemm;
  gemm.kind = PlanStep::Kind::Gemm;
  gemm.gemm = {"in0", "in1", "out0", "", 1, 32, 32, 2, false, false, "none"};
  plan = vectorAddPlan();
  plan.steps = {gemm};
  expectError(plan, "step 0: GEMM sizes do not match its tensors");
  plan.steps[0].gemm.k = 1;
  plan.steps[0].gemm.m = 32;
  plan.steps[0].gemm.n = 32;
  task.inputs[0].shape = {32, 1};
  task.inputs[1].shape = {1, 32};
  EXPECT_TRUE(verifyPlan(plan, task).isOk());
  plan.steps[0].gemm.scale = 1e39;
  expectError(plan, "step 0: the GEMM's scale must be a finite fp32 number");
  plan.steps[0].gemm.scale = -0.125;
  EXPECT_TRUE(verifyPlan(plan, task).isOk());
  plan.steps[0].gemm.activation = "tanh";
  expectError(plan, "step 0: unknown GEMM activation 'tanh'");

  PlanStep conv;
  conv.kind = PlanStep::Kind::Conv;
  conv.conv = {"in0", "in1", "out0", "nchw_fchw", {1, 1}, {1, 1}};
  plan.steps = {conv};
  expectError(plan, "step 0: conv tensor 'in0' must be 4-D for layout "
                    "'nchw_fchw'");
  plan.steps[0].conv.layout = "ncdhw";
  expectError(plan, "step 0: unknown conv layout 'ncdhw'");
}

TEST(PlanVerifierTest, ChecksTheArithmeticAgainstThePrecisionPolicy) {
  KernelTask task = vectorAddTask();
  KernelPlan plan = vectorAddPlan();
  plan.arithmetic = "3xtf32";
  for (const char *precision : {"fp32", "tf32", "bf16"}) {
    task.precision = precision;
    EXPECT_TRUE(verifyPlan(plan, task).isOk()) << precision;
  }
  task.precision = "fp32-ieee";
  Status status = verifyPlan(plan, task);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(status.message(),
            "the plan computes in 3xtf32 arithmetic, which the precision "
            "policy 'fp32-ieee' does not allow");
  plan.arithmetic = "fp32";
  EXPECT_TRUE(verifyPlan(plan, task).isOk());
  plan.arithmetic = "fp8";
  task.precision = "fp32";
  EXPECT_FALSE(verifyPlan(plan, task).isOk());

  EXPECT_TRUE(isKnownPrecision("fp32-ieee"));
  EXPECT_FALSE(isKnownPrecision("fp64"));
  EXPECT_TRUE(isKnownArithmetic("3xtf32"));
  EXPECT_FALSE(isKnownArithmetic("tf32"));
}

TEST(PlanVerifierTest, ChecksConvPaddingAgainstTheOutput) {
  // AlexNet's first layer: 11x11, stride 4, padding 2, 224 to 55.
  KernelTask task;
  task.key = task.name = "alex";
  task.inputs = {f32("in0", {2, 3, 224, 224}), f32("in1", {96, 3, 11, 11})};
  task.outputs = {f32("out0", {2, 96, 55, 55})};
  KernelPlan plan;
  plan.taskKey = "alex";
  plan.proposer = "baseline";
  PlanStep conv;
  conv.kind = PlanStep::Kind::Conv;
  conv.conv = {"in0", "in1", "out0", "nchw_fchw", {4, 4}, {1, 1}};
  conv.conv.padding = {2, 2};
  plan.steps = {conv};
  EXPECT_TRUE(verifyPlan(plan, task).isOk());
  auto expectError = [&](const std::string &message) {
    Status status = verifyPlan(plan, task);
    EXPECT_EQ(status.code(), StatusCode::InvalidArgument) << message;
    EXPECT_NE(status.message().find(message), std::string::npos)
        << status.message();
  };
  // Without the padding, 224 - 11 = 213 / 4 + 1 = 54 rows, not 55.
  plan.steps[0].conv.padding.clear();
  expectError("conv output 'out0' has 55 for dimension 'h'; input 'in0', "
              "filter 'in1', strides and dilations make 54");
  plan.steps[0].conv.padding = {2, 4};
  expectError("conv output 'out0' has 55 for dimension 'w'; input 'in0', "
              "filter 'in1', strides, dilations and padding make 56");
  plan.steps[0].conv.padding = {2};
  expectError("conv layout 'nchw_fchw' needs 2 paddings or none");
  plan.steps[0].conv.padding = {2, -1};
  expectError("conv padding must not be negative");
}

TEST(PlanVerifierTest, ChecksTheArchitectureAndWhereItCompiles) {
  KernelTask task = vectorAddTask();
  KernelPlan plan = vectorAddPlan();
  EXPECT_TRUE(isValidPlanArch(""));
  EXPECT_TRUE(isValidPlanArch("sm_90a"));
  EXPECT_TRUE(isValidPlanArch("sm_100a"));
  EXPECT_FALSE(isValidPlanArch("sm_90"));
  EXPECT_FALSE(isValidPlanArch("sm_a"));
  EXPECT_FALSE(isValidPlanArch("compute_90a"));
  // No architecture: the device's.
  EXPECT_EQ(*getCompileArch(plan, "sm_90"), "sm_90");
  EXPECT_EQ(*getCompileArch(plan, "sm_100"), "sm_100");
  plan.arch = "sm_90a";
  EXPECT_TRUE(verifyPlan(plan, task).isOk());
  EXPECT_EQ(*getCompileArch(plan, "sm_90"), "sm_90a");
  EXPECT_EQ(*getCompileArch(plan, "sm_90a"), "sm_90a");
  Result<std::string> elsewhere = getCompileArch(plan, "sm_100");
  ASSERT_FALSE(elsewhere.isOk());
  EXPECT_EQ(elsewhere.status().message(),
            "the plan needs sm_90a, which sm_100 does not run");
  EXPECT_FALSE(getCompileArch(plan, "sm_80").isOk());
  plan.arch = "sm_90";
  Status status = verifyPlan(plan, task);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(status.message(), "plan architecture 'sm_90' is not an "
                              "architecture-specific target such as sm_90a");
}

TEST(PlanVerifierTest, ChecksConvShapesThroughTheLayout) {
  // A depthwise 2-D convolution: 8 channels, stride 2, 17x17 to 8x8.
  KernelTask task;
  task.key = task.name = "dw";
  task.inputs = {f32("in0", {2, 8, 17, 17}), f32("in1", {8, 3, 3})};
  task.outputs = {f32("out0", {2, 8, 8, 8})};
  KernelPlan plan;
  plan.taskKey = "dw";
  plan.proposer = "baseline";
  PlanStep conv;
  conv.kind = PlanStep::Kind::Conv;
  conv.conv = {"in0", "in1", "out0", "nchw_chw", {2, 2}, {1, 1}, 8};
  plan.steps = {conv};
  EXPECT_TRUE(verifyPlan(plan, task).isOk());
  auto expectError = [&](const KernelPlan &plan, const std::string &message) {
    Status status = verifyPlan(plan, task);
    ASSERT_FALSE(status.isOk()) << message;
    EXPECT_EQ(status.message(), message);
  };
  plan.steps[0].conv.groups = 1;
  expectError(plan, "step 0: conv step has 1 groups; layout 'nchw_chw' and "
                    "its tensors make 8");
  plan.steps[0].conv.groups = 8;
  plan.steps[0].conv.strides = {1, 1};
  expectError(plan, "step 0: conv output 'out0' has 8 for dimension 'h'; "
                    "input 'in0', filter 'in1', strides and dilations make 15");
  plan.steps[0].conv.strides = {2};
  expectError(plan, "step 0: conv layout 'nchw_chw' needs 2 strides and "
                    "dilations");
  plan.steps[0].conv.strides = {2, 2};
  task.inputs[1].shape = {4, 3, 3};
  expectError(plan, "step 0: conv tensors 'in0' and 'in1' disagree on "
                    "dimension 'c' (8 and 4)");

  // groups=2 in 3-D (ngcdhw_gfcdhw): the group sizes must agree.
  task.inputs = {f32("in0", {1, 2, 2, 6, 8, 8}),
                 f32("in1", {2, 3, 2, 3, 3, 3})};
  task.outputs = {f32("out0", {1, 2, 3, 4, 6, 6})};
  plan.steps[0].conv = {"in0",     "in1",     "out0", "ngcdhw_gfcdhw",
                        {1, 1, 1}, {1, 1, 1}, 2};
  EXPECT_TRUE(verifyPlan(plan, task).isOk());
  task.outputs[0].shape[1] = 3;
  expectError(plan, "step 0: conv tensors 'in1' and 'out0' disagree on "
                    "dimension 'g' (2 and 3)");
}

} // namespace
