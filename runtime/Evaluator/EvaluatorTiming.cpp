//===- EvaluatorTiming.cpp - Timing candidate plans -------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Phase 4 of the engine (Evaluator.cpp lists the phases): timing the
// baseline and the valid candidates interleaved, every timed run from
// freshly poisoned outputs and checked by checksum, a candidate that cannot
// win only briefly (the timing cut); the comparison with the
// baseline after the loop; the CUPTI cross-check of the times; the physical
// floor, with the copy bandwidth it divides by; and the re-measurement of
// suspicious speedups.
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/Engine.h"

#include "kopt/Runtime/Cuda/Nvml.h"
#include "kopt/Runtime/Evaluator/EvaluationChecks.h"
#include "runtime/Evaluator/PhysicalFloor.h"
#include "runtime/Evaluator/TimingStats.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <mutex>

using namespace kopt::runtime;
using namespace kopt::runtime::engine;

/// `2.0x`, for messages.
static std::string formatSlowdown(double slowdown) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1fx", slowdown);
  return text;
}

/// Keeps the poison of timed runs apart from the input sets' seeds.
constexpr uint64_t kTimedPoisonSalt = 0x7469'6d65'6470'6f69ULL;

//===----------------------------------------------------------------------===//
// Timed runs
//===----------------------------------------------------------------------===//

// A kernel may notice that it is being timed (its outputs already hold a
// result, or it was called a moment ago) and skip its work then. So every
// timed run starts from poisoned outputs and temporaries, and its outputs
// must carry exactly the bits the candidate produced, deterministically, on
// the same inputs during validation. Both happen outside the timed region,
// as the L2 flush does. The poison of a timed run is a random element, not
// one of validation's two: a kernel that computes only when it sees those
// skips here, and the checksum catches it.
std::optional<Failure> Engine::poisonBeforeTimedRun(Candidate &candidate,
                                                    uint64_t runSeed) {
  PlanRunner &runner = *candidate.runner;
  uint64_t index = 0;
  auto poison = [&](const TensorSpec &tensor) -> std::optional<Failure> {
    uint64_t bits = deriveSeed(runSeed, index++);
    std::vector<uint8_t> element(size_t(getElementBytes(tensor.elementType)));
    for (size_t b = 0; b < element.size(); ++b)
      element[b] = uint8_t(bits >> (8 * b));
    Status status = device->fill(runner.getDevicePointer(tensor.name),
                                 getElementCount(tensor), element);
    if (!status.isOk())
      return makeFailure(FailedCheck::Crash, status.message());
    return std::nullopt;
  };
  for (const TensorSpec &output : task.outputs)
    if (std::optional<Failure> failure = poison(output))
      return failure;
  for (const TensorSpec &temporary : candidate.plan->temporaries)
    if (std::optional<Failure> failure = poison(temporary))
      return failure;
  return std::nullopt;
}

std::optional<Failure> Engine::checkTimedRun(Candidate &candidate,
                                             size_t runIndex) {
  // The runner holds the last input set, whose output checksums validation
  // recorded (and the interleaving check confirmed bit for bit).
  const std::vector<uint64_t> &expected = candidate.outputSums.back();
  for (size_t i = 0; i < task.outputs.size(); ++i) {
    const TensorSpec &output = task.outputs[i];
    auto sum = device->checksum(candidate.runner->getDevicePointer(output.name),
                                getByteCount(output));
    if (!sum)
      return makeFailure(FailedCheck::Crash, sum.status().message());
    if (*sum == expected[i])
      continue;
    Failure failure = makeFailure(
        FailedCheck::PostTimingMismatch,
        "output '" + output.name + "' of timed run " +
            std::to_string(runIndex) +
            " differs from the validated result on the same inputs");
    failure.evidence.set("output", json::Value(output.name));
    failure.evidence.set("timed_run", json::Value(uint64_t(runIndex)));
    return failure;
  }
  return std::nullopt;
}

