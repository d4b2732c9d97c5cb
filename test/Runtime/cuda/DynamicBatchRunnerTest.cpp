//===- DynamicBatchRunnerTest.cpp - Dynamic batches on a GPU ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A hand-written module with a dynamic batch (y = x + w, a program for batch
// 2 and one for batch 4) run through ModuleRunner and the C API at tuned
// sizes and others (chunks, a padded last chunk), stepwise and through a
// CUDA graph, on the module's buffers and on the caller's; and a module
// whose samples are not independent refusing untuned sizes. Skips without a
// CUDA driver, fails instead under KOPT_REQUIRE_GPU=1.
//
//===----------------------------------------------------------------------===//

#include "kopt-c/Runtime.h"
#include "kopt/Runtime/ModuleRunner.h"

#include "GpuTestFixture.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using namespace kopt::runtime;

namespace {

/// y[i] = x[i] + w[i % 4].
const char *kAddRowSource =
    "extern \"C\" __global__ void add_row(const float *x, const float *w, "
    "float *y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = x[i] + w[i % 4];\n"
    "}\n";

TensorSpec f32(const std::string &name, std::vector<int64_t> shape) {
  return TensorSpec{name, ElementType::F32, std::move(shape)};
}

/// The program of y = x + w at `batch`: x and y are [batch, 4], w is [4].
ModuleProgram makeProgram(int64_t batch) {
  ModuleProgram program;
  program.batch = batch;
  program.buffers.push_back({f32("x", {batch, 4}), ModuleBuffer::Kind::Input});
  program.buffers.push_back({f32("w", {4}), ModuleBuffer::Kind::Input});
  program.buffers.push_back({f32("y", {batch, 4}), ModuleBuffer::Kind::Output});
  program.inputs = {"x", "w"};
  program.outputs = {"y"};
  ModulePlan plan;
  plan.key = "add_row" + std::to_string(batch);
  plan.function = "add_row";
  plan.inputs = {f32("in0", {batch, 4}), f32("in1", {4})};
  plan.outputs = {f32("out0", {batch, 4})};
  KernelPlan kernel;
  kernel.taskKey = plan.key;
  kernel.proposer = "baseline";
  kernel.variant = "add_row";
  kernel.sources.push_back({"main", kAddRowSource});
  PlanStep step;
  step.launch.source = "main";
  step.launch.entry = "add_row";
  step.launch.grid = {"cdiv(numel(out0), 128)", "1", "1"};
  step.launch.block = {"128", "1", "1"};
  step.launch.args = {"in0", "in1", "out0", "i32:" + std::to_string(batch * 4)};
  kernel.steps.push_back(step);
  plan.plan = kernel;
  program.plans.push_back(plan);
  program.steps.push_back({ModuleStep::Kind::Plan, 0, {"x", "w"}, {"y"}});
  return program;
}

RuntimeModule makeModule(bool independent) {
  RuntimeModule module;
  module.name = "add_row";
  static_cast<ModuleProgram &>(module) = makeProgram(2);
  DynamicBatch dynamic;
  dynamic.independent = independent;
  dynamic.reason = independent ? "" : "a test says so";
  dynamic.inputs = {"x"};
  dynamic.outputs = {"y"};
  module.dynamicBatch = dynamic;
  module.specializations.push_back(makeProgram(4));
  return module;
}

std::string floats(const std::vector<float> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(float));
}

std::vector<float> toFloats(const std::string &bytes) {
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

const std::vector<float> kWeights = {100, 200, 300, 400};

std::vector<float> inputOf(int64_t batch) {
  std::vector<float> x(size_t(batch * 4));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i) + 0.5f;
  return x;
}

class DynamicBatchRunnerTest : public gputest::WithCudaContext<> {
protected:
  /// Runs `runner` at `batch` on its own buffers and checks y.
  void runAndCheck(ModuleRunner &runner, int64_t batch) {
    Status set = runner.setBatch(batch);
    ASSERT_TRUE(set.isOk()) << set.message();
    EXPECT_EQ(runner.getBatch(), batch);
    EXPECT_EQ(runner.getTensor("x")->shape, (std::vector<int64_t>{batch, 4}));
    std::string w = floats(kWeights);
    ASSERT_TRUE(runner.setInput("w", w.data(), w.size()).isOk());
    std::vector<float> x = inputOf(batch);
    std::string bytes = floats(x);
    Status input = runner.setInput("x", bytes.data(), bytes.size());
    ASSERT_TRUE(input.isOk()) << input.message();
    Status status = runner.run();
    ASSERT_TRUE(status.isOk()) << status.message();
    auto out = runner.readBuffer("y");
    ASSERT_TRUE(bool(out)) << out.status().message();
    std::vector<float> y = toFloats(*out);
    ASSERT_EQ(y.size(), x.size());
    for (size_t i = 0; i < y.size(); ++i)
      EXPECT_EQ(y[i], x[i] + kWeights[i % 4]) << "batch " << batch << ", " << i;
  }
};

TEST_F(DynamicBatchRunnerTest, RunsTunedSizesAndChunks) {
  auto runner = ModuleRunner::create(*context, makeModule(true));
  ASSERT_TRUE(bool(runner)) << runner.status().message();
  EXPECT_EQ((*runner)->getBatch(), 2);
  for (int64_t batch : {2, 4, 1, 3, 8, 7, 2}) {
    runAndCheck(**runner, batch);
    size_t chunks = (*runner)->getChunks().size();
    EXPECT_EQ(chunks, batch == 7                 ? 3u
                      : batch == 8 || batch == 3 ? 2u
                                                 : 1u)
        << batch;
  }
  (*runner)->setUseGraph(true);
  for (int64_t batch : {7, 4, 1, 7})
    runAndCheck(**runner, batch);
}

