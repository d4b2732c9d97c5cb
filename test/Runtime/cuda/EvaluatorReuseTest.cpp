//===- EvaluatorReuseTest.cpp - The baseline's outputs kept ------*- C++
//-*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Requests of one task through one BaselineCache, as a worker sends them:
// the first keeps the baseline's outputs, later ones reuse them and still
// catch every cheat; another seed or task, a corrupted kept output or too
// little memory means the baseline is validated again.
//
//===----------------------------------------------------------------------===//

#include "EvaluatorTestUtils.h"

#include "kopt/Runtime/Cuda/FlushedTimer.h"

using namespace kopt::runtime;
using namespace kopt::runtime::evaltest;

namespace {

/// The `baseline_outputs` evidence of `report`, or null.
const json::Value *getReuse(const EvalReport &report) {
  return report.evidence.find("baseline_outputs");
}

bool getFlag(const EvalReport &report, const char *name) {
  const json::Value *reuse = getReuse(report);
  if (!reuse || !reuse->find(name))
    return false;
  return reuse->find(name)->getBool().value_or(false);
}

std::string getNote(const EvalReport &report) {
  const json::Value *reuse = getReuse(report);
  const json::Value *note = reuse ? reuse->find("note") : nullptr;
  return note && note->getString() ? *note->getString() : "";
}

/// The vector add with inputs four times as long as its output (the
/// kernels read the first `kElements`): a request holding five sets of its
/// outputs stays within four times the task's tensors, where the plain
/// vector add's (inputs as long as the output) would not, so nothing of it
/// is kept (docs/Evaluator.md, "Device memory").
KernelTask makeKeptTask() {
  KernelTask task = makeTask();
  for (TensorSpec &input : task.inputs)
    input.shape = {4 * kElements};
  return task;
}

/// `peak_bytes` less the device's flush buffer, over `task_bytes`.
double getPeakOverTask(const EvalReport &report) {
  const json::Value *memory = report.evidence.find("device_memory");
  if (!memory)
    return 0;
  auto read = [&](const char *name) {
    const json::Value *value = memory->find(name);
    return value ? double(value->getInteger().value_or(0)) : 0.0;
  };
  double task = read("task_bytes");
  return task > 0 ? (read("peak_bytes") - read("flush_bytes")) / task : 0;
}

EvaluatorOptions withCache(BaselineCache &cache, uint64_t seed = 11) {
  EvaluatorOptions options = quickOptions();
  options.baselineCache = &cache;
  options.seed = seed;
  return options;
}

using EvaluatorReuseTest = EvaluatorTest;

} // namespace

