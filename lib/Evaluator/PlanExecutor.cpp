//===- PlanExecutor.cpp - Check and time a group's plans --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Evaluator/PlanExecutor.h"

#include "kopt/Codegen/ReferenceInterpreter.h"
#include "kopt/Codegen/RuntimeStatus.h"
#include "kopt/Runtime/Cuda/PlanRunner.h"
#include "kopt/Runtime/Cuda/TensorData.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <random>

using namespace mlir;
using namespace mlir::kopt;

namespace rt = ::kopt::runtime;

llvm::Expected<std::unique_ptr<PlanExecutor>>
PlanExecutor::create(unsigned repetitions) {
  auto context = rt::CudaContext::create(0);
  if (!context)
    return toLlvmError(context.status());
  auto executor = std::unique_ptr<PlanExecutor>(new PlanExecutor());
  executor->context = std::move(*context);
  // At least 20 timed repetitions, or none at all (check only).
  executor->repetitions = repetitions == 0 ? 0 : std::max(repetitions, 20u);
  return executor;
}

namespace {
/// How one plan did.
struct PlanResult {
  bool ran = false;
  bool valid = false;
  std::string error;
  double relativeError = 0;
  double maxAbsError = 0;
  rt::PlanTiming timing;
};
} // namespace

/// Sampled output points: all of a small output, else an even stride plus
/// random points, about 4096 in all.
static std::vector<int64_t> samplePoints(int64_t count, std::mt19937_64 &rng) {
  std::vector<int64_t> points;
  if (count <= 4096) {
    for (int64_t i = 0; i < count; ++i)
      points.push_back(i);
    return points;
  }
  int64_t stride = count / 2048;
  for (int64_t i = 0; i < count; i += stride)
    points.push_back(i);
  std::uniform_int_distribution<int64_t> pick(0, count - 1);
  for (int i = 0; i < 2048; ++i)
    points.push_back(pick(rng));
  points.push_back(count - 1);
  return points;
}

