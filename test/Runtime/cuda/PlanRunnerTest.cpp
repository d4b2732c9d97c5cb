//===- PlanRunnerTest.cpp - Tests of running plans on a GPU -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Hand-written tasks and plans (kernel launches, a cuBLASLt GEMM with an
// epilogue, cuDNN convolutions) run on the GPU and compared with loops on
// the CPU. Without a CUDA driver every test skips; with KOPT_REQUIRE_GPU=1
// in the environment (as scripts/gpu-check sets it) a missing driver or
// device fails them instead, so a broken GPU machine cannot pass by
// skipping.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/PlanRunner.h"
#include "kopt/Runtime/Cuda/CublasLt.h"
#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Cuda/FlushedTimer.h"
#include "kopt/Runtime/Cuda/TensorData.h"

#include "GpuTestFixture.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace kopt::runtime;

namespace {

class PlanRunnerTest : public gputest::WithCudaContext<> {
protected:
  /// Runs `plan` on `inputs` and returns the decoded outputs; fails the test
  /// on any error.
  std::vector<std::vector<double>>
  runAndDecode(const KernelTask &task, const KernelPlan &plan,
               const std::vector<std::vector<uint8_t>> &inputs) {
    PlanRunnerOptions options;
    options.warningsAsErrors = true;
    auto outputs = runPlan(*context, task, plan, inputs, options);
    EXPECT_TRUE(bool(outputs)) << outputs.status().message();
    std::vector<std::vector<double>> decoded;
    if (!outputs)
      return decoded;
    for (size_t i = 0; i < task.outputs.size() && i < outputs->size(); ++i)
      decoded.push_back(
          decodeTensorData(task.outputs[i].elementType, (*outputs)[i]));
    return decoded;
  }
};

TensorSpec f32(const std::string &name, std::vector<int64_t> shape) {
  return TensorSpec{name, ElementType::F32, std::move(shape)};
}

std::vector<double> randomValues(const TensorSpec &tensor, uint64_t seed) {
  return decodeTensorData(tensor.elementType,
                          makeRandomTensorData(tensor, seed));
}

/// Expects `actual` within `relative` * (|reference| + `scale`) of
/// `reference`, elementwise, and reports the first mismatches.
void expectClose(const std::vector<double> &actual,
                 const std::vector<double> &reference, double relative,
                 double scale = 1.0) {
  ASSERT_EQ(actual.size(), reference.size());
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double bound = relative * (std::fabs(reference[i]) + scale);
    if (!(std::fabs(actual[i] - reference[i]) <= bound) && reported++ < 5)
      ADD_FAILURE() << "element " << i << ": " << actual[i] << " vs "
                    << reference[i];
  }
}

//===----------------------------------------------------------------------===//
// Kernel launches
//===----------------------------------------------------------------------===//

constexpr const char *kAxpy = R"cuda(
extern "C" __global__ void axpy(const float *x, const float *y, float *z,
                                float alpha, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n)
    z[i] = x[i] + alpha * y[i];
}
)cuda";

KernelTask makeAxpyTask(int64_t n) {
  KernelTask task;
  task.key = "axpy";
  task.name = "axpy";
  task.inputs = {f32("x", {n}), f32("y", {n})};
  task.outputs = {f32("z", {n})};
  return task;
}

KernelPlan makeAxpyPlan() {
  KernelPlan plan;
  plan.taskKey = "axpy";
  plan.proposer = "builtin";
  plan.sources = {{"axpy", kAxpy}};
  PlanStep step;
  step.comment = "z = x + 0.5 y";
  step.launch.source = "axpy";
  step.launch.entry = "axpy";
  step.launch.grid = {"cdiv(numel(z), 256)", "1", "1"};
  step.launch.block = {"256", "1", "1"};
  step.launch.args = {"x", "y", "z", "f32:0.5", "i64:1000"};
  plan.steps = {step};
  return plan;
}

TEST_F(PlanRunnerTest, RunsVectorKernelWithScalarArguments) {
  KernelTask task = makeAxpyTask(1000);
  KernelPlan plan = makeAxpyPlan();
  std::vector<double> x = randomValues(task.inputs[0], 1);
  std::vector<double> y = randomValues(task.inputs[1], 2);
  auto outputs = runAndDecode(task, plan,
                              {encodeTensorData(ElementType::F32, x),
                               encodeTensorData(ElementType::F32, y)});
  ASSERT_EQ(outputs.size(), 1u);
  std::vector<double> expected(1000);
  for (size_t i = 0; i < 1000; ++i)
    expected[i] = double(float(x[i]) + 0.5f * float(y[i]));
  // Scaling by 0.5 is exact, so fused or not, the sum rounds once.
  EXPECT_EQ(outputs[0], expected);
}

