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
#include "kopt/Runtime/Evaluator/InputGenerator.h"

#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

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

namespace {
/// An input of a validation set, drawn on demand: element i is what
/// `generateInputSet` would have drawn there, already rounded to the type.
class GeneratedInput final : public ReferenceInput {
public:
  GeneratedInput(rt::ElementType type, rt::InputDistribution distribution,
                 uint64_t seed)
      : type(type), distribution(distribution), seed(seed) {}
  void read(llvm::ArrayRef<int64_t> indices, double *values) const override {
    rt::drawValues(type, distribution, seed, indices.data(), indices.size(),
                   values);
  }

private:
  rt::ElementType type;
  rt::InputDistribution distribution;
  uint64_t seed;
};
} // namespace

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

/// The interpreter of `group`, checked against `task`.
static llvm::Expected<std::unique_ptr<ReferenceInterpreter>>
prepareInterpreter(func::FuncOp group, const KernelTask &task) {
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
  return interpreter;
}

/// The reference of set `inputSet`, evaluated by `ri` (prepared for `task`).
static llvm::Expected<rt::ReferenceSet>
evaluateSet(ReferenceInterpreter &ri, const KernelTask &task, uint64_t seed,
            unsigned maxPointsPerOutput, unsigned inputSet,
            unsigned numThreads) {
  rt::ReferenceSet reference = getReferenceSetSource(seed, inputSet);
  std::optional<rt::InputDistribution> distribution =
      findDistribution(reference.distribution);
  if (!distribution)
    return llvm::createStringError("unknown input distribution '" +
                                   reference.distribution + "'");
  // The interpreter reads the values the device reads (already rounded to
  // the storage type), so only the computation differs. Each is drawn when
  // it is read, from the stream `generateInputSet` gives the tensor.
  std::vector<GeneratedInput> inputs;
  for (auto [index, input] : llvm::enumerate(task.inputs))
    inputs.emplace_back(input.elementType, *distribution,
                        rt::deriveSeed(uint64_t(reference.seed), index));
  std::vector<const ReferenceInput *> inputPointers;
  for (const GeneratedInput &input : inputs)
    inputPointers.push_back(&input);

  for (auto [index, output] : llvm::enumerate(task.outputs)) {
    std::vector<int64_t> points = sampleOutputPoints(
        output.getNumElements().value_or(0), maxPointsPerOutput,
        rt::deriveSeed(uint64_t(reference.seed), index));
    auto values = ri.evaluatePoints(inputPointers, index, points, numThreads);
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

llvm::Expected<rt::ReferenceSet>
mlir::kopt::buildReferenceSet(func::FuncOp group, const KernelTask &task,
                              uint64_t seed, unsigned maxPointsPerOutput,
                              unsigned inputSet, unsigned numThreads) {
  auto interpreter = prepareInterpreter(group, task);
  if (!interpreter)
    return interpreter.takeError();
  return evaluateSet(**interpreter, task, seed, maxPointsPerOutput, inputSet,
                     numThreads);
}

std::vector<llvm::Expected<rt::ReferenceSet>> mlir::kopt::buildReferenceSets(
    func::FuncOp group, const KernelTask &task, uint64_t seed, unsigned numSets,
    unsigned maxPointsPerOutput, unsigned numThreads) {
  numSets = std::max(numSets, 1u);
  unsigned hardware = llvm::hardware_concurrency().compute_thread_count();
  if (numThreads == 0 || numThreads > hardware)
    numThreads = hardware;
  // One interpreter per set, prepared here (they clone the IR); then the
  // sets side by side, the threads shared among them.
  std::vector<std::unique_ptr<ReferenceInterpreter>> interpreters;
  std::vector<std::optional<rt::ReferenceSet>> references(numSets);
  std::vector<std::string> errors(numSets);
  for (unsigned set = 0; set < numSets; ++set) {
    auto interpreter = prepareInterpreter(group, task);
    if (!interpreter) {
      std::string error = llvm::toString(interpreter.takeError());
      errors.assign(numSets, error);
      interpreters.clear();
      break;
    }
    interpreters.push_back(std::move(*interpreter));
  }
  if (!interpreters.empty()) {
    unsigned concurrent = std::min(numSets, numThreads);
    unsigned threadsPerSet = std::max(1u, numThreads / concurrent);
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(concurrent));
    for (unsigned set = 0; set < numSets; ++set)
      pool.async([&, set] {
        auto reference = evaluateSet(*interpreters[set], task, seed,
                                     maxPointsPerOutput, set, threadsPerSet);
        if (reference)
          references[set] = std::move(*reference);
        else
          errors[set] = llvm::toString(reference.takeError());
      });
    pool.wait();
  }
  std::vector<llvm::Expected<rt::ReferenceSet>> results;
  for (unsigned set = 0; set < numSets; ++set) {
    if (references[set])
      results.emplace_back(std::move(*references[set]));
    else
      results.emplace_back(llvm::createStringError(errors[set]));
  }
  return results;
}
