//===- Evaluator.cpp - Validating and timing candidate plans ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The engine works in phases, each over every candidate still valid:
//
// 1. Compile: a PlanRunner per candidate (NVRTC through the runner's
//    process-wide cache), all before anything runs or is timed.
// 2. Validate, set by set: inputs drawn on the device from the set's
//    distribution and seed; a fresh runner per candidate and set (allocated
//    before the last one is freed, so the addresses change); redzones
//    filled, outputs poisoned, inputs checksummed around every run. The
//    baseline runs first and its outputs are the reference for the set
//    (or its outputs kept by an earlier request of the task, once checked:
//    EvaluatorReuse.cpp). On
//    set 0 each candidate runs twice, with the two poison variants, which
//    also checks determinism bitwise, and once under the launch tracer when
//    one is set; the fp64 reference, when given, is checked on set 0.
// 3. Input dependence (outputs change where the baseline's change) and
//    interleaving (set 0 then the last set again on the last set's runner:
//    both agree bitwise with their first runs).
// 4. Time: warm-up by time, then the interleaved A/B schedule (5 rounds
//    only for a candidate too slow to win), one timed
//    run at a time, each from freshly poisoned outputs and temporaries and
//    checked by checksum against the candidate's validated result on the
//    same inputs (a kernel that skips work while timed fails here); outputs
//    are compared with the baseline again after the loop; then the CUPTI
//    cross-check of the times, the physical floor and suspicious speedups
//    (re-measured).
//
// `Engine::run` calls one method per phase. This file holds the driver and
// phases 1 to 3; EvaluatorTiming.cpp holds phase 4 and the copy-bandwidth
// measurement the floor divides by; EvaluatorReuse.cpp the baseline's
// outputs kept across requests; Engine.h declares what they share.
//
// The bulk checks (drawing inputs, poisoning, checksums, unwritten
// elements, comparisons) run as device kernels (DeviceChecks.h); a device
// check that finds a problem hands over to the host version, which reads
// the buffers back and writes the evidence.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Evaluator/Evaluator.h"

#include "kopt/Runtime/Cuda/CublasLt.h"
#include "kopt/Runtime/Cuda/FlushedTimer.h"
#include "kopt/Runtime/Evaluator/Comparison.h"
#include "kopt/Runtime/Evaluator/EvaluationChecks.h"
#include "kopt/Runtime/Evaluator/InputGenerator.h"
#include "runtime/Evaluator/Engine.h"
#include "runtime/Evaluator/Guards.h"

#include <algorithm>
#include <cmath>
#include <thread>

using namespace kopt::runtime;
using namespace kopt::runtime::engine;

Failure kopt::runtime::engine::makeFailure(FailedCheck check,
                                           const std::string &message) {
  Failure failure;
  failure.check = check;
  failure.evidence.set("message", json::Value(message));
  return failure;
}

void kopt::runtime::engine::fail(Candidate &candidate, Failure failure) {
  if (!candidate.isValid())
    return;
  candidate.report.valid = false;
  candidate.report.failedCheck = failure.check;
  candidate.report.evidence = std::move(failure.evidence);
  candidate.runner.reset();
}

//===----------------------------------------------------------------------===//
// The phases
//===----------------------------------------------------------------------===//

Result<std::vector<EvalReport>>
Engine::run(const std::vector<KernelPlan> &plans) {
  if (Status status = prepare(plans); !status.isOk())
    return status;
  // Compile every candidate before anything runs.
  if (!compileCandidates())
    return finish();
  // Validate input set by input set, the baseline first.
  if (!validateSets())
    return finish();
  // Outputs follow the inputs, and a set run again gives the same bits.
  if (!checkAcrossSets())
    return finish();
  // Warm up, then time the valid candidates interleaved, each run checked.
  if (!timeCandidates())
    return finish();
  // Point 7: the outputs of the last timed run against the baseline's.
  if (!compareAfterTiming())
    return finish();
  summarizeTimings();
  // Events that saw much less than CUPTI's kernel time are suspicious.
  crossCheckWithCupti();
  // Point 8: nothing may beat moving the task's bytes.
  checkPhysicalFloor();
  // Speedups over 10x are re-measured with the baseline alone.
  remeasureSpeedups();
  return finish();
}

Status Engine::prepare(const std::vector<KernelPlan> &plans) {
  if (plans.empty())
    return Status::error(StatusCode::InvalidArgument, "no candidates");
  if (options.reference)
    if (Status status = verifyReference(task, *options.reference);
        !status.isOk())
      return status;
  for (const ReferenceSet &reference : options.laterReferences)
    if (Status status = verifyReference(task, reference); !status.isOk())
      return status;
  candidates = std::vector<Candidate>(plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    candidates[i].plan = &plans[i];
    candidates[i].report.candidate = int64_t(i);
  }
  makeInputSets();
  if (Status status = checkMemory(plans); !status.isOk())
    return status;

  auto checks = DeviceChecks::create(context);
  if (!checks)
    return checks.status();
  device = std::move(*checks);
  return Status::success();
}