TEST_F(PlanRunnerTest, LeavesUnwrittenOutputsPoisoned) {
  // The kernel covers only the first 512 of 1000 elements: the rest must
  // read back as the 0xff pattern, not as zeros a test could mistake for
  // results.
  KernelTask task = makeAxpyTask(1000);
  KernelPlan plan = makeAxpyPlan();
  plan.steps[0].launch.args.back() = "i64:512";
  std::vector<uint8_t> zeros(4000, 0);
  auto outputs = runAndDecode(task, plan, {zeros, zeros});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0][0], 0.0);
  EXPECT_TRUE(std::isnan(outputs[0][999]));
}

TEST_F(PlanRunnerTest, TimesThePlan) {
  KernelTask task = makeAxpyTask(1000);
  KernelPlan plan = makeAxpyPlan();
  auto runner = PlanRunner::create(*context, task, plan);
  ASSERT_TRUE(bool(runner)) << runner.status().message();
  std::vector<uint8_t> data = makeRandomTensorData(task.inputs[0], 3);
  ASSERT_TRUE((*runner)->setInputs({data, data}).isOk());
  auto timing = (*runner)->timePlan(20, 5.0);
  ASSERT_TRUE(bool(timing)) << timing.status().message();
  EXPECT_EQ(timing->repetitions, 20u);
  EXPECT_GE(timing->warmupRuns, 1u);
  EXPECT_GT(timing->minUs, 0.0);
  EXPECT_LE(timing->minUs, timing->p10Us);
  EXPECT_LE(timing->p10Us, timing->medianUs);
  EXPECT_LE(timing->medianUs, timing->p90Us);
  // A 1000-element kernel takes microseconds, not a second.
  EXPECT_LT(timing->medianUs, 1e6);
}

TEST_F(PlanRunnerTest, RunnersShareTheContextsFlushBuffer) {
  // Every runner's timer reads the context's one L2 flush buffer, which
  // outlives the runners.
  KernelTask task = makeAxpyTask(1000);
  KernelPlan plan = makeAxpyPlan();
  std::vector<uint8_t> data = makeRandomTensorData(task.inputs[0], 3);
  int64_t flush = computeL2FlushBytes(context->getDeviceInfo().l2Bytes);
  auto first = PlanRunner::create(*context, task, plan);
  ASSERT_TRUE(bool(first)) << first.status().message();
  ASSERT_TRUE((*first)->setInputs({data, data}).isOk());
  auto time = (*first)->timeRun();
  ASSERT_TRUE(bool(time)) << time.status().message();
  EXPECT_EQ(getL2FlushBytesHeld(*context), flush);
  auto second = PlanRunner::create(*context, task, plan);
  ASSERT_TRUE(bool(second)) << second.status().message();
  ASSERT_TRUE((*second)->setInputs({data, data}).isOk());
  int64_t before = DeviceBuffer::getBytesInUse();
  time = (*second)->timeRun();
  ASSERT_TRUE(bool(time)) << time.status().message();
  ASSERT_TRUE((*second)->flushL2().isOk());
  // The second runner's timer allocated nothing.
  EXPECT_EQ(DeviceBuffer::getBytesInUse(), before);
  (*first).reset();
  (*second).reset();
  EXPECT_EQ(getL2FlushBytesHeld(*context), flush);
}