Status Engine::timeRound(const std::vector<Candidate *> &timed,
                         unsigned rounds) {
  std::vector<ScheduledRun> schedule =
      makeInterleavedSchedule(unsigned(timed.size() - 1), rounds);
  unsigned ordinal = unsigned(context.getDeviceInfo().ordinal);
  for (const ScheduledRun &scheduled : schedule) {
    Candidate &candidate = *timed[scheduled.variant];
    if (!candidate.isValid())
      continue;
    PhaseTimer timer(candidate.phases.timingS);
    size_t runIndex = candidate.times.size();
    uint64_t runSeed = deriveSeed(options.seed ^ kTimedPoisonSalt, ++timedRuns);
    if (std::optional<Failure> failure =
            poisonBeforeTimedRun(candidate, runSeed)) {
      fail(candidate, std::move(*failure));
      continue;
    }
    auto time = candidate.runner->timeRun();
    if (!time) {
      noteRunFailure();
      fail(candidate, makeFailure(FailedCheck::Crash, time.status().message()));
      if (contextLost)
        return time.status();
      continue;
    }
    if (std::optional<Failure> failure = checkTimedRun(candidate, runIndex)) {
      if (failure->check == FailedCheck::Crash)
        noteRunFailure();
      fail(candidate, std::move(*failure));
      if (contextLost)
        return Status::error(StatusCode::Internal,
                             "the device context was lost");
      continue;
    }
    candidate.times.push_back(*time);
    candidate.phases.timedKernelS += *time * 1e-6;
    DeviceReading reading = readDeviceState(ordinal);
    if (reading.smClockMhz) {
      candidate.clockSum += *reading.smClockMhz;
      ++candidate.clockCount;
    }
    if (reading.temperatureC) {
      candidate.temperatureSum += *reading.temperatureC;
      ++candidate.temperatureCount;
    }
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// The phases
//===----------------------------------------------------------------------===//

bool Engine::timeCandidates() {
  for (Candidate &candidate : candidates)
    if (candidate.isValid())
      variants.push_back(&candidate);
  // The warm-up measures how long a run takes.
  std::vector<double> runUs(variants.size(), 0);
  for (size_t k = 0; k < variants.size(); ++k) {
    Candidate *candidate = variants[k];
    double seconds = 0;
    Result<unsigned> runs = [&] {
      PhaseTimer timer(seconds);
      return candidate->runner->warmUp(options.warmupMs);
    }();
    candidate->phases.timingS += seconds;
    if (!runs) {
      noteRunFailure();
      fail(*candidate,
           makeFailure(FailedCheck::Crash, runs.status().message()));
      if (contextLost) {
        markContextLost();
        return false;
      }
      continue;
    }
    if (*runs > 0)
      runUs[k] = seconds * 1e6 / double(*runs);
  }
  // The timing cut: a candidate at least twice as slow as the baseline (or
  // the incumbent) cannot win; it is timed a few times beside the baseline
  // and stops there, unless those runs say otherwise. The others' slowest
  // run sizes the repetitions (never fewer than asked for).
  double baselineRunUs = runUs[0];
  auto sizeFor = [&](const std::vector<bool> &cut) {
    double slowest = 0;
    for (size_t k = 0; k < variants.size(); ++k)
      if (!cut[k] && variants[k]->isValid())
        slowest = std::max(slowest, runUs[k]);
    return sizeRepetitions(options.repetitions, slowest);
  };
  std::vector<bool> cut(variants.size(), false);
  std::vector<double> slowdowns(variants.size(), 0);
  for (size_t k = 1; k < variants.size(); ++k) {
    TimingCut decision = decideTimingCut(runUs[k], baselineRunUs,
                                         options.incumbentSpeedup, UINT_MAX);
    cut[k] = decision.cut;
    slowdowns[k] = decision.slowdown;
  }
  repetitions = sizeFor(cut);
  if (repetitions <= kCutRepetitions)
    std::fill(cut.begin(), cut.end(), false);
  if (std::none_of(cut.begin(), cut.end(), [](bool c) { return c; })) {
    if (!timeRound(variants, repetitions).isOk()) {
      markContextLost();
      return false;
    }
    return true;
  }
  // Every variant's first rounds, interleaved.
  if (!timeRound(variants, kCutRepetitions).isOk()) {
    markContextLost();
    return false;
  }
  double baselineMedianUs = summarizeTimes(variants[0]->times).median;
  for (size_t k = 1; k < variants.size(); ++k) {
    Candidate &candidate = *variants[k];
    if (!cut[k] || !candidate.isValid())
      continue;
    double medianUs = summarizeTimes(candidate.times).median;
    double reference =
        getCutReferenceUs(baselineMedianUs, options.incumbentSpeedup);
    json::Value evidence = json::Value::object();
    evidence.set(
        "reference",
        json::Value(options.incumbentSpeedup > 1 ? "incumbent" : "baseline"));
    evidence.set("warmup_slowdown", toJsonNumber(slowdowns[k]));
    evidence.set("timed_slowdown",
                 toJsonNumber(reference > 0 ? medianUs / reference : 0));
    evidence.set("repetitions", json::Value(uint64_t(kCutRepetitions)));
    if (confirmTimingCut(medianUs, baselineMedianUs,
                         options.incumbentSpeedup)) {
      evidence.set("message",
                   json::Value("at least " + formatSlowdown(kCutSlowdown) +
                               " slower than the " +
                               *evidence.find("reference")->getString() +
                               " in warm-up and still " +
                               formatSlowdown(medianUs / reference) +
                               " in its timed runs: it cannot win, so it "
                               "was timed " +
                               std::to_string(kCutRepetitions) + " times"));
      candidate.report.evidence.set("timing_cut", std::move(evidence));
      continue;
    }
    // The short timing does not show it cannot win: full timing.
    evidence.set("message",
                 json::Value("slow in warm-up but not in its first " +
                             std::to_string(kCutRepetitions) +
                             " timed runs, so it was timed in full"));
    candidate.report.evidence.set("timing_cut_rescinded", std::move(evidence));
    cut[k] = false;
  }
  // The rest, to the full repetitions, beside the baseline.
  std::vector<Candidate *> rest;
  for (size_t k = 0; k < variants.size(); ++k)
    if (!cut[k])
      rest.push_back(variants[k]);
  repetitions = sizeFor(cut);
  if (rest.size() > 1 && repetitions > kCutRepetitions &&
      !timeRound(rest, repetitions - kCutRepetitions).isOk()) {
    markContextLost();
    return false;
  }
  return true;
}

bool Engine::compareAfterTiming() {
  // Kept outputs changed during timing were written by a timed candidate:
  // they cannot be compared with, and the candidates timed fail.
  bool keptChanged = false;
  if (reusingBaseline) {
    PhaseTimer timer(candidates[0].phases.checksS);
    std::vector<size_t> changed = findChangedKeptSets();
    keptChanged =
        std::find(changed.begin(), changed.end(), numSets - 1) != changed.end();
    keptOverwritten |= !changed.empty();
    if (!changed.empty())
      noteBaselineOutputs("the kept outputs changed while the candidates "
                          "were timed, and were freed at the end");
  }
  for (Candidate *candidate : variants) {
    if (!candidate->isValid())
      continue;
    if (keptChanged) {
      if (candidate != &candidates[0]) {
        Failure failure = makeFailure(
            FailedCheck::Redzone,
            "a write outside the timed candidates' buffers changed the "
            "baseline's kept outputs of the last input set");
        failure.evidence.set("tensor", json::Value("baseline's kept outputs"));
        failure.evidence.set("kept_input_set", json::Value(numSets - 1));
        fail(*candidate, std::move(failure));
      }
      continue;
    }
    for (size_t i = 0; i < task.outputs.size(); ++i) {
      // The baseline must reproduce itself; the others, the baseline.
      const TensorSpec &output = task.outputs[i];
      double relativeError = 0;
      PhaseTimer timer(candidate->phases.compareS);
      std::optional<Failure> failure =
          compareOnDevice(output.name, output.elementType,
                          candidate->runner->getDevicePointer(output.name),
                          getBaselineLastOutput(i), getElementCount(output),
                          lastSetTolerance, relativeError);
      if (!failure)
        continue;
      if (failure->check == FailedCheck::OutputMismatch)
        failure->check = FailedCheck::PostTimingMismatch;
      fail(*candidate, std::move(*failure));
      break;
    }
  }
  if (!candidates[0].isValid()) {
    failEveryoneAfterBaseline();
    return false;
  }
  return true;
}

/// Fills `candidate`'s report with the summary of its times and the mean SM
/// clock and temperature read with them.
static void summarize(Candidate &candidate) {
  TimingSummary summary = summarizeTimes(candidate.times);
  Timing timing;
  timing.medianUs = summary.median;
  timing.minUs = summary.min;
  timing.p10Us = summary.p10;
  timing.p90Us = summary.p90;
  timing.repetitions = int64_t(summary.count);
  candidate.report.times = timing;
  if (candidate.clockCount)
    candidate.report.smClockMhz = candidate.clockSum / candidate.clockCount;
  if (candidate.temperatureCount)
    candidate.report.temperatureC =
        candidate.temperatureSum / candidate.temperatureCount;
}

void Engine::summarizeTimings() {
  for (Candidate *candidate : variants)
    if (!candidate->times.empty())
      summarize(*candidate);
}

void Engine::crossCheckWithCupti() {
  for (Candidate *candidate : variants) {
    if (!candidate->isValid() || !candidate->traced || !candidate->report.times)
      continue;
    TimingCrossCheck check =
        crossCheckTiming(*candidate->traced, candidate->report.times->medianUs);
    if (check.kernelUs <= 0)
      continue;
    json::Value evidence = json::Value::object();
    evidence.set("cupti_kernel_us", json::Value(check.kernelUs));
    evidence.set("event_median_us",
                 json::Value(candidate->report.times->medianUs));
    evidence.set("ratio", json::Value(check.ratio));
    candidate->report.evidence.set("timing_cross_check", std::move(evidence));
    if (check.suspicious)
      candidate->report.suspicious = true;
  }
}

void Engine::checkPhysicalFloor() {
  double bandwidth = options.bandwidthBytesPerSecond;
  if (bandwidth <= 0) {
    auto measured = measureCopyBandwidth(context);
    if (measured)
      bandwidth = *measured;
    else
      candidates[0].report.evidence.set(
          "floor_skipped", json::Value(measured.status().message()));
  }
  if (bandwidth > 0) {
    DeviceLimits limits;
    limits.bandwidthBytesPerSecond = bandwidth;
    PhysicalFloor floor = computePhysicalFloor(
        getCompulsoryBytes(task.inputs, task.outputs), 0, limits);
    floorUs = floor.floorUs;
    for (Candidate *candidate : variants) {
      if (!candidate->isValid() || !candidate->report.times ||
          !isBelowFloor(candidate->report.times->minUs, floor.floorUs))
        continue;
      Failure failure = makeFailure(
          FailedCheck::BelowPhysicalFloor,
          "the fastest run is faster than moving the task's bytes allows");
      failure.evidence.set("floor_us", json::Value(floor.floorUs));
      failure.evidence.set("min_us",
                           json::Value(candidate->report.times->minUs));
      failure.evidence.set("bandwidth_gbps", json::Value(bandwidth / 1e9));
      fail(*candidate, std::move(failure));
    }
  }
}

void Engine::remeasureSpeedups() {
  Candidate &baseline = candidates[0];
  if (!baseline.report.times)
    return;
  for (Candidate *candidate : variants) {
    if (candidate == &baseline || !candidate->isValid() ||
        !candidate->report.times)
      continue;
    SpeedupCheck speedup = checkSpeedup(baseline.report.times->medianUs,
                                        candidate->report.times->medianUs);
    if (speedup.suspicious) {
      // Re-measure the pair alone; the report keeps the new times.
      candidate->times.clear();
      std::vector<double> baselineTimes = std::move(baseline.times);
      baseline.times.clear();
      if (!timeRound({&baseline, candidate}, repetitions).isOk()) {
        markContextLost();
        return;
      }
      TimingSummary again = summarizeTimes(baseline.times);
      baseline.times = std::move(baselineTimes);
      if (!candidate->isValid() || candidate->times.empty() || again.count == 0)
        continue;
      TimingSummary mine = summarizeTimes(candidate->times);
      summarize(*candidate);
      speedup = checkSpeedup(again.median, mine.median);
      if (speedup.suspicious && isSpeedupAtTheFloor(mine.median, floorUs)) {
        // The candidate moves the task's bytes at nearly the copy speed,
        // which bounds its time from both sides: the speedup is the
        // baseline's distance from the floor, not a kernel skipping work.
        json::Value evidence = json::Value::object();
        evidence.set("speedup", toJsonNumber(speedup.speedup));
        evidence.set("floor_us", toJsonNumber(floorUs));
        evidence.set("candidate_us", toJsonNumber(mine.median));
        evidence.set("baseline_us", toJsonNumber(again.median));
        evidence.set("message",
                     json::Value("over " + formatSlowdown(kSuspiciousSpeedup) +
                                 " faster than the baseline after "
                                 "re-measurement, within " +
                                 formatSlowdown(kFloorExplainedRatio) +
                                 " of the task's memory floor: the baseline "
                                 "is that far from the floor"));
        candidate->report.evidence.set("speedup_at_floor", std::move(evidence));
        speedup.suspicious = false;
      }
      candidate->report.suspicious |= speedup.suspicious;
    }
    candidate->report.speedup = speedup.speedup;
  }
  baseline.report.speedup = 1.0;
}

//===----------------------------------------------------------------------===//
// Copy bandwidth
//===----------------------------------------------------------------------===//

/// A grid-stride copy of 16-byte words.
static const char *const kCopyKernel = R"(
extern "C" __global__ void kopt_copy(const uint4 *__restrict__ in,
                                     uint4 *__restrict__ out,
                                     unsigned long long n) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i =
           (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < n; i += stride)
    out[i] = in[i];
}
)";