Status Engine::checkMemory(const std::vector<KernelPlan> &plans) {
  // The copy bandwidth (point 8) is measured once per process, with buffers
  // of its own: before the request's peak is counted. A failure shows
  // again where the floor needs it.
  if (options.bandwidthBytesPerSecond <= 0)
    (void)measureCopyBandwidth(context);
  // Kept outputs of another task are freed before anything is counted.
  dropForeignKeptOutputs();
  // Every runner's timer flushes L2 with the device's one buffer, twice the
  // L2 (FlushedTimer), kept across requests: allocated before the request's
  // bytes are counted, so that every report counts it the same way. A
  // failure shows again where a timer needs it.
  uint64_t flushBytes = uint64_t(computeL2FlushBytes(
      std::max<int64_t>(context.getDeviceInfo().l2Bytes, 0)));
  (void)prepareL2Flush(context);
  flushBytesAtStart = uint64_t(getL2FlushBytesHeld(context));
  memory =
      estimateEvaluationMemory(task, plans, kDefaultRedzoneBytes, flushBytes);
  if (!memory)
    return Status::error(StatusCode::OutOfRange,
                         "the task's tensors are too large to allocate");
  // The same for the GEMM workspace every runner of the context shares
  // (CublasLt.h): made before counting when a plan has GEMM steps.
  if (memory->workspaceBytes)
    (void)getSharedGemmWorkspace(context);
  workspaceBytesAtStart = memory->workspaceBytes
                              ? uint64_t(getSharedGemmWorkspaceBytes(context))
                              : 0;
  // Kept outputs never take the request's peak over the cap.
  dropKeptOutputsOverCap();
  bytesAtStart = DeviceBuffer::getBytesInUse();
  DeviceBuffer::resetPeakBytes();
  auto readFreeBytes = [&]() -> Status {
    if (options.freeDeviceMemory) {
      auto free = options.freeDeviceMemory();
      if (!free)
        return free.status();
      freeBytes = *free;
      return Status::success();
    }
    size_t free = 0, total = 0;
    if (Status status =
            api.check(api.cuMemGetInfo(&free, &total), "cuMemGetInfo");
        !status.isOk())
      return status;
    freeBytes = free;
    return Status::success();
  };
  if (Status status = readFreeBytes(); !status.isOk())
    return status;
  // Kept outputs never make a request refused: they go first.
  if (checkMemoryFits(*memory, freeBytes, plans.size(), getHeldAtStart()) &&
      freeKeptOutputsForMemory()) {
    bytesAtStart = DeviceBuffer::getBytesInUse();
    DeviceBuffer::resetPeakBytes();
    if (Status status = readFreeBytes(); !status.isOk())
      return status;
  }
  if (std::optional<std::string> refusal =
          checkMemoryFits(*memory, freeBytes, plans.size(), getHeldAtStart()))
    return Status::error(StatusCode::OutOfRange, *refusal);
  planBaselineOutputs();
  return Status::success();
}

bool Engine::compileCandidates() {
  // NVRTC first, every candidate on a thread of its own, into the runners'
  // compile cache; then the runners (modules, allocations) one by one.
  std::string arch = context.getDeviceInfo().getArch();
  std::vector<double> compileSeconds(candidates.size(), 0);
  std::vector<std::thread> compilers;
  for (size_t i = 0; i < candidates.size(); ++i)
    compilers.emplace_back([&, i] {
      PhaseTimer timer(compileSeconds[i]);
      // A failure shows again, with its log, when the runner is created.
      PlanRunner::precompile(arch, *candidates[i].plan, runnerOptions())
          .ignore();
    });
  for (std::thread &compiler : compilers)
    compiler.join();
  for (size_t i = 0; i < candidates.size(); ++i)
    candidates[i].phases.compileS += compileSeconds[i];
  for (Candidate &candidate : candidates) {
    PhaseTimer timer(candidate.phases.compileS);
    auto runner =
        PlanRunner::create(context, task, *candidate.plan, runnerOptions());
    if (!runner) {
      candidate.report.compileLog = runner.status().message();
      fail(candidate,
           makeFailure(FailedCheck::Compile, runner.status().message()));
      continue;
    }
    candidate.report.compiled = true;
    for (const auto &[id, compiled] : (*runner)->getCompiledSources())
      candidate.report.compileLog += compiled.log;
    candidate.runner = std::move(*runner);
  }
  if (!candidates[0].isValid()) {
    failEveryoneAfterBaseline();
    return false;
  }
  return true;
}

std::vector<EvalReport> Engine::finish() {
  settleKeptOutputs();
  double requestSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  // The baseline's kept outputs count as this request's: those held from
  // the start, or those it keeps.
  uint64_t keptBytes =
      std::max(keptBytesAtStart, keepingBaseline ? keptBytesPlanned : 0);
  // So do the device's flush buffer, reported apart too: a fixed cost per
  // device, whatever the task.
  json::Value deviceMemory = json::Value::object();
  deviceMemory.set(
      "peak_bytes",
      json::Value(
          std::max<int64_t>(0, DeviceBuffer::getPeakBytes() - bytesAtStart) +
          int64_t(keptBytesAtStart) + int64_t(getHeldAtStart())));
  deviceMemory.set("flush_bytes", json::Value(getL2FlushBytesHeld(context)));
  if (workspaceBytesAtStart)
    deviceMemory.set("gemm_workspace_bytes",
                     json::Value(int64_t(workspaceBytesAtStart)));
  if (memory) {
    deviceMemory.set("task_bytes", json::Value(memory->taskBytes));
    deviceMemory.set("estimated_bytes",
                     json::Value(memory->neededBytes + keptBytes));
  }
  if (keptBytes)
    deviceMemory.set("kept_baseline_bytes", json::Value(keptBytes));
  deviceMemory.set("free_bytes", json::Value(freeBytes));
  json::Value baselineOutputs = describeBaselineOutputs();
  std::vector<EvalReport> reports;
  for (Candidate &candidate : candidates) {
    candidate.report.valid = candidate.isValid();
    EvalPhases &phases = candidate.phases;
    phases.totalS = phases.compileS + phases.allocateS + phases.inputsS +
                    phases.runsS + phases.checksS + phases.compareS +
                    phases.referenceS + phases.timingS;
    phases.requestS = requestSeconds;
    candidate.report.phases = phases;
    candidate.report.evidence.set("device_memory", deviceMemory);
    if (!baselineOutputs.isNull())
      candidate.report.evidence.set("baseline_outputs", baselineOutputs);
    reports.push_back(std::move(candidate.report));
  }
  return reports;
}

