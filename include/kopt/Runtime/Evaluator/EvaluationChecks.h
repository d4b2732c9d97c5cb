//===- EvaluationChecks.h - GPU-free pieces of the evaluator ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Decisions of the evaluation engine (Evaluator.h) that need no GPU, kept
// here so that they are unit-tested anywhere: checking a record of the
// kernels that ran (CUPTI's, Cupti.h) against a plan's launch steps
// (docs/Design.md's point 6), checking fp64 reference values against an output
// (point 2), and turning comparisons into evidence.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_EVALUATOR_EVALUATIONCHECKS_H
#define KOPT_RUNTIME_EVALUATOR_EVALUATIONCHECKS_H

#include "kopt/Runtime/Evaluator/Comparison.h"
#include "kopt/Runtime/Evaluator/InputGenerator.h"
#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/Protocol.h"
#include "kopt/Runtime/TaskPlan.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime {

/// The distribution whose `getDistributionName` is `name`, or std::nullopt.
std::optional<InputDistribution> parseDistributionName(std::string_view name);

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

/// The CUPTI cross-check of the event timing: the kernels' own durations in
/// one traced run against the median of the timed runs.
struct TimingCrossCheck {
  /// Sum of the recorded kernels' durations (end - start), microseconds.
  double kernelUs = 0;
  /// Event median over `kernelUs` (0 when `kernelUs` is 0).
  double ratio = 0;
  /// True when the events measured much less than the kernels took: work
  /// outside the timed stream, or a broken timer.
  bool suspicious = false;
};

/// Event timings below this fraction of the kernels' own time are
/// suspicious. Timed runs start from a flushed L2 and include launch gaps,
/// so honest plans measure at or above their traced kernels' time.
constexpr double kMinEventToKernelRatio = 0.7;

/// Compares `eventMedianUs` with the durations in `record`.
TimingCrossCheck crossCheckTiming(const std::vector<KernelActivity> &record,
                                  double eventMedianUs);

/// Checks that `reference` fits `task`: known distribution, every output
/// named once and known, indices and values of equal length, indices within
/// the output, values finite.
Status verifyReference(const KernelTask &task, const ReferenceSet &reference);

/// Compares an output's bytes (`output`, of `type`) with `reference` at its
/// sampled indices, under `tolerance` for floats and exactly for integers.
/// `reference` must have passed `verifyReference`. The mismatches' indices
/// are the output's linear indices.
ComparisonResult compareWithReference(ElementType type,
                                      const std::vector<uint8_t> &output,
                                      const OutputReference &reference,
                                      const Tolerance &tolerance);

/// The same verdict from the sampled elements alone: `samples` holds the
/// output's element at each of `reference.indices`, in that order (what
/// the engine gathers on the device instead of reading the whole output
/// back). The mismatches' indices are the output's linear indices.
ComparisonResult compareSampledWithReference(
    ElementType type, const std::vector<uint8_t> &samples,
    const OutputReference &reference, const Tolerance &tolerance);

/// True if `plan` must prove fp32 accuracy on every input set: the task's
/// precision policy is `fp32` and the plan declares an arithmetic other than
/// IEEE fp32 (`3xtf32`).
bool needsAccuracyProof(const KernelTask &task, const KernelPlan &plan);

/// The relative errors against the fp64 reference of one input set, one per
/// output the reference samples, in the reference's order.
struct ReferenceErrors {
  std::vector<std::string> outputs;
  std::vector<double> errors;
};

/// The accuracy proof of a plan `needsAccuracyProof` names, on one input
/// set: every output's error against the fp64 reference (`candidate`) is no
/// larger than the baseline's on the same set (`baseline`). A set without a
/// reference (either std::nullopt) proves nothing and fails, as does a NaN
/// error. Returns why the plan fails, or std::nullopt when it passes. Pure
/// host code.
std::optional<std::string>
judgeArithmeticAccuracy(const std::optional<ReferenceErrors> &candidate,
                        const std::optional<ReferenceErrors> &baseline);

/// A JSON number for `value`, or the string `nan`, `inf` or `-inf` (JSON has
/// no non-finite numbers).
json::Value toJsonNumber(double value);

/// Evidence of a failed comparison of output `output`: the norms, counts,
/// message and worst elements.
json::Value describeComparison(const ComparisonResult &comparison,
                               std::string_view output);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_EVALUATOR_EVALUATIONCHECKS_H
