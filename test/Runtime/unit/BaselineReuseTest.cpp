//===- BaselineReuseTest.cpp - Tests of reusing the baseline ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/BaselineReuse.h"

#include "gtest/gtest.h"

using namespace kopt::runtime;

namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;
constexpr uint64_t kGiB = uint64_t(1) << 30;

KernelTask makeTask(int64_t rows, int64_t columns,
                    ElementType type = ElementType::F32) {
  KernelTask task;
  task.key = "softmax";
  task.inputs.push_back({"in0", type, {rows, columns}});
  task.outputs.push_back({"out0", type, {rows, columns}});
  return task;
}

KernelPlan makePlan(const std::string &code) {
  KernelPlan plan;
  plan.taskKey = "softmax";
  plan.proposer = "baseline";
  plan.variant = "per-op";
  plan.sources.push_back({"k", code});
  return plan;
}

TEST(BaselineReuseTest, KeysHitOnlyForTheSameTaskPlanAndSet) {
  KernelTask task = makeTask(64, 4096);
  KernelPlan plan = makePlan("kernel A");
  BaselineSetKey key = makeBaselineSetKey(task, plan, 2, 77,
                                          InputDistribution::WideDynamicRange);
  EXPECT_EQ(key, makeBaselineSetKey(task, plan, 2, 77,
                                    InputDistribution::WideDynamicRange));
  // Each thing that determines the outputs makes another key.
  std::vector<BaselineSetKey> others = {
      makeBaselineSetKey(task, plan, 2, 78,
                         InputDistribution::WideDynamicRange),
      makeBaselineSetKey(task, plan, 3, 77,
                         InputDistribution::WideDynamicRange),
      makeBaselineSetKey(task, plan, 2, 77, InputDistribution::StandardNormal),
      makeBaselineSetKey(task, makePlan("kernel B"), 2, 77,
                         InputDistribution::WideDynamicRange),
      makeBaselineSetKey(makeTask(4096, 64), plan, 2, 77,
                         InputDistribution::WideDynamicRange),
      makeBaselineSetKey(makeTask(64, 4096, ElementType::F16), plan, 2, 77,
                         InputDistribution::WideDynamicRange),
  };
  for (const BaselineSetKey &other : others)
    EXPECT_NE(key, other);
  KernelPlan launched = plan;
  launched.steps.emplace_back();
  launched.steps.back().launch.grid = {"64", "1", "1"};
  EXPECT_NE(key, makeBaselineSetKey(task, launched, 2, 77,
                                    InputDistribution::WideDynamicRange));
}

TEST(BaselineReuseTest, KeptSetsMatchOnlyTheSameSetsInOrder) {
  KernelTask task = makeTask(64, 4096);
  KernelPlan plan = makePlan("kernel A");
  auto keysFor = [&](uint64_t seed, unsigned sets) {
    std::vector<BaselineSetKey> keys;
    std::vector<InputDistribution> distributions =
        getValidationDistributions(sets);
    for (unsigned s = 0; s < sets; ++s)
      keys.push_back(makeBaselineSetKey(task, plan, s, deriveSeed(seed, s),
                                        distributions[s]));
    return keys;
  };
  std::vector<KeptSetRecord> kept;
  for (const BaselineSetKey &key : keysFor(5, 5))
    kept.push_back({key, {1}, {2}});
  EXPECT_TRUE(matchesKeptSets(kept, keysFor(5, 5)));
  EXPECT_FALSE(matchesKeptSets(kept, keysFor(6, 5)));
  EXPECT_FALSE(matchesKeptSets(kept, keysFor(5, 4)));
  EXPECT_FALSE(matchesKeptSets(kept, keysFor(5, 6)));
  std::vector<BaselineSetKey> swapped = keysFor(5, 5);
  std::swap(swapped[1], swapped[2]);
  EXPECT_FALSE(matchesKeptSets(kept, swapped));
  EXPECT_FALSE(matchesKeptSets({}, {}));
}

/// A reduction: `inElements` f32 in, `outElements` f32 out.
KernelTask makeReduction(int64_t inElements, int64_t outElements) {
  KernelTask task;
  task.key = "sum";
  task.inputs.push_back({"in0", ElementType::F32, {inElements}});
  task.outputs.push_back({"out0", ElementType::F32, {outElements}});
  return task;
}

