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

/// `out = f(in)` with `inElements` f32 in and `outElements` f32 out.
KernelTask makeTask(int64_t inElements, int64_t outElements) {
  KernelTask task;
  task.inputs.push_back({"in0", ElementType::F32, {inElements}});
  task.outputs.push_back({"out0", ElementType::F32, {outElements}});
  return task;
}

TEST(MemoryBudgetTest, RunnerCountsTensorsAndGuards) {
  KernelTask task = makeTask(1024);
  KernelPlan plan;
  plan.temporaries.push_back({"t0", ElementType::F16, {512}});
  // Three tensors, each with a 1024-byte guard on both sides.
  uint64_t tensors = 4096 + 4096 + 1024 + 3 * 2048;
  EXPECT_EQ(estimateRunnerBytes(task, plan, 1024), tensors);
  // A guard that is not a multiple of 256 is rounded up in front only.
  EXPECT_EQ(estimateRunnerBytes(task, plan, 100),
            4096 + 4096 + 1024 + 3 * (256 + 100));
  // A GEMM step's cuBLASLt workspace is the context's, not the runner's.
  plan.steps.emplace_back();
  plan.steps.back().kind = PlanStep::Kind::Gemm;
  EXPECT_EQ(estimateRunnerBytes(task, plan, 1024), tensors);
}

TEST(MemoryBudgetTest, TheGemmWorkspaceIsCountedOnce) {
  // One workspace per context, however many plans have GEMM steps.
  KernelTask task = makeTask(1024);
  KernelPlan gemm;
  gemm.steps.emplace_back();
  gemm.steps.back().kind = PlanStep::Kind::Gemm;
  for (size_t numGemmPlans : {0, 1, 2, 8}) {
    std::vector<KernelPlan> plans(1);
    plans.insert(plans.end(), numGemmPlans, gemm);
    std::vector<KernelPlan> plain(plans.size());
    auto with = estimateEvaluationMemory(task, plans, 1024, 0);
    auto without = estimateEvaluationMemory(task, plain, 1024, 0);
    ASSERT_TRUE(with && without);
    uint64_t workspace = numGemmPlans ? 32 * kMiB : 0;
    EXPECT_EQ(with->workspaceBytes, workspace) << numGemmPlans;
    EXPECT_EQ(with->requestBytes, without->requestBytes);
    EXPECT_EQ(with->neededBytes, without->neededBytes + workspace);
  }
}

