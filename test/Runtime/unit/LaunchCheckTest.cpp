//===- LaunchCheckTest.cpp - Matching launches to plans ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// checkPlanLaunches (EvaluationChecks.h) on hand-made CUPTI records: no GPU
// and no CUPTI needed.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Evaluator/EvaluationChecks.h"

#include "gtest/gtest.h"

using namespace kopt::runtime;

namespace {

PlanStep launchStep(const std::string &entry) {
  PlanStep step;
  step.kind = PlanStep::Kind::Launch;
  step.launch.source = "main";
  step.launch.entry = entry;
  return step;
}

PlanStep gemmStep() {
  PlanStep step;
  step.kind = PlanStep::Kind::Gemm;
  return step;
}

KernelActivity kernel(const std::string &name, uint32_t stream = 7) {
  KernelActivity activity;
  activity.name = name;
  activity.streamId = stream;
  return activity;
}

KernelPlan twoKernelPlan() {
  KernelPlan plan;
  plan.steps = {launchStep("mul"), launchStep("add")};
  return plan;
}

TEST(LaunchCheckTest, AcceptsTheDeclaredLaunches) {
  LaunchCheck check =
      checkPlanLaunches(twoKernelPlan(), {kernel("mul"), kernel("add")});
  EXPECT_TRUE(check.ok) << check.message;
  EXPECT_EQ(check.planKernels, 2u);
  EXPECT_EQ(check.otherKernels, 0u);
  EXPECT_EQ(check.expectedPlanKernels, 2u);
}

TEST(LaunchCheckTest, CountsRuns) {
  LaunchCheckOptions options;
  options.runs = 2;
  std::vector<KernelActivity> record = {kernel("mul"), kernel("add"),
                                        kernel("mul"), kernel("add")};
  EXPECT_TRUE(checkPlanLaunches(twoKernelPlan(), record, options).ok);
  record.pop_back();
  LaunchCheck check = checkPlanLaunches(twoKernelPlan(), record, options);
  EXPECT_FALSE(check.ok);
  EXPECT_NE(check.message.find("entry 'add' ran 1 times"), std::string::npos)
      << check.message;
}

TEST(LaunchCheckTest, RejectsAnExtraLaunchOfAPlanKernel) {
  LaunchCheck check = checkPlanLaunches(
      twoKernelPlan(), {kernel("mul"), kernel("mul"), kernel("add")});
  EXPECT_FALSE(check.ok);
  EXPECT_NE(check.message.find("entry 'mul' ran 2 times, the plan declares 1"),
            std::string::npos)
      << check.message;
  const json::Value *observed = check.evidence.find("observed");
  ASSERT_NE(observed, nullptr);
  ASSERT_NE(observed->find("mul"), nullptr);
  EXPECT_EQ(observed->find("mul")->getInteger(), 2);
}

TEST(LaunchCheckTest, RejectsAMissingLaunch) {
  LaunchCheck check = checkPlanLaunches(twoKernelPlan(), {kernel("mul")});
  EXPECT_FALSE(check.ok);
  EXPECT_NE(check.message.find("entry 'add' ran 0 times"), std::string::npos);
}

TEST(LaunchCheckTest, RejectsUndeclaredKernelsWithoutLibrarySteps) {
  LaunchCheck check = checkPlanLaunches(
      twoKernelPlan(), {kernel("mul"), kernel("add"), kernel("sneaky")});
  EXPECT_FALSE(check.ok);
  EXPECT_EQ(check.otherKernels, 1u);
  EXPECT_NE(check.message.find("'sneaky'"), std::string::npos);
  const json::Value *unexpected = check.evidence.find("unexpected");
  ASSERT_NE(unexpected, nullptr);
  ASSERT_EQ(unexpected->size(), 1u);
  EXPECT_EQ(*unexpected->at(0).find("name")->getString(), "sneaky");
}

TEST(LaunchCheckTest, AllowsLibraryKernelsOnlyForLibrarySteps) {
  KernelPlan plan;
  plan.steps = {gemmStep(), launchStep("epilogue")};
  LaunchCheck check = checkPlanLaunches(plan, {kernel("sm90_xmma_gemm_f32f32"),
                                               kernel("splitKreduce_kernel"),
                                               kernel("epilogue")});
  EXPECT_TRUE(check.ok) << check.message;
  EXPECT_EQ(check.otherKernels, 2u);
  EXPECT_EQ(check.evidence.find("library_kernels")->getInteger(), 2);

  // A library step that launched nothing did not run.
  check = checkPlanLaunches(plan, {kernel("epilogue")});
  EXPECT_FALSE(check.ok);
  // Library steps do not excuse an extra launch of a plan kernel.
  check = checkPlanLaunches(plan, {kernel("sm90_xmma_gemm_f32f32"),
                                   kernel("epilogue"), kernel("epilogue")});
  EXPECT_FALSE(check.ok);
}

TEST(LaunchCheckTest, RejectsKernelsOnAnotherStream) {
  LaunchCheckOptions options;
  options.streamId = 7;
  EXPECT_TRUE(checkPlanLaunches(twoKernelPlan(), {kernel("mul"), kernel("add")},
                                options)
                  .ok);
  LaunchCheck check = checkPlanLaunches(
      twoKernelPlan(), {kernel("mul"), kernel("add", /*stream=*/9)}, options);
  EXPECT_FALSE(check.ok);
  EXPECT_NE(check.message.find("ran on stream 9"), std::string::npos)
      << check.message;
}

TEST(LaunchCheckTest, MatchesMangledNames) {
  EXPECT_TRUE(isKernelNamed("axpy", "axpy"));
  EXPECT_TRUE(isKernelNamed("_Z4axpyPfPKfi", "axpy"));
  EXPECT_FALSE(isKernelNamed("_Z5axpy2Pf", "axpy"));
  EXPECT_FALSE(isKernelNamed("axpy2", "axpy"));
  EXPECT_FALSE(isKernelNamed("", "axpy"));
  EXPECT_FALSE(isKernelNamed("axpy", ""));
  KernelPlan plan;
  plan.steps = {launchStep("axpy")};
  EXPECT_TRUE(checkPlanLaunches(plan, {kernel("_Z4axpyPfPKfi")}).ok);
}

TEST(TimingCrossCheckTest, FlagsEventsFasterThanTheKernels) {
  KernelActivity a = kernel("a"), b = kernel("b");
  a.startNs = 1000;
  a.endNs = 41000; // 40 us
  b.startNs = 50000;
  b.endNs = 60000; // 10 us
  TimingCrossCheck honest = crossCheckTiming({a, b}, 55.0);
  EXPECT_DOUBLE_EQ(honest.kernelUs, 50.0);
  EXPECT_DOUBLE_EQ(honest.ratio, 1.1);
  EXPECT_FALSE(honest.suspicious);
  // Work the events did not see (a side stream): 20 us timed, 50 us run.
  TimingCrossCheck hidden = crossCheckTiming({a, b}, 20.0);
  EXPECT_TRUE(hidden.suspicious);
  // No usable record: nothing to say.
  TimingCrossCheck empty = crossCheckTiming({}, 20.0);
  EXPECT_EQ(empty.kernelUs, 0.0);
  EXPECT_FALSE(empty.suspicious);
}

} // namespace

TEST(LaunchCheckTest, CountsEachEntryInAnyOrder) {
  KernelPlan plan;
  plan.steps = {launchStep("a"), launchStep("b"), launchStep("a")};
  EXPECT_TRUE(
      checkPlanLaunches(plan, {kernel("a"), kernel("b"), kernel("a")}).ok);
  EXPECT_TRUE(
      checkPlanLaunches(plan, {kernel("a"), kernel("a"), kernel("b")}).ok);
  LaunchCheck check = checkPlanLaunches(plan, {kernel("a"), kernel("b")});
  EXPECT_FALSE(check.ok);
  EXPECT_NE(check.message.find("'a' ran 1 times"), std::string::npos)
      << check.message;
}