TEST_F(EvaluatorReuseTest, LaterRequestsReuseTheBaselineAndStillCatchCheats) {
  BaselineCache cache;
  KernelTask task = makeKeptTask();
  KernelPlan baseline = makePlan("baseline", kBaseline);
  EvaluatorOptions options = withCache(cache);

  // The baseline's own request keeps its outputs of every set.
  auto first = evaluateCandidates(*context, task, {baseline}, options);
  ASSERT_TRUE(bool(first)) << first.status().message();
  ASSERT_TRUE((*first)[0].valid) << json::write((*first)[0].evidence);
  EXPECT_FALSE(getFlag((*first)[0], "reused"));
  EXPECT_TRUE(getFlag((*first)[0], "kept")) << getNote((*first)[0]);
  EXPECT_EQ(cache.getNumSets(), 5u);
  EXPECT_EQ(cache.getBytes(), 5u * 4u * uint64_t(kElements));

  // An honest candidate beside it: compared with the kept outputs, timed
  // beside the baseline.
  auto honest = evaluateCandidates(
      *context, task, {baseline, makePlan("vectorised", kVectorised, 4)},
      options);
  ASSERT_TRUE(bool(honest)) << honest.status().message();
  for (const EvalReport &report : *honest) {
    EXPECT_TRUE(report.valid) << json::write(report.evidence);
    EXPECT_TRUE(getFlag(report, "reused")) << getNote(report);
    ASSERT_TRUE(report.times.has_value());
    EXPECT_GE(report.times->repetitions, 20);
  }
  EXPECT_TRUE((*honest)[1].speedup.has_value());
  // The kept outputs count in the request's peak, within four times the
  // task's tensors without the device's flush buffer.
  EXPECT_GT(getPeakOverTask((*honest)[1]), 0);
  EXPECT_LE(getPeakOverTask((*honest)[1]), 4.0)
      << json::write((*honest)[1].evidence);

  // Every cheat is still caught against the kept outputs.
  std::vector<std::pair<const char *, std::vector<FailedCheck>>> cheats = {
      {kHalf, {FailedCheck::UnwrittenOutput}},
      {kWritesInput, {FailedCheck::InputModified}},
      {kConstant,
       {FailedCheck::OutputMismatch, FailedCheck::InputIndependent}}};
  for (const auto &[code, expected] : cheats) {
    auto reports = evaluateCandidates(
        *context, task, {baseline, makePlan("cheat", code)}, options);
    ASSERT_TRUE(bool(reports)) << reports.status().message();
    EXPECT_TRUE((*reports)[0].valid) << json::write((*reports)[0].evidence);
    EXPECT_TRUE(getFlag((*reports)[1], "reused"));
    EXPECT_FALSE((*reports)[1].valid);
    EXPECT_NE(
        std::find(expected.begin(), expected.end(), (*reports)[1].failedCheck),
        expected.end())
        << stringifyFailedCheck((*reports)[1].failedCheck);
  }
}

TEST_F(EvaluatorReuseTest, AnotherSeedOrTaskIsValidatedAgain) {
  BaselineCache cache;
  KernelTask task = makeKeptTask();
  KernelPlan baseline = makePlan("baseline", kBaseline);
  auto first =
      evaluateCandidates(*context, task, {baseline}, withCache(cache, 11));
  ASSERT_TRUE(bool(first)) << first.status().message();
  ASSERT_EQ(cache.getNumSets(), 5u);

  // Another seed draws other inputs: nothing is reused, and the new sets
  // are kept in place of the old.
  auto reseeded = evaluateCandidates(
      *context, task, {baseline, makePlan("vectorised", kVectorised, 4)},
      withCache(cache, 12));
  ASSERT_TRUE(bool(reseeded)) << reseeded.status().message();
  EXPECT_TRUE((*reseeded)[1].valid) << json::write((*reseeded)[1].evidence);
  EXPECT_FALSE(getFlag((*reseeded)[1], "reused"));
  EXPECT_TRUE(getFlag((*reseeded)[1], "kept"));
  EXPECT_NE(getNote((*reseeded)[1]).find("another task"), std::string::npos)
      << getNote((*reseeded)[1]);

  // Another baseline plan for the same task: not reused either.
  auto replanned = evaluateCandidates(
      *context, task, {makePlan("baseline", kVectorised, 4), baseline},
      withCache(cache, 12));
  ASSERT_TRUE(bool(replanned)) << replanned.status().message();
  EXPECT_FALSE(getFlag((*replanned)[0], "reused"));
  EXPECT_TRUE((*replanned)[1].valid) << json::write((*replanned)[1].evidence);
}