TEST_F(PlanRunnerTest, ReadsHalfInputsConvertedOnTheHost) {
  KernelTask task;
  task.key = task.name = "widen";
  task.inputs = {TensorSpec{"h", ElementType::F16, {300}},
                 TensorSpec{"b", ElementType::BF16, {300}}};
  task.outputs = {f32("z", {300})};
  KernelPlan plan;
  plan.taskKey = "widen";
  plan.proposer = "builtin";
  plan.sources = {{"widen", R"cuda(
#include <cuda_bf16.h>
#include <cuda_fp16.h>
extern "C" __global__ void widen(const __half *h, const __nv_bfloat16 *b,
                                 float *z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    z[i] = __half2float(h[i]) * 1024.0f + __bfloat162float(b[i]);
}
)cuda"}};
  PlanStep step;
  step.launch = {"widen",           "widen", {"cdiv(numel(z), 128)", "1", "1"},
                 {"128", "1", "1"}, 0,       {"h", "b", "z", "i32:300"}};
  plan.steps = {step};
  std::vector<uint8_t> h = makeRandomTensorData(task.inputs[0], 4);
  std::vector<uint8_t> b = makeRandomTensorData(task.inputs[1], 5);
  auto outputs = runAndDecode(task, plan, {h, b});
  ASSERT_EQ(outputs.size(), 1u);
  std::vector<double> hv = decodeTensorData(ElementType::F16, h);
  std::vector<double> bv = decodeTensorData(ElementType::BF16, b);
  for (size_t i = 0; i < 300; ++i)
    ASSERT_EQ(outputs[0][i], double(float(hv[i]) * 1024.0f + float(bv[i])))
        << "element " << i;
}

TEST_F(PlanRunnerTest, OptsIntoLargeDynamicSharedMemory) {
  // 64 KB of dynamic shared memory needs cuFuncSetAttribute; one block
  // reverses 16384 floats through it, using a temporary on the way.
  int64_t n = 16384;
  KernelTask task;
  task.key = task.name = "reverse";
  task.inputs = {f32("x", {n})};
  task.outputs = {f32("y", {n})};
  KernelPlan plan;
  plan.taskKey = "reverse";
  plan.proposer = "builtin";
  plan.temporaries = {f32("t", {n})};
  plan.sources = {{"reverse", R"cuda(
extern "C" __global__ void reverse(const float *x, float *y, int n) {
  extern __shared__ float buffer[];
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    buffer[i] = x[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    y[i] = buffer[n - 1 - i];
}
)cuda"}};
  PlanStep first, second;
  first.launch = {"reverse",          "reverse", {"1", "1", "1"},
                  {"1024", "1", "1"}, n * 4,     {"x", "t", "i32:16384"}};
  second.launch = {"reverse",          "reverse", {"1", "1", "1"},
                   {"1024", "1", "1"}, n * 4,     {"t", "y", "i32:16384"}};
  // Two reversals give the input back; check the temporary too.
  plan.steps = {first, second};
  std::vector<uint8_t> x = makeRandomTensorData(task.inputs[0], 6);
  auto runner = PlanRunner::create(*context, task, plan);
  ASSERT_TRUE(bool(runner)) << runner.status().message();
  ASSERT_TRUE((*runner)->setInputs({x}).isOk());
  Status status = (*runner)->run();
  ASSERT_TRUE(status.isOk()) << status.message();
  auto y = (*runner)->readTensor("y");
  ASSERT_TRUE(bool(y)) << y.status().message();
  EXPECT_EQ(*y, x);
  auto t = (*runner)->readTensor("t");
  ASSERT_TRUE(bool(t)) << t.status().message();
  std::vector<double> xv = decodeTensorData(ElementType::F32, x);
  std::vector<double> tv = decodeTensorData(ElementType::F32, *t);
  EXPECT_EQ(tv.front(), xv.back());
  EXPECT_EQ(tv.back(), xv.front());
}

TEST_F(PlanRunnerTest, LaunchesNonPortableClusters) {
  // Clusters of 16 blocks (more than the portable 8) are set at launch:
  // each block writes the cluster's size and its rank in it, and the first
  // element of the next block's shared memory, read through the cluster.
  if (context->getDeviceInfo().computeMajor < 9)
    GTEST_SKIP() << "thread-block clusters need sm_90";
  KernelTask task;
  task.key = task.name = "cluster";
  task.inputs = {f32("x", {1})};
  task.outputs = {f32("y", {32 * 3})};
  KernelPlan plan;
  plan.taskKey = "cluster";
  plan.proposer = "builtin";
  plan.sources = {{"cluster", R"cuda(
extern "C" __global__ void cluster(const float *x, float *y) {
  __shared__ float mine[1];
  unsigned size, rank;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  mine[0] = float(blockIdx.x);
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::: "memory");
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote)
               : "r"((unsigned)__cvta_generic_to_shared(mine)),
                 "r"((rank + 1) % size));
  float next;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(next) : "r"(remote));
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::: "memory");
  if (threadIdx.x == 0) {
    y[blockIdx.x * 3] = float(size);
    y[blockIdx.x * 3 + 1] = float(rank);
    y[blockIdx.x * 3 + 2] = next + x[0] * 0.0f;
  }
}
)cuda"}};
  PlanStep step;
  step.launch = {"cluster",        "cluster", {"32", "1", "1"},
                 {"64", "1", "1"}, 0,         {"x", "y"}};
  step.launch.cluster = 16;
  plan.steps = {step};
  auto runner = PlanRunner::create(*context, task, plan);
  ASSERT_TRUE(bool(runner)) << runner.status().message();
  ASSERT_TRUE(
      (*runner)->setInputs({makeRandomTensorData(task.inputs[0], 1)}).isOk());
  Status status = (*runner)->run();
  ASSERT_TRUE(status.isOk()) << status.message();
  auto y = (*runner)->readTensor("y");
  ASSERT_TRUE(bool(y)) << y.status().message();
  std::vector<double> values = decodeTensorData(ElementType::F32, *y);
  for (int block = 0; block < 32; ++block) {
    EXPECT_EQ(values[block * 3], 16.0) << block;
    EXPECT_EQ(values[block * 3 + 1], block % 16) << block;
    EXPECT_EQ(values[block * 3 + 2], block / 16 * 16 + (block + 1) % 16)
        << block;
  }
}