TEST(BaselineReuseTest, KeepsOnlyWhenTheDeviceHasRoom) {
  // 1 GiB in, 128 MiB out: the baseline's own request holds one runner,
  // and the five sets' outputs stay under the cap.
  KernelTask task = makeReduction(int64_t(1) << 28, int64_t(1) << 25);
  std::vector<KernelPlan> plans(1);
  auto estimate = estimateEvaluationMemory(task, plans, 1024, 100 * kMiB);
  ASSERT_TRUE(estimate);
  ASSERT_EQ(estimate->outputBytes, 128 * kMiB);
  uint64_t needed =
      estimate->neededBytes + estimate->largestRunnerBytes + 640 * kMiB;

  KeepDecision fits = decideBaselineKeeping(*estimate, 5, needed, 1);
  EXPECT_TRUE(fits.keep) << fits.reason;
  EXPECT_EQ(fits.keptBytes, 640 * kMiB);

  KeepDecision tight = decideBaselineKeeping(*estimate, 5, needed - 1, 1);
  EXPECT_FALSE(tight.keep);
  EXPECT_NE(tight.reason.find("640.0 MiB"), std::string::npos) << tight.reason;
  EXPECT_NE(tight.reason.find("free"), std::string::npos) << tight.reason;

  // Fewer sets take less.
  EXPECT_TRUE(decideBaselineKeeping(*estimate, 4, needed - 1, 1).keep);
  EXPECT_FALSE(decideBaselineKeeping(*estimate, 0, needed, 1).keep);
  // Sizes that overflow are refused, not wrapped.
  MemoryEstimate huge = *estimate;
  huge.outputBytes = UINT64_MAX / 2;
  EXPECT_FALSE(decideBaselineKeeping(huge, 5, UINT64_MAX, 1).keep);
}

TEST(BaselineReuseTest, KeepsOnlyUnderFourTimesTheTask) {
  // 1 GiB in, 1 GiB out: a later request (the baseline and a candidate)
  // is 3.5 times the task on its own; the five sets would take it to 5.5.
  // The device has room, but nothing is kept.
  KernelTask task = makeTask(int64_t(1) << 14, int64_t(1) << 14);
  std::vector<KernelPlan> plans(1);
  auto estimate = estimateEvaluationMemory(task, plans, 1024, 100 * kMiB);
  ASSERT_TRUE(estimate);
  KeepDecision over = decideBaselineKeeping(*estimate, 5, 140 * kGiB, 1);
  EXPECT_FALSE(over.keep);
  EXPECT_NE(over.reason.find("over 4 times the task's tensors (2.00 GiB)"),
            std::string::npos)
      << over.reason;
  EXPECT_NE(over.reason.find("11.00 GiB"), std::string::npos) << over.reason;
  // One set is within: 3.5 times, the kept set standing for the copy.
  EXPECT_TRUE(decideBaselineKeeping(*estimate, 1, 140 * kGiB, 1).keep);
}

TEST(BaselineReuseTest, ALaterRequestHoldsACandidateToo) {
  // 1 GiB in, 256 MiB out: runners of 1.25 GiB, a cap of 5 GiB. The
  // baseline alone (two runners and a copy) holding five sets would be
  // 3.75 GiB; the baseline beside a candidate is one runner more, 5 GiB.
  KernelTask task = makeReduction(int64_t(1) << 28, int64_t(1) << 26);
  std::vector<KernelPlan> one(1), two(2);
  auto alone = estimateEvaluationMemory(task, one, 0, 100 * kMiB);
  auto pair = estimateEvaluationMemory(task, two, 0, 100 * kMiB);
  ASSERT_TRUE(alone && pair);
  MemoryEstimate later = estimateLaterRequest(*alone, 1);
  EXPECT_EQ(later.requestBytes, pair->requestBytes);
  EXPECT_EQ(later.neededBytes, pair->neededBytes);
  EXPECT_EQ(estimateLaterRequest(*pair, 2).requestBytes, pair->requestBytes);
  // At 5 GiB exactly the cap holds; a byte of guard more and it does not.
  EXPECT_TRUE(decideBaselineKeeping(*alone, 5, 140 * kGiB, 1).keep);
  auto guarded = estimateEvaluationMemory(task, one, 1, 100 * kMiB);
  ASSERT_TRUE(guarded);
  KeepDecision over = decideBaselineKeeping(*guarded, 5, 140 * kGiB, 1);
  EXPECT_FALSE(over.keep);
  EXPECT_NE(over.reason.find("over 4 times"), std::string::npos) << over.reason;
}

TEST(BaselineReuseTest, FindsACorruptedKeptOutput) {
  std::vector<KeptSetRecord> kept(3);
  for (size_t s = 0; s < kept.size(); ++s)
    kept[s].outputSums = {100 + s, 200 + s};
  auto honest = [&](size_t set, size_t output) -> Result<uint64_t> {
    return kept[set].outputSums[output];
  };
  EXPECT_FALSE(findCorruptedKeptOutput(kept, honest));

  // One element of set 1's second output changed on the device.
  auto corrupted = [&](size_t set, size_t output) -> Result<uint64_t> {
    uint64_t sum = kept[set].outputSums[output];
    return set == 1 && output == 1 ? sum ^ 0x40 : sum;
  };
  std::optional<KeptCorruption> found =
      findCorruptedKeptOutput(kept, corrupted);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->set, 1u);
  EXPECT_EQ(found->output, 1u);
  EXPECT_NE(found->message.find("changed"), std::string::npos);

  // A checksum that cannot be taken proves nothing: not used either.
  auto failing = [&](size_t set, size_t output) -> Result<uint64_t> {
    if (set == 2)
      return Status::error(StatusCode::Internal, "device lost");
    return kept[set].outputSums[output];
  };
  found = findCorruptedKeptOutput(kept, failing);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->set, 2u);
  EXPECT_NE(found->message.find("device lost"), std::string::npos);
}

} // namespace
