//===- Engine.h - The evaluation of one request -----------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Private to runtime/Evaluator. The engine behind `evaluateCandidates`: the
// candidates in flight and one method per phase of their evaluation.
// Evaluator.cpp drives the phases and holds compilation and validation;
// EvaluatorTiming.cpp holds timing and the checks made on the times.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_EVALUATOR_ENGINE_H
#define KOPT_RUNTIME_EVALUATOR_ENGINE_H

#include "kopt/Runtime/Evaluator/Evaluator.h"

#include "kopt/Runtime/Cuda/Cupti.h"
#include "kopt/Runtime/Cuda/PlanRunner.h"
#include "kopt/Runtime/Evaluator/InputGenerator.h"
#include "runtime/Evaluator/BaselineReuse.h"
#include "runtime/Evaluator/DeviceChecks.h"
#include "runtime/Evaluator/Guards.h"
#include "runtime/Evaluator/MemoryBudget.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kopt::runtime::engine {

/// Why a run failed its candidate.
struct Failure {
  FailedCheck check = FailedCheck::None;
  json::Value evidence = json::Value::object();
};

/// How one input set is drawn, and the device checksums of its inputs
/// (filled by the first draw).
struct InputSet {
  InputDistribution distribution = InputDistribution::StandardNormal;
  uint64_t seed = 0;
  std::vector<uint64_t> inputSums;
};

/// The baseline's kept outputs of one validation set, with what they were
/// kept with.
struct KeptSet {
  KeptSetRecord record;
  std::vector<DeviceBuffer> outputs;
};

/// One candidate in flight.
struct Candidate {
  const KernelPlan *plan = nullptr;
  EvalReport report;
  /// The runner of the current set (after validation: of the last set).
  std::unique_ptr<PlanRunner> runner;
  /// Device checksums of each output, per set.
  std::vector<std::vector<uint64_t>> outputSums;
  /// Device copies of the outputs of the last set (the baseline's only,
  /// unless its kept outputs hold them), for the check after timing.
  std::vector<DeviceBuffer> lastOutputs;
  /// Largest relative error against the baseline over all sets.
  double maxRelativeError = 0;
  std::vector<double> times;
  /// The kernels of the traced run (point 6), for the timing cross-check.
  std::optional<std::vector<KernelActivity>> traced;
  double clockSum = 0, temperatureSum = 0;
  unsigned clockCount = 0, temperatureCount = 0;
  /// Where its evaluation's time went (the report's `phases`).
  EvalPhases phases;

  bool isValid() const { return report.failedCheck == FailedCheck::None; }
};

/// Adds the wall time of its scope, in seconds, to a phase of
/// `EvalPhases`.
class PhaseTimer {
public:
  explicit PhaseTimer(double &seconds)
      : seconds(seconds), start(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() {
    seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  }
  PhaseTimer(const PhaseTimer &) = delete;
  PhaseTimer &operator=(const PhaseTimer &) = delete;

private:
  double &seconds;
  std::chrono::steady_clock::time_point start;
};

/// A failure of check `check` with evidence `{"message": message}`.
Failure makeFailure(FailedCheck check, const std::string &message);

/// Fails `candidate` with `failure`, unless it failed already; frees its
/// runner.
void fail(Candidate &candidate, Failure failure);

/// The number of elements of `tensor` (0 when the count overflows).
inline uint64_t getElementCount(const TensorSpec &tensor) {
  return uint64_t(tensor.getNumElements().value_or(0));
}

/// The size of `tensor` in bytes (0 when it overflows).
inline uint64_t getByteCount(const TensorSpec &tensor) {
  return uint64_t(tensor.getBytes().value_or(0));
}

/// The evaluation of one request.
class Engine {
public:
  Engine(const CudaContext &context, const KernelTask &task,
         const EvaluatorOptions &options)
      : context(context), api(context.getDriver()), task(task),
        options(options) {}

  /// Evaluates `plans` (the baseline first), one report each, in order.
  Result<std::vector<EvalReport>> run(const std::vector<KernelPlan> &plans);

private:
  // The phases, in the order `run` calls them. Those that return a bool
  // return false when the evaluation ends there: the baseline failed (and
  // everyone with it) or the device context was lost.

  /// Checks the request and sets up the candidates and the device checks.
  Status prepare(const std::vector<KernelPlan> &plans);
  /// Refuses a request whose estimated peak does not fit the free device
  /// memory (MemoryBudget.h); starts counting the request's peak.
  Status checkMemory(const std::vector<KernelPlan> &plans);
  /// 1. Compiles every candidate before anything runs.
  bool compileCandidates();
  /// The input sets: seeds, distributions and later references.
  void makeInputSets();
  /// 2. Validates input set by input set, the baseline first.
  bool validateSets();
  /// 3. Checks input dependence and interleaving, then records the sets.
  bool checkAcrossSets();
  /// 4. Warms up and times the valid candidates on the interleaved schedule.
  bool timeCandidates();
  /// 5. Compares the outputs of the last timed run with the baseline's.
  bool compareAfterTiming();
  /// Summarises the times of every candidate timed.
  void summarizeTimings();
  /// 6. Cross-checks the event times against CUPTI's kernel durations.
  void crossCheckWithCupti();
  /// 7. Fails candidates faster than the physical floor.
  void checkPhysicalFloor();
  /// 8. Re-measures suspicious speedups and sets every speedup.
  void remeasureSpeedups();
  /// The reports, each marked valid or not, with its phases and the
  /// request's device memory.
  std::vector<EvalReport> finish();

