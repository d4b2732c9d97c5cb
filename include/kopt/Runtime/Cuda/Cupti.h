//===- Cupti.h - Kernel launch accounting through CUPTI ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// DESIGN's validation point 6: CUPTI shows that a plan's kernels actually
// ran, with the declared launch count, and that nothing else ran. A
// `LaunchRecorder` records every kernel that ran on the device between
// `start()` and `stop()` through CUPTI's Activity API
// (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); `checkPlanLaunches` matches such a
// record against a plan's launch steps. The matching is plain host code and
// is tested without a GPU.
//
// CUPTI is opened with dlopen, like every CUDA library of kopt: without it
// the recorder reports `StatusCode::Unavailable` and the caller decides
// whether to skip the check.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_CUPTI_H
#define KOPT_RUNTIME_CUDA_CUPTI_H

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

/// One kernel execution as CUPTI reports it.
struct KernelActivity {
  /// The kernel's name as the module exports it: the entry itself for an
  /// `extern "C"` kernel, the mangled name otherwise.
  std::string name;
  uint32_t deviceId = 0;
  uint32_t contextId = 0;
  /// CUPTI's id of the stream (see `getCuptiStreamId`), not a CUstream.
  uint32_t streamId = 0;
  uint32_t correlationId = 0;
  /// GPU timestamps in nanoseconds.
  uint64_t startNs = 0;
  uint64_t endNs = 0;
  std::array<int32_t, 3> grid = {1, 1, 1};
  std::array<int32_t, 3> block = {1, 1, 1};
  int32_t dynamicSharedBytes = 0;
};

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
  /// returns the kernels recorded since `start()`, ordered by start time.
  /// Fails when CUPTI dropped records (the record would be incomplete).
  Result<std::vector<KernelActivity>> stop();
  /// True between `start()` and `stop()`.
  bool isRecording() const { return recording; }

private:
  LaunchRecorder() = default;
  bool recording = false;
};

/// CUPTI's id of `stream` (the `streamId` of its kernels' activities). Needs
/// CUPTI; fails with `Unavailable` without it.
Result<uint32_t> getCuptiStreamId(CUstream stream);

/// Records the kernels that `run` launches: starts `recorder`, calls `run`
/// once, stops. When `run` fails, its status is returned (after stopping).
/// The signature fits the evaluator's `LaunchTracer` hook.
Result<std::vector<KernelActivity>>
recordLaunches(LaunchRecorder &recorder, const std::function<Status()> &run);

/// True when the recorded kernel name `recorded` is kernel `entry`: equal
/// for an `extern "C"` kernel, or the Itanium mangling of a function named
/// `entry` at namespace scope (`_Z<length><entry>...`).
bool isKernelNamed(std::string_view recorded, std::string_view entry);

/// How `checkPlanLaunches` judges a record.
struct LaunchCheckOptions {
  /// How many times the plan ran while recording.
  unsigned runs = 1;
  /// The stream the plan ran on (CUPTI's id); any kernel on another stream
  /// fails the check. Unset: streams are not checked.
  std::optional<uint32_t> streamId;
};

/// The verdict of `checkPlanLaunches`.
struct LaunchCheck {
  /// True when the record matches the plan.
  bool ok = false;
  /// Why not, for people; empty when `ok`.
  std::string message;
  /// Kernels that are launch steps' entries, and the rest (library
  /// kernels, or anything undeclared).
  unsigned planKernels = 0;
  unsigned otherKernels = 0;
  /// Declared launches (`runs` times the plan's launch steps).
  unsigned expectedPlanKernels = 0;
  /// `{"expected": {entry: n}, "observed": {name: n}, "unexpected":
  /// [{name, stream, grid, block}], "library_kernels": n}`.
  json::Value evidence = json::Value::object();
};

/// Checks `record` against `plan`: each launch step's entry must have run
/// exactly as often as the plan launches it, times `options.runs`. Kernels that
/// are no launch step's entry are library kernels: allowed, in any number,
/// only when the plan has library steps (GEMM, convolution). Any kernel on a
/// stream other than `options.streamId` fails. Pure host code.
LaunchCheck checkPlanLaunches(const KernelPlan &plan,
                              const std::vector<KernelActivity> &record,
                              const LaunchCheckOptions &options = {});

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CUDA_CUPTI_H
