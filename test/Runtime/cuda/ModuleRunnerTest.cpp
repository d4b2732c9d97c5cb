//===- ModuleRunnerTest.cpp - Runtime modules on a GPU ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A hand-written module (a constant, a reshaped view, a copy, one plan used
// twice) run through ModuleRunner and the C API: its outputs against loops
// on the CPU, with code from a cubin, from PTX and from NVRTC, stepwise and
// through a CUDA graph, on the module's buffers and on the caller's. Skips
// without a CUDA driver, fails instead under KOPT_REQUIRE_GPU=1.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/ModuleRunner.h"
#include "kopt-c/Runtime.h"
#include "kopt/Runtime/Cuda/BoundPlan.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"

#include "GpuTestFixture.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using namespace kopt::runtime;

namespace {

const char *kAddSource = "extern \"C\" __global__ void add(const float *a, "
                         "const float *b, float *c, int n) {\n"
                         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "  if (i < n) c[i] = a[i] + b[i];\n"
                         "}\n";

TensorSpec f32(const std::string &name, std::vector<int64_t> shape) {
  return TensorSpec{name, ElementType::F32, std::move(shape)};
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

/// t = x + c; y = t + t (the same plan again); flat = copy of y viewed as
/// [8]. With `binaries` for the plan's one source.
RuntimeModule makeModule(std::vector<SourceBinary> binaries) {
  RuntimeModule module;
  module.name = "add_twice";
  module.buffers.push_back({f32("x", {2, 4}), ModuleBuffer::Kind::Input});
  ModuleBuffer constant{f32("c", {2, 4}), ModuleBuffer::Kind::Constant};
  constant.data = floats({1, 2, 3, 4, 5, 6, 7, 8});
  module.buffers.push_back(constant);
  module.buffers.push_back({f32("t", {2, 4}), ModuleBuffer::Kind::Temporary});
  module.buffers.push_back({f32("y", {2, 4}), ModuleBuffer::Kind::Output});
  ModuleBuffer view{f32("view", {8}), ModuleBuffer::Kind::Alias};
  view.aliasOf = "y";
  module.buffers.push_back(view);
  module.buffers.push_back({f32("flat", {8}), ModuleBuffer::Kind::Output});
  module.inputs = {"x"};
  module.outputs = {"y", "flat"};
  ModulePlan plan;
  plan.key = "add";
  plan.function = "add";
  plan.inputs = {f32("in0", {2, 4}), f32("in1", {2, 4})};
  plan.outputs = {f32("out0", {2, 4})};
  KernelPlan kernel;
  kernel.taskKey = "add";
  kernel.proposer = "baseline";
  kernel.variant = "add";
  kernel.sources.push_back({"main", kAddSource});
  PlanStep step;
  step.launch.source = "main";
  step.launch.entry = "add";
  step.launch.grid = {"cdiv(numel(out0), 128)", "1", "1"};
  step.launch.block = {"128", "1", "1"};
  step.launch.args = {"in0", "in1", "out0", "i32:8"};
  kernel.steps.push_back(step);
  plan.plan = kernel;
  plan.binaries = std::move(binaries);
  module.plans.push_back(plan);
  module.steps.push_back({ModuleStep::Kind::Plan, 0, {"x", "c"}, {"t"}});
  module.steps.push_back({ModuleStep::Kind::Plan, 0, {"t", "t"}, {"y"}});
  ModuleStep copy;
  copy.kind = ModuleStep::Kind::Copy;
  copy.from = "view";
  copy.to = "flat";
  module.steps.push_back(copy);
  return module;
}

class ModuleRunnerTest : public gputest::WithCudaContext<> {
protected:
  /// Runs the module on x = 0.5, 1.5, ... and checks both outputs.
  void runAndCheck(ModuleRunner &runner) {
    std::vector<float> x = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f};
    std::string bytes = floats(x);
    ASSERT_TRUE(runner.setInput("x", bytes.data(), bytes.size()).isOk());
    Status status = runner.run();
    ASSERT_TRUE(status.isOk()) << status.message();
    for (const char *name : {"y", "flat"}) {
      auto out = runner.readBuffer(name);
      ASSERT_TRUE(bool(out)) << out.status().message();
      std::vector<float> values = toFloats(*out);
      for (int i = 0; i < 8; ++i)
        EXPECT_EQ(values[i], 2 * (x[i] + float(i + 1))) << name << i;
    }
  }
};

TEST_F(ModuleRunnerTest, RunsFromCubinPtxAndSource) {
  std::string arch = context->getDeviceInfo().getArch();
  auto compiled = compileCuda(kAddSource, "main.cu", arch);
  ASSERT_TRUE(bool(compiled)) << compiled.status().message();
  struct Case {
    std::vector<SourceBinary> binaries;
    const char *note;
  } cases[] = {
      {{{"main", arch, compiled->cubin, compiled->ptx}}, "cubin for"},
      {{{"main", arch, "", compiled->ptx}}, "JIT-compiled by the driver"},
      {{}, "compiled from source with NVRTC"},
  };
  for (const Case &c : cases) {
    auto runner = ModuleRunner::create(*context, makeModule(c.binaries));
    ASSERT_TRUE(bool(runner)) << runner.status().message();
    ASSERT_FALSE((*runner)->getLoadNotes().empty());
    EXPECT_NE((*runner)->getLoadNotes().front().find(c.note), std::string::npos)
        << (*runner)->getLoadNotes().front();
    EXPECT_EQ((*runner)->getNumLaunches(), 3u);
    runAndCheck(**runner);
  }
}

TEST_F(ModuleRunnerTest, GraphsAndCallerBuffers) {
  auto runner = ModuleRunner::create(*context, makeModule({}));
  ASSERT_TRUE(bool(runner)) << runner.status().message();
  (*runner)->setUseGraph(true);
  runAndCheck(**runner);
  runAndCheck(**runner);
  // The caller's own output buffer; the graph is captured again.
  auto mine = DeviceBuffer::allocate(*context, 32);
  ASSERT_TRUE(bool(mine));
  ASSERT_TRUE((*runner)->bindBuffer("flat", mine->get()).isOk());
  EXPECT_EQ((*runner)->getDevicePointer("flat"), mine->get());
  runAndCheck(**runner);
  EXPECT_FALSE((*runner)->bindBuffer("t", mine->get()).isOk());
}

TEST_F(ModuleRunnerTest, CApiRunsAModuleFile) {
  char path[] = "/tmp/kopt-module-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_TRUE(saveRuntimeModule(makeModule({}), path).isOk());
  KoptDevice *device = nullptr;
  ASSERT_EQ(koptDeviceCreate(0, &device), KOPT_OK) << koptGetLastError();
  KoptModule *module = nullptr;
  ASSERT_EQ(koptModuleLoad(device, path, nullptr, &module), KOPT_OK)
      << koptGetLastError();
  std::remove(path);
  size_t outputs = 0;
  ASSERT_EQ(koptModuleGetNumOutputs(module, &outputs), KOPT_OK);
  EXPECT_EQ(outputs, 2u);
  KoptTensorInfo info;
  ASSERT_EQ(koptModuleGetInputInfo(module, 0, &info), KOPT_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.bytes, 32u);
  EXPECT_EQ(koptModuleGetInputInfo(module, 1, &info), KOPT_OUT_OF_RANGE);
  float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(koptModuleSetInput(module, "x", x, 31), KOPT_INVALID_ARGUMENT);
  ASSERT_EQ(koptModuleSetInput(module, "x", x, sizeof(x)), KOPT_OK);
  ASSERT_EQ(koptModuleSetGraphCapture(module, 1), KOPT_OK);
  void *stream = nullptr;
  ASSERT_EQ(koptDeviceGetStream(device, &stream), KOPT_OK);
  ASSERT_EQ(koptModuleRun(module, stream), KOPT_OK) << koptGetLastError();
  float y[8];
  ASSERT_EQ(koptModuleGetOutput(module, "flat", y, sizeof(y)), KOPT_OK);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(y[i], 2 * (x[i] + float(i + 1)));
  koptModuleDestroy(module);
  koptDeviceDestroy(device);
}

TEST_F(ModuleRunnerTest, BoundPlanLaunchesOnCallerPointers) {
  KernelTask task;
  task.inputs = {f32("in0", {8}), f32("in1", {8})};
  task.outputs = {f32("out0", {8})};
  KernelPlan plan = *makeModule({}).plans[0].plan;
  for (PlanStep &step : plan.steps)
    step.launch.grid = {"1", "1", "1"};
  auto bound = BoundPlan::create(*context, task, plan, {});
  ASSERT_TRUE(bool(bound)) << bound.status().message();
  EXPECT_FALSE((*bound)->enqueue(context->getStream()).isOk());
  auto a = DeviceBuffer::allocate(*context, 32);
  auto c = DeviceBuffer::allocate(*context, 32);
  ASSERT_TRUE(bool(a) && bool(c));
  std::string ones = floats(std::vector<float>(8, 1.0f));
  const CudaDriver &api = context->getDriver();
  ASSERT_EQ(api.cuMemcpyHtoD(a->get(), ones.data(), 32), CUDA_SUCCESS);
  EXPECT_FALSE((*bound)->bind({{"in0", a->get()}}).isOk());
  ASSERT_TRUE(
      (*bound)
          ->bind({{"in0", a->get()}, {"in1", a->get()}, {"out0", c->get()}})
          .isOk());
  ASSERT_TRUE((*bound)->enqueue(context->getStream()).isOk());
  ASSERT_EQ(api.cuStreamSynchronize(context->getStream()), CUDA_SUCCESS);
  float out[8];
  ASSERT_EQ(api.cuMemcpyDtoH(out, c->get(), 32), CUDA_SUCCESS);
  for (float value : out)
    EXPECT_EQ(value, 2.0f);
}

} // namespace
