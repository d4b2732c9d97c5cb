//===- ConvFormsTest.cpp - Every conv step layout on the GPU ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Runs a conv step in every layout a plan may name (1-D, 2-D and 3-D,
// plain, grouped and depthwise, with strides and dilations, without and
// with zero padding) through cuDNN and compares it with a loop on the CPU
// written from the layout's letters alone: `stride * position + dilation *
// offset - padding` on each spatial letter (zero outside the input), the
// sum over `c` (per group) and the kernel offsets. Skips without a CUDA
// driver; fails instead under KOPT_REQUIRE_GPU=1.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/ConvLayout.h"
#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Cuda/PlanRunner.h"
#include "kopt/Runtime/Cuda/TensorData.h"

#include "GpuTestFixture.h"

#include "gtest/gtest.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

using namespace kopt::runtime;

namespace {

/// Sizes of each letter: the input's spatial sizes, the kernel's, and the
/// strides and dilations of each spatial letter.
const std::map<char, int64_t> kSizes = {{'n', 2}, {'g', 2}, {'c', 3}, {'f', 4},
                                        {'m', 2}, {'d', 5}, {'h', 7}, {'w', 9}};
const std::map<char, int64_t> kKernel = {{'d', 2}, {'h', 3}, {'w', 2}};
const std::map<char, int64_t> kStride = {{'d', 1}, {'h', 2}, {'w', 1}};
const std::map<char, int64_t> kDilation = {{'d', 2}, {'h', 1}, {'w', 2}};
/// Zeros before and after each spatial letter in the padded cases.
const std::map<char, int64_t> kPadding = {{'d', 1}, {'h', 2}, {'w', 1}};

bool isSpatial(char letter) {
  return letter == 'd' || letter == 'h' || letter == 'w';
}

int64_t paddingOf(char letter, bool padded) {
  return padded ? kPadding.at(letter) : 0;
}

int64_t outputSize(char letter, bool padded) {
  int64_t span = kDilation.at(letter) * (kKernel.at(letter) - 1) + 1;
  return (kSizes.at(letter) + 2 * paddingOf(letter, padded) - span) /
             kStride.at(letter) +
         1;
}

std::vector<int64_t> shapeOf(const std::string &letters, bool kernel,
                             bool output, bool padded) {
  std::vector<int64_t> shape;
  for (char letter : letters)
    shape.push_back(!isSpatial(letter) ? kSizes.at(letter)
                    : kernel           ? kKernel.at(letter)
                    : output           ? outputSize(letter, padded)
                                       : kSizes.at(letter));
  return shape;
}

/// The row-major offset of the point `at` (a coordinate per letter).
int64_t offsetOf(const std::string &letters, const std::vector<int64_t> &shape,
                 const std::map<char, int64_t> &at) {
  int64_t offset = 0;
  for (size_t i = 0; i < letters.size(); ++i)
    offset = offset * shape[i] + at.at(letters[i]);
  return offset;
}

/// Visits every point of `shape`, a coordinate per letter.
template <typename Fn>
void forEachPoint(const std::string &letters, const std::vector<int64_t> &shape,
                  Fn fn) {
  std::vector<int64_t> index(shape.size(), 0);
  while (true) {
    std::map<char, int64_t> at;
    for (size_t i = 0; i < letters.size(); ++i)
      at[letters[i]] = index[i];
    fn(at);
    size_t dim = shape.size();
    while (dim > 0 && ++index[dim - 1] == shape[dim - 1])
      index[--dim] = 0;
    if (dim == 0)
      return;
  }
}

class ConvFormsTest
    : public gputest::WithCudaContext<::testing::TestWithParam<std::string>> {
protected:
};

void runLayout(CudaContext &context, const std::string &name, bool padded) {
  const ConvLayout *layout = findConvLayout(name);
  ASSERT_NE(layout, nullptr);
  KernelTask task;
  task.key = task.name = "conv_" + layout->name;
  std::vector<int64_t> inShape = shapeOf(layout->input, false, false, padded);
  std::vector<int64_t> filterShape =
      shapeOf(layout->filter, true, false, padded);
  std::vector<int64_t> outShape = shapeOf(layout->output, false, true, padded);
  task.inputs = {{"x", ElementType::F32, inShape},
                 {"k", ElementType::F32, filterShape}};
  task.outputs = {{"y", ElementType::F32, outShape}};

  KernelPlan plan;
  plan.taskKey = task.key;
  plan.proposer = "baseline";
  PlanStep step;
  step.kind = PlanStep::Kind::Conv;
  step.conv.input = "x";
  step.conv.filter = "k";
  step.conv.output = "y";
  step.conv.layout = layout->name;
  step.conv.strides.clear();
  step.conv.dilations.clear();
  for (char letter : layout->spatial) {
    step.conv.strides.push_back(kStride.at(letter));
    step.conv.dilations.push_back(kDilation.at(letter));
    if (padded)
      step.conv.padding.push_back(kPadding.at(letter));
  }
  bool grouped = layout->input.find('g') != std::string::npos;
  step.conv.groups = layout->depthwise ? kSizes.at('c')
                     : grouped         ? kSizes.at('g')
                                       : 1;
  plan.steps = {step};

  std::vector<uint8_t> xb = makeRandomTensorData(task.inputs[0], 30);
  std::vector<uint8_t> kb = makeRandomTensorData(task.inputs[1], 31);
  std::vector<double> x = decodeTensorData(ElementType::F32, xb);
  std::vector<double> k = decodeTensorData(ElementType::F32, kb);

  // The reduction: the channels of a group (not for depthwise layouts) and
  // the kernel offsets, named by the spatial letters in capitals.
  std::string reduced = layout->depthwise ? "" : "c";
  std::vector<int64_t> reducedShape;
  if (!layout->depthwise)
    reducedShape.push_back(kSizes.at('c'));
  for (char letter : layout->spatial) {
    reduced += char(std::toupper(letter));
    reducedShape.push_back(kKernel.at(letter));
  }
  int64_t outCount = 1;
  for (int64_t size : outShape)
    outCount *= size;
  std::vector<double> reference(size_t(outCount), 0.0);
  forEachPoint(layout->output, outShape, [&](std::map<char, int64_t> out) {
    double sum = 0;
    forEachPoint(reduced, reducedShape, [&](std::map<char, int64_t> red) {
      std::map<char, int64_t> in = out, fl = out;
      if (!layout->depthwise)
        in['c'] = fl['c'] = red.at('c');
      for (char letter : layout->spatial) {
        int64_t offset = red.at(char(std::toupper(letter)));
        in[letter] = out.at(letter) * kStride.at(letter) +
                     offset * kDilation.at(letter) - paddingOf(letter, padded);
        fl[letter] = offset;
        // The padding: zeros, which add nothing.
        if (in[letter] < 0 || in[letter] >= kSizes.at(letter))
          return;
      }
      sum += x[size_t(offsetOf(layout->input, inShape, in))] *
             k[size_t(offsetOf(layout->filter, filterShape, fl))];
    });
    reference[size_t(offsetOf(layout->output, outShape, out))] = sum;
  });

  auto outputs = runPlan(context, task, plan, {xb, kb});
  ASSERT_TRUE(bool(outputs)) << outputs.status().message();
  std::vector<double> actual =
      decodeTensorData(ElementType::F32, (*outputs)[0]);
  ASSERT_EQ(actual.size(), reference.size());
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double bound = 1e-5 * (std::fabs(reference[i]) + 10.0);
    if (!(std::fabs(actual[i] - reference[i]) <= bound) && reported++ < 5)
      ADD_FAILURE() << layout->name << (padded ? " padded" : "") << " element "
                    << i << ": " << actual[i] << " vs " << reference[i];
  }
}

TEST_P(ConvFormsTest, MatchesLoopsOnTheHost) {
  runLayout(*context, GetParam(), /*padded=*/false);
}

TEST_P(ConvFormsTest, MatchesLoopsOnTheHostWithPadding) {
  runLayout(*context, GetParam(), /*padded=*/true);
}

std::vector<std::string> layoutNames() {
  std::vector<std::string> names;
  for (const ConvLayout &layout : getConvLayouts())
    names.push_back(layout.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Layouts, ConvFormsTest,
                         ::testing::ValuesIn(layoutNames()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

} // namespace
