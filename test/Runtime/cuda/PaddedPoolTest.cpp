//===- PaddedPoolTest.cpp - Padded conv and pool groups vs fp64 -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Runs every plan of test/Runtime/Inputs/padded (as `kopt plan --emit-dir`
// writes them; test/Tools/kopt-plan/padded-inputs.test keeps them current)
// on the GPU and compares each with loops in fp64 on the host that apply
// the padding by bounds checks: a max-pool of kernel 3, stride 2 and
// padding 1 whose group took its -inf pad in (the kernels read the
// unpadded input), and a padded 3x3 convolution with a bias, ReLU and such
// a max-pool, whose cuDNN call takes the zero pad as its own padding. The
// plans must not write a padded tensor: no temporary of the padded shape.
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

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace kopt::runtime;

namespace {

/// The task of `name` and all its plans, sorted by file name.
struct Problem {
  KernelTask task;
  std::vector<KernelPlan> plans;
};

Problem loadProblem(const std::string &name) {
  Problem problem;
  std::string dir =
      gputest::findTestInputs("KOPT_PADDED_DIR", "test/Runtime/Inputs/padded") +
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
  std::vector<std::string> files;
  if (DIR *handle = opendir(dir.c_str())) {
    while (dirent *entry = readdir(handle)) {
      std::string file = entry->d_name;
      if (file.size() > 10 && file.substr(file.size() - 10) == ".plan.json")
        files.push_back(file);
    }
    closedir(handle);
  }
  std::sort(files.begin(), files.end());
  for (const std::string &file : files) {
    auto json = gputest::readJsonFile(dir + file);
    EXPECT_TRUE(json.isOk()) << json.status().message();
    if (!json)
      continue;
    auto plan = kernelPlanFromJson(*json);
    EXPECT_TRUE(plan.isOk()) << file << ": " << plan.status().message();
    if (plan)
      problem.plans.push_back(*plan);
  }
  EXPECT_FALSE(problem.plans.empty()) << name << ": no plans";
  return problem;
}

/// The input of `task` with exactly `shape`; fails the test without one.
size_t inputWithShape(const KernelTask &task,
                      const std::vector<int64_t> &shape) {
  for (size_t i = 0; i < task.inputs.size(); ++i)
    if (task.inputs[i].shape == shape)
      return i;
  ADD_FAILURE() << "no input of the expected shape";
  return 0;
}

/// NCHW max-pool of kernel 3, stride 2 and padding 1 (-inf outside).
std::vector<double> maxPool(const std::vector<double> &x, int64_t n, int64_t c,
                            int64_t h, int64_t w) {
  int64_t oh = (h + 2 - 3) / 2 + 1, ow = (w + 2 - 3) / 2 + 1;
  std::vector<double> y(size_t(n * c * oh * ow));
  for (int64_t b = 0; b < n * c; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double best = -INFINITY;
        for (int64_t r = 0; r < 3; ++r)
          for (int64_t s = 0; s < 3; ++s) {
            int64_t hi = 2 * i + r - 1, wi = 2 * j + s - 1;
            if (hi >= 0 && hi < h && wi >= 0 && wi < w)
              best = std::max(best, x[size_t((b * h + hi) * w + wi)]);
          }
        y[size_t((b * oh + i) * ow + j)] = best;
      }
  return y;
}

/// The reference output of problem `name` on `in`, the task's inputs.
std::vector<double> referenceOf(const std::string &name, const KernelTask &task,
                                const std::vector<std::vector<double>> &in) {
  if (name == "maxpool")
    return maxPool(in[inputWithShape(task, {2, 8, 33, 31})], 2, 8, 33, 31);
  // conv_relu_maxpool: 3x3 convolution with padding 1, bias, ReLU.
  const int64_t n = 2, c = 3, h = 17, w = 15, f = 8;
  const std::vector<double> &x = in[inputWithShape(task, {n, c, h, w})];
  const std::vector<double> &k = in[inputWithShape(task, {f, c, 3, 3})];
  const std::vector<double> &bias = in[inputWithShape(task, {f})];
  std::vector<double> relu(size_t(n * f * h * w));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < f; ++o)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j) {
          double sum = bias[size_t(o)];
          for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t r = 0; r < 3; ++r)
              for (int64_t s = 0; s < 3; ++s) {
                int64_t hi = i + r - 1, wi = j + s - 1;
                if (hi >= 0 && hi < h && wi >= 0 && wi < w)
                  sum += x[size_t(((b * c + ci) * h + hi) * w + wi)] *
                         k[size_t(((o * c + ci) * 3 + r) * 3 + s)];
              }
          relu[size_t(((b * f + o) * h + i) * w + j)] = std::max(sum, 0.0);
        }
  return maxPool(relu, n, f, h, w);
}

class PaddedPoolTest
    : public gputest::WithCudaContext<::testing::TestWithParam<const char *>> {
};

TEST_P(PaddedPoolTest, EveryPlanMatchesTheFp64Loops) {
  std::string name = GetParam();
  Problem problem = loadProblem(name);
  ASSERT_FALSE(problem.plans.empty());
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<std::vector<double>> values;
  for (size_t i = 0; i < problem.task.inputs.size(); ++i) {
    inputs.push_back(makeRandomTensorData(problem.task.inputs[i], 40 + i));
    values.push_back(
        decodeTensorData(problem.task.inputs[i].elementType, inputs.back()));
  }
  std::vector<double> reference = referenceOf(name, problem.task, values);
  for (const KernelPlan &plan : problem.plans) {
    // No plan writes the padded tensor: the pads are read in place.
    for (const TensorSpec &temporary : plan.temporaries)
      for (const TensorSpec &input : problem.task.inputs)
        EXPECT_FALSE(temporary.shape.size() == 4 && input.shape.size() == 4 &&
                     temporary.shape[2] == input.shape[2] + 2 &&
                     temporary.shape[3] == input.shape[3] + 2)
            << plan.variant << " writes a padded tensor " << temporary.name;
    PlanRunnerOptions options;
    options.warningsAsErrors = true;
    auto outputs = runPlan(*context, problem.task, plan, inputs, options);
    ASSERT_TRUE(bool(outputs))
        << plan.variant << ": " << outputs.status().message();
    std::vector<double> actual =
        decodeTensorData(problem.task.outputs[0].elementType, (*outputs)[0]);
    ASSERT_EQ(actual.size(), reference.size()) << plan.variant;
    int reported = 0;
    for (size_t i = 0; i < actual.size(); ++i) {
      // A max-pool selects one of its inputs (exact); the convolution sums
      // 27 products in fp32.
      double bound =
          name == "maxpool" ? 0.0 : 1e-5 * (std::fabs(reference[i]) + 10);
      if (!(std::fabs(actual[i] - reference[i]) <= bound) && reported++ < 5)
        ADD_FAILURE() << name << " " << plan.proposer << "-" << plan.variant
                      << " element " << i << ": " << actual[i] << " vs "
                      << reference[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Problems, PaddedPoolTest,
                         ::testing::Values("maxpool", "conv_relu_maxpool"));

} // namespace