void Engine::makeInputSets() {
  numSets = std::max(1u, options.validationSets);
  std::vector<InputDistribution> distributions =
      getValidationDistributions(numSets);
  sets.assign(numSets, InputSet());
  laterReferences.assign(numSets, nullptr);
  for (size_t s = 0; s < numSets; ++s) {
    InputSet &set = sets[s];
    set.distribution = distributions[s];
    set.seed = deriveSeed(options.seed, s);
    if (s == 0 && options.reference) {
      set.distribution =
          *parseDistributionName(options.reference->distribution);
      set.seed = uint64_t(options.reference->seed);
    }
    for (const ReferenceSet &reference : options.laterReferences)
      if (s > 0 && reference.inputSet == int64_t(s))
        laterReferences[s] = &reference;
    if (const ReferenceSet *later = laterReferences[s]) {
      set.distribution = *parseDistributionName(later->distribution);
      set.seed = uint64_t(later->seed);
    }
  }
}

bool Engine::validateSets() {
  lastSetTolerance = task.tolerance;
  // The baseline's own fp64 errors are read back only when some candidate
  // must prove its accuracy against them.
  bool needsProofs = std::any_of(candidates.begin() + 1, candidates.end(),
                                 [&](const Candidate &other) {
                                   return needsAccuracyProof(task, *other.plan);
                                 });
  // Outputs kept by an earlier request of this task stand for the
  // baseline's runs, once they are checked.
  if (reusingBaseline) {
    reusingBaseline = reuseKeptBaseline();
    if (contextLost) {
      markContextLost();
      return false;
    }
    if (!candidates[0].isValid()) {
      failEveryoneAfterBaseline();
      return false;
    }
  }
  for (size_t s = 0; s < numSets; ++s) {
    InputSet &set = sets[s];
    const ReferenceSet *laterReference = laterReferences[s];
    // The baseline's error against the fp64 reference on this set: the
    // later sets' conditioning, and the bar for plans in another
    // arithmetic than IEEE fp32 (on every set with a reference).
    std::optional<double> baselineError;
    std::optional<ReferenceErrors> baselineErrors;
    const ReferenceSet *setReference =
        s == 0 ? (options.reference ? &*options.reference : nullptr)
               : laterReference;
    json::Value tried = json::Value::object();
    tried.set("distribution",
              json::Value(getDistributionName(set.distribution)));
    tried.set("seed", json::Value(set.seed));
    setsTried.push(std::move(tried));

    for (size_t i = 0; i < candidates.size(); ++i) {
      Candidate &candidate = candidates[i];
      if (!candidate.isValid())
        continue;
      // A reused baseline does not run: its kept outputs are the set's
      // reference, checked against fp64 as its runs' outputs would be.
      bool reused = i == 0 && reusingBaseline;
      if (s > 0 && !reused) {
        // The new runner is allocated while the old one still holds its
        // memory, so the set runs at new addresses.
        PhaseTimer timer(candidate.phases.allocateS);
        auto runner =
            PlanRunner::create(context, task, *candidate.plan, runnerOptions());
        if (!runner) {
          fail(candidate,
               makeFailure(FailedCheck::Crash, runner.status().message()));
          continue;
        }
        candidate.runner = std::move(*runner);
      }
      std::optional<Failure> failure;
      if (!reused)
        failure = validateSet(candidate, s, set);
      if (failure) {
        failure->evidence.set("input_set", json::Value(s));
        fail(candidate, std::move(*failure));
      }
      // The kept outputs are the comparison's other side: a candidate's
      // runs must have left them as they were.
      if (i > 0 && reusingBaseline && !contextLost) {
        checkKeptAfterRuns(candidate, s);
        if (!candidates[0].isValid() && !contextLost) {
          failEveryoneAfterBaseline();
          return false;
        }
      }
      if (!failure && candidate.isValid()) {
        if (s == 0) {
          PhaseTimer timer(candidate.phases.referenceS);
          checkReference(candidate);
        }
        if (i == 0 && laterReference)
          baselineError = measureReferenceError(candidate, *laterReference);
        if (i == 0 && setReference && candidate.isValid() && needsProofs)
          baselineErrors = measureReferenceErrors(candidate, *setReference);
        if (i == 0 && s + 1 == numSets)
          lastSetTolerance = getSetTolerance(baselineError);
        if (i == 0 && keepingBaseline && candidate.isValid())
          keepBaselineSet(s);
        if (i > 0 && candidate.isValid())
          compareWithBaseline(candidate, s, set, candidates[0],
                              getSetTolerance(baselineError), laterReference,
                              baselineError);
        if (i > 0 && candidate.isValid() &&
            needsAccuracyProof(task, *candidate.plan))
          checkArithmetic(candidate, s, setReference, baselineErrors);
      }
      if (contextLost) {
        markContextLost();
        return false;
      }
      if (i == 0 && !candidate.isValid()) {
        failEveryoneAfterBaseline();
        return false;
      }
    }
  }
  return true;
}

