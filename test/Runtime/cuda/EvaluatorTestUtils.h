//===- EvaluatorTestUtils.h - What the engine's GPU tests share -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A vector addition task, plans of one launch, an honest baseline and
// variants (honest and cheating), and a fixture that skips without a CUDA
// driver (and fails instead under KOPT_REQUIRE_GPU=1).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_RUNTIME_CUDA_EVALUATORTESTUTILS_H
#define KOPT_TEST_RUNTIME_CUDA_EVALUATORTESTUTILS_H

#include "kopt/Runtime/Evaluator/Evaluator.h"

#include "GpuTestFixture.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <memory>
#include <string>

namespace kopt::runtime::evaltest {

/// The engine tests' fixture: a context on device 0.
class EvaluatorTest : public gputest::WithCudaContext<> {};

constexpr int64_t kElements = 1 << 16;

inline KernelTask makeTask() {
  KernelTask task;
  task.key = "vector-add";
  task.name = "vector_add";
  task.kind = "elementwise";
  task.inputs = {{"a", ElementType::F32, {kElements}},
                 {"b", ElementType::F32, {kElements}}};
  task.outputs = {{"c", ElementType::F32, {kElements}}};
  return task;
}

/// A plan of one launch of `entry` in `code`, `perThread` elements per
/// thread.
inline KernelPlan makePlan(const std::string &variant, const std::string &code,
                           int perThread = 1) {
  KernelPlan plan;
  plan.taskKey = "vector-add";
  plan.proposer = variant == "baseline" ? "baseline" : "builtin";
  plan.variant = variant;
  plan.sources.push_back({"add", code});
  PlanStep step;
  step.launch.source = "add";
  step.launch.entry = "add";
  step.launch.grid = {"cdiv(numel(c), " + std::to_string(256 * perThread) + ")",
                      "1", "1"};
  step.launch.block = {"256", "1", "1"};
  step.launch.args = {"a", "b", "c", "i32:" + std::to_string(kElements)};
  plan.steps.push_back(step);
  return plan;
}

const char *const kBaseline = R"(
extern "C" __global__ void add(const float *a, const float *b, float *c,
                               int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
})";

const char *const kVectorised = R"(
extern "C" __global__ void add(const float *a, const float *b, float *c,
                               int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (4 * i + 3 < n) {
    float4 x = reinterpret_cast<const float4 *>(a)[i];
    float4 y = reinterpret_cast<const float4 *>(b)[i];
    reinterpret_cast<float4 *>(c)[i] =
        make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
})";

const char *const kHalf = R"(
extern "C" __global__ void add(const float *a, const float *b, float *c,
                               int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 2)
    c[i] = a[i] + b[i];
})";

const char *const kWritesInput = R"(
extern "C" __global__ void add(float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    c[i] = a[i] + b[i];
    a[i] = 0.0f;
  }
})";

const char *const kConstant = R"(
extern "C" __global__ void add(const float *a, const float *b, float *c,
                               int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = 1.0f;
})";

/// c = a + b, where thread 0 first spins for `nanoseconds` of the device's
/// global timer when `condition` holds; `prelude` comes before the kernel.
inline std::string makeWaitingAdd(const std::string &prelude,
                                  const std::string &condition,
                                  uint64_t nanoseconds = 2000000) {
  return prelude + R"(
extern "C" __global__ void add(const float *a, const float *b, float *c,
                               int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0 && )" +
         condition + R"() {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < )" +
         std::to_string(nanoseconds) + R"(ull);
  }
  if (i < n)
    c[i] = a[i] + b[i];
})";
}

inline EvaluatorOptions quickOptions() {
  EvaluatorOptions options;
  options.warmupMs = 5;
  return options;
}

} // namespace kopt::runtime::evaltest

#endif // KOPT_TEST_RUNTIME_CUDA_EVALUATORTESTUTILS_H
