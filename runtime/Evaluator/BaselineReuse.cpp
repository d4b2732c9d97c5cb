//===- BaselineReuse.cpp - Reusing the baseline's outputs -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/BaselineReuse.h"

#include "kopt/Runtime/Json.h"

#include <algorithm>

using namespace kopt::runtime;

bool BaselineSetKey::operator==(const BaselineSetKey &other) const {
  return setIndex == other.setIndex && seed == other.seed &&
         distribution == other.distribution && task == other.task &&
         plan == other.plan;
}

BaselineSetKey kopt::runtime::makeBaselineSetKey(
    const KernelTask &task, const KernelPlan &baseline, uint64_t setIndex,
    uint64_t seed, InputDistribution distribution) {
  BaselineSetKey key;
  key.task = json::write(toJson(task));
  key.plan = json::write(toJson(baseline));
  key.setIndex = setIndex;
  key.seed = seed;
  key.distribution = distribution;
  return key;
}

bool kopt::runtime::matchesKeptSets(const std::vector<KeptSetRecord> &kept,
                                    const std::vector<BaselineSetKey> &keys) {
  if (kept.empty() || kept.size() != keys.size())
    return false;
  for (size_t s = 0; s < keys.size(); ++s)
    if (kept[s].key != keys[s])
      return false;
  return true;
}

MemoryEstimate
kopt::runtime::estimateLaterRequest(const MemoryEstimate &estimate,
                                    size_t numPlans) {
  MemoryEstimate later = estimate;
  if (numPlans >= 2)
    return later;
  uint64_t more = estimate.largestRunnerBytes;
  later.runnerBytes += std::min(more, UINT64_MAX - later.runnerBytes);
  later.requestBytes += std::min(more, UINT64_MAX - later.requestBytes);
  later.neededBytes += std::min(more, UINT64_MAX - later.neededBytes);
  return later;
}

KeepDecision
kopt::runtime::decideBaselineKeeping(const MemoryEstimate &estimate,
                                     unsigned numSets, uint64_t freeBytes,
                                     size_t numPlans) {
  KeepDecision decision;
  if (numSets == 0 || estimate.outputBytes > UINT64_MAX / numSets) {
    decision.reason = "nothing to keep";
    return decision;
  }
  decision.keptBytes = estimate.outputBytes * numSets;
  MemoryEstimate later = estimateLaterRequest(estimate, numPlans);
  if (countKeptSetsUnderCap(later, numSets) < numSets) {
    std::optional<uint64_t> peak =
        estimatePeakWithKeptSets(later, numSets, numSets);
    decision.reason =
        "keeping the baseline's outputs of " + std::to_string(numSets) +
        " sets (" + formatBytes(decision.keptBytes) +
        ") would take a request's peak to " +
        (peak ? formatBytes(*peak) : std::string("more than 16 EiB")) +
        ", over " + std::to_string(kTaskMemoryMultiple) +
        " times the task's tensors (" + formatBytes(estimate.taskBytes) + ")";
    return decision;
  }
  uint64_t needed = estimate.neededBytes;
  for (uint64_t more : {estimate.largestRunnerBytes, decision.keptBytes}) {
    if (needed > UINT64_MAX - more) {
      decision.reason = "the sizes overflow";
      return decision;
    }
    needed += more;
  }
  if (needed > freeBytes) {
    decision.reason = "keeping the baseline's outputs of " +
                      std::to_string(numSets) + " sets takes " +
                      formatBytes(decision.keptBytes) + "; beside the " +
                      formatBytes(needed - decision.keptBytes) +
                      " that requests need, that is more than the " +
                      formatBytes(freeBytes) + " free";
    return decision;
  }
  decision.keep = true;
  return decision;
}

std::optional<KeptCorruption> kopt::runtime::findCorruptedKeptOutput(
    const std::vector<KeptSetRecord> &kept,
    const std::function<Result<uint64_t>(size_t set, size_t output)>
        &checksumNow) {
  for (size_t s = 0; s < kept.size(); ++s)
    for (size_t o = 0; o < kept[s].outputSums.size(); ++o) {
      Result<uint64_t> sum = checksumNow(s, o);
      if (sum && *sum == kept[s].outputSums[o])
        continue;
      KeptCorruption corruption;
      corruption.set = s;
      corruption.output = o;
      corruption.message =
          sum ? "its checksum changed since it was kept"
              : "it could not be checksummed: " + sum.status().message();
      return corruption;
    }
  return std::nullopt;
}