  // What the phases share.
  PlanRunnerOptions runnerOptions() const {
    PlanRunnerOptions runner;
    runner.warningsAsErrors = options.warningsAsErrors;
    runner.redzoneBytes = kDefaultRedzoneBytes;
    return runner;
  }
  std::vector<std::string> guardedTensors(const KernelPlan &plan) const;
  Status fillRedzones(PlanRunner &runner, const KernelPlan &plan);
  std::optional<Failure> checkRedzones(PlanRunner &runner,
                                       const KernelPlan &plan);
  Status loadInputs(PlanRunner &runner, InputSet &set);
  std::optional<Failure> runChecked(Candidate &candidate, InputSet &set,
                                    unsigned variant, bool trace,
                                    std::vector<uint64_t> &outputSums);
  std::optional<Failure> checkTwoRuns(Candidate &candidate,
                                      const std::vector<DeviceBuffer> &first,
                                      const std::vector<uint64_t> &firstSums,
                                      const std::vector<uint64_t> &secondSums);
  std::optional<Failure> validateSet(Candidate &candidate, size_t setIndex,
                                     InputSet &set);
  std::optional<Failure> compareOnDevice(const std::string &output,
                                         ElementType type, CUdeviceptr actual,
                                         CUdeviceptr expected,
                                         uint64_t numElements,
                                         const Tolerance &tolerance,
                                         double &relativeError);
  Tolerance getSetTolerance(std::optional<double> baselineError) const;
  void compareWithBaseline(Candidate &candidate, size_t setIndex,
                           const InputSet &set, const Candidate &baseline,
                           const Tolerance &tolerance,
                           const ReferenceSet *reference,
                           std::optional<double> baselineError);
  std::optional<double> measureReferenceError(Candidate &candidate,
                                              const ReferenceSet &reference);
  std::optional<ReferenceErrors>
  measureReferenceErrors(Candidate &candidate, const ReferenceSet &reference);
  /// `candidate`'s elements of output `outputIndex` at `reference`'s
  /// sampled indices, gathered on the device.
  Result<std::vector<uint8_t>> readSamples(const Candidate &candidate,
                                           size_t outputIndex,
                                           const OutputReference &reference,
                                           size_t setIndex);
  /// A plan in another arithmetic than IEEE fp32 under the `fp32` policy:
  /// on set `setIndex`, no output less accurate against `reference` than
  /// the baseline's `baseline` errors (judgeArithmeticAccuracy).
  void checkArithmetic(Candidate &candidate, size_t setIndex,
                       const ReferenceSet *reference,
                       const std::optional<ReferenceErrors> &baseline);
  void checkReference(Candidate &candidate);
  void checkInputDependence(Candidate &candidate, const Candidate &baseline);
  void checkInterleaving(Candidate &candidate, InputSet &first, InputSet &last,
                         size_t lastIndex, bool keepOutputs);
  Result<std::vector<DeviceBuffer>> copyOutputs(PlanRunner &runner);