TEST_F(DynamicBatchRunnerTest, ChunksRunOnTheCallersBuffers) {
  auto runner = ModuleRunner::create(*context, makeModule(true));
  ASSERT_TRUE(bool(runner)) << runner.status().message();
  const CudaDriver &api = context->getDriver();
  for (bool graph : {false, true}) {
    (*runner)->setUseGraph(graph);
    for (int64_t batch : {5, 4}) {
      ASSERT_TRUE((*runner)->setBatch(batch).isOk());
      std::vector<float> x = inputOf(batch);
      auto xs = DeviceBuffer::allocate(*context, int64_t(x.size() * 4));
      auto ys = DeviceBuffer::allocate(*context, int64_t(x.size() * 4));
      auto ws = DeviceBuffer::allocate(*context, 16);
      ASSERT_TRUE(bool(xs) && bool(ys) && bool(ws));
      ASSERT_EQ(api.cuMemcpyHtoD(xs->get(), x.data(), x.size() * 4),
                CUDA_SUCCESS);
      ASSERT_EQ(api.cuMemcpyHtoD(ws->get(), kWeights.data(), 16), CUDA_SUCCESS);
      ASSERT_TRUE((*runner)->bindBuffer("x", xs->get()).isOk());
      ASSERT_TRUE((*runner)->bindBuffer("y", ys->get()).isOk());
      ASSERT_TRUE((*runner)->bindBuffer("w", ws->get()).isOk());
      EXPECT_EQ((*runner)->getDevicePointer("y"), ys->get());
      Status status = (*runner)->run();
      ASSERT_TRUE(status.isOk()) << status.message();
      std::vector<float> y(x.size());
      ASSERT_EQ(api.cuMemcpyDtoH(y.data(), ys->get(), y.size() * 4),
                CUDA_SUCCESS);
      for (size_t i = 0; i < y.size(); ++i)
        EXPECT_EQ(y[i], x[i] + kWeights[i % 4]) << "batch " << batch;
      // A new size forgets the batched bindings, not the weights'.
      ASSERT_TRUE((*runner)->setBatch(batch == 5 ? 4 : 5).isOk());
      EXPECT_NE((*runner)->getDevicePointer("x"), xs->get());
      EXPECT_EQ((*runner)->getDevicePointer("w"), ws->get());
      ASSERT_TRUE((*runner)->bindBuffer("w", 0).isOk());
    }
  }
}

TEST_F(DynamicBatchRunnerTest, RefusesUntunedSizesOfDependentSamples) {
  auto runner = ModuleRunner::create(*context, makeModule(false));
  ASSERT_TRUE(bool(runner)) << runner.status().message();
  runAndCheck(**runner, 4);
  Status status = (*runner)->setBatch(3);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("tuned for batch 2 and 4 only"),
            std::string::npos)
      << status.message();
  EXPECT_EQ((*runner)->getBatch(), 4);
  std::string short3 = floats(inputOf(3));
  EXPECT_FALSE((*runner)->setInput("x", short3.data(), short3.size()).isOk());
}

TEST_F(DynamicBatchRunnerTest, CApiSetsTheBatch) {
  char path[] = "/tmp/kopt-dynamic-batch-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_TRUE(saveRuntimeModule(makeModule(true), path).isOk());
  KoptDevice *device = nullptr;
  ASSERT_EQ(koptDeviceCreate(0, &device), KOPT_OK) << koptGetLastError();
  KoptModule *module = nullptr;
  ASSERT_EQ(koptModuleLoad(device, path, nullptr, &module), KOPT_OK)
      << koptGetLastError();
  std::remove(path);
  KoptBatchInfo batch;
  ASSERT_EQ(koptModuleGetBatchInfo(module, &batch), KOPT_OK);
  EXPECT_EQ(batch.dynamic, 1);
  EXPECT_EQ(batch.independent, 1);
  EXPECT_EQ(batch.batch, 2);
  ASSERT_EQ(batch.numSizes, 2u);
  EXPECT_EQ(batch.sizes[1], 4);
  EXPECT_EQ(koptModuleSetBatch(module, 0), KOPT_INVALID_ARGUMENT);
  ASSERT_EQ(koptModuleSetBatch(module, 3), KOPT_OK) << koptGetLastError();
  ASSERT_EQ(koptModuleGetBatchInfo(module, &batch), KOPT_OK);
  EXPECT_EQ(batch.batch, 3);
  KoptTensorInfo info;
  ASSERT_EQ(koptModuleGetInputInfo(module, 0, &info), KOPT_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.shape[0], 3);
  EXPECT_EQ(info.bytes, 48u);
  ASSERT_EQ(koptModuleGetOutputInfo(module, 0, &info), KOPT_OK);
  EXPECT_EQ(info.bytes, 48u);
  std::vector<float> x = inputOf(3);
  ASSERT_EQ(koptModuleSetInput(module, "x", x.data(), x.size() * 4), KOPT_OK)
      << koptGetLastError();
  ASSERT_EQ(koptModuleSetInput(module, "w", kWeights.data(), 16), KOPT_OK);
  ASSERT_EQ(koptModuleRun(module, nullptr), KOPT_OK) << koptGetLastError();
  std::vector<float> y(x.size());
  ASSERT_EQ(koptModuleGetOutput(module, "y", y.data(), y.size() * 4), KOPT_OK)
      << koptGetLastError();
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_EQ(y[i], x[i] + kWeights[i % 4]);
  koptModuleDestroy(module);
  koptDeviceDestroy(device);
}

} // namespace
