//===- ReferenceBuilderTest.cpp - Reference builder tests -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Codegen/ReferenceInterpreter.h"
#include "kopt/Codegen/RuntimeStatus.h"
#include "kopt/Evaluator/ReferenceBuilder.h"
#include "kopt/Runtime/Evaluator/ElementCodec.h"
#include "kopt/Runtime/Evaluator/InputGenerator.h"

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;
namespace rt = ::kopt::runtime;

namespace {

/// A small group: out0 = x * y + bias (row broadcast), in f32 and f16 inputs.
constexpr const char *kSmallGroup = R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @fma(%x: tensor<8x300xf32>, %y: tensor<8x300xf16>,
               %b: tensor<300xf32>) -> tensor<8x300xf32> {
  %init = tensor.empty() : tensor<8x300xf32>
  %r = linalg.generic {indexing_maps = [#map, #map, #row, #map],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %y, %b : tensor<8x300xf32>, tensor<8x300xf16>, tensor<300xf32>)
      outs(%init : tensor<8x300xf32>) {
  ^bb0(%a: f32, %c: f16, %bias: f32, %out: f32):
    %e = arith.extf %c : f16 to f32
    %m = arith.mulf %a, %e : f32
    %s = arith.addf %m, %bias : f32
    linalg.yield %s : f32
  } -> tensor<8x300xf32>
  return %r : tensor<8x300xf32>
}
)mlir";

/// The task of kSmallGroup, as the outliner would describe it.
KernelTask buildTask(func::FuncOp func) {
  KernelTask task;
  task.name = func.getName().str();
  task.inputs.push_back({"in0", ElementType::F32, {8, 300}});
  task.inputs.push_back({"in1", ElementType::F16, {8, 300}});
  task.inputs.push_back({"in2", ElementType::F32, {300}});
  task.outputs.push_back({"out0", ElementType::F32, {8, 300}});
  return task;
}

TEST(ReferenceBuilderTest, InputsAreTheEnginesSetZero) {
  auto context = makeContext();
  auto module = parse(*context, kSmallGroup);
  ASSERT_TRUE(module);
  KernelTask task = buildTask(firstFunction(*module));
  ASSERT_EQ(task.inputs.size(), 3u);
  for (uint64_t seed : {uint64_t(0), uint64_t(12), ~uint64_t(0)}) {
    rt::ReferenceSet reference = getReferenceSetSource(seed);
    EXPECT_GE(reference.seed, 0);
    EXPECT_EQ(reference.distribution, "normal");
    auto inputs = generateReferenceInputs(task, reference);
    ASSERT_TRUE(static_cast<bool>(inputs))
        << llvm::toString(inputs.takeError());
    // What the engine draws set 0 from when it receives `reference`.
    std::vector<std::vector<uint8_t>> engine =
        rt::generateInputSet(task.inputs, rt::InputDistribution::StandardNormal,
                             uint64_t(reference.seed));
    ASSERT_EQ(inputs->size(), engine.size());
    for (size_t i = 0; i < engine.size(); ++i) {
      ASSERT_EQ((*inputs)[i].size(), engine[i].size());
      EXPECT_EQ((*inputs)[i], engine[i]) << "input " << i;
    }
  }
  rt::ReferenceSet other = getReferenceSetSource(0);
  other.distribution = "small-int";
  auto inputs = generateReferenceInputs(task, other);
  ASSERT_TRUE(static_cast<bool>(inputs));
  EXPECT_EQ(*inputs, rt::generateInputSet(task.inputs,
                                          rt::InputDistribution::SmallIntegers,
                                          uint64_t(other.seed)));
  other.distribution = "uniform";
  auto unknown = generateReferenceInputs(task, other);
  ASSERT_FALSE(static_cast<bool>(unknown));
  EXPECT_NE(llvm::toString(unknown.takeError()).find("uniform"),
            std::string::npos);
}

TEST(ReferenceBuilderTest, ValuesMatchEvaluateAll) {
  auto context = makeContext();
  auto module = parse(*context, kSmallGroup);
  ASSERT_TRUE(module);
  func::FuncOp func = firstFunction(*module);
  KernelTask task = buildTask(func);
  ASSERT_EQ(task.outputs.size(), 1u);

  // 2400 elements: every point below the limit, a sample above it.
  for (unsigned maxPoints : {4096u, 256u}) {
    auto reference = buildReferenceSet(func, task, /*seed=*/7, maxPoints);
    ASSERT_TRUE(static_cast<bool>(reference))
        << llvm::toString(reference.takeError());
    EXPECT_EQ(*reference, *buildReferenceSet(func, task, 7, maxPoints));

    auto inputs = generateReferenceInputs(task, *reference);
    ASSERT_TRUE(static_cast<bool>(inputs));
    std::vector<std::vector<double>> values;
    for (auto [index, input] : llvm::enumerate(task.inputs))
      values.push_back(rt::decodeElements(input.elementType, (*inputs)[index]));
    auto interpreter = ReferenceInterpreter::create(func);
    ASSERT_TRUE(static_cast<bool>(interpreter));
    auto all = (*interpreter)->evaluateAll(values);
    ASSERT_TRUE(static_cast<bool>(all)) << llvm::toString(all.takeError());

    ASSERT_EQ(reference->outputs.size(), 1u);
    const rt::OutputReference &out = reference->outputs[0];
    EXPECT_EQ(out.output, task.outputs[0].name);
    ASSERT_EQ(out.indices.size(), out.values.size());
    if (maxPoints >= 2400) {
      EXPECT_EQ(out.indices.size(), 2400u);
    } else {
      EXPECT_LE(out.indices.size(), maxPoints);
      EXPECT_GE(out.indices.size(), maxPoints / 2);
      EXPECT_EQ(out.indices.back(), 2399);
    }
    for (size_t i = 0; i < out.indices.size(); ++i)
      EXPECT_EQ(out.values[i], (*all)[0][out.indices[i]]) << out.indices[i];
  }
}

TEST(ReferenceBuilderTest, SetsSideBySideAreTheSetsOneByOne) {
  auto context = makeContext();
  auto module = parse(*context, kSmallGroup);
  ASSERT_TRUE(module);
  func::FuncOp func = firstFunction(*module);
  KernelTask task = buildTask(func);
  for (unsigned threads : {1u, 3u, 0u}) {
    auto sets = buildReferenceSets(func, task, /*seed=*/11, 5, 256, threads);
    ASSERT_EQ(sets.size(), 5u);
    for (unsigned set = 0; set < 5; ++set) {
      ASSERT_TRUE(static_cast<bool>(sets[set]))
          << llvm::toString(sets[set].takeError());
      auto alone = buildReferenceSet(func, task, 11, 256, set, 1);
      ASSERT_TRUE(static_cast<bool>(alone));
      EXPECT_EQ(sets[set]->inputSet, int64_t(set));
      EXPECT_EQ(*sets[set], *alone) << "set " << set;
    }
  }
  // At least set 0, and every set fails alike when the group cannot be
  // interpreted.
  auto one = buildReferenceSets(func, task, 11, 0);
  ASSERT_EQ(one.size(), 1u);
  ASSERT_TRUE(static_cast<bool>(one[0]));
  EXPECT_EQ(one[0]->inputSet, 0);
  task.inputs.pop_back();
  auto broken = buildReferenceSets(func, task, 11, 2);
  ASSERT_EQ(broken.size(), 2u);
  for (auto &set : broken) {
    ASSERT_FALSE(static_cast<bool>(set));
    EXPECT_NE(llvm::toString(set.takeError()).find("number of tensors"),
              std::string::npos);
  }
}

TEST(ReferenceBuilderTest, SamplesEveryPointOfSmallOutputs) {
  EXPECT_EQ(sampleOutputPoints(3, 4096, 1), (std::vector<int64_t>{0, 1, 2}));
  std::vector<int64_t> points = sampleOutputPoints(1 << 24, 4096, 1);
  EXPECT_LE(points.size(), 4096u);
  EXPECT_GE(points.size(), 4000u);
  EXPECT_EQ(points.front(), 0);
  EXPECT_EQ(points.back(), (1 << 24) - 1);
  EXPECT_TRUE(std::is_sorted(points.begin(), points.end()));
}

TEST(ReferenceBuilderTest, UnsupportedGroupIsAnError) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
func.func @gather(%x: tensor<8x8xf32>, %i: tensor<4x1xi32>) -> tensor<4x1x8xf32> {
  %g = tensor.gather %x[%i] gather_dims([0])
      : (tensor<8x8xf32>, tensor<4x1xi32>) -> tensor<4x1x8xf32>
  return %g : tensor<4x1x8xf32>
}
)mlir");
  ASSERT_TRUE(module);
  KernelTask task;
  task.name = "gather";
  task.inputs.push_back({"in0", ElementType::F32, {8, 8}});
  task.inputs.push_back({"in1", ElementType::I32, {4, 1}});
  task.outputs.push_back({"out0", ElementType::F32, {4, 1, 8}});
  auto reference = buildReferenceSet(firstFunction(*module), task, 0);
  ASSERT_FALSE(static_cast<bool>(reference));
  std::string message = llvm::toString(reference.takeError());
  EXPECT_NE(message.find("no fp64 reference for 'gather'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("tensor.gather"), std::string::npos) << message;
}

} // namespace
