//===- EvaluationChecksTest.cpp - GPU-free evaluator decisions --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Evaluator/EvaluationChecks.h"

#include "kopt/Runtime/Evaluator/ElementCodec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace kopt::runtime;

namespace {

KernelTask makeTask() {
  KernelTask task;
  task.outputs.push_back({"out", ElementType::F32, {4}});
  task.outputs.push_back({"count", ElementType::I32, {2}});
  return task;
}
} // namespace

TEST(EvaluationChecksTest, ParsesDistributionNames) {
  EXPECT_EQ(parseDistributionName("normal"), InputDistribution::StandardNormal);
  EXPECT_EQ(parseDistributionName("small-int"),
            InputDistribution::SmallIntegers);
  EXPECT_FALSE(parseDistributionName("uniform"));
}

TEST(EvaluationChecksTest, VerifiesReferences) {
  KernelTask task = makeTask();
  ReferenceSet reference;
  reference.outputs.push_back({"out", {0, 3}, {1.0, 2.0}});
  EXPECT_TRUE(verifyReference(task, reference).isOk());

  ReferenceSet badName = reference;
  badName.outputs[0].output = "nope";
  EXPECT_FALSE(verifyReference(task, badName).isOk());
  ReferenceSet badIndex = reference;
  badIndex.outputs[0].indices[1] = 4;
  EXPECT_FALSE(verifyReference(task, badIndex).isOk());
  ReferenceSet badLength = reference;
  badLength.outputs[0].values.push_back(3.0);
  EXPECT_FALSE(verifyReference(task, badLength).isOk());
  ReferenceSet badDistribution = reference;
  badDistribution.distribution = "uniform";
  EXPECT_FALSE(verifyReference(task, badDistribution).isOk());
  ReferenceSet twice = reference;
  twice.outputs.push_back(reference.outputs[0]);
  EXPECT_FALSE(verifyReference(task, twice).isOk());
}

TEST(EvaluationChecksTest, ComparesSampledPointsWithTheReference) {
  std::vector<uint8_t> output =
      encodeElements(ElementType::F32, {1.0, 5.0, 7.0, 2.0});
  Tolerance tolerance;
  ComparisonResult good = compareWithReference(
      ElementType::F32, output, {"out", {0, 3}, {1.0, 2.0}}, tolerance);
  EXPECT_TRUE(good.passed);
  ComparisonResult bad = compareWithReference(
      ElementType::F32, output, {"out", {0, 2}, {1.0, 2.0}}, tolerance);
  ASSERT_FALSE(bad.passed);
  ASSERT_FALSE(bad.worst.empty());
  // The worst element is reported by its index in the output.
  EXPECT_EQ(bad.worst[0].index, 2u);
  EXPECT_EQ(bad.worst[0].actual, 7.0);
}

TEST(EvaluationChecksTest, GatheredSamplesGiveTheSameVerdict) {
  // What the engine gathers on the device (the elements at the sampled
  // indices, in order) is judged as the whole output would be.
  std::vector<uint8_t> output =
      encodeElements(ElementType::F32, {1.0, 5.0, 7.0, 2.0});
  OutputReference reference{"out", {2, 0}, {2.0, 1.0}};
  std::vector<uint8_t> samples = encodeElements(ElementType::F32, {7.0, 1.0});
  ComparisonResult whole =
      compareWithReference(ElementType::F32, output, reference, Tolerance());
  ComparisonResult sampled = compareSampledWithReference(
      ElementType::F32, samples, reference, Tolerance());
  ASSERT_FALSE(sampled.passed);
  EXPECT_EQ(sampled.relativeError, whole.relativeError);
  ASSERT_EQ(sampled.worst.size(), whole.worst.size());
  EXPECT_EQ(sampled.worst[0].index, 2u);
  EXPECT_EQ(sampled.worst[0].actual, 7.0);
  std::vector<uint8_t> integers = encodeElements(ElementType::I32, {4});
  EXPECT_TRUE(compareSampledWithReference(ElementType::I32, integers,
                                          {"count", {1}, {4.0}}, Tolerance())
                  .passed);
}

TEST(EvaluationChecksTest, AReferenceBeyondTheRangeIsAnInfinity) {
  // -8.9e40 is -inf in f32 (a mask times the lowest f32): an f32 plan that
  // gives -inf is right, one that gives the largest finite value is not.
  // Just below the rounding threshold, the largest finite value is right.
  float lowest = std::numeric_limits<float>::lowest();
  std::vector<uint8_t> overflowed =
      encodeElements(ElementType::F32, {-INFINITY, 1.0});
  OutputReference reference{"out", {0, 1}, {-8.9e40, 1.0}};
  EXPECT_TRUE(
      compareWithReference(ElementType::F32, overflowed, reference, Tolerance())
          .passed);
  std::vector<uint8_t> clamped =
      encodeElements(ElementType::F32, {double(lowest), 1.0});
  EXPECT_FALSE(
      compareWithReference(ElementType::F32, clamped, reference, Tolerance())
          .passed);
  OutputReference justBelow{
      "out", {0, 1}, {double(lowest) - std::ldexp(1.0, 102), 1.0}};
  EXPECT_TRUE(
      compareWithReference(ElementType::F32, clamped, justBelow, Tolerance())
          .passed);
  EXPECT_FALSE(
      compareWithReference(ElementType::F32, overflowed, justBelow, Tolerance())
          .passed);
  // In f64 the same value is finite.
  std::vector<uint8_t> wide = encodeElements(ElementType::F64, {-8.9e40, 1.0});
  EXPECT_TRUE(
      compareWithReference(ElementType::F64, wide, reference, Tolerance())
          .passed);
}

