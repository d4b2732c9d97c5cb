//===- Evaluator.h - Validating and timing candidate plans ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The GPU evaluation engine behind `kopt-worker` (docs/Design.md, "Evaluator"):
// it compiles every candidate plan of one task, validates each against the
// baseline (candidate 0) on fresh input sets with poisoned outputs, redzones
// and input checksums, checks input dependence, determinism and interleaving,
// then times the valid ones interleaved with the baseline and checks their
// outputs again after timing and their times against the physical floor.
// docs/Evaluator.md ("The evaluation engine") lists the checks in order.
//
// This is the library `KoptEvaluatorEngine` (KoptRuntimeCuda plus
// KoptEvaluatorCore); no LLVM/MLIR, no exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_EVALUATOR_EVALUATOR_H
#define KOPT_RUNTIME_EVALUATOR_EVALUATOR_H

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Evaluator/EvaluationChecks.h"
#include "kopt/Runtime/Protocol.h"
#include "kopt/Runtime/Status.h"
#include "kopt/Runtime/TaskPlan.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kopt::runtime {

namespace engine {
class Engine;
} // namespace engine

/// The baseline's validated outputs on every validation set of one task,
/// kept on the device between requests by the process that evaluates them
/// (kopt-worker holds one). A later request for the same task, baseline plan
/// and input sets (the same seed) compares its candidates with the kept
/// outputs instead of validating the baseline again; a request for anything
/// else frees them first (docs/Evaluator.md, "Reusing the baseline's
/// outputs"). Used by one evaluation at a time.
class BaselineCache {
public:
  BaselineCache();
  ~BaselineCache();
  BaselineCache(const BaselineCache &) = delete;
  BaselineCache &operator=(const BaselineCache &) = delete;

  /// Frees every kept output.
  void clear();
  /// The validation sets kept (0 when none).
  size_t getNumSets() const;
  /// The device bytes the kept outputs take.
  uint64_t getBytes() const;
  /// The device address of the kept copy of output `output` (in the task's
  /// order) on set `set`, 0 when there is none. For inspection: the tests
  /// corrupt one and see it refused.
  CUdeviceptr getOutput(size_t set, size_t output) const;

private:
  friend class engine::Engine;
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Runs one plan execution (enqueue, synchronize) and returns its status.
using PlanExecution = std::function<Status()>;

/// The hook for docs/Design.md's validation point 6 (CUPTI). When set, the
/// engine calls it once per validated candidate with one execution of the plan
/// and the number of kernels the plan declares at the least (one per step); the
/// tracer must call `run` exactly once and return every kernel that ran on
/// the device while it did, in launch order (`recordLaunches` with a
/// `LaunchRecorder`, Cupti.h, does, waiting for at least that many records
/// to arrive). The engine judges the record with
/// `checkPlanLaunches` on the context's stream. An error from the tracer
/// itself (CUPTI missing) skips the check and is noted in the evidence as
/// `launch_trace_skipped`; the run's own failure is reported as the run's
/// failure.
using LaunchTracer = std::function<Result<std::vector<KernelActivity>>(
    const PlanExecution &run, size_t expectedLaunches)>;

/// On a set with a later fp64 reference: a candidate may differ from the
/// baseline by this many times the baseline's own relative error against
/// the reference (two honest computations each off by e differ by up to
/// about 2e; the rest is margin)...
constexpr double kConditioningFactor = 4.0;
/// ...provided its own error against the reference is at most this many
/// times the baseline's: no less accurate than the baseline, within noise.
constexpr double kAccuracyFactor = 2.0;

/// How `evaluateCandidates` works. (Named apart from the protocol's
/// `EvaluateOptions`, from which the worker fills it.)
struct EvaluatorOptions {
  /// Input sets each candidate is validated on (at least 1; docs/Design.md asks
  /// for 5).
  unsigned validationSets = 5;
  /// Timed repetitions per candidate, after warm-up.
  unsigned repetitions = 20;
  /// Warm-up by time before timing, in milliseconds.
  double warmupMs = 25;
  /// The largest speedup over the baseline that a valid candidate of this
  /// task reached in an earlier request (1 or less: none). A candidate at
  /// least twice as slow in warm-up as the baseline, or as this incumbent,
  /// cannot win and is timed `kCutRepetitions` times (the timing cut,
  /// docs/Evaluator.md).
  double incumbentSpeedup = 0;
  /// Seeds the input generator; the sets of one evaluation are derived from
  /// it, so the same seed gives the same inputs.
  uint64_t seed = 0;
  /// fp64 reference values for set 0: when present, set 0's inputs are drawn
  /// with its seed and distribution, and every candidate (the baseline too)
  /// must match the reference at its sampled points within the tolerance.
  std::optional<ReferenceSet> reference;
  /// fp64 reference values for later sets (each names its set): such a set
  /// is drawn with the reference's seed and distribution, the baseline's
  /// relative error against the reference (at its sampled points) is
  /// measured, and a candidate may differ from the baseline by up to
  /// `kConditioningFactor` times that error (at least the task's
  /// tolerance), provided its own error against the reference is at most
  /// `kAccuracyFactor` times the baseline's (or within the tolerance). On
  /// well-conditioned sets nothing changes; on ill-conditioned ones, honest
  /// summation orders no longer fail against the baseline's rounding.
  std::vector<ReferenceSet> laterReferences;
  /// Point 6: when set, wraps one validation run of each candidate; a kernel
  /// that was not declared (library kernels aside), a declared kernel that
  /// ran a different number of times, or a kernel on another stream fails
  /// the candidate with `launch-count`.
  LaunchTracer launchTracer;
  /// Device memory bandwidth in bytes per second for the physical floor; 0
  /// measures it once per process and device with a device-to-device copy.
  double bandwidthBytesPerSecond = 0;
  /// Treat NVRTC warnings as compile errors.
  bool warningsAsErrors = false;
  /// The free device memory in bytes; unset asks the driver
  /// (`cuMemGetInfo`). A request whose estimated peak does not fit is
  /// refused (tests make the device look small through this).
  std::function<Result<uint64_t>()> freeDeviceMemory;
  /// Where the baseline's validated outputs are kept between requests;
  /// null validates the baseline in every request. Each report's
  /// `evidence.baseline_outputs` says whether they were reused or kept.
  BaselineCache *baselineCache = nullptr;
};

/// Evaluates `candidates[0]` (the baseline) and `candidates[1..]` for `task`
/// on `context`: one EvalReport per candidate, in order, with `candidate`
/// set to its index. One candidate's failure (compile error, wrong output,
/// fault) is recorded in its report and never fails the call; the call fails
/// only when the task itself cannot be evaluated (no candidates, a tensor
/// too large to allocate on the host, a task whose evaluation would not fit
/// the free device memory: `OutOfRange`, naming the sizes). A baseline that
/// fails validation makes every other candidate fail too, with the baseline's
/// check and `evidence.baseline_failed`, since nothing can be compared with it.
/// A sticky device fault (an illegal address) poisons the context: the
/// remaining candidates then fail as `crash` and the worker should exit.
Result<std::vector<EvalReport>>
evaluateCandidates(const CudaContext &context, const KernelTask &task,
                   const std::vector<KernelPlan> &candidates,
                   const EvaluatorOptions &options);

/// The device-to-device copy bandwidth of `context`'s device in bytes per
/// second (read plus write bytes per second), measured on the first call per
/// device ordinal and cached for the process.
Result<double> measureCopyBandwidth(const CudaContext &context);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_EVALUATOR_EVALUATOR_H