static Result<double> measureOnce(const CudaContext &context) {
  const CudaDriver &api = context.getDriver();
  const DeviceInfo &info = context.getDeviceInfo();
  auto compiled = compileCuda(kCopyKernel, "kopt_copy.cu", info.getArch());
  if (!compiled)
    return compiled.status();
  // Loaded for the context's lifetime (`CudaContext::loadModule`).
  auto loaded = context.loadModule(compiled->cubin);
  if (!loaded)
    return loaded.status().withContext("the copy kernel");
  CUmodule module = *loaded;
  CUfunction function = nullptr;
  if (Status status =
          api.check(api.cuModuleGetFunction(&function, module, "kopt_copy"),
                    "cuModuleGetFunction(kopt_copy)");
      !status.isOk())
    return status;

  int64_t bytes =
      std::min<int64_t>(int64_t(256) << 20, info.totalMemoryBytes / 8) / 16 *
      16;
  if (bytes < 16)
    return Status::error(StatusCode::Unavailable, "too little device memory");
  auto source = DeviceBuffer::allocate(context, bytes);
  if (!source)
    return source.status();
  auto target = DeviceBuffer::allocate(context, bytes);
  if (!target)
    return target.status();
  if (Status status = api.check(
          api.cuMemsetD8(source->get(), 0x5a, size_t(bytes)), "cuMemsetD8");
      !status.isOk())
    return status;

  CUdeviceptr in = source->get(), out = target->get();
  unsigned long long n = (unsigned long long)(bytes / 16);
  void *arguments[] = {&in, &out, &n};
  unsigned blocks = unsigned(std::min<unsigned long long>(
      (n + 255) / 256, (unsigned long long)std::max(info.smCount, 1) * 32));
  CUstream stream = context.getStream();
  CUevent begin = nullptr, end = nullptr;
  if (Status status = api.check(api.cuEventCreate(&begin, CU_EVENT_DEFAULT),
                                "cuEventCreate");
      !status.isOk())
    return status;
  if (Status status =
          api.check(api.cuEventCreate(&end, CU_EVENT_DEFAULT), "cuEventCreate");
      !status.isOk()) {
    api.cuEventDestroy(begin);
    return status;
  }
  double bestMs = 0;
  Status status;
  for (int run = 0; run < 12 && status.isOk(); ++run) {
    status = api.check(api.cuEventRecord(begin, stream), "cuEventRecord");
    if (status.isOk())
      status = api.check(api.cuLaunchKernel(function, blocks, 1, 1, 256, 1, 1,
                                            0, stream, arguments, nullptr),
                         "cuLaunchKernel(kopt_copy)");
    if (status.isOk())
      status = api.check(api.cuEventRecord(end, stream), "cuEventRecord");
    if (status.isOk())
      status = api.check(api.cuEventSynchronize(end), "cuEventSynchronize");
    float ms = 0;
    if (status.isOk())
      status = api.check(api.cuEventElapsedTime(&ms, begin, end),
                         "cuEventElapsedTime");
    // The first two runs warm up.
    if (status.isOk() && run >= 2 && (bestMs == 0 || ms < bestMs))
      bestMs = ms;
  }
  api.cuEventDestroy(begin);
  api.cuEventDestroy(end);
  if (!status.isOk())
    return status;
  if (bestMs <= 0)
    return Status::error(StatusCode::Internal, "the copy took no time");
  // Every byte is read once and written once.
  return 2.0 * double(bytes) / (bestMs * 1e-3);
}

Result<double> kopt::runtime::measureCopyBandwidth(const CudaContext &context) {
  static std::mutex mutex;
  static std::map<int, double> cache;
  std::lock_guard<std::mutex> lock(mutex);
  int ordinal = context.getDeviceInfo().ordinal;
  auto it = cache.find(ordinal);
  if (it != cache.end())
    return it->second;
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;
  auto measured = measureOnce(context);
  if (!measured)
    return measured.status();
  cache.emplace(ordinal, *measured);
  return *measured;
}
