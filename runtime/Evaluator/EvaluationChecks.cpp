//===- EvaluationChecks.cpp - GPU-free pieces of the evaluator --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Evaluator/EvaluationChecks.h"

#include "kopt/Runtime/Evaluator/ElementCodec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

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

bool kopt::runtime::isKernelNamed(std::string_view recorded,
                                  std::string_view entry) {
  if (entry.empty())
    return false;
  if (recorded == entry)
    return true;
  // `_Z<length><name>` followed by the parameter types.
  std::string prefix = "_Z" + std::to_string(entry.size()) + std::string(entry);
  return recorded.size() > prefix.size() &&
         recorded.substr(0, prefix.size()) == prefix;
}

static json::Value describeKernel(const KernelActivity &kernel) {
  json::Value object = json::Value::object();
  object.set("name", kernel.name);
  object.set("stream", static_cast<int64_t>(kernel.streamId));
  json::Value grid = json::Value::array();
  json::Value block = json::Value::array();
  for (int i = 0; i < 3; ++i) {
    grid.push(static_cast<int64_t>(kernel.grid[i]));
    block.push(static_cast<int64_t>(kernel.block[i]));
  }
  object.set("grid", std::move(grid));
  object.set("block", std::move(block));
  return object;
}

TimingCrossCheck
kopt::runtime::crossCheckTiming(const std::vector<KernelActivity> &record,
                                double eventMedianUs) {
  TimingCrossCheck check;
  for (const KernelActivity &kernel : record)
    if (kernel.endNs > kernel.startNs)
      check.kernelUs += double(kernel.endNs - kernel.startNs) * 1e-3;
  if (check.kernelUs <= 0)
    return check;
  check.ratio = eventMedianUs / check.kernelUs;
  check.suspicious = check.ratio < kMinEventToKernelRatio;
  return check;
}

