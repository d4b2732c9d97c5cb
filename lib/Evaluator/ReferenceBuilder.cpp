//===- ReferenceBuilder.cpp - fp64 references for set 0 ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Evaluator/ReferenceBuilder.h"

#include "kopt/Codegen/ReferenceInterpreter.h"
#include "kopt/Codegen/RuntimeStatus.h"
#include "runtime/Evaluator/ElementCodec.h"
#include "runtime/Evaluator/InputGenerator.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

/// The distribution named `name`, among those the generator draws from.
static std::optional<rt::InputDistribution>
findDistribution(llvm::StringRef name) {
  for (rt::InputDistribution distribution :
       {rt::InputDistribution::StandardNormal,
        rt::InputDistribution::LargeMeanSmallSpread,
        rt::InputDistribution::WideDynamicRange,
        rt::InputDistribution::SmallIntegers})
    if (name == rt::getDistributionName(distribution))
      return distribution;
  return std::nullopt;
}

rt::ReferenceSet mlir::kopt::getReferenceSetSource(uint64_t seed,
                                                   unsigned inputSet) {
  rt::ReferenceSet reference;
  reference.inputSet = int64_t(inputSet);
  reference.distribution = rt::getDistributionName(
      rt::getValidationDistributions(inputSet + 1)[inputSet]);
  reference.seed =
      int64_t(rt::deriveSeed(seed, inputSet) & (~uint64_t(0) >> 1));
  return reference;
}

llvm::Expected<std::vector<std::vector<uint8_t>>>
mlir::kopt::generateReferenceInputs(const KernelTask &task,
                                    const rt::ReferenceSet &reference) {
  std::optional<rt::InputDistribution> distribution =
      findDistribution(reference.distribution);
  if (!distribution)
    return llvm::createStringError("unknown input distribution '" +
                                   reference.distribution + "'");
  if (reference.seed < 0)
    return llvm::createStringError("negative reference seed");
  return rt::generateInputSet(task.inputs, *distribution,
                              uint64_t(reference.seed));
}

std::vector<int64_t> mlir::kopt::sampleOutputPoints(int64_t numElements,
                                                    unsigned maxPoints,
                                                    uint64_t seed) {
  std::vector<int64_t> points;
  if (numElements <= 0)
    return points;
  maxPoints = std::max(maxPoints, 2u);
  if (numElements <= int64_t(maxPoints)) {
    for (int64_t i = 0; i < numElements; ++i)
      points.push_back(i);
    return points;
  }
  int64_t strided = maxPoints / 2;
  int64_t stride = (numElements + strided - 1) / strided;
  for (int64_t i = 0; i < numElements; i += stride)
    points.push_back(i);
  rt::SplitMix64 rng(seed);
  while (points.size() + 1 < maxPoints)
    points.push_back(rng.uniformInteger(0, numElements - 1));
  points.push_back(numElements - 1);
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  return points;
}

llvm::Expected<rt::ReferenceSet>
mlir::kopt::buildReferenceSet(func::FuncOp group, const KernelTask &task,
                              uint64_t seed, unsigned maxPointsPerOutput,
                              unsigned inputSet) {
  auto interpreter = ReferenceInterpreter::create(group);
  if (!interpreter)
    return llvm::createStringError(
        "no fp64 reference for '" + task.name +
        "': " + llvm::toString(interpreter.takeError()));
  ReferenceInterpreter &ri = **interpreter;
  if (ri.getNumInputs() != task.inputs.size() ||
      ri.getNumOutputs() != task.outputs.size())
    return llvm::createStringError("group and task '" + task.name +
                                   "' differ in their number of tensors");
  for (auto [index, input] : llvm::enumerate(task.inputs))
    if (ri.getInputNumElements(index) != input.getNumElements().value_or(0))
      return llvm::createStringError("group and task '" + task.name +
                                     "' differ in the size of input '" +
                                     input.name + "'");
  for (auto [index, output] : llvm::enumerate(task.outputs))
    if (ri.getOutputNumElements(index) != output.getNumElements().value_or(0))
      return llvm::createStringError("group and task '" + task.name +
                                     "' differ in the size of output '" +
                                     output.name + "'");

  rt::ReferenceSet reference = getReferenceSetSource(seed, inputSet);
  auto inputs = generateReferenceInputs(task, reference);
  if (!inputs)
    return inputs.takeError();
  // The interpreter reads the values the device reads (already rounded to
  // the storage type), so only the computation differs.
  std::vector<std::vector<double>> inputValues;
  for (auto [index, input] : llvm::enumerate(task.inputs))
    inputValues.push_back(
        rt::decodeElements(input.elementType, (*inputs)[index]));

  for (auto [index, output] : llvm::enumerate(task.outputs)) {
    std::vector<int64_t> points = sampleOutputPoints(
        output.getNumElements().value_or(0), maxPointsPerOutput,
        rt::deriveSeed(uint64_t(reference.seed), index));
    auto values = ri.evaluatePoints(inputValues, index, points);
    if (!values)
      return llvm::createStringError(
          "no fp64 reference for output '" + output.name +
          "': " + llvm::toString(values.takeError()));
    rt::OutputReference &out = reference.outputs.emplace_back();
    out.output = output.name;
    for (auto [point, value] : llvm::zip_equal(points, *values)) {
      if (!std::isfinite(value))
        continue;
      out.indices.push_back(point);
      out.values.push_back(value);
    }
  }
  return reference;
}
