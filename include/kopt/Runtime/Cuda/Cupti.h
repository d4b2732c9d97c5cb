//===- Cupti.h - Kernel launch accounting through CUPTI ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// docs/Design.md's validation point 6: CUPTI shows that a plan's kernels
// actually ran, with the declared launch count, and that nothing else ran. A
// `LaunchRecorder` records every kernel that ran on the device between
// `start()` and `stop()` through CUPTI's Activity API
// (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); `checkPlanLaunches`
// (EvaluationChecks.h, plain host code tested without a GPU) matches such a
// record against a plan's launch steps.
//
// CUPTI is opened with dlopen, like every CUDA library of kopt: without it
// the recorder reports `StatusCode::Unavailable` and the caller decides
// whether to skip the check.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_CUPTI_H
#define KOPT_RUNTIME_CUDA_CUPTI_H

#include "kopt/Runtime/Evaluator/EvaluationChecks.h"
#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/Status.h"
#include "kopt/Runtime/TaskPlan.h"

#include <cuda.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime {

/// Records the kernels that run on the device between `start()` and
/// `stop()`. CUPTI's activity buffers are global to the process, so at most
/// one recorder exists at a time.
class LaunchRecorder {
public:
  /// Opens CUPTI (`libcupti.so.13` or `libcupti.so` through the loader's
  /// search, then the toolkit's `extras/CUPTI/lib64`, `lib64` and `lib`
  /// under `$CUDA_HOME`, `$CUDA_PATH` and `/usr/local/cuda`) and registers
  /// the activity buffer callbacks. Fails with `Unavailable` when CUPTI
  /// cannot be loaded, and with `InvalidArgument` while another recorder
  /// exists.
  static Result<std::unique_ptr<LaunchRecorder>> create();
  ~LaunchRecorder();
  LaunchRecorder(const LaunchRecorder &) = delete;
  LaunchRecorder &operator=(const LaunchRecorder &) = delete;

  /// Flushes and drops anything recorded earlier, then enables kernel
  /// activity recording. Work queued before `start()` should be finished
  /// (synchronized) first, or its kernels may appear in the record.
  Status start();
  /// Waits for the context's work (`cuCtxSynchronize` is the caller's job:
  /// call it first), flushes CUPTI's buffers, disables recording and
  /// returns the kernels that started since `start()`, ordered by start
  /// time. CUPTI may hand records over late (a forced flush does not always
  /// deliver the last kernels' records at once), so this flushes again
  /// until at least `minRecords` records of the window have arrived and two
  /// more flushes 2 ms apart bring nothing new, or half a second has
  /// passed; records of kernels that started before `start()` are dropped.
  /// Fails when CUPTI dropped records (the record would be incomplete).
  Result<std::vector<KernelActivity>> stop(size_t minRecords = 0);

private:
  LaunchRecorder() = default;
  bool recording = false;
  /// CUPTI's clock at `start()`.
  uint64_t startNs = 0;
};

/// CUPTI's id of `stream` (the `streamId` of its kernels' activities). Needs
/// CUPTI; fails with `Unavailable` without it.
Result<uint32_t> getCuptiStreamId(CUstream stream);

/// Records the kernels that `run` launches: starts `recorder`, calls `run`
/// once, stops (waiting for `minRecords` records). When `run` fails, its
/// status is returned (after stopping). The signature fits the evaluator's
/// `LaunchTracer` hook.
Result<std::vector<KernelActivity>>
recordLaunches(LaunchRecorder &recorder, const std::function<Status()> &run,
               size_t minRecords = 0);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CUDA_CUPTI_H
