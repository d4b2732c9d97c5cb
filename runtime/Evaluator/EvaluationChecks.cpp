//===- EvaluationChecks.cpp - GPU-free pieces of the evaluator --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/EvaluationChecks.h"

#include "runtime/Evaluator/ElementCodec.h"

#include <cmath>
#include <map>
#include <set>

using namespace kopt::runtime;

std::optional<InputDistribution>
kopt::runtime::parseDistributionName(std::string_view name) {
  for (InputDistribution distribution :
       {InputDistribution::StandardNormal,
        InputDistribution::LargeMeanSmallSpread,
        InputDistribution::WideDynamicRange, InputDistribution::SmallIntegers})
    if (name == getDistributionName(distribution))
      return distribution;
  return std::nullopt;
}

std::string
kopt::runtime::checkLaunches(const KernelPlan &plan,
                             const std::vector<std::string> &launched) {
  std::map<std::string, int64_t> declared;
  bool hasLibrarySteps = false;
  for (const PlanStep &step : plan.steps) {
    if (step.kind == PlanStep::Kind::Launch)
      ++declared[step.launch.entry];
    else
      hasLibrarySteps = true;
  }
  std::map<std::string, int64_t> ran;
  for (const std::string &name : launched)
    ++ran[name];
  for (const auto &[entry, count] : declared) {
    int64_t actual = ran.count(entry) ? ran[entry] : 0;
    if (actual != count)
      return "kernel '" + entry + "' ran " + std::to_string(actual) +
             " times; the plan declares " + std::to_string(count);
  }
  if (!hasLibrarySteps)
    for (const auto &[name, count] : ran)
      if (!declared.count(name))
        return "kernel '" + name + "' ran " + std::to_string(count) +
               " times; the plan does not declare it";
  return "";
}

Status kopt::runtime::verifyReference(const KernelTask &task,
                                      const ReferenceSet &reference) {
  auto invalid = [](std::string message) {
    return Status::error(StatusCode::InvalidArgument,
                         "reference: " + std::move(message));
  };
  if (!parseDistributionName(reference.distribution))
    return invalid("unknown distribution '" + reference.distribution + "'");
  if (reference.seed < 0)
    return invalid("the seed must be at least 0");
  std::set<std::string> seen;
  for (const OutputReference &output : reference.outputs) {
    const TensorSpec *spec = nullptr;
    for (const TensorSpec &candidate : task.outputs)
      if (candidate.name == output.output)
        spec = &candidate;
    if (!spec)
      return invalid("the task has no output '" + output.output + "'");
    if (!seen.insert(output.output).second)
      return invalid("output '" + output.output + "' is named twice");
    if (output.indices.size() != output.values.size())
      return invalid("output '" + output.output + "' has " +
                     std::to_string(output.indices.size()) + " indices and " +
                     std::to_string(output.values.size()) + " values");
    int64_t numElements = spec->getNumElements().value_or(0);
    for (int64_t index : output.indices)
      if (index < 0 || index >= numElements)
        return invalid("index " + std::to_string(index) + " is outside '" +
                       output.output + "' (" + std::to_string(numElements) +
                       " elements)");
    for (double value : output.values)
      if (!std::isfinite(value))
        return invalid("output '" + output.output +
                       "' has a value that is not finite");
  }
  return Status::success();
}

ComparisonResult kopt::runtime::compareWithReference(
    ElementType type, const std::vector<uint8_t> &output,
    const OutputReference &reference, const Tolerance &tolerance) {
  size_t elementBytes = size_t(getElementBytes(type));
  ComparisonResult result;
  if (isIntegerType(type)) {
    std::vector<int64_t> actual, expected;
    for (size_t i = 0; i < reference.indices.size(); ++i) {
      size_t offset = size_t(reference.indices[i]) * elementBytes;
      actual.push_back(decodeIntegerElement(type, output.data() + offset));
      expected.push_back(int64_t(std::llround(reference.values[i])));
    }
    result = compareIntegers(actual, expected);
  } else {
    std::vector<double> actual;
    for (int64_t index : reference.indices)
      actual.push_back(
          decodeElement(type, output.data() + size_t(index) * elementBytes));
    result = compareValues(actual, reference.values, tolerance);
  }
  // The comparison numbered the sampled points; report output indices.
  for (ElementMismatch &mismatch : result.worst)
    mismatch.index = uint64_t(reference.indices[size_t(mismatch.index)]);
  return result;
}

json::Value kopt::runtime::toJsonNumber(double value) {
  if (std::isnan(value))
    return json::Value("nan");
  if (std::isinf(value))
    return json::Value(value > 0 ? "inf" : "-inf");
  return json::Value(value);
}

json::Value
kopt::runtime::describeComparison(const ComparisonResult &comparison,
                                  std::string_view output) {
  json::Value evidence = json::Value::object();
  evidence.set("output", json::Value(output));
  evidence.set("message", json::Value(comparison.message));
  evidence.set("rel_error", toJsonNumber(comparison.relativeError));
  evidence.set("rms_error", toJsonNumber(comparison.rmsError));
  evidence.set("elements", json::Value(comparison.numElements));
  evidence.set("differing", json::Value(comparison.numDiffering));
  evidence.set("special_mismatches",
               json::Value(comparison.numSpecialMismatches));
  json::Value worst = json::Value::array();
  for (const ElementMismatch &mismatch : comparison.worst) {
    json::Value item = json::Value::object();
    item.set("index", json::Value(mismatch.index));
    item.set("expected", toJsonNumber(mismatch.expected));
    item.set("actual", toJsonNumber(mismatch.actual));
    item.set("abs_error", toJsonNumber(mismatch.absError));
    worst.push(std::move(item));
  }
  evidence.set("worst", std::move(worst));
  return evidence;
}