  // Reusing the baseline's outputs across requests (EvaluatorReuse.cpp).
  /// The keys of the baseline's outputs on this request's sets.
  std::vector<BaselineSetKey> getBaselineKeys() const;
  /// Frees kept outputs of another task, plan or seed before the request's
  /// memory is counted.
  void dropForeignKeptOutputs();
  /// Frees kept outputs that would take this request's peak (without the
  /// flush buffer) over `kTaskMemoryMultiple` times the task's tensors.
  void dropKeptOutputsOverCap();
  /// Frees the kept outputs so that the request fits; false when there were
  /// none.
  bool freeKeptOutputsForMemory();
  /// Decides whether this request reuses the kept outputs or keeps its own.
  void planBaselineOutputs();
  /// Checks the kept outputs (checksums, inputs, the baseline once on the
  /// last set) before they are used; false when they are not (the note says
  /// why, or the baseline failed its run).
  bool reuseKeptBaseline();
  /// Copies the baseline's outputs of set `setIndex` to be kept.
  void keepBaselineSet(size_t setIndex);
  /// Checks, after `candidate`'s runs on set `setIndex`, that every kept
  /// output still has its checksum; a change is the candidate's write
  /// outside its buffers (it fails, `redzone`), and the sets changed are
  /// restored by running the baseline on them again.
  void checkKeptAfterRuns(Candidate &candidate, size_t setIndex);
  /// The kept sets whose outputs no longer have their checksums.
  std::vector<size_t> findChangedKeptSets();
  /// Runs the baseline on set `setIndex` again, with every check of a
  /// validation run, and copies its outputs over the kept ones; fails the
  /// baseline when its outputs are not the kept bits.
  void restoreKeptSet(size_t setIndex);
  /// Leaves the baseline's runner holding the last set, as timing needs,
  /// after a restored set moved it.
  void returnBaselineToLastSet();
  /// Hands the kept outputs to the cache, or frees them, at the end.
  void settleKeptOutputs();
  /// Adds `note` to what the reports say of the kept outputs.
  void noteBaselineOutputs(const std::string &note) {
    baselineOutputsNote += (baselineOutputsNote.empty() ? "" : "; ") + note;
  }
  /// The report's `baseline_outputs` evidence.
  json::Value describeBaselineOutputs() const;
  /// Where `candidate`'s output `outputIndex` of set `setIndex` is: the
  /// kept copy for a reused baseline, else the candidate's runner.
  CUdeviceptr getOutputPointer(const Candidate &candidate, size_t outputIndex,
                               size_t setIndex) const;
  /// The baseline's outputs of the last set, for the check after timing.
  CUdeviceptr getBaselineLastOutput(size_t outputIndex) const;
  Status timeRound(const std::vector<Candidate *> &timed, unsigned rounds);
  std::optional<Failure> poisonBeforeTimedRun(Candidate &candidate,
                                              uint64_t runSeed);
  std::optional<Failure> checkTimedRun(Candidate &candidate, size_t runIndex);
  void failEveryoneAfterBaseline();
  void markContextLost();

  /// Checks the context after a failed run: a sticky fault (an illegal
  /// address) leaves it unusable for every later candidate.
  void noteRunFailure() {
    if (api.cuCtxSynchronize() != CUDA_SUCCESS)
      contextLost = true;
  }

  const CudaContext &context;
  const CudaDriver &api;
  const KernelTask &task;
  const EvaluatorOptions &options;
  std::unique_ptr<DeviceChecks> device;
  bool contextLost = false;
  /// Timed runs so far, over every candidate: seeds each run's poison.
  uint64_t timedRuns = 0;

  // The state carried from phase to phase.
  std::vector<Candidate> candidates;
  unsigned numSets = 1;
  /// The input sets, and each later set's fp64 reference (null when none).
  std::vector<InputSet> sets;
  std::vector<const ReferenceSet *> laterReferences;
  /// The tolerance against the baseline on the last set, for point 7.
  Tolerance lastSetTolerance;
  json::Value setsTried = json::Value::array();
  /// The candidates timed, the baseline first.
  std::vector<Candidate *> variants;
  unsigned repetitions = 1;
  /// When the request started, and the device bytes held then.
  std::chrono::steady_clock::time_point started =
      std::chrono::steady_clock::now();
  int64_t bytesAtStart = 0;
  std::optional<MemoryEstimate> memory;
  uint64_t freeBytes = 0;
  /// The device's L2 flush buffer, held from before the request's bytes
  /// were counted (0 when it could not be allocated then).
  uint64_t flushBytesAtStart = 0;
  /// The context's shared GEMM workspace, held from before the request's
  /// bytes were counted (0 without GEMM steps or when it could not be
  /// allocated then).
  uint64_t workspaceBytesAtStart = 0;
  /// The device's fixed buffers the estimate counts and the device already
  /// holds: the flush buffer and the GEMM workspace.
  uint64_t getHeldAtStart() const {
    return flushBytesAtStart + workspaceBytesAtStart;
  }
  /// The device memory free to this request: what the device has free and
  /// the fixed buffers it already holds, which the estimate counts.
  uint64_t getFreeToRequest() const { return freeBytes + getHeldAtStart(); }

  /// The task's memory floor (its bytes at the copy bandwidth), set by
  /// checkPhysicalFloor; 0 when the bandwidth is unknown.
  double floorUs = 0;

  // The baseline's outputs across requests (options.baselineCache).
  /// This request compares with the kept outputs instead of validating the
  /// baseline on every set.
  bool reusingBaseline = false;
  /// This request keeps the baseline's outputs for the requests after it.
  bool keepingBaseline = false;
  /// What this request is keeping, set by set, until it ends.
  std::vector<KeptSet> pendingKept;
  /// The kept bytes held when the request started, and those it keeps.
  uint64_t keptBytesAtStart = 0, keptBytesPlanned = 0;
  /// Why the kept outputs were not used or not kept (empty when they were).
  std::string baselineOutputsNote;
  /// The set whose inputs the reused baseline's runner holds.
  size_t baselineRunnerSet = 0;
  /// A candidate wrote into the kept outputs: they are freed at the end.
  bool keptOverwritten = false;
};

} // namespace kopt::runtime::engine

namespace kopt::runtime {
/// The state behind BaselineCache (Evaluator.h).
struct BaselineCache::Impl {
  std::vector<engine::KeptSet> sets;
};
} // namespace kopt::runtime

#endif // KOPT_RUNTIME_EVALUATOR_ENGINE_H