TEST(EvaluationChecksTest, ComparesIntegersExactly) {
  std::vector<uint8_t> output = encodeElements(ElementType::I32, {3, 4});
  EXPECT_TRUE(compareWithReference(ElementType::I32, output,
                                   {"count", {1}, {4.0}}, Tolerance())
                  .passed);
  EXPECT_FALSE(compareWithReference(ElementType::I32, output,
                                    {"count", {1}, {5.0}}, Tolerance())
                   .passed);
}

TEST(EvaluationChecksTest, WritesNonFiniteNumbersAsStrings) {
  EXPECT_EQ(toJsonNumber(NAN), json::Value("nan"));
  EXPECT_EQ(toJsonNumber(-INFINITY), json::Value("-inf"));
  EXPECT_EQ(toJsonNumber(1.5), json::Value(1.5));
}

TEST(EvaluationChecksTest, RoundTripsTheReferenceOfAnEvaluateMessage) {
  EvaluateMessage evaluate;
  evaluate.requestId = 3;
  evaluate.task = json::Value::object();
  evaluate.candidates.push_back(json::Value::object());
  ReferenceSet reference;
  reference.seed = 42;
  reference.distribution = "wide-range";
  reference.outputs.push_back({"out", {0, 7}, {0.25, -3.5}});
  evaluate.reference = reference;
  Result<Message> decoded = decode(encode(evaluate));
  ASSERT_TRUE(decoded.isOk()) << decoded.status().message();
  EXPECT_EQ(std::get<EvaluateMessage>(*decoded), evaluate);

  // Without a reference the field is absent and stays so.
  evaluate.reference.reset();
  std::string text = encode(evaluate);
  EXPECT_EQ(text.find("reference"), std::string::npos);
  decoded = decode(text);
  ASSERT_TRUE(decoded.isOk());
  EXPECT_FALSE(std::get<EvaluateMessage>(*decoded).reference);
}

TEST(EvaluationChecksTest, RefusesAMalformedReference) {
  std::string text =
      R"({"protocol":"kopt.worker/1","type":"evaluate","id":1,"task":{},)"
      R"("candidates":[{}],"reference":{"seed":1,"distribution":"normal",)"
      R"("outputs":[{"name":"out","indices":[0,1],"values":[1.0]}]}})";
  EXPECT_FALSE(decode(text).isOk());
}

TEST(EvaluationChecksTest, OnlyOtherArithmeticUnderFp32NeedsAProof) {
  KernelTask task = makeTask();
  KernelPlan plan;
  EXPECT_FALSE(needsAccuracyProof(task, plan));
  plan.arithmetic = "3xtf32";
  EXPECT_TRUE(needsAccuracyProof(task, plan));
  // tf32 and bf16 hold every plan to their looser tolerance alone;
  // fp32-ieee refuses such a plan before it runs (verifyPlan).
  for (const char *precision : {"tf32", "bf16", "fp32-ieee"}) {
    task.precision = precision;
    EXPECT_FALSE(needsAccuracyProof(task, plan)) << precision;
  }
}

TEST(EvaluationChecksTest, OtherArithmeticMustBeAsAccurateAsTheBaseline) {
  auto errors = [](std::vector<double> values) {
    ReferenceErrors result;
    for (size_t i = 0; i < values.size(); ++i)
      result.outputs.push_back("out" + std::to_string(i));
    result.errors = std::move(values);
    return std::optional<ReferenceErrors>(result);
  };
  // More accurate than fp32, or exactly as accurate (exact small integers).
  EXPECT_EQ(judgeArithmeticAccuracy(errors({2.8e-7}), errors({1.6e-6})),
            std::nullopt);
  EXPECT_EQ(judgeArithmeticAccuracy(errors({0.0, 1e-7}), errors({0.0, 1e-7})),
            std::nullopt);
  // Less accurate on one output fails, naming it and both errors.
  std::optional<std::string> worse =
      judgeArithmeticAccuracy(errors({1e-7, 3e-6}), errors({2e-7, 1.6e-6}));
  ASSERT_TRUE(worse.has_value());
  EXPECT_NE(worse->find("'out1'"), std::string::npos) << *worse;
  EXPECT_NE(worse->find("3e-06"), std::string::npos) << *worse;
  EXPECT_NE(worse->find("1.6e-06"), std::string::npos) << *worse;
  // Without a reference on the set nothing is proven.
  EXPECT_TRUE(judgeArithmeticAccuracy(std::nullopt, errors({1e-6})));
  EXPECT_TRUE(judgeArithmeticAccuracy(errors({1e-7}), std::nullopt));
  // NaN proves nothing either way.
  EXPECT_TRUE(judgeArithmeticAccuracy(errors({std::nan("")}), errors({1e-6})));
  EXPECT_TRUE(judgeArithmeticAccuracy(errors({1e-7}), errors({std::nan("")})));
  // Errors of different outputs are not comparable.
  std::optional<ReferenceErrors> other = errors({1e-7});
  other->outputs[0] = "count";
  EXPECT_TRUE(judgeArithmeticAccuracy(other, errors({1e-6})));
}
