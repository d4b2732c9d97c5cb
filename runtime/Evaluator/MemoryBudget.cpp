//===- MemoryBudget.cpp - Device memory an evaluation needs -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/MemoryBudget.h"

#include <algorithm>
#include <cstdio>

using namespace kopt::runtime;

/// cuBLASLt's workspace, one per context, shared by the runners with GEMM
/// steps (CublasLt.h's `kWorkspaceBytes`, which this core library cannot
/// include).
static constexpr uint64_t kGemmWorkspaceBytes = uint64_t(32) << 20;

/// `a + b`, or nullopt on overflow.
static std::optional<uint64_t> add(std::optional<uint64_t> a, uint64_t b) {
  if (!a || *a > UINT64_MAX - b)
    return std::nullopt;
  return *a + b;
}

/// The bytes of `tensors`, or nullopt when one's size is unknown.
static std::optional<uint64_t> sumBytes(const std::vector<TensorSpec> &tensors,
                                        uint64_t perTensor) {
  std::optional<uint64_t> total = 0;
  for (const TensorSpec &tensor : tensors) {
    std::optional<int64_t> bytes = tensor.getBytes();
    if (!bytes)
      return std::nullopt;
    total = add(add(total, uint64_t(*bytes)), perTensor);
  }
  return total;
}

std::optional<uint64_t> kopt::runtime::estimateRunnerBytes(
    const KernelTask &task, const KernelPlan &plan, uint64_t redzoneBytes) {
  uint64_t guards = (redzoneBytes + 255) / 256 * 256 + redzoneBytes;
  std::optional<uint64_t> total = 0;
  for (const std::vector<TensorSpec> *list :
       {&task.inputs, &task.outputs, &plan.temporaries}) {
    std::optional<uint64_t> bytes = sumBytes(*list, guards);
    if (!bytes)
      return std::nullopt;
    total = add(total, *bytes);
  }
  return total;
}

static bool hasGemmStep(const KernelPlan &plan) {
  return std::any_of(
      plan.steps.begin(), plan.steps.end(),
      [](const PlanStep &step) { return step.kind == PlanStep::Kind::Gemm; });
}

std::optional<MemoryEstimate> kopt::runtime::estimateEvaluationMemory(
    const KernelTask &task, const std::vector<KernelPlan> &plans,
    uint64_t redzoneBytes, uint64_t flushBytes) {
  MemoryEstimate estimate;
  std::optional<uint64_t> inputs = sumBytes(task.inputs, 0);
  std::optional<uint64_t> outputs = sumBytes(task.outputs, 0);
  if (!inputs || !outputs || !add(inputs, *outputs))
    return std::nullopt;
  estimate.taskBytes = *inputs + *outputs;
  estimate.outputBytes = *outputs;
  std::optional<uint64_t> runners = 0;
  for (const KernelPlan &plan : plans) {
    std::optional<uint64_t> runner =
        estimateRunnerBytes(task, plan, redzoneBytes);
    if (!runner)
      return std::nullopt;
    estimate.largestRunnerBytes =
        std::max(estimate.largestRunnerBytes, *runner);
    runners = add(runners, *runner);
  }
  if (!runners)
    return std::nullopt;
  estimate.runnerBytes = *runners;
  std::optional<uint64_t> request = add(
      add(runners, std::max(estimate.largestRunnerBytes, *outputs)), *outputs);
  if (std::any_of(plans.begin(), plans.end(), hasGemmStep))
    estimate.workspaceBytes = kGemmWorkspaceBytes;
  std::optional<uint64_t> needed =
      add(add(add(request, flushBytes), estimate.workspaceBytes),
          kMemoryMarginBytes);
  if (!needed)
    return std::nullopt;
  estimate.flushBytes = flushBytes;
  estimate.requestBytes = *request;
  estimate.neededBytes = *needed;
  return estimate;
}

std::optional<uint64_t>
kopt::runtime::estimatePeakWithKeptSets(const MemoryEstimate &estimate,
                                        unsigned keptSets, unsigned numSets) {
  if (keptSets == 0)
    return estimate.requestBytes;
  if (estimate.outputBytes > UINT64_MAX / keptSets)
    return std::nullopt;
  std::optional<uint64_t> peak =
      add(estimate.requestBytes, estimate.outputBytes * keptSets);
  // Every set kept: the kept last set is the baseline's copy of its last
  // outputs, which the request's own buffers count.
  if (peak && keptSets >= numSets)
    *peak -= std::min(*peak, estimate.outputBytes);
  return peak;
}

unsigned kopt::runtime::countKeptSetsUnderCap(const MemoryEstimate &estimate,
                                              unsigned numSets) {
  if (estimate.taskBytes > UINT64_MAX / kTaskMemoryMultiple)
    return 0;
  uint64_t cap = estimate.taskBytes * kTaskMemoryMultiple;
  // Not monotone at the end: keeping every set frees the last-output copy.
  for (unsigned keptSets = numSets; keptSets > 0; --keptSets) {
    std::optional<uint64_t> peak =
        estimatePeakWithKeptSets(estimate, keptSets, numSets);
    if (peak && *peak <= cap)
      return keptSets;
  }
  return 0;
}

std::optional<std::string>
kopt::runtime::checkMemoryFits(const MemoryEstimate &estimate,
                               uint64_t freeBytes, size_t numCandidates,
                               uint64_t heldBytes) {
  heldBytes = std::min(heldBytes, estimate.neededBytes);
  if (estimate.neededBytes - heldBytes <= freeBytes)
    return std::nullopt;
  std::string held;
  if (heldBytes)
    held = ", of which the device holds " + formatBytes(heldBytes) + " already";
  return "the task does not fit the device: its tensors take " +
         formatBytes(estimate.taskBytes) + ", evaluating " +
         std::to_string(numCandidates) + " candidate" +
         (numCandidates == 1 ? "" : "s") + " needs " +
         formatBytes(estimate.neededBytes) + " of device memory (" +
         formatBytes(estimate.runnerBytes) + " for the candidates' buffers, " +
         formatBytes(estimate.flushBytes) + " for the L2 flush buffer" +
         (estimate.workspaceBytes
              ? ", " + formatBytes(estimate.workspaceBytes) +
                    " for the GEMM workspace"
              : std::string()) +
         held + "), and " + formatBytes(freeBytes) + " is free";
}

std::string kopt::runtime::formatBytes(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t(1) << 30))
    std::snprintf(text, sizeof(text), "%.2f GiB",
                  double(bytes) / double(uint64_t(1) << 30));
  else if (bytes >= (uint64_t(1) << 20))
    std::snprintf(text, sizeof(text), "%.1f MiB",
                  double(bytes) / double(uint64_t(1) << 20));
  else if (bytes >= 1024)
    std::snprintf(text, sizeof(text), "%.1f KiB", double(bytes) / 1024.0);
  else
    std::snprintf(text, sizeof(text), "%llu B", (unsigned long long)bytes);
  return text;
}
