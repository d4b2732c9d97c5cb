//===- TensorCoreGemmTest.cpp - 3xTF32 GEMMs against fp64 -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Runs the built-in 3xTF32 tensor-core GEMM plans of
// test/Runtime/Inputs/tc-gemm (as `kopt plan --emit-dir` writes them;
// test/Tools/kopt-plan/tc-gemm.test keeps them current) on the GPU, with
// the problem's cuBLASLt baseline beside them, and compares both with the
// product computed in fp64 on the host: B stored [N, K] and [K, N], A
// stored [K, M], sizes that are no multiple of the tiles (511x383x999),
// batches, and a bias + ReLU epilogue. The 3xTF32 error (relative Frobenius
// norm) must stay below 1e-6, the order of cuBLAS fp32's own, on standard
// normal inputs and on positive ones (all partial sums of one sign, where
// a truncating accumulation would drift); TF32 alone errs by about 1e-4.
// Without a CUDA driver the tests skip; with KOPT_REQUIRE_GPU=1 they fail
// instead.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Cuda/PlanRunner.h"
#include "kopt/Runtime/Cuda/TensorData.h"
#include "kopt/Runtime/TaskPlan.h"

#include "GpuTestFixture.h"
#include "TestInputs.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/stat.h>

using namespace kopt::runtime;

namespace {

/// The files of `dir` whose names start with `prefix`, sorted.
std::vector<std::string> listFiles(const std::string &dir,
                                   const std::string &prefix) {
  std::vector<std::string> names;
  if (DIR *handle = opendir(dir.c_str())) {
    while (dirent *entry = readdir(handle)) {
      std::string name = entry->d_name;
      if (name.rfind(prefix, 0) == 0)
        names.push_back(name);
    }
    closedir(handle);
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// One problem of the inputs: its task, its baseline (one cuBLASLt GEMM,
/// which also says where A and B are and how they are stored), its 3xTF32
/// plans, and whether the group adds a bias over N and applies ReLU.
struct Problem {
  KernelTask task;
  KernelPlan baseline;
  std::vector<KernelPlan> tensorCore;
  GemmStep gemm;
  bool biasRelu = false;
};

Problem loadProblem(const std::string &name, bool biasRelu) {
  Problem problem;
  problem.biasRelu = biasRelu;
  std::string dir = gputest::findTestInputs("KOPT_TC_GEMM_DIR",
                                            "test/Runtime/Inputs/tc-gemm") +
                    name + "/";
  auto task = gputest::readJsonFile(dir + "task.json");
  EXPECT_TRUE(task.isOk()) << task.status().message();
  if (!task)
    return problem;
  auto parsedTask = kernelTaskFromJson(*task);
  EXPECT_TRUE(parsedTask.isOk()) << parsedTask.status().message();
  if (!parsedTask)
    return problem;
  problem.task = *parsedTask;
  for (const std::string &file : listFiles(dir, "")) {
    if (file.size() < 10 || file.substr(file.size() - 10) != ".plan.json")
      continue;
    auto json = gputest::readJsonFile(dir + file);
    EXPECT_TRUE(json.isOk()) << json.status().message();
    if (!json)
      continue;
    auto plan = kernelPlanFromJson(*json);
    EXPECT_TRUE(plan.isOk()) << file << ": " << plan.status().message();
    if (!plan)
      continue;
    if (plan->proposer == "baseline")
      problem.baseline = *plan;
    else if (plan->arithmetic == "3xtf32")
      problem.tensorCore.push_back(*plan);
  }
  for (const PlanStep &step : problem.baseline.steps)
    if (step.kind == PlanStep::Kind::Gemm)
      problem.gemm = step.gemm;
  EXPECT_FALSE(problem.gemm.a.empty()) << name << ": no baseline GEMM";
  EXPECT_FALSE(problem.tensorCore.empty()) << name << ": no 3xTF32 plan";
  return problem;
}

/// The index of input `name` in `task`.
size_t inputIndex(const KernelTask &task, const std::string &name) {
  for (size_t i = 0; i < task.inputs.size(); ++i)
    if (task.inputs[i].name == name)
      return i;
  ADD_FAILURE() << "no input " << name;
  return 0;
}

/// The group's output in fp64: the product of the baseline's GEMM step,
/// then the bias (the one input of N elements) and ReLU when asked.
std::vector<double> referenceOf(const Problem &problem,
                                const std::vector<std::vector<double>> &in) {
  const GemmStep &g = problem.gemm;
  const std::vector<double> &a = in[inputIndex(problem.task, g.a)];
  const std::vector<double> &b = in[inputIndex(problem.task, g.b)];
  const std::vector<double> *bias = nullptr;
  for (size_t i = 0; i < problem.task.inputs.size(); ++i)
    if (problem.task.inputs[i].shape == std::vector<int64_t>{g.n})
      bias = &in[i];
  std::vector<double> c(size_t(g.batch * g.m * g.n));
  for (int64_t batch = 0; batch < g.batch; ++batch) {
    const double *ab = a.data() + batch * g.m * g.k;
    const double *bb = b.data() + batch * g.k * g.n;
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < g.k; ++k)
          sum += (g.transposeA ? ab[k * g.m + i] : ab[i * g.k + k]) *
                 (g.transposeB ? bb[j * g.k + k] : bb[k * g.n + j]);
        if (problem.biasRelu)
          sum = std::max(sum + (*bias)[size_t(j)], 0.0);
        c[size_t((batch * g.m + i) * g.n + j)] = sum;
      }
  }
  return c;
}

/// ||actual - reference|| / ||reference||.
double relativeError(const std::vector<double> &actual,
                     const std::vector<double> &reference) {
  double difference = 0, norm = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    double d = actual[i] - reference[i];
    difference += d * d;
    norm += reference[i] * reference[i];
  }
  return std::sqrt(difference / norm);
}

