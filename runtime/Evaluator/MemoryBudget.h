//===- MemoryBudget.h - Device memory an evaluation needs -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The device memory one evaluation needs, computed from the task and the
// plans before anything is allocated, so that a task that does not fit is
// refused with its sizes instead of failing with an out-of-memory error in
// the middle (docs/Evaluator.md, "Device memory"). The model follows the
// engine (Evaluator.cpp): every candidate holds one runner (the task's
// tensors and the plan's temporaries, each between redzones, plus a GEMM
// workspace); a later input set allocates the next runner before the last
// one is freed; set 0 copies a candidate's outputs once for the two-run
// check, and the baseline keeps a copy of its last outputs through timing.
// The device's L2 flush buffer (FlushedTimer.h) is counted once: every
// runner's timer shares it, and it stays allocated across requests.
//
// The baseline's outputs kept between requests (BaselineReuse.h) are kept
// only while the request's peak, without the flush buffer, stays within
// `kTaskMemoryMultiple` times the task's tensors.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_EVALUATOR_MEMORYBUDGET_H
#define KOPT_RUNTIME_EVALUATOR_MEMORYBUDGET_H

#include "kopt/Runtime/TaskPlan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kopt::runtime {

/// Device bytes kept aside for what the model does not count: the driver's
/// module images, cuBLASLt's and cuDNN's own allocations, the device checks'
/// small buffers.
constexpr uint64_t kMemoryMarginBytes = uint64_t(256) << 20;

/// The most device memory a request holds for its task, in multiples of
/// the task's inputs and outputs, not counting the device's L2 flush buffer:
/// the baseline's kept outputs never take a request's peak past it.
constexpr uint64_t kTaskMemoryMultiple = 4;

/// What one evaluation allocates at its peak.
struct MemoryEstimate {
  /// The task's inputs and outputs, once.
  uint64_t taskBytes = 0;
  /// The outputs alone.
  uint64_t outputBytes = 0;
  /// The largest runner of any plan (tensors, temporaries, redzones).
  uint64_t largestRunnerBytes = 0;
  /// Every plan's runner together.
  uint64_t runnerBytes = 0;
  /// The device's L2 flush buffer, once: a fixed cost per device, shared by
  /// every timer of the context and kept across requests.
  uint64_t flushBytes = 0;
  /// cuBLASLt's workspace when a plan has GEMM steps, once: like the flush
  /// buffer, one per context (`getSharedGemmWorkspace`), kept across
  /// requests.
  uint64_t workspaceBytes = 0;
  /// The request's own buffers at their peak: every runner, a second runner
  /// of the largest plan (a new set allocated before the last is freed) or
  /// a copy of the outputs, whichever is larger, and the baseline's copy of
  /// its outputs. What `peak_bytes` less `flush_bytes` and
  /// `gemm_workspace_bytes` measures.
  uint64_t requestBytes = 0;
  /// The peak: `requestBytes`, `flushBytes`, `workspaceBytes` and
  /// `kMemoryMarginBytes`.
  uint64_t neededBytes = 0;
};

/// The bytes a PlanRunner of `plan` for `task` allocates, with guards of
/// `redzoneBytes` on each side (the leading one rounded up to 256 bytes);
/// nullopt when a size overflows. The L2 flush buffer and the GEMM workspace
/// are the context's, not the runner's.
std::optional<uint64_t> estimateRunnerBytes(const KernelTask &task,
                                            const KernelPlan &plan,
                                            uint64_t redzoneBytes);

/// The estimate for evaluating `plans` (the baseline first) for `task`, on a
/// device whose L2 flush buffer takes `flushBytes`; nullopt when a size
/// overflows.
std::optional<MemoryEstimate>
estimateEvaluationMemory(const KernelTask &task,
                         const std::vector<KernelPlan> &plans,
                         uint64_t redzoneBytes, uint64_t flushBytes);

/// The request's own peak (`estimate.requestBytes`, no flush buffer) while
/// it also holds the baseline's kept outputs of sets 0 to `keptSets` - 1 of
/// its `numSets`: each kept set adds the outputs' bytes; with every set
/// kept the kept last set stands for the baseline's copy of its last
/// outputs, which is then not allocated. nullopt on overflow.
std::optional<uint64_t> estimatePeakWithKeptSets(const MemoryEstimate &estimate,
                                                 unsigned keptSets,
                                                 unsigned numSets);

/// How many whole sets of the baseline's outputs, set 0 first, a request of
/// `estimate` can hold with its peak (`estimatePeakWithKeptSets`) within
/// `kTaskMemoryMultiple` times the task's tensors: from 0 to `numSets`.
unsigned countKeptSetsUnderCap(const MemoryEstimate &estimate,
                               unsigned numSets);

/// Nothing when `estimate` fits in `freeBytes` of free device memory
/// beside `heldBytes` of it that the device holds already (the flush
/// buffer, once allocated); otherwise the refusal, naming the task's
/// tensors, the need and what is free.
std::optional<std::string> checkMemoryFits(const MemoryEstimate &estimate,
                                           uint64_t freeBytes,
                                           size_t numCandidates,
                                           uint64_t heldBytes = 0);

/// `bytes` for people: "1.50 GiB", "12.0 MiB", "512 B".
std::string formatBytes(uint64_t bytes);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_EVALUATOR_MEMORYBUDGET_H
