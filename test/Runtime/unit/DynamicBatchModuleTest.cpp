//===- DynamicBatchModuleTest.cpp - Tests of dynamic-batch modules -*- C++ -*-//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Modules with a program per tuned batch size: the chunks a batch runs as,
// the file's round trip, the checks that the programs agree, the shapes at
// any batch size, the refusal of untuned sizes when the samples are not
// independent, and the C API's description of a file. No GPU needed.
//
//===----------------------------------------------------------------------===//

#include "kopt-c/Runtime.h"
#include "kopt/Runtime/BatchChunks.h"
#include "kopt/Runtime/RuntimeModule.h"

#include "gtest/gtest.h"

#include <cstdio>

using namespace kopt::runtime;

namespace {

TensorSpec f32(const std::string &name, std::vector<int64_t> shape) {
  return TensorSpec{name, ElementType::F32, std::move(shape)};
}

/// y = x * w at batch `batch`: x is [batch, 4] (batched), w [4] (a weight),
/// y [batch, 4].
ModuleProgram makeProgram(int64_t batch) {
  ModuleProgram program;
  program.batch = batch;
  program.buffers.push_back({f32("x", {batch, 4}), ModuleBuffer::Kind::Input});
  program.buffers.push_back({f32("w", {4}), ModuleBuffer::Kind::Input});
  program.buffers.push_back({f32("y", {batch, 4}), ModuleBuffer::Kind::Output});
  program.inputs = {"x", "w"};
  program.outputs = {"y"};
  ModulePlan plan;
  plan.key = "k" + std::to_string(batch);
  plan.function = "g0";
  plan.planName = "baseline/per-op";
  plan.inputs = {f32("in0", {batch, 4}), f32("in1", {4})};
  plan.outputs = {f32("out0", {batch, 4})};
  KernelPlan kernel;
  kernel.taskKey = plan.key;
  kernel.proposer = "baseline";
  kernel.variant = "per-op";
  kernel.sources.push_back(
      {"main", "extern \"C\" __global__ void f(const float *a, const float "
               "*b, float *c) {}"});
  PlanStep step;
  step.launch.source = "main";
  step.launch.entry = "f";
  step.launch.args = {"in0", "in1", "out0"};
  kernel.steps.push_back(step);
  plan.plan = kernel;
  plan.binaries.push_back({"main", "sm_90", "cubin of f", "ptx of f"});
  program.plans.push_back(plan);
  ModuleStep launch;
  launch.inputs = {"x", "w"};
  launch.outputs = {"y"};
  program.steps.push_back(launch);
  return program;
}

/// The module of batch sizes `sizes` (the first at the top).
RuntimeModule makeModule(std::vector<int64_t> sizes, bool independent) {
  RuntimeModule module;
  module.name = "scale";
  module.producer = "test";
  static_cast<ModuleProgram &>(module) = makeProgram(sizes.front());
  DynamicBatch dynamic;
  dynamic.independent = independent;
  dynamic.reason = independent ? "" : "'linalg.generic' reduces over the batch";
  dynamic.inputs = {"x"};
  dynamic.outputs = {"y"};
  module.dynamicBatch = dynamic;
  for (size_t i = 1; i < sizes.size(); ++i)
    module.specializations.push_back(makeProgram(sizes[i]));
  return module;
}

std::vector<BatchChunk> chunks(int64_t batch, std::vector<int64_t> sizes) {
  return planBatchChunks(batch, std::move(sizes));
}

TEST(BatchChunksTest, ATunedSizeRunsWhole) {
  EXPECT_EQ(chunks(8, {1, 8, 32}), (std::vector<BatchChunk>{{8, 0, 8}}));
  EXPECT_EQ(chunks(1, {1}), (std::vector<BatchChunk>{{1, 0, 1}}));
}

TEST(BatchChunksTest, GreedyLargestFirst) {
  EXPECT_EQ(chunks(13, {1, 8, 32}), (std::vector<BatchChunk>{{8, 0, 8},
                                                             {1, 8, 1},
                                                             {1, 9, 1},
                                                             {1, 10, 1},
                                                             {1, 11, 1},
                                                             {1, 12, 1}}));
  EXPECT_EQ(chunks(70, {32, 1, 8}), (std::vector<BatchChunk>{{32, 0, 32},
                                                             {32, 32, 32},
                                                             {1, 64, 1},
                                                             {1, 65, 1},
                                                             {1, 66, 1},
                                                             {1, 67, 1},
                                                             {1, 68, 1},
                                                             {1, 69, 1}}));
  EXPECT_EQ(chunks(3, {1}),
            (std::vector<BatchChunk>{{1, 0, 1}, {1, 1, 1}, {1, 2, 1}}));
}

TEST(BatchChunksTest, ARemainderRunsPaddedInTheSmallestSize) {
  EXPECT_EQ(chunks(3, {4, 8}), (std::vector<BatchChunk>{{4, 0, 3}}));
  EXPECT_EQ(chunks(11, {4, 8}),
            (std::vector<BatchChunk>{{8, 0, 8}, {4, 8, 3}}));
  EXPECT_EQ(chunks(13, {4, 8}),
            (std::vector<BatchChunk>{{8, 0, 8}, {4, 8, 4}, {4, 12, 1}}));
}

TEST(BatchChunksTest, NothingToRun) {
  EXPECT_TRUE(chunks(0, {1, 8}).empty());
  EXPECT_TRUE(chunks(-3, {1, 8}).empty());
  EXPECT_TRUE(chunks(5, {}).empty());
  EXPECT_TRUE(chunks(5, {0, -1}).empty());
  // Repeats count once.
  EXPECT_EQ(chunks(2, {1, 1}), (std::vector<BatchChunk>{{1, 0, 1}, {1, 1, 1}}));
}

TEST(DynamicBatchModuleTest, RoundTripsEveryProgram) {
  RuntimeModule module = makeModule({1, 4}, false);
  ASSERT_TRUE(module.verify().isOk()) << module.verify().message();
  std::string bytes = writeRuntimeModule(module);
  auto read = readRuntimeModule(bytes, "m.kmod");
  ASSERT_TRUE(bool(read)) << read.status().message();
  ASSERT_TRUE(read->dynamicBatch.has_value());
  EXPECT_FALSE(read->dynamicBatch->independent);
  EXPECT_EQ(read->dynamicBatch->reason,
            "'linalg.generic' reduces over the batch");
  EXPECT_EQ(read->dynamicBatch->inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(read->dynamicBatch->outputs, std::vector<std::string>{"y"});
  EXPECT_EQ(read->batch, 1);
  ASSERT_EQ(read->specializations.size(), 1u);
  EXPECT_EQ(read->specializations[0].batch, 4);
  EXPECT_EQ(read->specializations[0].findBuffer("x")->tensor.shape,
            (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(read->getBatchSizes(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(writeRuntimeModule(*read), bytes);
  // The programs' equal binaries are stored once.
  size_t first = bytes.find("cubin of f");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(bytes.find("cubin of f", first + 1), std::string::npos);
  EXPECT_EQ(read->specializations[0].plans[0].binaries[0].cubin, "cubin of f");
}

TEST(DynamicBatchModuleTest, AStaticModuleHasNoBatchFields) {
  RuntimeModule module = makeModule({2}, true);
  module.dynamicBatch.reset();
  module.batch = 0;
  ASSERT_TRUE(module.verify().isOk()) << module.verify().message();
  std::string bytes = writeRuntimeModule(module);
  EXPECT_EQ(bytes.find("\"batch\""), std::string::npos);
  EXPECT_EQ(bytes.find("specializations"), std::string::npos);
  EXPECT_EQ(bytes.find("dynamic_batch"), std::string::npos);
  auto read = readRuntimeModule(bytes, "m");
  ASSERT_TRUE(bool(read)) << read.status().message();
  EXPECT_TRUE(read->getBatchSizes().empty());
  EXPECT_FALSE(read->checkBatch(2).isOk());
  EXPECT_EQ(read->getTensorAtBatch("x", 7)->shape,
            (std::vector<int64_t>{2, 4}));
}

TEST(DynamicBatchModuleTest, ShapesAtAnyBatch) {
  RuntimeModule module = makeModule({2, 8}, true);
  ASSERT_TRUE(module.verify().isOk()) << module.verify().message();
  EXPECT_EQ(module.getTensorAtBatch("x", 13)->shape,
            (std::vector<int64_t>{13, 4}));
  EXPECT_EQ(module.getTensorAtBatch("y", 3)->getBytes(), 48);
  EXPECT_EQ(module.getTensorAtBatch("w", 13)->shape, (std::vector<int64_t>{4}));
  EXPECT_FALSE(module.getTensorAtBatch("nothing", 1));
  EXPECT_FALSE(module.getTensorAtBatch("x", 0));
  EXPECT_TRUE(module.isBatched("x"));
  EXPECT_FALSE(module.isBatched("w"));
  EXPECT_EQ(module.findProgram(8), &module.specializations[0]);
  EXPECT_EQ(module.findProgram(3), nullptr);
}

TEST(DynamicBatchModuleTest, OtherSizesRunOnlyWhenIndependent) {
  RuntimeModule independent = makeModule({1, 4, 8}, true);
  EXPECT_TRUE(independent.checkBatch(4).isOk());
  EXPECT_TRUE(independent.checkBatch(13).isOk());
  Status zero = independent.checkBatch(0);
  ASSERT_FALSE(zero.isOk());
  EXPECT_NE(zero.message().find("must be positive"), std::string::npos);

  RuntimeModule dependent = makeModule({1, 4, 8}, false);
  EXPECT_TRUE(dependent.checkBatch(8).isOk());
  Status status = dependent.checkBatch(3);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(),
            "batch 3: the module was tuned for batch 1, 4 and 8 only, and "
            "runs other sizes only when its samples are independent, which "
            "the compiler could not prove ('linalg.generic' reduces over the "
            "batch)");
}

TEST(DynamicBatchModuleTest, VerifyNamesDisagreeingPrograms) {
  auto expectProblem = [](const RuntimeModule &module,
                          const std::string &text) {
    Status status = module.verify();
    ASSERT_FALSE(status.isOk()) << "expected: " << text;
    EXPECT_NE(status.message().find(text), std::string::npos)
        << status.message();
  };
  RuntimeModule module = makeModule({1, 4}, true);
  module.specializations[0].batch = 1;
  expectProblem(module, "two programs for batch 1");
  module = makeModule({1, 4}, true);
  module.specializations[0].buffers[1].tensor.shape = {8};
  module.specializations[0].plans[0].inputs[1].shape = {8};
  expectProblem(module, "'w' does not carry the batch but differs in shape");
  module = makeModule({1, 4}, true);
  module.specializations[0].buffers[0].tensor.shape = {4, 5};
  module.specializations[0].plans[0].inputs[0].shape = {4, 5};
  expectProblem(module, "'x' carries the batch, but its shape does not scale");
  module = makeModule({1, 4}, true);
  module.dynamicBatch->inputs.push_back("z");
  expectProblem(module, "the batched input 'z' is not one of the module's");
  module = makeModule({1, 4}, true);
  module.specializations[0].inputs = {"w", "x"};
  expectProblem(module, "has other inputs or outputs than the first");
  module = makeModule({1, 4}, true);
  module.specializations[0].steps[0].inputs = {"x"};
  expectProblem(module, "the program of batch 4");
  module = makeModule({1, 4}, true);
  module.dynamicBatch.reset();
  expectProblem(module, "but no dynamic batch");
}

TEST(DynamicBatchModuleTest, ReadingRefusesSpecializationsOfAStaticModule) {
  RuntimeModule module = makeModule({1, 4}, true);
  std::string bytes = writeRuntimeModule(module);
  size_t at = bytes.find("\"dynamic_batch\"");
  ASSERT_NE(at, std::string::npos);
  // Same length: the header's size is unchanged.
  bytes.replace(at, 15, "\"dynamic_xxxxx\"");
  auto read = readRuntimeModule(bytes, "m");
  ASSERT_FALSE(bool(read));
  EXPECT_NE(read.status().message().find("specializations without a "
                                         "dynamic_batch"),
            std::string::npos)
      << read.status().message();
}

TEST(DynamicBatchModuleTest, CApiDescribesTheBatchOfAFile) {
  std::string path = ::testing::TempDir() + "dynamic-batch.kmod";
  ASSERT_TRUE(saveRuntimeModule(makeModule({2, 8}, false), path).isOk());
  KoptModuleFile *file = nullptr;
  ASSERT_EQ(koptModuleFileOpen(path.c_str(), &file), KOPT_OK)
      << koptGetLastError();
  KoptBatchInfo info;
  ASSERT_EQ(koptModuleFileGetBatchInfo(file, &info), KOPT_OK);
  EXPECT_EQ(info.dynamic, 1);
  EXPECT_EQ(info.independent, 0);
  EXPECT_EQ(info.batch, 2);
  ASSERT_EQ(info.numSizes, 2u);
  EXPECT_EQ(info.sizes[0], 2);
  EXPECT_EQ(info.sizes[1], 8);
  ASSERT_EQ(info.numBatchedInputs, 1u);
  EXPECT_STREQ(info.batchedInputs[0], "x");
  ASSERT_EQ(info.numBatchedOutputs, 1u);
  EXPECT_STREQ(info.batchedOutputs[0], "y");
  EXPECT_STREQ(info.reason, "'linalg.generic' reduces over the batch");
  KoptTensorInfo tensor;
  ASSERT_EQ(koptModuleFileGetInputInfo(file, 0, &tensor), KOPT_OK);
  EXPECT_EQ(tensor.shape[0], 2);
  EXPECT_EQ(koptModuleFileGetBatchInfo(file, nullptr), KOPT_INVALID_ARGUMENT);
  koptModuleFileClose(file);

  // A static module says it is static.
  RuntimeModule fixed = makeModule({2}, true);
  fixed.dynamicBatch.reset();
  fixed.batch = 0;
  ASSERT_TRUE(saveRuntimeModule(fixed, path).isOk());
  ASSERT_EQ(koptModuleFileOpen(path.c_str(), &file), KOPT_OK);
  ASSERT_EQ(koptModuleFileGetBatchInfo(file, &info), KOPT_OK);
  EXPECT_EQ(info.dynamic, 0);
  EXPECT_EQ(info.numSizes, 0u);
  EXPECT_STREQ(info.reason, "");
  koptModuleFileClose(file);
  std::remove(path.c_str());
}

} // namespace