TEST_F(EvaluatorReuseTest, ACorruptedKeptOutputIsNotUsed) {
  BaselineCache cache;
  KernelTask task = makeKeptTask();
  KernelPlan baseline = makePlan("baseline", kBaseline);
  EvaluatorOptions options = withCache(cache);
  auto first = evaluateCandidates(*context, task, {baseline}, options);
  ASSERT_TRUE(bool(first)) << first.status().message();
  ASSERT_EQ(cache.getNumSets(), 5u);

  // Zero the first 64 bytes of the kept output of set 2.
  CUdeviceptr kept = cache.getOutput(2, 0);
  ASSERT_NE(kept, CUdeviceptr(0));
  const CudaDriver &api = context->getDriver();
  ASSERT_EQ(api.cuMemsetD8(kept, 0, 64), CUDA_SUCCESS);

  // Compared with the corrupted copy, the honest candidate would fail on
  // set 2 (16 of its elements differ); it passes: the copy was not used,
  // the baseline was validated again.
  auto reports = evaluateCandidates(
      *context, task, {baseline, makePlan("vectorised", kVectorised, 4)},
      options);
  ASSERT_TRUE(bool(reports)) << reports.status().message();
  EXPECT_FALSE(getFlag((*reports)[1], "reused"));
  EXPECT_NE(getNote((*reports)[1]).find("input set 2 was not used"),
            std::string::npos)
      << getNote((*reports)[1]);
  EXPECT_TRUE((*reports)[0].valid) << json::write((*reports)[0].evidence);
  EXPECT_TRUE((*reports)[1].valid) << json::write((*reports)[1].evidence);
  // The request kept fresh outputs in their place.
  EXPECT_TRUE(getFlag((*reports)[1], "kept"));
  EXPECT_EQ(cache.getNumSets(), 5u);
  auto again = evaluateCandidates(
      *context, task, {baseline, makePlan("vectorised", kVectorised, 4)},
      options);
  ASSERT_TRUE(bool(again)) << again.status().message();
  EXPECT_TRUE(getFlag((*again)[1], "reused"));
}

TEST_F(EvaluatorReuseTest, KeepsNothingWithoutRoomAndFreesWhatARequestNeeds) {
  KernelTask task = makeKeptTask();
  KernelPlan baseline = makePlan("baseline", kBaseline);
  std::vector<KernelPlan> pair = {baseline,
                                  makePlan("vectorised", kVectorised, 4)};
  // What the baseline's request and a pair's need, without keeping.
  auto alone = evaluateCandidates(*context, task, {baseline}, quickOptions());
  auto both = evaluateCandidates(*context, task, pair, quickOptions());
  ASSERT_TRUE(alone && both);
  auto estimated = [](const EvalReport &report) {
    return uint64_t(*report.evidence.find("device_memory")
                         ->find("estimated_bytes")
                         ->getInteger());
  };
  uint64_t aloneBytes = estimated((*alone)[0]);
  uint64_t pairBytes = estimated((*both)[0]);

  // Room for the request, not for keeping beside it.
  BaselineCache cache;
  EvaluatorOptions options = withCache(cache);
  // The estimates count the flush buffer, which the device holds already
  // and which is then not among the free bytes.
  uint64_t flushBytes = uint64_t(getL2FlushBytesHeld(*context));
  ASSERT_GT(flushBytes, 0u);
  options.freeDeviceMemory = [&]() -> Result<uint64_t> {
    return aloneBytes - flushBytes + (1u << 20);
  };
  auto refused = evaluateCandidates(*context, task, {baseline}, options);
  ASSERT_TRUE(bool(refused)) << refused.status().message();
  EXPECT_TRUE((*refused)[0].valid);
  EXPECT_FALSE(getFlag((*refused)[0], "kept"));
  EXPECT_NE(getNote((*refused)[0]).find("free"), std::string::npos)
      << getNote((*refused)[0]);
  EXPECT_EQ(cache.getNumSets(), 0u);

  // Kept with room; then a request that fits only without the kept
  // outputs frees them, and is validated as before.
  options.freeDeviceMemory = nullptr;
  auto kept = evaluateCandidates(*context, task, {baseline}, options);
  ASSERT_TRUE(bool(kept)) << kept.status().message();
  ASSERT_EQ(cache.getNumSets(), 5u);
  uint64_t keptBytes = cache.getBytes();
  options.freeDeviceMemory = [&]() -> Result<uint64_t> {
    return pairBytes - flushBytes + keptBytes / 2 - cache.getBytes();
  };
  auto squeezed = evaluateCandidates(*context, task, pair, options);
  ASSERT_TRUE(bool(squeezed)) << squeezed.status().message();
  EXPECT_FALSE(getFlag((*squeezed)[1], "reused"));
  EXPECT_NE(getNote((*squeezed)[1]).find("needs their memory"),
            std::string::npos)
      << getNote((*squeezed)[1]);
  EXPECT_TRUE((*squeezed)[1].valid) << json::write((*squeezed)[1].evidence);
  EXPECT_EQ(cache.getNumSets(), 0u);
}

