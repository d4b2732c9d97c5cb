//===- BaselineReuse.h - Reusing the baseline's outputs ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The host-side decisions behind keeping the baseline's validated outputs on
// the device across the requests of one task (docs/Evaluator.md, "Reusing
// the baseline's outputs"): what identifies the outputs of one validation
// set, whether keeping them fits the device, and whether a kept copy still
// holds the bits it was kept with. The engine (BaselineCache in
// Evaluator.h) holds the device copies; this file has no CUDA in it.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_EVALUATOR_BASELINEREUSE_H
#define KOPT_RUNTIME_EVALUATOR_BASELINEREUSE_H

#include "kopt/Runtime/Evaluator/InputGenerator.h"
#include "kopt/Runtime/Status.h"
#include "kopt/Runtime/TaskPlan.h"
#include "runtime/Evaluator/MemoryBudget.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kopt::runtime {

/// Everything that determines the baseline's outputs on one validation set:
/// the task (its `kopt.task/1` document, so names, shapes, element types
/// and tolerance), the baseline plan (its `kopt.plan/1` document: sources,
/// launches, options), and the set's index, seed and distribution, from
/// which the inputs are drawn. The documents are kept whole, so two keys are
/// equal only when all of it is (no hash to collide).
struct BaselineSetKey {
  std::string task;
  std::string plan;
  uint64_t setIndex = 0;
  uint64_t seed = 0;
  InputDistribution distribution = InputDistribution::StandardNormal;

  bool operator==(const BaselineSetKey &other) const;
  bool operator!=(const BaselineSetKey &other) const {
    return !(*this == other);
  }
};

/// The key of `baseline`'s outputs for `task` on set `setIndex`, drawn with
/// `seed` from `distribution`.
BaselineSetKey makeBaselineSetKey(const KernelTask &task,
                                  const KernelPlan &baseline, uint64_t setIndex,
                                  uint64_t seed,
                                  InputDistribution distribution);

/// What is kept of the baseline's validation of one set besides the device
/// copy of its outputs: the key and the device checksums
/// (`DeviceChecks::checksum`) of the inputs drawn and of each output.
struct KeptSetRecord {
  BaselineSetKey key;
  std::vector<uint64_t> inputSums;
  std::vector<uint64_t> outputSums;
};

/// True when `kept` holds the baseline of exactly the sets `keys` names: as
/// many sets, in order, each key equal. Anything else (another task, plan,
/// seed, distribution or number of sets) is a miss.
bool matchesKeptSets(const std::vector<KeptSetRecord> &kept,
                     const std::vector<BaselineSetKey> &keys);

/// Whether a request may keep the baseline's outputs of its `numSets` sets
/// for the requests after it.
struct KeepDecision {
  bool keep = false;
  /// The device bytes the kept copies take: every set's outputs.
  uint64_t keptBytes = 0;
  /// Why not, when `keep` is false.
  std::string reason;
};

/// The estimate of a later request of the task that `estimate` (a request
/// of `numPlans` plans) describes: a request of the baseline alone is
/// followed by the baseline beside a candidate, counted as one more runner
/// of its largest plan; a request with candidates, by one like it.
MemoryEstimate estimateLaterRequest(const MemoryEstimate &estimate,
                                    size_t numPlans);

/// Keeps every set or none (a request reuses the kept outputs only when
/// they hold every set it validates). Keeps when both hold:
/// - the cap: the later request (`estimateLaterRequest`) holding every set
///   stays within `kTaskMemoryMultiple` times the task's tensors
///   (`countKeptSetsUnderCap` is `numSets`);
/// - the free memory: the request's own peak (`estimate.neededBytes`), one
///   more runner of its largest plan and the kept copies fit in
///   `freeBytes`, the device memory free when the request started.
/// The request's own need is unchanged by keeping: the kept copies use
/// memory that is otherwise idle, and the engine frees them before a request
/// that would not fit beside them or that they would take over the cap.
KeepDecision decideBaselineKeeping(const MemoryEstimate &estimate,
                                   unsigned numSets, uint64_t freeBytes,
                                   size_t numPlans);

/// A kept output whose bits changed since it was kept.
struct KeptCorruption {
  size_t set = 0;
  size_t output = 0;
  /// What checksumming it gave now; empty when that failed.
  std::string message;
};

/// Checksums every kept output with `checksumNow(set, output)` and returns
/// the first whose checksum differs from the one recorded in `kept` (or
/// could not be taken); nothing when all hold what they were kept with.
std::optional<KeptCorruption> findCorruptedKeptOutput(
    const std::vector<KeptSetRecord> &kept,
    const std::function<Result<uint64_t>(size_t set, size_t output)>
        &checksumNow);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_EVALUATOR_BASELINEREUSE_H