TEST_F(PlanRunnerTest, CooperativeLaunchSynchronisesTheResidentGrid) {
  // A grid of 100000 blocks asked for: the runtime launches as many as the
  // device holds at once. Each block writes its index, the whole grid
  // synchronises, then block 0 sums what every block wrote: the sum is
  // right only if the barrier waited for every block.
  KernelTask task;
  task.key = task.name = "cooperative";
  task.inputs = {f32("x", {1})};
  task.outputs = {f32("y", {2 + 100000})};
  KernelPlan plan;
  plan.taskKey = "cooperative";
  plan.proposer = "builtin";
  plan.sources = {{"cooperative", R"cuda(
#include <cooperative_groups.h>
extern "C" __global__ void cooperative(const float *x, float *y) {
  if (threadIdx.x == 0)
    y[2 + blockIdx.x] = float(blockIdx.x) + x[0] * 0.0f;
  cooperative_groups::this_grid().sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    double sum = 0.0;
    for (unsigned b = 0; b < gridDim.x; ++b)
      sum += y[2 + b];
    y[0] = float(sum);
    y[1] = float(gridDim.x);
  }
}
)cuda"}};
  PlanStep step;
  step.launch = {
      "cooperative", "cooperative", {"100000", "1", "1"}, {"128", "1", "1"}, 0,
      {"x", "y"}};
  step.launch.cooperative = true;
  plan.steps = {step};
  auto outputs =
      runAndDecode(task, plan, {makeRandomTensorData(task.inputs[0], 1)});
  ASSERT_EQ(outputs.size(), 1u);
  const std::vector<double> &values = outputs[0];
  double blocks = values[1];
  int sms = context->getDeviceInfo().smCount;
  EXPECT_GE(blocks, sms);
  EXPECT_LE(blocks, 32.0 * sms);
  EXPECT_EQ(values[0], blocks * (blocks - 1) / 2);
}

TEST_F(PlanRunnerTest, ReportsCompileErrorsBeforeRunning) {
  KernelTask task = makeAxpyTask(1000);
  KernelPlan plan = makeAxpyPlan();
  plan.sources[0].code = "extern \"C\" __global__ void axpy( {";
  auto runner = PlanRunner::create(*context, task, plan);
  ASSERT_FALSE(bool(runner));
  EXPECT_NE(runner.status().message().find("axpy.cu"), std::string::npos);
}

TEST_F(PlanRunnerTest, ReportsMissingEntryWithItsStep) {
  KernelTask task = makeAxpyTask(1000);
  KernelPlan plan = makeAxpyPlan();
  plan.steps[0].launch.entry = "nope";
  auto runner = PlanRunner::create(*context, task, plan);
  ASSERT_FALSE(bool(runner));
  std::string message = runner.status().message();
  EXPECT_NE(message.find("step 0 (launch nope"), std::string::npos) << message;
  EXPECT_NE(message.find("CUDA_ERROR_NOT_FOUND"), std::string::npos) << message;
}

