//===- AutotunerImpl.h - The autotuner's state ------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Autotune. The state behind Autotuner (Autotuner.h), shared
// by Autotuner.cpp (set-up, lookups, replay, tagging) and GroupTuning.cpp
// (tuning one group), with the helpers both use.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_AUTOTUNE_AUTOTUNERIMPL_H
#define KOPT_LIB_AUTOTUNE_AUTOTUNERIMPL_H

#include "kopt/Autotune/Autotuner.h"
#include "kopt/Autotune/Proposer.h"
#include "kopt/Autotune/Replay.h"
#include "kopt/Codegen/KernelTask.h"
#include "kopt/Evaluator/WorkerPool.h"
#include "kopt/Runtime/TuningQueue.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mlir::kopt {

/// The limits of one group's tuning.
struct TuneLimits {
  /// When it ends; none for no limit.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  /// Whether attempts that an earlier, stopped run stored for the task are
  /// taken instead of being measured again.
  bool resume = false;
};

/// The device one group is looked up, tuned and stored for: the pool's
/// worker it holds from its lookup to its end (given back on destruction),
/// so that all its candidates are timed on one GPU and its records carry
/// that GPU's fingerprint. Without a worker (no tuning here), the
/// autotuner's fingerprint.
struct GroupDevice {
  GroupDevice() = default;
  GroupDevice(const GroupDevice &) = delete;
  GroupDevice &operator=(const GroupDevice &) = delete;
  ~GroupDevice() {
    if (pool)
      pool->release(worker);
  }

  /// The pool `worker` is held from, or null for none.
  WorkerPool *pool = nullptr;
  size_t worker = 0;
  /// Null without a GPU and without a target: every lookup misses.
  const ::kopt::runtime::DeviceFingerprint *fingerprint = nullptr;
};

struct Autotuner::Impl {
  AutotuneOptions options;
  std::unique_ptr<::kopt::runtime::KernelDatabase> database;
  /// The tuning queue, with `--tune=enqueue`.
  std::unique_ptr<::kopt::runtime::TuningQueue> queue;
  /// Device 0's fingerprint, or the target's without a GPU.
  std::optional<::kopt::runtime::DeviceFingerprint> fingerprint;
  /// Every device's, one per worker of `pool`; empty without a GPU.
  std::vector<::kopt::runtime::DeviceFingerprint> deviceFingerprints;
  bool device = false;
  std::string noDeviceReason;
  /// One worker per device, made (not started) with a GPU.
  std::unique_ptr<WorkerPool> pool;
  int64_t nextRequestId = 1;
  /// The replay file, with `--replay`.
  std::unique_ptr<ReplaySource> replay;
  /// The proposers, one factory per name; the baseline's first.
  std::vector<std::unique_ptr<ProposerFactory>> proposers;
  /// Held by `processGroup` except around evaluations.
  std::mutex mutex;

  /// Tunes `group` on `device` within `limits`; `lock` (held) is released
  /// while the workers evaluate. An outcome without a chosen plan when the
  /// budget ran out before the baseline was measured.
  llvm::Expected<GroupOutcome> tune(func::FuncOp group, const KernelTask &task,
                                    GroupOutcome outcome,
                                    const TuneLimits &limits,
                                    GroupDevice &device,
                                    std::unique_lock<std::mutex> &lock);
  /// The evaluation request for `plans` (plans[0] the baseline), with fresh
  /// inputs and the fp64 references; a missing reference is noted in `note`.
  ::kopt::runtime::EvaluateMessage
  makeRequest(func::FuncOp group, const KernelTask &task,
              const std::vector<const KernelPlan *> &plans, std::string &note);
  /// Numbers `request` and has `device`'s worker evaluate it within
  /// `timeout`; `lock` (held) is released meanwhile. When the worker dies,
  /// the request goes once more to another worker of the same fingerprint,
  /// which `device` then holds, and `note` says so.
  llvm::Expected<std::vector<::kopt::runtime::EvalReport>>
  sendRequest(::kopt::runtime::EvaluateMessage &request,
              std::chrono::milliseconds timeout, const std::string &function,
              GroupDevice &device, std::string &note,
              std::unique_lock<std::mutex> &lock);
  /// Stores one attempt, measured on a device of fingerprint `measuredOn`: a
  /// plan with its report and how that came about, or (`report` null) an
  /// answer refused for `failure`; `exchange` for the LLM's attempts.
  llvm::Error storeAttempt(const KernelTask &task,
                           const ::kopt::runtime::DeviceFingerprint &measuredOn,
                           const KernelPlan *plan, llvm::StringRef proposer,
                           const ::kopt::runtime::EvalReport *report,
                           const ReportOrigin *origin, llvm::StringRef failure,
                           const ::kopt::runtime::json::Value &exchange);
  llvm::Error chooseTarget();
  llvm::Error chooseReplayTarget();
  llvm::Expected<std::optional<::kopt::runtime::KernelRecord>>
  replayTask(const std::string &taskKey, bool &wrote);
};

/// An error with `message`.
inline llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// `status` as an error, after `context`.
inline llvm::Error toError(const ::kopt::runtime::Status &status,
                           const llvm::Twine &context) {
  return makeError(context + ": " + status.message());
}

/// The plan of the stored `record` when a build can use it for `task`: it
/// reads, is for the task, and passes `verifyStoredPlan`.
llvm::Expected<::kopt::runtime::KernelPlan>
getUsablePlan(const ::kopt::runtime::KernelRecord &record,
              const ::kopt::runtime::KernelTask &task);

/// Tags `group` with `plan` and gives `outcome` the choice: the plan of
/// `record`, stored under `fingerprint`, or (`record` null) the baseline of
/// a miss.
void choosePlan(func::FuncOp group, const KernelTask &task,
                const ::kopt::runtime::KernelPlan &plan,
                const ::kopt::runtime::KernelRecord *record,
                const ::kopt::runtime::DeviceFingerprint *fingerprint,
                GroupOutcome &outcome);

} // namespace mlir::kopt

#endif // KOPT_LIB_AUTOTUNE_AUTOTUNERIMPL_H