bool Engine::checkAcrossSets() {
  for (size_t i = 1; i < candidates.size(); ++i)
    if (candidates[i].isValid())
      checkInputDependence(candidates[i], candidates[0]);
  for (Candidate &candidate : candidates) {
    bool baseline = &candidate == &candidates[0];
    // A reused baseline passed this check in the request that kept its
    // outputs, and ran the last set again before they were used; its
    // runner goes back to the last set if a restored set moved it.
    if (baseline && reusingBaseline) {
      returnBaselineToLastSet();
      if (contextLost) {
        markContextLost();
        return false;
      }
      continue;
    }
    if (!candidate.isValid())
      continue;
    // The baseline's last outputs are copied for the check after timing,
    // unless this request keeps them anyway.
    bool copyLast =
        baseline && !(keepingBaseline && pendingKept.size() == numSets);
    checkInterleaving(candidate, sets.front(), sets.back(), numSets - 1,
                      /*keepOutputs=*/copyLast);
    if (contextLost) {
      markContextLost();
      return false;
    }
  }
  if (!candidates[0].isValid()) {
    failEveryoneAfterBaseline();
    return false;
  }
  for (Candidate &candidate : candidates) {
    candidate.report.evidence.set("input_sets", setsTried);
    if (candidate.isValid() && &candidate != &candidates[0])
      candidate.report.evidence.set("max_rel_error",
                                    toJsonNumber(candidate.maxRelativeError));
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

std::vector<std::string> Engine::guardedTensors(const KernelPlan &plan) const {
  std::vector<std::string> names;
  for (const TensorSpec &tensor : task.inputs)
    names.push_back(tensor.name);
  for (const TensorSpec &tensor : task.outputs)
    names.push_back(tensor.name);
  for (const TensorSpec &tensor : plan.temporaries)
    names.push_back(tensor.name);
  return names;
}

/// The guard bytes of `allocation`'s leading (`trailing` false) or trailing
/// guard, as Guards.h's pattern gives them.
static std::vector<uint8_t> makeGuard(const TensorAllocation &allocation,
                                      bool trailing) {
  size_t begin =
      trailing ? allocation.bufferOffset + allocation.bufferBytes : 0;
  size_t end = trailing ? allocation.totalBytes : allocation.bufferOffset;
  std::vector<uint8_t> guard;
  guard.reserve(end - begin);
  for (size_t offset = begin; offset < end; ++offset)
    guard.push_back(getRedzoneByte(offset));
  return guard;
}

Status Engine::fillRedzones(PlanRunner &runner, const KernelPlan &plan) {
  for (const std::string &name : guardedTensors(plan)) {
    std::optional<TensorAllocation> allocation = runner.getAllocation(name);
    if (!allocation)
      continue;
    for (bool trailing : {false, true}) {
      std::vector<uint8_t> guard = makeGuard(*allocation, trailing);
      if (guard.empty())
        continue;
      CUdeviceptr at =
          allocation->base +
          (trailing ? allocation->bufferOffset + allocation->bufferBytes : 0);
      if (Status status = api.check(
              api.cuMemcpyHtoD(at, guard.data(), guard.size()), "cuMemcpyHtoD");
          !status.isOk())
        return status.withContext("redzone of '" + name + "'");
    }
  }
  return Status::success();
}

std::optional<Failure> Engine::checkRedzones(PlanRunner &runner,
                                             const KernelPlan &plan) {
  for (const std::string &name : guardedTensors(plan)) {
    std::optional<TensorAllocation> allocation = runner.getAllocation(name);
    if (!allocation)
      continue;
    for (bool trailing : {false, true}) {
      std::vector<uint8_t> expected = makeGuard(*allocation, trailing);
      if (expected.empty())
        continue;
      size_t begin =
          trailing ? allocation->bufferOffset + allocation->bufferBytes : 0;
      std::vector<uint8_t> actual(expected.size());
      if (Status status = api.check(api.cuMemcpyDtoH(actual.data(),
                                                     allocation->base + begin,
                                                     actual.size()),
                                    "cuMemcpyDtoH");
          !status.isOk())
        return makeFailure(FailedCheck::Crash, status.message());
      size_t corrupted = 0, first = 0;
      for (size_t i = 0; i < actual.size(); ++i)
        if (actual[i] != expected[i] && corrupted++ == 0)
          first = begin + i;
      if (!corrupted)
        continue;
      int64_t fromBuffer = int64_t(first) - int64_t(allocation->bufferOffset);
      Failure failure = makeFailure(
          FailedCheck::Redzone,
          "a write " +
              std::string(trailing ? "past the end of"
                                   : "before the start of") +
              " '" + name + "' (" + std::to_string(corrupted) +
              " guard bytes changed, the first at byte " +
              std::to_string(fromBuffer) + " from the buffer's start)");
      failure.evidence.set("tensor", json::Value(name));
      failure.evidence.set("offset_from_buffer", json::Value(fromBuffer));
      failure.evidence.set("corrupted_bytes", json::Value(corrupted));
      return failure;
    }
  }
  return std::nullopt;
}

Status Engine::loadInputs(PlanRunner &runner, InputSet &set) {
  bool first = set.inputSums.empty();
  for (size_t i = 0; i < task.inputs.size(); ++i) {
    const TensorSpec &input = task.inputs[i];
    CUdeviceptr at = runner.getDevicePointer(input.name);
    if (Status status =
            device->generate(at, input.elementType, getElementCount(input),
                             set.distribution, deriveSeed(set.seed, i));
        !status.isOk())
      return status;
    if (Status status = runner.markInputWritten(input.name); !status.isOk())
      return status;
    auto sum = device->checksum(at, getByteCount(input));
    if (!sum)
      return sum.status();
    if (first)
      set.inputSums.push_back(*sum);
    else if (set.inputSums[i] != *sum)
      return Status::error(StatusCode::Internal,
                           "input '" + input.name +
                               "' came out different when drawn again");
  }
  return Status::success();
}

std::optional<Failure> Engine::runChecked(Candidate &candidate, InputSet &set,
                                          unsigned variant, bool trace,
                                          std::vector<uint64_t> &outputSums) {
  PlanRunner &runner = *candidate.runner;
  const KernelPlan &plan = *candidate.plan;
  {
    PhaseTimer timer(candidate.phases.inputsS);
    if (Status status = loadInputs(runner, set); !status.isOk())
      return makeFailure(FailedCheck::Crash, status.message());
  }
  std::optional<PhaseTimer> checking(std::in_place, candidate.phases.checksS);
  for (const TensorSpec &output : task.outputs)
    if (Status status = device->fill(
            runner.getDevicePointer(output.name), getElementCount(output),
            getPoisonElement(output.elementType, variant));
        !status.isOk())
      return makeFailure(FailedCheck::Crash, status.message());
  if (Status status = fillRedzones(runner, plan); !status.isOk())
    return makeFailure(FailedCheck::Crash, status.message());

  // Point 6 wraps exactly one run, and waits for the whole context so that
  // work on other streams is in the record too; the tracer's own failure
  // skips the check. The run starts with L2 flushed, as timed runs do, so
  // CUPTI's kernel times can be set beside the events' (`timing_cross_check`).
  checking.reset();
  Status runStatus;
  std::optional<std::vector<KernelActivity>> launched;
  std::optional<PhaseTimer> running(std::in_place, candidate.phases.runsS);
  if (trace && options.launchTracer) {
    if (Status status = runner.flushL2(); !status.isOk())
      return makeFailure(FailedCheck::Crash, status.message());
    auto traced = options.launchTracer(
        [&] {
          runStatus = runner.run();
          if (runStatus.isOk())
            runStatus = api.check(api.cuCtxSynchronize(), "cuCtxSynchronize");
          return runStatus;
        },
        plan.steps.size());
    if (traced)
      launched = std::move(*traced);
    else if (runStatus.isOk())
      candidate.report.evidence.set("launch_trace_skipped",
                                    json::Value(traced.status().message()));
  } else {
    runStatus = runner.run();
  }
  running.reset();
  if (!runStatus.isOk()) {
    noteRunFailure();
    return makeFailure(FailedCheck::Crash, runStatus.message());
  }

  checking.emplace(candidate.phases.checksS);
  if (std::optional<Failure> failure = checkRedzones(runner, plan))
    return failure;
  for (size_t i = 0; i < task.inputs.size(); ++i) {
    const TensorSpec &input = task.inputs[i];
    auto after = device->checksum(runner.getDevicePointer(input.name),
                                  getByteCount(input));
    if (!after)
      return makeFailure(FailedCheck::Crash, after.status().message());
    if (*after != set.inputSums[i]) {
      Failure failure =
          makeFailure(FailedCheck::InputModified,
                      "input '" + input.name + "' changed during the run");
      failure.evidence.set("input", json::Value(input.name));
      return failure;
    }
  }
  for (const TensorSpec &output : task.outputs) {
    ElementType type = output.elementType;
    // An integer sentinel may be a legal value: those outputs are checked
    // by the two-run rule on set 0 instead.
    if (isIntegerType(type) && type != ElementType::I1)
      continue;
    auto count = device->countEqual(runner.getDevicePointer(output.name),
                                    getElementCount(output),
                                    getPoisonElement(type, variant));
    if (!count)
      return makeFailure(FailedCheck::Crash, count.status().message());
    if (*count == 0)
      continue;
    // The evidence: which elements.
    auto bytes = runner.readTensor(output.name);
    if (!bytes)
      return makeFailure(FailedCheck::Crash, bytes.status().message());
    std::vector<uint64_t> unwritten =
        findUnwrittenElements(*bytes, type, variant);
    Failure failure =
        makeFailure(FailedCheck::UnwrittenOutput,
                    std::to_string(unwritten.size()) + " elements of output '" +
                        output.name + "' were not written");
    failure.evidence.set("output", json::Value(output.name));
    failure.evidence.set("unwritten", json::Value(unwritten.size()));
    json::Value first = json::Value::array();
    for (size_t k = 0; k < unwritten.size() && k < kDefaultWorstElements; ++k)
      first.push(json::Value(unwritten[k]));
    failure.evidence.set("first_unwritten", std::move(first));
    return failure;
  }
  if (launched) {
    LaunchCheckOptions checkOptions;
    // CUPTI loaded (the trace worked), so the stream's id is known; a tracer
    // without CUPTI (a test's) leaves streams unchecked.
    if (auto streamId = getCuptiStreamId(context.getStream()))
      checkOptions.streamId = *streamId;
    LaunchCheck check = checkPlanLaunches(plan, *launched, checkOptions);
    if (!check.ok) {
      Failure failure = makeFailure(FailedCheck::LaunchCount, check.message);
      failure.evidence.set("launches", std::move(check.evidence));
      return failure;
    }
    candidate.traced = std::move(*launched);
  }
  outputSums.clear();
  for (const TensorSpec &output : task.outputs) {
    auto sum = device->checksum(runner.getDevicePointer(output.name),
                                getByteCount(output));
    if (!sum)
      return makeFailure(FailedCheck::Crash, sum.status().message());
    outputSums.push_back(*sum);
  }
  return std::nullopt;
}

Result<std::vector<DeviceBuffer>> Engine::copyOutputs(PlanRunner &runner) {
  std::vector<DeviceBuffer> copies;
  for (const TensorSpec &output : task.outputs) {
    auto copy = DeviceBuffer::allocate(
        context, std::max<int64_t>(1, int64_t(getByteCount(output))));
    if (!copy)
      return copy.status();
    if (Status status =
            device->copy(copy->get(), runner.getDevicePointer(output.name),
                         getByteCount(output));
        !status.isOk())
      return status;
    copies.push_back(std::move(*copy));
  }
  return copies;
}

/// Reads `bytes` bytes at `from` to the host.
static Result<std::vector<uint8_t>>
readDevice(const CudaDriver &api, CUdeviceptr from, uint64_t bytes) {
  std::vector<uint8_t> host(bytes);
  if (bytes)
    if (Status status = api.check(api.cuMemcpyDtoH(host.data(), from, bytes),
                                  "cuMemcpyDtoH");
        !status.isOk())
      return status;
  return host;
}

std::optional<Failure>
Engine::checkTwoRuns(Candidate &candidate,
                     const std::vector<DeviceBuffer> &first,
                     const std::vector<uint64_t> &firstSums,
                     const std::vector<uint64_t> &secondSums) {
  for (size_t i = 0; i < task.outputs.size(); ++i) {
    if (firstSums[i] == secondSums[i])
      continue;
    // The runs differ: the host compares them for the verdict's evidence.
    const TensorSpec &output = task.outputs[i];
    auto firstBytes = readDevice(api, first[i].get(), getByteCount(output));
    auto secondBytes = candidate.runner->readTensor(output.name);
    if (!firstBytes || !secondBytes)
      return makeFailure(FailedCheck::Crash,
                         "reading the outputs of two runs back failed");
    ElementType type = output.elementType;
    if (isIntegerType(type) && type != ElementType::I1) {
      std::vector<uint64_t> unwritten =
          findUnwrittenElements(*firstBytes, *secondBytes, type);
      if (!unwritten.empty()) {
        Failure failure = makeFailure(FailedCheck::UnwrittenOutput,
                                      std::to_string(unwritten.size()) +
                                          " elements of output '" +
                                          output.name + "' were not written");
        failure.evidence.set("output", json::Value(output.name));
        failure.evidence.set("unwritten", json::Value(unwritten.size()));
        return failure;
      }
    }
    RunComparison runs = compareRuns(type, *firstBytes, *secondBytes);
    if (runs.identical)
      continue;
    Failure failure =
        makeFailure(FailedCheck::Nondeterministic,
                    "two runs on the same inputs differ in output '" +
                        output.name + "': " + runs.message);
    failure.evidence.set("output", json::Value(output.name));
    failure.evidence.set("differing", json::Value(runs.numDiffering));
    return failure;
  }
  return std::nullopt;
}

std::optional<Failure> Engine::validateSet(Candidate &candidate,
                                           size_t setIndex, InputSet &set) {
  std::vector<uint64_t> sums;
  if (std::optional<Failure> failure =
          runChecked(candidate, set, /*variant=*/0, setIndex == 0, sums))
    return failure;
  if (setIndex == 0) {
    // A second run with the other poison: every element written (integers),
    // and the same bits as the first run (determinism).
    std::optional<PhaseTimer> checking(std::in_place, candidate.phases.checksS);
    auto first = copyOutputs(*candidate.runner);
    if (!first)
      return makeFailure(FailedCheck::Crash, first.status().message());
    checking.reset();
    std::vector<uint64_t> second;
    if (std::optional<Failure> failure =
            runChecked(candidate, set, /*variant=*/1, false, second))
      return failure;
    PhaseTimer timer(candidate.phases.checksS);
    if (std::optional<Failure> failure =
            checkTwoRuns(candidate, *first, sums, second))
      return failure;
  }
  candidate.outputSums.push_back(std::move(sums));
  return std::nullopt;
}

std::optional<Failure>
Engine::compareOnDevice(const std::string &output, ElementType type,
                        CUdeviceptr actual, CUdeviceptr expected,
                        uint64_t numElements, const Tolerance &tolerance,
                        double &relativeError) {
  auto sums = device->compare(type, actual, expected, numElements);
  if (!sums)
    return makeFailure(FailedCheck::Crash, sums.status().message());
  if (sums->isConclusive()) {
    ComparisonResult verdict =
        judgeComparisonSums(*sums, isIntegerType(type), tolerance);
    relativeError = verdict.relativeError;
    if (verdict.passed)
      return std::nullopt;
  }
  // A mismatch (or sums out of range): the host decides, with evidence.
  size_t bytes = size_t(numElements) * size_t(getElementBytes(type));
  auto actualBytes = readDevice(api, actual, bytes);
  auto expectedBytes = readDevice(api, expected, bytes);
  if (!actualBytes || !expectedBytes)
    return makeFailure(FailedCheck::Crash,
                       "reading outputs back for comparison failed");
  ComparisonResult comparison =
      compareOutputBytes(type, *actualBytes, *expectedBytes, tolerance);
  relativeError = comparison.relativeError;
  if (comparison.passed)
    return std::nullopt;
  Failure failure;
  failure.check = FailedCheck::OutputMismatch;
  failure.evidence = describeComparison(comparison, output);
  return failure;
}

Result<std::vector<uint8_t>>
Engine::readSamples(const Candidate &candidate, size_t outputIndex,
                    const OutputReference &reference, size_t setIndex) {
  const TensorSpec &output = task.outputs[outputIndex];
  return device->gather(getOutputPointer(candidate, outputIndex, setIndex),
                        size_t(getElementBytes(output.elementType)),
                        reference.indices);
}

std::optional<ReferenceErrors>
Engine::measureReferenceErrors(Candidate &candidate,
                               const ReferenceSet &reference) {
  PhaseTimer timer(candidate.phases.referenceS);
  ReferenceErrors errors;
  for (const OutputReference &sampled : reference.outputs) {
    size_t index = 0;
    while (task.outputs[index].name != sampled.output)
      ++index;
    auto samples =
        readSamples(candidate, index, sampled, size_t(reference.inputSet));
    if (!samples)
      return std::nullopt;
    ComparisonResult comparison = compareSampledWithReference(
        task.outputs[index].elementType, *samples, sampled, task.tolerance);
    errors.outputs.push_back(sampled.output);
    errors.errors.push_back(comparison.relativeError);
  }
  return errors;
}

std::optional<double>
Engine::measureReferenceError(Candidate &candidate,
                              const ReferenceSet &reference) {
  std::optional<ReferenceErrors> errors =
      measureReferenceErrors(candidate, reference);
  if (!errors)
    return std::nullopt;
  double worst = 0;
  for (double error : errors->errors)
    worst = std::max(worst, error);
  return worst;
}

/// The largest of `errors`, as evidence.
static json::Value worstError(const std::optional<ReferenceErrors> &errors) {
  if (!errors)
    return json::Value("unknown");
  double worst = 0;
  for (double error : errors->errors)
    worst = std::isnan(error) ? error : std::max(worst, error);
  return toJsonNumber(worst);
}

void Engine::checkArithmetic(Candidate &candidate, size_t setIndex,
                             const ReferenceSet *reference,
                             const std::optional<ReferenceErrors> &baseline) {
  std::optional<ReferenceErrors> own;
  if (reference)
    own = measureReferenceErrors(candidate, *reference);
  json::Value set = json::Value::object();
  set.set("input_set", json::Value(setIndex));
  set.set("fp64_error", worstError(own));
  set.set("baseline_fp64_error", worstError(baseline));
  std::optional<std::string> why =
      judgeArithmeticAccuracy(own, reference ? baseline : std::nullopt);
  if (!why) {
    // The numbers of every set, for the report.
    json::Value *proof = candidate.report.evidence.find("arithmetic");
    if (!proof) {
      json::Value object = json::Value::object();
      object.set("arithmetic", json::Value(candidate.plan->arithmetic));
      object.set("input_sets", json::Value::array());
      candidate.report.evidence.set("arithmetic", std::move(object));
      proof = candidate.report.evidence.find("arithmetic");
    }
    proof->find("input_sets")->push(std::move(set));
    return;
  }
  Failure failure =
      makeFailure(FailedCheck::OutputMismatch,
                  "on input set " + std::to_string(setIndex) + " the " +
                      candidate.plan->arithmetic +
                      " arithmetic does not prove fp32 accuracy: " + *why);
  failure.evidence.set("fp64_reference", json::Value(true));
  set.set("arithmetic", json::Value(candidate.plan->arithmetic));
  failure.evidence.set("arithmetic", std::move(set));
  fail(candidate, std::move(failure));
}

Tolerance Engine::getSetTolerance(std::optional<double> baselineError) const {
  // With an fp64 reference for a set, the baseline's own error sets how far
  // two honest computations may differ (ill-conditioned sets).
  Tolerance tolerance = task.tolerance;
  if (baselineError)
    tolerance.relative =
        std::max(tolerance.relative, kConditioningFactor * *baselineError);
  return tolerance;
}

void Engine::compareWithBaseline(Candidate &candidate, size_t setIndex,
                                 const InputSet &set, const Candidate &baseline,
                                 const Tolerance &tolerance,
                                 const ReferenceSet *reference,
                                 std::optional<double> baselineError) {
  bool relaxed = reference && baselineError &&
                 tolerance.relative > task.tolerance.relative;
  for (size_t o = 0; o < task.outputs.size(); ++o) {
    const TensorSpec &output = task.outputs[o];
    double relativeError = 0;
    std::optional<Failure> failure;
    {
      PhaseTimer timer(candidate.phases.compareS);
      failure =
          compareOnDevice(output.name, output.elementType,
                          candidate.runner->getDevicePointer(output.name),
                          getOutputPointer(baseline, o, setIndex),
                          getElementCount(output), tolerance, relativeError);
    }
    if (!failure) {
      candidate.maxRelativeError =
          std::max(candidate.maxRelativeError, relativeError);
      continue;
    }
    if (failure->check == FailedCheck::OutputMismatch) {
      failure->evidence.set("input_set", json::Value(setIndex));
      failure->evidence.set("distribution",
                            json::Value(getDistributionName(set.distribution)));
      failure->evidence.set("seed", json::Value(set.seed));
      if (relaxed)
        failure->evidence.set("baseline_fp64_error",
                              toJsonNumber(*baselineError));
    }
    fail(candidate, std::move(*failure));
    return;
  }
  if (!relaxed)
    return;
  // A wider tolerance against the baseline is earned only by being as
  // accurate as the baseline against the truth.
  std::optional<double> ownError = measureReferenceError(candidate, *reference);
  double allowed =
      std::max(task.tolerance.relative, kAccuracyFactor * *baselineError);
  json::Value conditioning = json::Value::object();
  conditioning.set("input_set", json::Value(setIndex));
  conditioning.set("baseline_fp64_error", toJsonNumber(*baselineError));
  conditioning.set("candidate_fp64_error",
                   ownError ? toJsonNumber(*ownError) : json::Value("unknown"));
  conditioning.set("tolerance_against_baseline",
                   toJsonNumber(tolerance.relative));
  if (ownError && *ownError <= allowed) {
    candidate.report.evidence.set("ill_conditioned_set",
                                  std::move(conditioning));
    return;
  }
  Failure failure = makeFailure(
      FailedCheck::OutputMismatch,
      "on input set " + std::to_string(setIndex) +
          " the candidate is less accurate against the fp64 reference than "
          "the baseline allows");
  failure.evidence.set("fp64_reference", json::Value(true));
  failure.evidence.set("conditioning", std::move(conditioning));
  fail(candidate, std::move(failure));
}

void Engine::checkReference(Candidate &candidate) {
  if (!options.reference)
    return;
  for (const OutputReference &reference : options.reference->outputs) {
    size_t index = 0;
    while (task.outputs[index].name != reference.output)
      ++index;
    // Only the sampled points cross to the host, not the whole output.
    auto samples = readSamples(candidate, index, reference, 0);
    if (!samples) {
      fail(candidate,
           makeFailure(FailedCheck::Crash, samples.status().message()));
      return;
    }
    ComparisonResult comparison = compareSampledWithReference(
        task.outputs[index].elementType, *samples, reference, task.tolerance);
    if (comparison.passed)
      continue;
    Failure failure;
    failure.check = FailedCheck::OutputMismatch;
    failure.evidence = describeComparison(comparison, reference.output);
    failure.evidence.set("input_set", json::Value(0));
    failure.evidence.set("fp64_reference", json::Value(true));
    fail(candidate, std::move(failure));
    return;
  }
}

void Engine::checkInputDependence(Candidate &candidate,
                                  const Candidate &baseline) {
  size_t sets =
      std::min(candidate.outputSums.size(), baseline.outputSums.size());
  for (size_t i = 0; i < task.outputs.size(); ++i)
    for (size_t s = 1; s < sets; ++s) {
      // Where the baseline's output did not change, a constant is right.
      if (baseline.outputSums[s][i] == baseline.outputSums[0][i] ||
          candidate.outputSums[s][i] != candidate.outputSums[0][i])
        continue;
      Failure failure =
          makeFailure(FailedCheck::InputIndependent,
                      "output '" + task.outputs[i].name +
                          "' is the same on input sets 0 "
                          "and " +
                          std::to_string(s) + ", where the baseline's differs");
      failure.evidence.set("output", json::Value(task.outputs[i].name));
      failure.evidence.set(
          "input_sets", json::Value::array({json::Value(0), json::Value(s)}));
      fail(candidate, std::move(failure));
      return;
    }
}

void Engine::checkInterleaving(Candidate &candidate, InputSet &first,
                               InputSet &last, size_t lastIndex,
                               bool keepOutputs) {
  // Set 0 again on the last set's buffers, then the last set again: each
  // must give the bits it gave the first time.
  for (auto [set, index] :
       {std::pair<InputSet *, size_t>{&first, 0}, {&last, lastIndex}}) {
    std::vector<uint64_t> sums;
    if (std::optional<Failure> failure =
            runChecked(candidate, *set, 0, false, sums)) {
      fail(candidate, std::move(*failure));
      return;
    }
    PhaseTimer timer(candidate.phases.checksS);
    for (size_t i = 0; i < sums.size(); ++i) {
      if (sums[i] == candidate.outputSums[index][i])
        continue;
      Failure failure =
          makeFailure(FailedCheck::Nondeterministic,
                      "output '" + task.outputs[i].name + "' of input set " +
                          std::to_string(index) +
                          " changed when the set ran again after another set");
      failure.evidence.set("output", json::Value(task.outputs[i].name));
      failure.evidence.set("interleaved", json::Value(true));
      fail(candidate, std::move(failure));
      return;
    }
  }
  if (!keepOutputs)
    return;
  PhaseTimer timer(candidate.phases.checksS);
  auto copies = copyOutputs(*candidate.runner);
  if (!copies) {
    fail(candidate, makeFailure(FailedCheck::Crash, copies.status().message()));
    return;
  }
  candidate.lastOutputs = std::move(*copies);
}

void Engine::failEveryoneAfterBaseline() {
  const EvalReport &baseline = candidates[0].report;
  for (size_t i = 1; i < candidates.size(); ++i) {
    Failure failure;
    failure.check = baseline.failedCheck;
    failure.evidence.set("baseline_failed", json::Value(true));
    failure.evidence.set("message",
                         json::Value("the baseline failed its own check, so "
                                     "nothing can be compared with it"));
    fail(candidates[i], std::move(failure));
  }
}

void Engine::markContextLost() {
  for (Candidate &candidate : candidates)
    fail(candidate,
         makeFailure(FailedCheck::Crash,
                     "the device context was lost to an earlier fault"));
}

Result<std::vector<EvalReport>>
kopt::runtime::evaluateCandidates(const CudaContext &context,
                                  const KernelTask &task,
                                  const std::vector<KernelPlan> &candidates,
                                  const EvaluatorOptions &options) {
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;
  Engine engine(context, task, options);
  return engine.run(candidates);
}