TEST_F(PlanRunnerTest, RejectsBadInputsAndUnsetInputs) {
  KernelTask task = makeAxpyTask(1000);
  auto runner = PlanRunner::create(*context, task, makeAxpyPlan());
  ASSERT_TRUE(bool(runner)) << runner.status().message();
  Status wrongSize = (*runner)->setInput("x", std::vector<uint8_t>(12));
  EXPECT_NE(wrongSize.message().find("takes 4000 bytes"), std::string::npos);
  Status unknown = (*runner)->setInput("z", std::vector<uint8_t>(4000));
  EXPECT_NE(unknown.message().find("no input 'z'"), std::string::npos);
  ASSERT_TRUE((*runner)->setInput("x", std::vector<uint8_t>(4000)).isOk());
  Status unset = (*runner)->run();
  EXPECT_NE(unset.message().find("input 'y' was never set"), std::string::npos);
}

TEST_F(PlanRunnerTest, ReportsDeviceFaultsWithTheStep) {
  // A kernel that writes far out of bounds faults, and the error names the
  // step. A fault spoils the CUDA context for the rest of the process, so it
  // runs in a child process that re-executes this binary.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  KernelTask task = makeAxpyTask(1000);
  KernelPlan plan = makeAxpyPlan();
  plan.sources[0].code = R"cuda(
extern "C" __global__ void axpy(const float *x, const float *y, float *z,
                                float alpha, long long n) {
  z[threadIdx.x - (1ll << 40)] = 1.0f;
}
)cuda";
  plan.steps[0].comment = "writes out of bounds";
  std::vector<uint8_t> zeros(4000, 0);
  EXPECT_EXIT(
      {
        auto outputs = runPlan(*context, task, plan, {zeros, zeros});
        if (outputs)
          std::exit(2);
        std::string message = outputs.status().message();
        std::fprintf(stderr, "%s\n", message.c_str());
        std::exit(message.find("step 0 (launch axpy: writes out of bounds)") !=
                          std::string::npos
                      ? 0
                      : 1);
      },
      ::testing::ExitedWithCode(0), "CUDA_ERROR_ILLEGAL_ADDRESS");
}

//===----------------------------------------------------------------------===//
// GEMM through cuBLASLt
//===----------------------------------------------------------------------===//

/// C[b] = act(scale op(A[b]) op(B[b]) + bias) on the CPU in double
/// precision.
std::vector<double> referenceGemm(const GemmStep &step,
                                  const std::vector<double> &a,
                                  const std::vector<double> &b,
                                  const std::vector<double> &bias) {
  int64_t m = step.m, n = step.n, k = step.k;
  std::vector<double> c(size_t(step.batch * m * n));
  for (int64_t batch = 0; batch < step.batch; ++batch)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < k; ++p) {
          double av = step.transposeA ? a[(batch * k + p) * m + i]
                                      : a[(batch * m + i) * k + p];
          double bv = step.transposeB ? b[(batch * n + j) * k + p]
                                      : b[(batch * k + p) * n + j];
          sum += av * bv;
        }
        sum = step.scale * sum + (bias.empty() ? 0.0 : bias[j]);
        if (step.activation == "relu")
          sum = std::max(sum, 0.0);
        if (step.activation == "gelu")
          sum = 0.5 * sum *
                (1 + std::tanh(0.7978845608028654 *
                               (sum + 0.044715 * sum * sum * sum)));
        c[(batch * m + i) * n + j] = sum;
      }
  return c;
}

/// A GEMM step of tensors a, b and c, m x n x k.
GemmStep makeGemm(int64_t m, int64_t n, int64_t k) {
  GemmStep gemm;
  gemm.a = "a";
  gemm.b = "b";
  gemm.c = "c";
  gemm.m = m;
  gemm.n = n;
  gemm.k = k;
  return gemm;
}