class TensorCoreGemmTest
    : public gputest::WithCudaContext<::testing::TestWithParam<const char *>> {
protected:
  /// Runs `plan` on `inputs` and returns its one output as doubles.
  std::vector<double> run(const KernelTask &task, const KernelPlan &plan,
                          const std::vector<std::vector<uint8_t>> &inputs) {
    PlanRunnerOptions options;
    options.warningsAsErrors = true;
    auto outputs = runPlan(*context, task, plan, inputs, options);
    EXPECT_TRUE(bool(outputs))
        << plan.variant << ": " << outputs.status().message();
    if (!outputs || outputs->empty())
      return {};
    return decodeTensorData(task.outputs[0].elementType, (*outputs)[0]);
  }
};

TEST_P(TensorCoreGemmTest, MatchesTheFp64ProductMoreCloselyThanFp32Needs) {
  std::string name = GetParam();
  Problem problem = loadProblem(name, name == "nt_bias_relu");
  ASSERT_FALSE(problem.tensorCore.empty());
  for (bool positive : {false, true}) {
    // Standard normal inputs, or uniform in [1, 2).
    std::vector<std::vector<uint8_t>> inputs;
    std::vector<std::vector<double>> values;
    std::mt19937_64 random(positive ? 7 : 3);
    for (size_t i = 0; i < problem.task.inputs.size(); ++i) {
      const TensorSpec &input = problem.task.inputs[i];
      std::vector<uint8_t> bytes = makeRandomTensorData(input, 100 + i);
      if (positive) {
        std::uniform_real_distribution<float> uniform(1.0f, 2.0f);
        std::vector<double> drawn(size_t(input.getNumElements().value_or(0)));
        for (double &value : drawn)
          value = uniform(random);
        bytes = encodeTensorData(input.elementType, drawn);
      }
      values.push_back(decodeTensorData(input.elementType, bytes));
      inputs.push_back(std::move(bytes));
    }
    std::vector<double> reference = referenceOf(problem, values);
    std::vector<double> cublas = run(problem.task, problem.baseline, inputs);
    ASSERT_EQ(cublas.size(), reference.size());
    double cublasError = relativeError(cublas, reference);
    std::printf("%s, %s inputs: cuBLASLt fp32 error %.3g\n", name.c_str(),
                positive ? "positive" : "normal", cublasError);
    for (const KernelPlan &plan : problem.tensorCore) {
      std::vector<double> output = run(problem.task, plan, inputs);
      ASSERT_EQ(output.size(), reference.size()) << plan.variant;
      double error = relativeError(output, reference);
      std::printf("  %s: error %.3g (%.2fx cuBLASLt's)\n", plan.variant.c_str(),
                  error, error / cublasError);
      EXPECT_LT(error, 1e-6)
          << plan.variant << " on " << (positive ? "positive" : "normal")
          << " inputs; cuBLASLt fp32: " << cublasError;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Problems, TensorCoreGemmTest,
                         ::testing::Values("nt_bias_relu", "nn", "nn_odd",
                                           "batched_tn"));

} // namespace