LaunchCheck
kopt::runtime::checkPlanLaunches(const KernelPlan &plan,
                                 const std::vector<KernelActivity> &record,
                                 const LaunchCheckOptions &options) {
  LaunchCheck check;
  // Declared launches per entry, in the plan's order of first appearance.
  std::vector<std::pair<std::string, unsigned>> expected;
  bool hasLibrarySteps = false;
  for (const PlanStep &step : plan.steps) {
    if (step.kind != PlanStep::Kind::Launch) {
      hasLibrarySteps = true;
      continue;
    }
    auto found =
        std::find_if(expected.begin(), expected.end(), [&](const auto &entry) {
          return entry.first == step.launch.entry;
        });
    if (found == expected.end())
      expected.emplace_back(step.launch.entry, options.runs);
    else
      found->second += options.runs;
    check.expectedPlanKernels += options.runs;
  }

  std::map<std::string, unsigned> observedByEntry;
  std::map<std::string, unsigned> observedByName;
  json::Value unexpected = json::Value::array();
  std::vector<std::string> problems;
  bool otherStream = false;
  for (const KernelActivity &kernel : record) {
    ++observedByName[kernel.name];
    if (options.streamId && kernel.streamId != *options.streamId) {
      if (!otherStream)
        problems.push_back("kernel '" + kernel.name + "' ran on stream " +
                           std::to_string(kernel.streamId) +
                           ", not on the plan's stream " +
                           std::to_string(*options.streamId));
      otherStream = true;
      unexpected.push(describeKernel(kernel));
    }
    auto entry =
        std::find_if(expected.begin(), expected.end(), [&](const auto &item) {
          return isKernelNamed(kernel.name, item.first);
        });
    if (entry != expected.end()) {
      ++observedByEntry[entry->first];
      ++check.planKernels;
      continue;
    }
    ++check.otherKernels;
    if (!hasLibrarySteps) {
      if (check.otherKernels == 1)
        problems.push_back("kernel '" + kernel.name +
                           "' ran but is no launch step of the plan, which "
                           "has no library steps");
      unexpected.push(describeKernel(kernel));
    }
  }
  for (const auto &[entry, count] : expected) {
    unsigned observed = observedByEntry[entry];
    if (observed != count)
      problems.push_back("entry '" + entry + "' ran " +
                         std::to_string(observed) + " times, the plan " +
                         "declares " + std::to_string(count));
  }
  if (hasLibrarySteps && check.otherKernels == 0)
    problems.push_back("the plan has library steps but no library kernel ran");

  json::Value expectedJson = json::Value::object();
  for (const auto &[entry, count] : expected)
    expectedJson.set(entry, static_cast<int64_t>(count));
  json::Value observedJson = json::Value::object();
  for (const auto &[name, count] : observedByName)
    observedJson.set(name, static_cast<int64_t>(count));
  check.evidence.set("expected", std::move(expectedJson));
  check.evidence.set("observed", std::move(observedJson));
  check.evidence.set("unexpected", std::move(unexpected));
  check.evidence.set(
      "library_kernels",
      static_cast<int64_t>(hasLibrarySteps ? check.otherKernels : 0));
  check.ok = problems.empty();
  for (const std::string &problem : problems)
    check.message += (check.message.empty() ? "" : "; ") + problem;
  if (!check.ok)
    check.evidence.set("reason", check.message);
  return check;
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

/// The smallest magnitude that rounds to infinity in `type` (round to
/// nearest even: the largest finite value plus half its ulp); infinity for
/// f64 and the integer types.
static double getOverflowThreshold(ElementType type) {
  switch (type) {
  case ElementType::F16:
    return 65520.0; // 65504 + 2^4
  case ElementType::BF16:
    return std::ldexp(255.5, 120); // (2 - 2^-7) 2^127 + 2^119
  case ElementType::F32:
    return std::ldexp(16777215.5, 104); // (2 - 2^-23) 2^127 + 2^103
  default:
    return std::numeric_limits<double>::infinity();
  }
}

ComparisonResult kopt::runtime::compareSampledWithReference(
    ElementType type, const std::vector<uint8_t> &samples,
    const OutputReference &reference, const Tolerance &tolerance) {
  size_t elementBytes = size_t(getElementBytes(type));
  ComparisonResult result;
  if (isIntegerType(type)) {
    std::vector<int64_t> actual, expected;
    for (size_t i = 0; i < reference.indices.size(); ++i) {
      actual.push_back(
          decodeIntegerElement(type, samples.data() + i * elementBytes));
      expected.push_back(int64_t(std::llround(reference.values[i])));
    }
    result = compareIntegers(actual, expected);
  } else {
    std::vector<double> actual;
    for (size_t i = 0; i < reference.indices.size(); ++i)
      actual.push_back(decodeElement(type, samples.data() + i * elementBytes));
    // A reference beyond the type's range is what the type holds: an
    // infinity (a mask times the lowest f32 overflows in every f32 plan).
    std::vector<double> expected = reference.values;
    double threshold = getOverflowThreshold(type);
    for (double &value : expected)
      if (std::fabs(value) >= threshold)
        value = std::copysign(std::numeric_limits<double>::infinity(), value);
    result = compareValues(actual, expected, tolerance);
  }
  // The comparison numbered the sampled points; report output indices.
  for (ElementMismatch &mismatch : result.worst)
    mismatch.index = uint64_t(reference.indices[size_t(mismatch.index)]);
  return result;
}

ComparisonResult kopt::runtime::compareWithReference(
    ElementType type, const std::vector<uint8_t> &output,
    const OutputReference &reference, const Tolerance &tolerance) {
  size_t elementBytes = size_t(getElementBytes(type));
  std::vector<uint8_t> samples;
  samples.reserve(reference.indices.size() * elementBytes);
  for (int64_t index : reference.indices) {
    const uint8_t *element = output.data() + size_t(index) * elementBytes;
    samples.insert(samples.end(), element, element + elementBytes);
  }
  return compareSampledWithReference(type, samples, reference, tolerance);
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

bool kopt::runtime::needsAccuracyProof(const KernelTask &task,
                                       const KernelPlan &plan) {
  return task.precision == "fp32" && plan.arithmetic != "fp32";
}

std::optional<std::string> kopt::runtime::judgeArithmeticAccuracy(
    const std::optional<ReferenceErrors> &candidate,
    const std::optional<ReferenceErrors> &baseline) {
  if (!candidate || !baseline)
    return std::string("the input set has no fp64 reference to prove the "
                       "plan's accuracy against");
  if (candidate->outputs != baseline->outputs ||
      candidate->errors.size() != candidate->outputs.size() ||
      baseline->errors.size() != baseline->outputs.size())
    return std::string("the fp64 errors of the plan and of the baseline "
                       "cover different outputs");
  for (size_t i = 0; i < candidate->errors.size(); ++i) {
    double own = candidate->errors[i], base = baseline->errors[i];
    // NaN compares false: it never proves anything.
    if (own <= base)
      continue;
    std::ostringstream message;
    message.precision(3);
    message << "output '" << candidate->outputs[i]
            << "' is less accurate than the baseline against the fp64 "
               "reference: relative error "
            << own << ", baseline " << base;
    return message.str();
  }
  return std::nullopt;
}