TEST(MemoryBudgetTest, TheFlushBufferIsCountedOnce) {
  // The device's one L2 flush buffer, whatever the number of runners.
  KernelTask task = makeTask(1024);
  for (size_t numPlans : {1, 2, 8}) {
    std::vector<KernelPlan> plans(numPlans);
    auto without = estimateEvaluationMemory(task, plans, 1024, 0);
    auto with = estimateEvaluationMemory(task, plans, 1024, 100 * kMiB);
    ASSERT_TRUE(without && with);
    EXPECT_EQ(with->flushBytes, 100 * kMiB);
    EXPECT_EQ(with->neededBytes, without->neededBytes + 100 * kMiB)
        << numPlans << " plans";
    // The runners and the request's own buffers hold none of it.
    EXPECT_EQ(with->runnerBytes, without->runnerBytes);
    EXPECT_EQ(with->largestRunnerBytes, without->largestRunnerBytes);
    EXPECT_EQ(with->requestBytes, without->requestBytes);
    EXPECT_EQ(with->neededBytes,
              with->requestBytes + with->flushBytes + kMemoryMarginBytes);
  }
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
  uint64_t runner = 2 * kGiB + 2 * 2048;
  EXPECT_EQ(estimate->largestRunnerBytes, runner);
  EXPECT_EQ(estimate->runnerBytes, 2 * runner);
  // Two runners, a third while a set changes and the baseline's output
  // copy; then the flush buffer once and the margin.
  EXPECT_EQ(estimate->requestBytes, 3 * runner + kGiB);
  EXPECT_EQ(estimate->neededBytes,
            3 * runner + kGiB + 100 * kMiB + kMemoryMarginBytes);
  EXPECT_LE(estimate->requestBytes, 4 * estimate->taskBytes);
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

TEST(MemoryBudgetTest, KeptSetsAddTheirOutputs) {
  MemoryEstimate estimate;
  estimate.taskBytes = 100;
  estimate.outputBytes = 10;
  estimate.requestBytes = 340;
  EXPECT_EQ(estimatePeakWithKeptSets(estimate, 0, 5), 340u);
  EXPECT_EQ(estimatePeakWithKeptSets(estimate, 1, 5), 350u);
  EXPECT_EQ(estimatePeakWithKeptSets(estimate, 4, 5), 380u);
  // Every set kept: the kept last set is the baseline's output copy.
  EXPECT_EQ(estimatePeakWithKeptSets(estimate, 5, 5), 380u);
  estimate.outputBytes = UINT64_MAX / 2;
  EXPECT_FALSE(estimatePeakWithKeptSets(estimate, 5, 5));
}

TEST(MemoryBudgetTest, CountsTheSetsThatFitUnderTheCap) {
  // The cap is four times the task's tensors: 400 bytes here.
  MemoryEstimate estimate;
  estimate.taskBytes = 100;
  estimate.outputBytes = 10;
  estimate.requestBytes = 340;
  EXPECT_EQ(countKeptSetsUnderCap(estimate, 5), 5u);
  // Every set: 370 - 10 + 50 = 410 bytes; four sets need the output copy
  // too (410); three take 400.
  estimate.requestBytes = 370;
  EXPECT_EQ(countKeptSetsUnderCap(estimate, 5), 3u);
  // 360 - 10 + 50 = 400: every set, exactly at the cap.
  estimate.requestBytes = 360;
  EXPECT_EQ(countKeptSetsUnderCap(estimate, 5), 5u);
  estimate.requestBytes = 395;
  EXPECT_EQ(countKeptSetsUnderCap(estimate, 5), 0u);
  // A request over the cap on its own keeps nothing.
  estimate.requestBytes = 401;
  EXPECT_EQ(countKeptSetsUnderCap(estimate, 5), 0u);
  EXPECT_EQ(countKeptSetsUnderCap(estimate, 0), 0u);
  // Sizes that overflow keep nothing.
  estimate.taskBytes = UINT64_MAX / 2;
  estimate.outputBytes = UINT64_MAX / 2;
  EXPECT_EQ(countKeptSetsUnderCap(estimate, 5), 0u);
}

TEST(MemoryBudgetTest, KeptSetsUnderTheCapForRealSizes) {
  std::vector<KernelPlan> plans(2);
  // 1 GiB in, 1 GiB out: the pair alone is 3.5 times the task; one set of
  // outputs more would be 4.0 times plus the guards.
  auto copy = estimateEvaluationMemory(makeTask(int64_t(256) << 20), plans,
                                       1024, 100 * kMiB);
  ASSERT_TRUE(copy);
  EXPECT_EQ(countKeptSetsUnderCap(*copy, 5), 0u);
  // 1 GiB in, 64 MiB out (a reduction): 3 * 1.0625 GiB of runners and
  // guards, and every set's outputs (320 MiB) stay under 4.25 GiB.
  auto reduction = estimateEvaluationMemory(
      makeTask(int64_t(256) << 20, int64_t(16) << 20), plans, 1024, 100 * kMiB);
  ASSERT_TRUE(reduction);
  EXPECT_EQ(countKeptSetsUnderCap(*reduction, 5), 5u);
  // The flush buffer is outside the cap: a larger one keeps as many.
  auto bigFlush = estimateEvaluationMemory(
      makeTask(int64_t(256) << 20, int64_t(16) << 20), plans, 1024, 16 * kGiB);
  ASSERT_TRUE(bigFlush);
  EXPECT_EQ(countKeptSetsUnderCap(*bigFlush, 5), 5u);
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

TEST(MemoryBudgetTest, TheFlushBufferHeldAlreadyIsAvailable) {
  KernelTask task = makeTask(int64_t(256) << 20); // 1 GiB each way
  std::vector<KernelPlan> plans(2);
  auto estimate = estimateEvaluationMemory(task, plans, 1024, 100 * kMiB);
  ASSERT_TRUE(estimate);
  uint64_t needed = estimate->neededBytes;
  // The device holds the flush buffer already: the free memory need not.
  EXPECT_FALSE(checkMemoryFits(*estimate, needed - 100 * kMiB, 2, 100 * kMiB));
  EXPECT_TRUE(checkMemoryFits(*estimate, needed - 100 * kMiB, 2));
  EXPECT_TRUE(
      checkMemoryFits(*estimate, needed - 100 * kMiB - 1, 2, 100 * kMiB));
  std::optional<std::string> refusal =
      checkMemoryFits(*estimate, 3 * kGiB, 2, 100 * kMiB);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(*refusal,
            "the task does not fit the device: its tensors take 2.00 GiB, "
            "evaluating 2 candidates needs 7.35 GiB of device memory (4.00 "
            "GiB for the candidates' buffers, 100.0 MiB for the L2 flush "
            "buffer, of which the device holds 100.0 MiB already), and 3.00 "
            "GiB is free");
}

TEST(MemoryBudgetTest, FormatsBytes) {
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(12 * kMiB), "12.0 MiB");
  EXPECT_EQ(formatBytes(3 * kGiB / 2), "1.50 GiB");
}

} // namespace