TEST_F(EvaluatorReuseTest, ACandidateThatWritesIntoTheKeptOutputsFails) {
  BaselineCache cache;
  KernelTask task = makeKeptTask();
  KernelPlan baseline = makePlan("baseline", kBaseline);
  EvaluatorOptions options = withCache(cache);
  auto first = evaluateCandidates(*context, task, {baseline}, options);
  ASSERT_TRUE(bool(first)) << first.status().message();
  ASSERT_EQ(cache.getNumSets(), 5u);

  // Correct, and it also zeroes the kept output of set 3, whose address
  // it is given as a literal.
  KernelPlan vandal = makePlan("vandal", R"(
extern "C" __global__ void add(const float *a, const float *b, float *c,
                               int n, long long kept) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
  if (i < 16)
    reinterpret_cast<float *>(kept)[i] = 0.0f;
})");
  vandal.steps[0].launch.args.push_back(
      "i64:" + std::to_string(int64_t(cache.getOutput(3, 0))));
  auto reports =
      evaluateCandidates(*context, task, {baseline, vandal}, options);
  ASSERT_TRUE(bool(reports)) << reports.status().message();
  EXPECT_TRUE(getFlag((*reports)[1], "reused"));
  EXPECT_EQ((*reports)[1].failedCheck, FailedCheck::Redzone)
      << json::write((*reports)[1].evidence);
  const json::Value *set = (*reports)[1].evidence.find("kept_input_set");
  ASSERT_NE(set, nullptr) << json::write((*reports)[1].evidence);
  EXPECT_EQ(set->getInteger(), 3);
  // The baseline restored the set and stays valid; nothing stays kept.
  EXPECT_TRUE((*reports)[0].valid) << json::write((*reports)[0].evidence);
  EXPECT_TRUE((*reports)[0].times.has_value());
  EXPECT_EQ(cache.getNumSets(), 0u);
}

TEST_F(EvaluatorReuseTest, KeepsNothingThatWouldPassFourTimesTheTask) {
  // The plain vector add: five sets of its outputs beside the baseline and a
  // candidate would take a request to about 5.5 times its tensors.
  BaselineCache cache;
  KernelTask task = makeTask();
  KernelPlan baseline = makePlan("baseline", kBaseline);
  EvaluatorOptions options = withCache(cache);
  auto first = evaluateCandidates(*context, task, {baseline}, options);
  ASSERT_TRUE(bool(first)) << first.status().message();
  EXPECT_TRUE((*first)[0].valid) << json::write((*first)[0].evidence);
  EXPECT_FALSE(getFlag((*first)[0], "kept"));
  EXPECT_NE(getNote((*first)[0]).find("over 4 times the task's tensors"),
            std::string::npos)
      << getNote((*first)[0]);
  EXPECT_EQ(cache.getNumSets(), 0u);
  // The candidates' requests validate the baseline on every set, as
  // without a cache.
  auto pair = evaluateCandidates(
      *context, task, {baseline, makePlan("vectorised", kVectorised, 4)},
      options);
  ASSERT_TRUE(bool(pair)) << pair.status().message();
  EXPECT_FALSE(getFlag((*pair)[1], "reused"));
  EXPECT_TRUE((*pair)[1].valid) << json::write((*pair)[1].evidence);
  EXPECT_LE(getPeakOverTask((*pair)[1]), 4.0)
      << json::write((*pair)[1].evidence);
}