void runGemmCase(PlanRunnerTest &test, CudaContext &context, GemmStep gemm) {
  KernelTask task;
  task.key = task.name = "gemm";
  int64_t batch = gemm.batch, m = gemm.m, n = gemm.n, k = gemm.k;
  task.inputs = {f32("a", gemm.transposeA ? std::vector<int64_t>{batch, k, m}
                                          : std::vector<int64_t>{batch, m, k}),
                 f32("b", gemm.transposeB ? std::vector<int64_t>{batch, n, k}
                                          : std::vector<int64_t>{batch, k, n})};
  if (!gemm.bias.empty())
    task.inputs.push_back(f32("bias", {n}));
  task.outputs = {f32("c", {batch, m, n})};
  KernelPlan plan;
  plan.taskKey = "gemm";
  plan.proposer = "baseline";
  PlanStep step;
  step.kind = PlanStep::Kind::Gemm;
  step.gemm = gemm;
  plan.steps = {step};

  std::vector<std::vector<uint8_t>> inputs;
  std::vector<std::vector<double>> values;
  for (size_t index = 0; index < task.inputs.size(); ++index) {
    inputs.push_back(makeRandomTensorData(task.inputs[index], 10 + index));
    values.push_back(decodeTensorData(ElementType::F32, inputs.back()));
  }
  auto outputs = runPlan(context, task, plan, inputs);
  ASSERT_TRUE(bool(outputs)) << outputs.status().message();
  std::vector<double> reference =
      referenceGemm(gemm, values[0], values[1],
                    gemm.bias.empty() ? std::vector<double>{} : values[2]);
  // fp32 accumulation over K = 47 standard normal products: a few ulps of
  // sqrt(K).
  expectClose(decodeTensorData(ElementType::F32, (*outputs)[0]), reference,
              1e-5, std::sqrt(double(k)));
}

TEST_F(PlanRunnerTest, RunsBatchedGemmWithBiasAndRelu) {
  GemmStep gemm = makeGemm(33, 65, 47);
  gemm.bias = "bias";
  gemm.batch = 3;
  gemm.activation = "relu";
  runGemmCase(*this, *context, gemm);
}

TEST_F(PlanRunnerTest, RunnersShareTheContextsGemmWorkspace) {
  // Two runners of a GEMM plan hold one cuBLASLt workspace between them:
  // the second allocates its tensors only.
  KernelTask task;
  task.key = task.name = "gemm";
  task.inputs = {f32("a", {1, 64, 32}), f32("b", {1, 32, 16})};
  task.outputs = {f32("c", {1, 64, 16})};
  KernelPlan plan;
  plan.taskKey = "gemm";
  plan.proposer = "baseline";
  PlanStep step;
  step.kind = PlanStep::Kind::Gemm;
  step.gemm.a = "a";
  step.gemm.b = "b";
  step.gemm.c = "c";
  step.gemm.m = 64;
  step.gemm.n = 16;
  step.gemm.k = 32;
  plan.steps = {step};
  auto first = PlanRunner::create(*context, task, plan);
  ASSERT_TRUE(bool(first)) << first.status().message();
  EXPECT_EQ(getSharedGemmWorkspaceBytes(*context),
            CublasLtGemm::kWorkspaceBytes);
  int64_t before = DeviceBuffer::getBytesInUse();
  auto second = PlanRunner::create(*context, task, plan);
  ASSERT_TRUE(bool(second)) << second.status().message();
  EXPECT_LT(DeviceBuffer::getBytesInUse() - before, 1 << 20);
  EXPECT_EQ(getSharedGemmWorkspaceBytes(*context),
            CublasLtGemm::kWorkspaceBytes);
}

TEST_F(PlanRunnerTest, RunsTransposedGemmWithGelu) {
  GemmStep gemm = makeGemm(40, 24, 47);
  gemm.transposeA = true;
  gemm.transposeB = true;
  gemm.activation = "gelu";
  runGemmCase(*this, *context, gemm);
}

TEST_F(PlanRunnerTest, RunsScaledBatchedGemm) {
  // Attention's scores: cuBLASLt's alpha scales the product.
  GemmStep gemm = makeGemm(64, 64, 32);
  gemm.batch = 4;
  gemm.transposeB = true;
  gemm.scale = 0.125;
  runGemmCase(*this, *context, gemm);
}

TEST_F(PlanRunnerTest, RunsPlainGemm) {
  GemmStep gemm = makeGemm(128, 96, 47);
  gemm.transposeB = true;
  runGemmCase(*this, *context, gemm);
}

//===----------------------------------------------------------------------===//
// Convolutions through cuDNN
//===----------------------------------------------------------------------===//

