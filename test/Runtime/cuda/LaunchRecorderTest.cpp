//===- LaunchRecorderTest.cpp - CUPTI launch recording ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The launch recorder on a real device: a plan's kernels appear with their
// names, stream, grid and block; an extra kernel on a side stream is caught.
// Skips without a CUDA driver or without CUPTI; KOPT_REQUIRE_GPU=1 makes
// either a failure.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Cuda/Cupti.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"
#include "kopt/Runtime/Cuda/PlanRunner.h"
#include "kopt/Runtime/Cuda/TensorData.h"

#include "GpuTestFixture.h"

#include "gtest/gtest.h"

#include <cstdlib>

using namespace kopt::runtime;

namespace {

const char *kSource = R"(
extern "C" __global__ void scale(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" __global__ void shift(const float *y, float *z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = y[i] + 1.0f;
}
)";

class LaunchRecorderTest : public gputest::WithCudaContext<> {
protected:
  void SetUp() override {
    WithCudaContext::SetUp();
    if (!context)
      return;
    auto recorderOr = LaunchRecorder::create();
    if (!recorderOr) {
      if (gputest::isGpuRequired() ||
          recorderOr.status().code() != StatusCode::Unavailable)
        FAIL() << recorderOr.status().message();
      GTEST_SKIP() << recorderOr.status().message();
    }
    recorder = std::move(*recorderOr);

    task.name = "scale_shift";
    task.kind = "elementwise";
    task.inputs = {TensorSpec{"in0", ElementType::F32, {4096}}};
    task.outputs = {TensorSpec{"out0", ElementType::F32, {4096}}};
    plan.proposer = "llm";
    plan.variant = "test";
    plan.temporaries = {TensorSpec{"tmp0", ElementType::F32, {4096}}};
    plan.sources = {KernelSource{"main", kSource}};
    for (const char *entry : {"scale", "shift"}) {
      PlanStep step;
      step.launch.source = "main";
      step.launch.entry = entry;
      step.launch.grid = {"cdiv(numel(out0), 128)", "1", "1"};
      step.launch.block = {"128", "1", "1"};
      if (std::string(entry) == "scale")
        step.launch.args = {"in0", "tmp0", "i32:4096"};
      else
        step.launch.args = {"tmp0", "out0", "i32:4096"};
      plan.steps.push_back(step);
    }
  }

  std::unique_ptr<LaunchRecorder> recorder;
  KernelTask task;
  KernelPlan plan;
};

TEST_F(LaunchRecorderTest, RecordsThePlansKernels) {
  auto runner = PlanRunner::create(*context, task, plan);
  ASSERT_TRUE(bool(runner)) << runner.status().message();
  ASSERT_TRUE(
      (*runner)->setInputs({makeRandomTensorData(task.inputs[0], 1)}).isOk());
  ASSERT_TRUE((*runner)->run().isOk());

  auto record = recordLaunches(*recorder, [&] { return (*runner)->run(); });
  ASSERT_TRUE(bool(record)) << record.status().message();
  ASSERT_EQ(record->size(), 2u);
  EXPECT_EQ((*record)[0].name, "scale");
  EXPECT_EQ((*record)[1].name, "shift");
  EXPECT_EQ((*record)[0].grid[0], 32);
  EXPECT_EQ((*record)[0].block[0], 128);
  EXPECT_LE((*record)[0].startNs, (*record)[0].endNs);
  EXPECT_LE((*record)[0].endNs, (*record)[1].startNs);

  auto streamId = getCuptiStreamId(context->getStream());
  ASSERT_TRUE(bool(streamId)) << streamId.status().message();
  EXPECT_EQ((*record)[0].streamId, *streamId);
  LaunchCheckOptions options;
  options.streamId = *streamId;
  LaunchCheck check = checkPlanLaunches(plan, *record, options);
  EXPECT_TRUE(check.ok) << check.message;

  // Two runs in one record.
  auto twice = recordLaunches(*recorder, [&] {
    Status first = (*runner)->run();
    return first.isOk() ? (*runner)->run() : first;
  });
  ASSERT_TRUE(bool(twice)) << twice.status().message();
  options.runs = 2;
  EXPECT_TRUE(checkPlanLaunches(plan, *twice, options).ok);
  options.runs = 1;
  EXPECT_FALSE(checkPlanLaunches(plan, *twice, options).ok);
}

TEST_F(LaunchRecorderTest, CatchesAnExtraKernelOnASideStream) {
  auto runner = PlanRunner::create(*context, task, plan);
  ASSERT_TRUE(bool(runner)) << runner.status().message();
  ASSERT_TRUE(
      (*runner)->setInputs({makeRandomTensorData(task.inputs[0], 2)}).isOk());

  // The same module's `scale`, loaded and launched behind the runner's back
  // on a stream of its own.
  const CudaDriver &driver = context->getDriver();
  auto compiled =
      compileCuda(kSource, "side.cu", context->getDeviceInfo().getArch());
  ASSERT_TRUE(bool(compiled)) << compiled.status().message();
  CUmodule module = nullptr;
  ASSERT_TRUE(
      driver
          .check(driver.cuModuleLoadData(&module, compiled->cubin.data()),
                 "cuModuleLoadData")
          .isOk());
  CUfunction function = nullptr;
  ASSERT_TRUE(driver
                  .check(driver.cuModuleGetFunction(&function, module, "scale"),
                         "cuModuleGetFunction")
                  .isOk());
  CUstream side = nullptr;
  ASSERT_TRUE(driver
                  .check(driver.cuStreamCreate(&side, CU_STREAM_NON_BLOCKING),
                         "cuStreamCreate")
                  .isOk());
  CUdeviceptr x = (*runner)->getDevicePointer("in0");
  CUdeviceptr y = (*runner)->getDevicePointer("tmp0");
  int n = 4096;
  void *args[] = {&x, &y, &n};

  auto record = recordLaunches(*recorder, [&]() -> Status {
    Status ran = (*runner)->run();
    if (!ran.isOk())
      return ran;
    Status launched =
        driver.check(driver.cuLaunchKernel(function, 32, 1, 1, 128, 1, 1, 0,
                                           side, args, nullptr),
                     "cuLaunchKernel");
    if (!launched.isOk())
      return launched;
    return driver.check(driver.cuCtxSynchronize(), "cuCtxSynchronize");
  });
  ASSERT_TRUE(bool(record)) << record.status().message();
  EXPECT_EQ(record->size(), 3u);

  auto streamId = getCuptiStreamId(context->getStream());
  ASSERT_TRUE(bool(streamId)) << streamId.status().message();
  LaunchCheckOptions options;
  options.streamId = *streamId;
  LaunchCheck check = checkPlanLaunches(plan, *record, options);
  EXPECT_FALSE(check.ok);
  EXPECT_NE(check.message.find("entry 'scale' ran 2 times"), std::string::npos)
      << check.message;
  EXPECT_NE(check.message.find("not on the plan's stream"), std::string::npos)
      << check.message;
  EXPECT_EQ(check.evidence.find("unexpected")->size(), 1u);

  // Without the stream check the count alone still catches it.
  EXPECT_FALSE(checkPlanLaunches(plan, *record).ok);

  driver.check(driver.cuStreamDestroy(side), "cuStreamDestroy").ignore();
  driver.check(driver.cuModuleUnload(module), "cuModuleUnload").ignore();
}

TEST_F(LaunchRecorderTest, OnlyOneRecorderAtATime) {
  auto second = LaunchRecorder::create();
  EXPECT_FALSE(bool(second));
  EXPECT_EQ(second.status().code(), StatusCode::InvalidArgument);
}

} // namespace
