//===- MemoryBudgetTest.cpp - Tests of the memory model ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/MemoryBudget.h"

#include "gtest/gtest.h"

using namespace kopt::runtime;

namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;
constexpr uint64_t kGiB = uint64_t(1) << 30;

/// `out = f(in)` over `elements` f32 each way.
KernelTask makeTask(int64_t elements) {
  KernelTask task;
  task.inputs.push_back({"in0", ElementType::F32, {elements}});
  task.outputs.push_back({"out0", ElementType::F32, {elements}});
  return task;
}

TEST(MemoryBudgetTest, RunnerCountsTensorsGuardsWorkspaceAndFlush) {
  KernelTask task = makeTask(1024);
  KernelPlan plan;
  plan.temporaries.push_back({"t0", ElementType::F16, {512}});
  // Three tensors, each with a 1024-byte guard on both sides.
  uint64_t tensors = 4096 + 4096 + 1024 + 3 * 2048;
  EXPECT_EQ(estimateRunnerBytes(task, plan, 1024, 0), tensors);
  // A guard that is not a multiple of 256 is rounded up in front only.
  EXPECT_EQ(estimateRunnerBytes(task, plan, 100, 7),
            4096 + 4096 + 1024 + 3 * (256 + 100) + 7);
  // A GEMM step brings cuBLASLt's workspace.
  plan.steps.emplace_back();
  plan.steps.back().kind = PlanStep::Kind::Gemm;
  EXPECT_EQ(estimateRunnerBytes(task, plan, 1024, 0), tensors + 32 * kMiB);
}

TEST(MemoryBudgetTest, PeakOfAPairIsAboutFourTimesTheTask) {
  // 1 GiB in, 1 GiB out, an H200's L2 flush buffer (100 MiB): the baseline
  // and one candidate, as every request of round 0.
  KernelTask task = makeTask(int64_t(256) << 20);
  std::vector<KernelPlan> plans(2);
  auto estimate = estimateEvaluationMemory(task, plans, 1024, 100 * kMiB);
  ASSERT_TRUE(estimate);
  EXPECT_EQ(estimate->taskBytes, 2 * kGiB);
  EXPECT_EQ(estimate->outputBytes, kGiB);
  uint64_t runner = 2 * kGiB + 2 * 2048 + 100 * kMiB;
  EXPECT_EQ(estimate->largestRunnerBytes, runner);
  EXPECT_EQ(estimate->runnerBytes, 2 * runner);
  // Two runners, a third while a set changes, the baseline's output copy
  // and the margin.
  EXPECT_EQ(estimate->neededBytes, 3 * runner + kGiB + kMemoryMarginBytes);
  EXPECT_LE(estimate->neededBytes, 4 * estimate->taskBytes);
}

TEST(MemoryBudgetTest, TheBaselineAloneNeedsTwoRunnersAndACopy) {
  // A request with the baseline alone: its runner, the next set's runner,
  // and the copy of its outputs kept for the check after timing.
  KernelTask task = makeTask(1024);
  std::vector<KernelPlan> plans(1);
  auto estimate = estimateEvaluationMemory(task, plans, 0, 0);
  ASSERT_TRUE(estimate);
  EXPECT_EQ(estimate->neededBytes, 2 * 8192 + 4096 + kMemoryMarginBytes);
}

TEST(MemoryBudgetTest, OverflowingSizesGiveNoEstimate) {
  KernelTask task = makeTask(int64_t(1) << 62);
  std::vector<KernelPlan> plans(2);
  EXPECT_FALSE(estimateEvaluationMemory(task, plans, 1024, 0));
}

TEST(MemoryBudgetTest, RefusalNamesTheSizes) {
  KernelTask task = makeTask(int64_t(256) << 20); // 1 GiB each way
  std::vector<KernelPlan> plans(2);
  auto estimate = estimateEvaluationMemory(task, plans, 1024, 0);
  ASSERT_TRUE(estimate);
  EXPECT_FALSE(checkMemoryFits(*estimate, estimate->neededBytes, 2));
  EXPECT_FALSE(checkMemoryFits(*estimate, 140 * kGiB, 2));
  std::optional<std::string> refusal = checkMemoryFits(*estimate, 3 * kGiB, 2);
  ASSERT_TRUE(refusal);
  EXPECT_NE(refusal->find("its tensors take 2.00 GiB"), std::string::npos)
      << *refusal;
  EXPECT_NE(refusal->find("evaluating 2 candidates needs 7.25 GiB"),
            std::string::npos)
      << *refusal;
  EXPECT_NE(refusal->find("3.00 GiB is free"), std::string::npos) << *refusal;
}

TEST(MemoryBudgetTest, FormatsBytes) {
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(12 * kMiB), "12.0 MiB");
  EXPECT_EQ(formatBytes(3 * kGiB / 2), "1.50 GiB");
}

} // namespace