void runConvCase(CudaContext &context, bool nhwc) {
  // N=2, C=3, 11x13 input, F=4, 3x2 filter, strides (2, 1), dilations
  // (1, 2): the output is 5x11.
  int64_t n = 2, c = 3, h = 11, w = 13, f = 4, kh = 3, kw = 2;
  int64_t sh = 2, sw = 1, dh = 1, dw = 2;
  int64_t oh = (h - dh * (kh - 1) - 1) / sh + 1;
  int64_t ow = (w - dw * (kw - 1) - 1) / sw + 1;
  KernelTask task;
  task.key = task.name = "conv";
  if (nhwc) {
    task.inputs = {f32("x", {n, h, w, c}), f32("k", {kh, kw, c, f})};
    task.outputs = {f32("y", {n, oh, ow, f})};
  } else {
    task.inputs = {f32("x", {n, c, h, w}), f32("k", {f, c, kh, kw})};
    task.outputs = {f32("y", {n, f, oh, ow})};
  }
  KernelPlan plan;
  plan.taskKey = "conv";
  plan.proposer = "baseline";
  PlanStep step;
  step.kind = PlanStep::Kind::Conv;
  step.conv.input = "x";
  step.conv.filter = "k";
  step.conv.output = "y";
  step.conv.layout = nhwc ? "nhwc_hwcf" : "nchw_fchw";
  step.conv.strides = {sh, sw};
  step.conv.dilations = {dh, dw};
  plan.steps = {step};

  std::vector<uint8_t> xb = makeRandomTensorData(task.inputs[0], 20);
  std::vector<uint8_t> kb = makeRandomTensorData(task.inputs[1], 21);
  std::vector<double> x = decodeTensorData(ElementType::F32, xb);
  std::vector<double> k = decodeTensorData(ElementType::F32, kb);
  auto input = [&](int64_t ni, int64_t ci, int64_t hi, int64_t wi) {
    return nhwc ? x[((ni * h + hi) * w + wi) * c + ci]
                : x[((ni * c + ci) * h + hi) * w + wi];
  };
  auto filter = [&](int64_t fi, int64_t ci, int64_t r, int64_t s) {
    return nhwc ? k[((r * kw + s) * c + ci) * f + fi]
                : k[((fi * c + ci) * kh + r) * kw + s];
  };
  std::vector<double> reference(size_t(n * f * oh * ow));
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t fi = 0; fi < f; ++fi)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double sum = 0;
          for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t r = 0; r < kh; ++r)
              for (int64_t s = 0; s < kw; ++s)
                sum += input(ni, ci, y * sh + r * dh, z * sw + s * dw) *
                       filter(fi, ci, r, s);
          size_t index = nhwc ? size_t(((ni * oh + y) * ow + z) * f + fi)
                              : size_t(((ni * f + fi) * oh + y) * ow + z);
          reference[index] = sum;
        }
  auto outputs = runPlan(context, task, plan, {xb, kb});
  ASSERT_TRUE(bool(outputs)) << outputs.status().message();
  expectClose(decodeTensorData(ElementType::F32, (*outputs)[0]), reference,
              1e-5, std::sqrt(double(c * kh * kw)));
}

TEST_F(PlanRunnerTest, RunsNchwConvWithStridesAndDilations) {
  runConvCase(*context, /*nhwc=*/false);
}

TEST_F(PlanRunnerTest, RunsNhwcConvWithHwcfFilter) {
  runConvCase(*context, /*nhwc=*/true);
}

TEST_F(PlanRunnerTest, RejectsConvOutputOfTheWrongShape) {
  KernelTask task;
  task.key = task.name = "conv";
  task.inputs = {f32("x", {1, 1, 5, 5}), f32("k", {1, 1, 3, 3})};
  task.outputs = {f32("y", {1, 1, 4, 4})};
  KernelPlan plan;
  plan.taskKey = "conv";
  plan.proposer = "baseline";
  PlanStep step;
  step.kind = PlanStep::Kind::Conv;
  step.conv = {"x", "k", "y", "nchw_fchw", {1, 1}, {1, 1}};
  plan.steps = {step};
  auto runner = PlanRunner::create(*context, task, plan);
  ASSERT_FALSE(bool(runner));
  // 5 - 3 + 1 = 3 rows, not 4: the step is refused before cuDNN sees it.
  EXPECT_NE(runner.status().message().find(
                "conv output 'y' has 4 for dimension 'h'; input 'x', filter "
                "'k', strides and dilations make 3"),
            std::string::npos)
      << runner.status().message();
}

} // namespace
