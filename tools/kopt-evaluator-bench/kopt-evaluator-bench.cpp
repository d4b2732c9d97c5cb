//===- kopt-evaluator-bench.cpp - Evaluator wall-time bench -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Measures docs/Design.md's evaluator performance requirement: evaluating one
// candidate on tensors up to 64 MB (5 validation sets, 20 timed repetitions)
// takes at most 1.5 s of wall time, and repeated timings of one plan agree
// within 3% (median to median). It runs `evaluateCandidates` with the
// default options on a task's baseline and one candidate, R times cold (each
// in a fresh child process, so driver, NVRTC and bandwidth measurement start
// cold) and R times warm (one process, after an untimed evaluation), and
// prints the wall time per candidate of each repetition, the candidate's
// median time per repetition and their spread.
//
// Usage: kopt-evaluator-bench [TASK.json BASELINE.plan.json
// CANDIDATE.plan.json]
//                             [--repeat R]
// The files default to the 16M-element f32 task under bench/evaluator/.
// Exit status: 0 when it measured, and also when there is no GPU (it then
// prints "no GPU" and measures nothing); 1 on an unreadable file or an
// evaluation that could not run; 2 on a usage error.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Evaluator/Evaluator.h"
#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/TaskPlan.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace kopt::runtime;

namespace {

/// The default inputs, relative to the repository root.
constexpr const char *kDefaultDir = "bench/evaluator/fma_16m/";

/// One timed evaluation.
struct Sample {
  /// Wall time of `evaluateCandidates`, in milliseconds.
  double wallMs = 0;
  /// The candidate's (index 1) median time, in microseconds; 0 if untimed.
  double candidateMedianUs = 0;
  double baselineMedianUs = 0;
  bool allValid = false;
};

Result<json::Value> readJson(const std::string &path) {
  std::ifstream file(path);
  if (!file)
    return Status::error(StatusCode::InvalidArgument,
                         "cannot read '" + path + "'");
  std::stringstream text;
  text << file.rdbuf();
  Result<json::Value> value = json::parse(text.str());
  if (!value)
    return Status::error(StatusCode::InvalidArgument,
                         path + ":" + value.status().message());
  return value;
}

/// Times one `evaluateCandidates` call on `context`.
Result<Sample> evaluateOnce(const CudaContext &context, const KernelTask &task,
                            const std::vector<KernelPlan> &plans) {
  EvaluatorOptions options;
  auto start = std::chrono::steady_clock::now();
  Result<std::vector<EvalReport>> reports =
      evaluateCandidates(context, task, plans, options);
  auto end = std::chrono::steady_clock::now();
  if (!reports)
    return reports.status();
  Sample sample;
  sample.wallMs =
      std::chrono::duration<double, std::milli>(end - start).count();
  sample.allValid = true;
  for (const EvalReport &report : *reports)
    sample.allValid = sample.allValid && report.valid;
  if ((*reports)[0].times)
    sample.baselineMedianUs = (*reports)[0].times->medianUs;
  if (reports->size() > 1 && (*reports)[1].times)
    sample.candidateMedianUs = (*reports)[1].times->medianUs;
  return sample;
}

/// What a cold child sends its parent: a status byte (0 measured, 1 no GPU,
/// 2 failed), then a Sample or a message.
constexpr char kMeasured = 0, kNoGpu = 1, kFailed = 2;

/// Runs one cold evaluation in a child process that creates its own context.
Result<std::optional<Sample>> evaluateCold(const KernelTask &task,
                                           const std::vector<KernelPlan> &plans,
                                           std::string &noGpuReason) {
  int fds[2];
  if (pipe(fds) != 0)
    return Status::error(StatusCode::Internal, "pipe failed");
  pid_t pid = fork();
  if (pid < 0)
    return Status::error(StatusCode::Internal, "fork failed");
  if (pid == 0) {
    close(fds[0]);
    std::string message;
    char kind = kMeasured;
    Sample sample;
    Result<std::unique_ptr<CudaContext>> context = CudaContext::create(0);
    if (!context) {
      kind = kNoGpu;
      message = context.status().message();
    } else if (Result<Sample> measured = evaluateOnce(**context, task, plans)) {
      sample = *measured;
    } else {
      kind = kFailed;
      message = measured.status().message();
    }
    (void)!write(fds[1], &kind, 1);
    if (kind == kMeasured)
      (void)!write(fds[1], &sample, sizeof(sample));
    else
      (void)!write(fds[1], message.data(), message.size());
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string bytes;
  char buffer[4096];
  ssize_t got;
  while ((got = read(fds[0], buffer, sizeof(buffer))) > 0)
    bytes.append(buffer, size_t(got));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (bytes.empty())
    return Status::error(StatusCode::Internal,
                         "the cold evaluation's process died");
  std::string rest = bytes.substr(1);
  if (bytes[0] == kNoGpu) {
    noGpuReason = rest;
    return std::optional<Sample>();
  }
  if (bytes[0] == kFailed || rest.size() != sizeof(Sample))
    return Status::error(StatusCode::Internal, "cold evaluation: " + rest);
  Sample sample;
  std::copy(rest.begin(), rest.end(), reinterpret_cast<char *>(&sample));
  return std::optional<Sample>(sample);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// Prints run `index` of `phase` as soon as it is measured.
void printSample(const char *phase, size_t index, const Sample &s,
                 size_t numCandidates) {
  std::printf("%s %zu: wall %.1f ms, %.1f ms per candidate, candidate "
              "median %.2f us, baseline median %.2f us%s\n",
              phase, index + 1, s.wallMs, s.wallMs / double(numCandidates),
              s.candidateMedianUs, s.baselineMedianUs,
              s.allValid ? "" : " (NOT ALL VALID)");
}

/// Prints one phase's summary.
void report(const char *phase, const std::vector<Sample> &samples,
            size_t numCandidates) {
  std::vector<double> perCandidate, medians;
  for (const Sample &s : samples) {
    perCandidate.push_back(s.wallMs / double(numCandidates));
    medians.push_back(s.candidateMedianUs);
  }
  double mid = median(medians);
  auto [lo, hi] = std::minmax_element(medians.begin(), medians.end());
  double spread = mid > 0 ? (*hi - *lo) / mid : 0;
  double worst = *std::max_element(perCandidate.begin(), perCandidate.end());
  std::printf("%s: wall per candidate median %.1f ms, max %.1f ms "
              "(limit 1500 ms: %s)\n",
              phase, median(perCandidate), worst,
              worst <= 1500 ? "met" : "NOT MET");
  std::printf("%s: candidate median of medians %.2f us, spread "
              "(max-min)/median %.2f%% (limit 3%%: %s)\n",
              phase, mid, spread * 100, spread <= 0.03 ? "met" : "NOT MET");
}

} // namespace

int main(int argc, char **argv) {
  // Line by line, so a run cut short by a timeout still shows what it
  // measured.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<std::string> files;
  unsigned repeat = 5;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--repeat" && i + 1 < argc) {
      repeat = unsigned(std::max(1, std::atoi(argv[++i])));
    } else if (arg == "--help" || arg == "-h" || arg.rfind("--", 0) == 0) {
      std::fprintf(stderr,
                   "usage: kopt-evaluator-bench [TASK.json BASELINE.plan.json "
                   "CANDIDATE.plan.json] [--repeat R]\n");
      return arg == "--help" || arg == "-h" ? 0 : 2;
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty())
    files = {std::string(kDefaultDir) + "task.json",
             std::string(kDefaultDir) + "baseline-per-op.plan.json",
             std::string(kDefaultDir) + "builtin-bs256_v4.plan.json"};
  if (files.size() != 3) {
    std::fprintf(stderr, "kopt-evaluator-bench: expected a task and two "
                         "plans\n");
    return 2;
  }

  KernelTask task;
  std::vector<KernelPlan> plans;
  for (size_t i = 0; i < files.size(); ++i) {
    Result<json::Value> value = readJson(files[i]);
    if (!value) {
      std::fprintf(stderr, "kopt-evaluator-bench: %s\n",
                   value.status().message().c_str());
      return 1;
    }
    if (i == 0) {
      Result<KernelTask> parsed = kernelTaskFromJson(*value);
      if (!parsed) {
        std::fprintf(stderr, "kopt-evaluator-bench: %s: %s\n", files[i].c_str(),
                     parsed.status().message().c_str());
        return 1;
      }
      task = std::move(*parsed);
      continue;
    }
    Result<KernelPlan> plan = kernelPlanFromJson(*value);
    if (!plan) {
      std::fprintf(stderr, "kopt-evaluator-bench: %s: %s\n", files[i].c_str(),
                   plan.status().message().c_str());
      return 1;
    }
    plans.push_back(std::move(*plan));
  }

  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  int64_t bytes = 0;
  for (const std::vector<TensorSpec> *list : {&task.inputs, &task.outputs})
    for (const TensorSpec &tensor : *list)
      bytes += tensor.getBytes().value_or(0);
  EvaluatorOptions defaults;
  std::printf("kopt-evaluator-bench: %s\n", date);
  std::printf("task %s: %zu tensors, %.1f MB in all; %zu candidates; %u "
              "sets, %u repetitions; repeated %u times\n",
              task.name.c_str(), task.inputs.size() + task.outputs.size(),
              double(bytes) / 1e6, plans.size(), defaults.validationSets,
              defaults.repetitions, repeat);
  std::fflush(stdout);

  // Cold first: the children must fork before this process touches CUDA.
  std::vector<Sample> cold;
  for (unsigned r = 0; r < repeat; ++r) {
    std::string noGpu;
    Result<std::optional<Sample>> sample = evaluateCold(task, plans, noGpu);
    if (!sample) {
      std::fprintf(stderr, "kopt-evaluator-bench: %s\n",
                   sample.status().message().c_str());
      return 1;
    }
    if (!*sample) {
      std::printf("kopt-evaluator-bench: no GPU (%s): nothing measured\n",
                  noGpu.c_str());
      return 0;
    }
    cold.push_back(**sample);
    printSample("cold", r, cold.back(), plans.size());
  }

  Result<std::unique_ptr<CudaContext>> context = CudaContext::create(0);
  if (!context) {
    std::printf("kopt-evaluator-bench: no GPU (%s): nothing measured\n",
                context.status().message().c_str());
    return 0;
  }
  std::printf("device: %s\n", (*context)->getDeviceInfo().name.c_str());
  std::fflush(stdout);
  report("cold", cold, plans.size());

  std::vector<Sample> warm;
  for (unsigned r = 0; r <= repeat; ++r) {
    Result<Sample> sample = evaluateOnce(**context, task, plans);
    if (!sample) {
      std::fprintf(stderr, "kopt-evaluator-bench: %s\n",
                   sample.status().message().c_str());
      return 1;
    }
    if (r == 0) // The first warms the process up.
      continue;
    warm.push_back(*sample);
    printSample("warm", r - 1, warm.back(), plans.size());
  }
  report("warm", warm, plans.size());
  return 0;
}