bool PlanExecutor::runGroup(func::FuncOp func, const KernelTask &task,
                            llvm::ArrayRef<KernelPlan> plans,
                            llvm::raw_ostream &os) {
  auto interpreter = ReferenceInterpreter::create(func);
  if (!interpreter) {
    os << "    reference: " << llvm::toString(interpreter.takeError()) << "\n";
    return false;
  }
  // Standard-normal inputs first. Some groups are ill-conditioned on them
  // (a reciprocal of a sum of normals near zero, say): then even the
  // baseline disagrees with the fp64 reference, and the check says nothing
  // about the candidates, so the inputs are drawn again from a positive
  // range, and the report says so.
  std::vector<PlanResult> results;
  std::vector<std::unique_ptr<rt::PlanRunner>> runners;
  // The runtime runs plans; it takes its own copies of the task and plans.
  rt::KernelTask runtimeTask = task;
  std::vector<rt::KernelPlan> runtimePlans;
  for (const KernelPlan &plan : plans)
    runtimePlans.push_back(plan);
  for (const char *distribution : {"normal(0, 1)", "uniform(0.5, 2)"}) {
    std::mt19937_64 rng(0x6b6f7074);
    bool normal = llvm::StringRef(distribution).starts_with("normal");
    std::vector<std::vector<uint8_t>> inputs;
    std::vector<std::vector<double>> inputValues;
    for (const TensorSpec &input : task.inputs) {
      if (normal) {
        inputs.push_back(rt::makeRandomTensorData(input, rng()));
      } else {
        std::uniform_real_distribution<double> uniform(0.5, 2.0);
        std::vector<double> values(size_t(input.getNumElements().value_or(0)));
        for (double &value : values)
          value = uniform(rng);
        inputs.push_back(rt::encodeTensorData(input.elementType, values));
      }
      // The reference reads the values the device reads (rounded to the
      // storage type), so only the computation differs.
      inputValues.push_back(
          rt::decodeTensorData(input.elementType, inputs.back()));
    }
    std::vector<std::vector<int64_t>> points;
    std::vector<std::vector<double>> expected;
    for (auto [index, output] : llvm::enumerate(task.outputs)) {
      points.push_back(samplePoints(output.getNumElements().value_or(0), rng));
      auto values =
          (*interpreter)->evaluatePoints(inputValues, index, points.back());
      if (!values) {
        os << "    reference: " << llvm::toString(values.takeError()) << "\n";
        return false;
      }
      expected.push_back(std::move(*values));
    }

    results.assign(plans.size(), PlanResult());
    runners.clear();
    runners.resize(plans.size());
    for (size_t index = 0; index < plans.size(); ++index) {
      PlanResult &result = results[index];
      auto runner =
          rt::PlanRunner::create(*context, runtimeTask, runtimePlans[index]);
      if (!runner) {
        result.error = runner.status().message();
        continue;
      }
      rt::Status status = (*runner)->setInputs(inputs);
      if (status.isOk())
        status = (*runner)->run();
      if (!status.isOk()) {
        result.error = status.message();
        continue;
      }
      auto outputs = (*runner)->readOutputs();
      if (!outputs) {
        result.error = outputs.status().message();
        continue;
      }
      result.ran = true;
      // Relative error norm over the sampled points, per output; the worst.
      result.valid = true;
      for (auto [o, output] : llvm::enumerate(task.outputs)) {
        std::vector<double> actual =
            rt::decodeTensorData(output.elementType, (*outputs)[o]);
        double diff = 0, norm = 0;
        for (auto [p, point] : llvm::enumerate(points[o])) {
          double ref = expected[o][p];
          double got = actual[point];
          double d = std::fabs(got - ref);
          if (std::isnan(got) != std::isnan(ref))
            d = INFINITY;
          else if (std::isnan(got))
            d = 0;
          diff += d * d;
          norm += ref * ref;
          result.maxAbsError = std::max(result.maxAbsError, d);
        }
        double relative = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
        result.relativeError = std::max(result.relativeError, relative);
        if (!(relative <= task.tolerance.relative ||
              std::sqrt(diff / points[o].size()) <= task.tolerance.absolute))
          result.valid = false;
      }
      runners[index] = std::move(*runner);
    }
    if (results.front().valid || !normal)
      break;
    os << "    the baseline disagrees with the fp64 reference on "
       << distribution << " inputs (relative error "
       << llvm::formatv("{0:e1}", results.front().relativeError)
       << "): ill-conditioned there; drawing uniform(0.5, 2) inputs\n";
  }

  // Time: every valid plan, then the baseline again, so drift between the
  // first and last baseline runs is visible.
  // Without timing (a check under a memory or race checker), stop here.
  std::vector<size_t> order;
  for (size_t i = 0; i < plans.size() && repetitions > 0; ++i)
    if (runners[i])
      order.push_back(i);
  rt::PlanTiming baselineAgain;
  bool timedAgain = false;
  for (size_t i : order) {
    auto timing = runners[i]->timePlan(repetitions, 20.0);
    if (!timing) {
      results[i].error = timing.status().message();
      results[i].valid = false;
      continue;
    }
    results[i].timing = *timing;
  }
  if (!order.empty() && order.front() == 0) {
    auto timing = runners[0]->timePlan(repetitions, 5.0);
    if (timing) {
      baselineAgain = *timing;
      timedAgain = true;
    }
  }

  int64_t bytes = 0;
  for (const TensorSpec &tensor : task.inputs)
    bytes += tensor.getBytes().value_or(0);
  for (const TensorSpec &tensor : task.outputs)
    bytes += tensor.getBytes().value_or(0);
  double baseline = results.front().timing.medianUs;
  if (timedAgain)
    baseline = std::min(baseline, baselineAgain.medianUs) > 0
                   ? 0.5 * (baseline + baselineAgain.medianUs)
                   : baseline;
  bool allOk = true;
  os << llvm::formatv("    {0,-9} {1,-20} {2,9} {3,10} {4,10} {5,9} {6,8}\n",
                      "proposer", "variant", "rel.err", "median us", "min us",
                      "GB/s", "speedup");
  for (auto [index, plan] : llvm::enumerate(plans)) {
    const PlanResult &result = results[index];
    if (!result.ran || !result.error.empty()) {
      os << "    " << plan.proposer << " " << plan.variant
         << ": FAILED: " << result.error << "\n";
      allOk = false;
      continue;
    }
    double median = result.timing.medianUs;
    os << llvm::formatv("    {0,-9} {1,-20} {2,9:e1} {3,10:f2} {4,10:f2} "
                        "{5,9:f0} {6,7:f2}x{7}\n",
                        plan.proposer, plan.variant, result.relativeError,
                        median, result.timing.minUs,
                        median > 0 ? bytes / median / 1e3 : 0.0,
                        median > 0 ? baseline / median : 0.0,
                        result.valid ? "" : "  INVALID (over tolerance)");
    if (!result.valid)
      allOk = false;
    llvm::json::Object line{{"group", task.name},
                            {"key", task.key},
                            {"proposer", plan.proposer},
                            {"variant", plan.variant},
                            {"valid", result.valid},
                            {"relative_error", result.relativeError},
                            {"median_us", median},
                            {"min_us", result.timing.minUs},
                            {"p10_us", result.timing.p10Us},
                            {"p90_us", result.timing.p90Us},
                            {"repetitions", result.timing.repetitions},
                            {"bytes", bytes},
                            {"baseline_median_us", baseline}};
    llvm::errs() << "KOPT-RESULT " << llvm::json::Value(std::move(line))
                 << "\n";
  }
  if (timedAgain)
    os << llvm::formatv("    baseline timed again last: {0:f2} us median "
                        "(first {1:f2} us)\n",
                        baselineAgain.medianUs,
                        results.front().timing.medianUs);
  return allOk;
}
