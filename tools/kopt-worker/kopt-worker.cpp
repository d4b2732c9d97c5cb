//===- kopt-worker.cpp - The per-GPU evaluation process ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The evaluator worker: reads `kopt.worker/1` frames from stdin, writes
// frames to stdout and logs to stderr (docs/EvaluatorProtocol.md). It sends
// `hello` first, answers each `evaluate` with a `report` (or an `error` when
// the request itself is unreadable) and exits on `shutdown` or at the end of
// its input.
//
// With a GPU (device 0 of those the process sees) it evaluates through the
// engine (include/kopt/Runtime/Evaluator/Evaluator.h), with CUPTI's launch
// accounting (docs/Design.md's validation point 6) when CUPTI loads; without
// CUPTI the reports say `launch_trace_skipped`. Without a GPU or driver every
// candidate is reported as not compiled, failing check `compile`, with evidence
// saying why: the protocol has no check name for "no evaluator available", so
// `compile` (the first step that could not happen) stands in for it.
//
// The environment variable KOPT_WORKER_TEST_MODE makes the worker misbehave
// on purpose, so the caller's handling of crashes, hangs and protocol errors
// can be tested without a GPU (docs/Evaluator.md, "The worker process"),
// or answer with made-up reports (`fake`, FakeEvaluation.h), and adds the
// worker's CUDA_VISIBLE_DEVICES to the hello's device name. With
// KOPT_WORKER_TEST_CRASH_DEVICE, a comma-separated list, naming its
// CUDA_VISIBLE_DEVICES, a worker in a test mode aborts on every `evaluate`
// instead, so that some workers of a pool die and the others do not.
//
//===----------------------------------------------------------------------===//

#include "CompileAhead.h"
#include "FakeEvaluation.h"

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Cuda/Cupti.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"
#include "kopt/Runtime/Evaluator/Evaluator.h"
#include "kopt/Runtime/Protocol.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

using namespace kopt::runtime;

namespace {

/// What KOPT_WORKER_TEST_MODE asks for.
struct TestMode {
  enum class Kind {
    /// Normal operation.
    None,
    /// Abort (SIGABRT) on `evaluate`.
    Crash,
    /// Sleep on `evaluate` until killed.
    Hang,
    /// Answer `evaluate` with a frame that is not a message.
    Garbage,
    /// Sleep `sleepMs` on `evaluate`, then answer normally.
    Slow,
    /// Exit with status 0 right after `hello`.
    ExitAfterHello,
    /// Use no GPU; sleep `sleepMs` on `evaluate`, then answer with made-up
    /// reports (FakeEvaluation.h).
    Fake,
  };
  Kind kind = Kind::None;
  unsigned long sleepMs = 0;
  /// This worker's device is KOPT_WORKER_TEST_CRASH_DEVICE: abort on
  /// `evaluate`, whatever `kind` says.
  bool crashHere = false;
};

/// The evidence of every candidate when the worker has no GPU.
constexpr const char *kUnavailableMessage =
    "no GPU or CUDA driver on this machine";

/// Writes `message` to stderr as one line, prefixed with the tool's name.
void log(const std::string &message) {
  std::fprintf(stderr, "kopt-worker: %s\n", message.c_str());
  std::fflush(stderr);
}

/// Whether `item` is an entry of the comma-separated `list`.
bool isListed(std::string_view item, std::string_view list) {
  while (true) {
    size_t comma = list.find(',');
    if (list.substr(0, comma) == item)
      return true;
    if (comma == std::string_view::npos)
      return false;
    list.remove_prefix(comma + 1);
  }
}

/// The `<ms>` of test mode `name` (`text`): at most an hour.
Result<unsigned long> parseMilliseconds(std::string_view text,
                                        const char *name) {
  std::string digits(text);
  char *end = nullptr;
  errno = 0;
  unsigned long ms = std::strtoul(digits.c_str(), &end, 10);
  if (digits.empty() || digits[0] < '0' || digits[0] > '9' || *end ||
      errno == ERANGE || ms > 3600000)
    return Status::error(StatusCode::InvalidArgument,
                         std::string("KOPT_WORKER_TEST_MODE: '") + name +
                             ":<ms>' needs a number of milliseconds up to "
                             "3600000, not '" +
                             digits + "'");
  return ms;
}

/// Reads KOPT_WORKER_TEST_MODE; `text` is its value or nullptr.
Result<TestMode> parseTestMode(const char *text) {
  TestMode mode;
  if (!text || !*text)
    return mode;
  std::string_view value(text);
  if (value == "crash") {
    mode.kind = TestMode::Kind::Crash;
  } else if (value == "hang") {
    mode.kind = TestMode::Kind::Hang;
  } else if (value == "garbage") {
    mode.kind = TestMode::Kind::Garbage;
  } else if (value == "exit-after-hello") {
    mode.kind = TestMode::Kind::ExitAfterHello;
  } else if (value.substr(0, 5) == "slow:") {
    Result<unsigned long> ms = parseMilliseconds(value.substr(5), "slow");
    if (!ms)
      return ms.status();
    mode.kind = TestMode::Kind::Slow;
    mode.sleepMs = *ms;
  } else if (value == "fake" || value.substr(0, 5) == "fake:") {
    mode.kind = TestMode::Kind::Fake;
    if (value != "fake") {
      Result<unsigned long> ms = parseMilliseconds(value.substr(5), "fake");
      if (!ms)
        return ms.status();
      mode.sleepMs = *ms;
    }
  } else {
    return Status::error(StatusCode::InvalidArgument,
                         "KOPT_WORKER_TEST_MODE: unknown mode '" +
                             std::string(value) +
                             "' (expected crash, hang, garbage, slow:<ms>, "
                             "fake[:<ms>] or exit-after-hello)");
  }
  return mode;
}

/// The GPU this worker owns, or null when there is none (no driver, no
/// device): the worker then answers every candidate as unavailable.
std::unique_ptr<CudaContext> &getGpu() {
  static std::unique_ptr<CudaContext> gpu;
  return gpu;
}

/// CUPTI's launch recorder for point 6, or null when CUPTI did not load.
std::unique_ptr<LaunchRecorder> &getRecorder() {
  static std::unique_ptr<LaunchRecorder> recorder;
  return recorder;
}

/// The baseline's outputs kept between the requests of one task.
BaselineCache &getBaselineCache() {
  static BaselineCache cache;
  return cache;
}

/// Why there is no launch recorder (empty when there is one).
std::string &getRecorderUnavailableReason() {
  static std::string reason;
  return reason;
}

/// The engine's launch tracer: CUPTI's record of one run, or, without
/// CUPTI, the run alone and an error that the engine notes in each report
/// as `launch_trace_skipped`.
Result<std::vector<KernelActivity>> traceLaunches(const PlanExecution &run,
                                                  size_t expectedLaunches) {
  if (LaunchRecorder *recorder = getRecorder().get())
    return recordLaunches(*recorder, run, expectedLaunches);
  if (Status status = run(); !status.isOk())
    return status;
  return Status::error(StatusCode::Unavailable,
                       "no CUPTI launch accounting: " +
                           getRecorderUnavailableReason());
}

/// `major.minor` of a CUDA version number such as 13000.
std::string formatCudaVersion(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

/// The made-up device of a `fake` worker, as the autotuner probes it
/// (lib/Autotune/DeviceProbe.cpp): an H200-like one whose driver and NVRTC
/// versions say `fake`, of architecture `sm_<NN>` when the worker's
/// CUDA_VISIBLE_DEVICES is `fake-sm_<NN>`, else sm_90.
void describeFakeDevice(HelloMessage &hello) {
  hello.device.name = "fake";
  hello.device.computeCapabilityMajor = 9;
  hello.device.computeCapabilityMinor = 0;
  const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string_view entry = visible ? visible : "";
  if (entry.substr(0, 8) == "fake-sm_" && entry.size() > 9 &&
      entry.find_first_not_of("0123456789", 8) == std::string_view::npos) {
    std::string digits(entry.substr(8));
    hello.device.computeCapabilityMajor =
        std::stoll(digits.substr(0, digits.size() - 1));
    hello.device.computeCapabilityMinor = digits.back() - '0';
  }
  hello.device.smCount = 132;
  hello.device.l2Bytes = 52428800;
  hello.device.memoryBandwidthGBps = 4800;
  hello.driverVersion = "fake";
  hello.nvrtcVersion = "fake";
}

/// The `hello`: the device's description, or, without a GPU, a device named
/// `none`, with compute capability 0.0 and the smallest SM count the
/// protocol accepts (the protocol has no way to say "no device"); a `fake`
/// worker (`fake`) describes its made-up device. In a test mode
/// (`testing`), the device name ends in ` [CUDA_VISIBLE_DEVICES=<v>]`
/// (`<unset>` when unset), so callers can check the environment a worker
/// got.
HelloMessage makeHello(bool testing, bool fake) {
  HelloMessage hello;
  const CudaContext *gpu = getGpu().get();
  if (fake) {
    describeFakeDevice(hello);
  } else if (!gpu) {
    hello.device.name = "none";
    hello.device.smCount = 1;
  }
  if (testing) {
    const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
    hello.device.name += std::string(" [CUDA_VISIBLE_DEVICES=") +
                         (visible ? visible : "<unset>") + "]";
  }
  if (!gpu)
    return hello;
  const DeviceInfo &info = gpu->getDeviceInfo();
  hello.device.name = info.name + hello.device.name;
  hello.device.computeCapabilityMajor = info.computeMajor;
  hello.device.computeCapabilityMinor = info.computeMinor;
  hello.device.smCount = info.smCount;
  hello.device.l2Bytes = info.l2Bytes;
  Result<double> bandwidth = measureCopyBandwidth(*gpu);
  hello.device.memoryBandwidthGBps =
      bandwidth ? *bandwidth / 1e9 : info.getTheoreticalBandwidthGBs();
  hello.driverVersion = formatCudaVersion(gpu->getDriver().version);
  if (Result<std::pair<int, int>> nvrtc = getNvrtcVersion())
    hello.nvrtcVersion =
        std::to_string(nvrtc->first) + "." + std::to_string(nvrtc->second);
  return hello;
}

/// The report of candidate `index` while there is no GPU evaluator: not
/// compiled, failing check `compile`. A plan that cannot be read says so
/// instead, as the real evaluator will.
EvalReport makeUnavailableReport(int64_t index, const json::Value &candidate) {
  EvalReport report;
  report.candidate = index;
  report.failedCheck = FailedCheck::Compile;
  Result<KernelPlan> plan = kernelPlanFromJson(candidate);
  if (!plan) {
    report.compileLog = plan.status().message();
    report.evidence.set("reason", "unreadable-plan");
    report.evidence.set("message", plan.status().message());
    return report;
  }
  report.evidence.set("reason", "unavailable");
  report.evidence.set("message", kUnavailableMessage);
  return report;
}

/// Writes `message` to stdout; false (after logging) when stdout is gone.
bool send(const Message &message) {
  Status status = writeMessage(STDOUT_FILENO, message);
  if (status.isOk())
    return true;
  log("cannot write a '" + std::string(getMessageType(message)) +
      "' message: " + status.message());
  return false;
}

/// Sleeps until the process is killed. Stops when the parent goes away, so
/// a test that dies leaves no hanging worker behind.
[[noreturn]] void hangForever() {
  pid_t parent = ::getppid();
  while (::getppid() == parent)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  log("test mode 'hang': the parent is gone, exiting");
  std::_Exit(3);
}

/// Answers one `evaluate` request; false when the worker must exit.
bool evaluate(const EvaluateMessage &request, const TestMode &mode,
              CompileAhead *ahead) {
  switch (mode.crashHere ? TestMode::Kind::Crash : mode.kind) {
  case TestMode::Kind::Crash: {
    log("test mode 'crash': aborting");
    // A deliberate crash must not leave a core file behind.
    rlimit noCore = {0, 0};
    ::setrlimit(RLIMIT_CORE, &noCore);
    std::abort();
  }
  case TestMode::Kind::Hang:
    log("test mode 'hang': sleeping until killed");
    hangForever();
  case TestMode::Kind::Garbage: {
    log("test mode 'garbage': writing a malformed frame");
    Status status = writeFrame(STDOUT_FILENO, "{\"protocol\":\"kopt.worker/1\","
                                              "\"type\":\"report\",\"id\":");
    return status.isOk();
  }
  case TestMode::Kind::Slow:
  case TestMode::Kind::Fake:
    std::this_thread::sleep_for(std::chrono::milliseconds(mode.sleepMs));
    break;
  case TestMode::Kind::None:
  case TestMode::Kind::ExitAfterHello:
    break;
  }

  Result<KernelTask> task = kernelTaskFromJson(request.task);
  if (!task)
    return send(ErrorMessage{request.requestId, task.status().message()});
  if (mode.kind == TestMode::Kind::Fake)
    return send(makeFakeReports(request));
  ReportMessage answer;
  answer.requestId = request.requestId;
  const CudaContext *gpu = getGpu().get();
  if (!gpu) {
    for (size_t i = 0, e = request.candidates.size(); i < e; ++i)
      answer.reports.push_back(makeUnavailableReport(static_cast<int64_t>(i),
                                                     request.candidates[i]));
    return send(answer);
  }

  // Plans that cannot be read fail here; the rest go to the engine, and
  // their reports are numbered back to the request's indices.
  std::vector<KernelPlan> plans;
  std::vector<int64_t> indices;
  answer.reports.resize(request.candidates.size());
  for (size_t i = 0, e = request.candidates.size(); i < e; ++i) {
    Result<KernelPlan> plan = kernelPlanFromJson(request.candidates[i]);
    if (!plan) {
      EvalReport &report = answer.reports[i];
      report.candidate = static_cast<int64_t>(i);
      report.failedCheck = FailedCheck::Compile;
      report.compileLog = plan.status().message();
      report.evidence.set("reason", "unreadable-plan");
      report.evidence.set("message", plan.status().message());
      continue;
    }
    plans.push_back(std::move(*plan));
    indices.push_back(static_cast<int64_t>(i));
  }
  bool baselineReadable = !indices.empty() && indices[0] == 0;
  if (!baselineReadable) {
    // Nothing can be compared with a baseline that cannot be read.
    for (size_t i = 1; i < answer.reports.size(); ++i) {
      EvalReport &report = answer.reports[i];
      report = EvalReport();
      report.candidate = static_cast<int64_t>(i);
      report.failedCheck = FailedCheck::Compile;
      report.evidence.set("baseline_failed", true);
      report.evidence.set("message", "the baseline plan cannot be read");
    }
    return send(answer);
  }
  // The plans of later requests compile while this one is evaluated.
  if (ahead)
    ahead->add(request.compileAhead);
  EvaluatorOptions options;
  options.validationSets = unsigned(request.options.validationSets);
  options.repetitions = unsigned(request.options.repetitions);
  options.warmupMs = request.options.warmupMs;
  options.seed = uint64_t(request.options.seed);
  options.incumbentSpeedup = request.options.incumbentSpeedup;
  options.reference = request.reference;
  options.laterReferences = request.laterReferences;
  options.launchTracer = traceLaunches;
  options.baselineCache = &getBaselineCache();
  Result<std::vector<EvalReport>> reports =
      evaluateCandidates(*gpu, *task, plans, options);
  if (!reports)
    return send(ErrorMessage{request.requestId, reports.status().message()});
  for (size_t k = 0; k < reports->size(); ++k) {
    EvalReport &report = (*reports)[k];
    report.candidate = indices[k];
    answer.reports[size_t(indices[k])] = std::move(report);
  }
  if (!send(answer))
    return false;
  // A sticky fault leaves the context unusable: exit, and let the caller
  // start a fresh worker for the next request.
  if (gpu->getDriver().cuCtxSynchronize() != CUDA_SUCCESS) {
    log("the device context is lost after a fault; exiting");
    return false;
  }
  return true;
}

/// The `id` of a message that did not decode, when it has a usable one, so
/// the `error` answer can name the request.
std::optional<int64_t> findRequestId(const std::string &payload) {
  Result<json::Value> value = json::parse(payload);
  if (!value || !value->isObject())
    return std::nullopt;
  const json::Value *id = value->find("id");
  std::optional<int64_t> number = id ? id->getInteger() : std::nullopt;
  if (number && *number >= 0)
    return number;
  return std::nullopt;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1) {
    std::fprintf(stderr,
                 "usage: %s\n"
                 "The kopt evaluator worker: speaks the kopt.worker/1 "
                 "protocol on stdin and stdout.\n",
                 argv[0]);
    return std::string_view(argv[1]) == "--help" ? 0 : 2;
  }
  // A caller that went away shows up as a write error, not as a signal.
  std::signal(SIGPIPE, SIG_IGN);

  Result<TestMode> mode = parseTestMode(std::getenv("KOPT_WORKER_TEST_MODE"));
  if (!mode) {
    log(mode.status().message());
    return 2;
  }
  if (const char *devices = std::getenv("KOPT_WORKER_TEST_CRASH_DEVICE");
      devices && mode->kind != TestMode::Kind::None) {
    const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
    mode->crashHere = visible && isListed(visible, devices);
  }
  // A fake worker uses no GPU, even where there is one.
  if (mode->kind != TestMode::Kind::Fake) {
    if (Result<std::unique_ptr<CudaContext>> gpu = CudaContext::create(0))
      getGpu() = std::move(*gpu);
    else
      log("no GPU evaluation: " + gpu.status().message());
  }
  if (getGpu()) {
    if (Result<std::unique_ptr<LaunchRecorder>> recorder =
            LaunchRecorder::create())
      getRecorder() = std::move(*recorder);
    else {
      getRecorderUnavailableReason() = recorder.status().message();
      log("no launch accounting: " + getRecorderUnavailableReason());
    }
  }
  if (!send(makeHello(mode->kind != TestMode::Kind::None,
                      mode->kind == TestMode::Kind::Fake)))
    return 1;
  std::unique_ptr<CompileAhead> ahead;
  if (getGpu())
    ahead = std::make_unique<CompileAhead>(
        getGpu()->getDeviceInfo().getArch(),
        std::min(8u, std::max(1u, std::thread::hardware_concurrency())));
  if (mode->kind == TestMode::Kind::ExitAfterHello) {
    log("test mode 'exit-after-hello': exiting");
    return 0;
  }

  while (true) {
    Result<std::string> frame = readFrame(STDIN_FILENO);
    if (!frame) {
      if (frame.status().code() == StatusCode::Closed)
        return 0;
      // The stream is out of step (or gone): nothing more can be read.
      log("cannot read a frame: " + frame.status().message());
      return 1;
    }
    Result<Message> message = decode(*frame);
    if (!message) {
      // The frame was read whole, so the stream is still in step.
      if (!send(ErrorMessage{findRequestId(*frame),
                             "unreadable message: " +
                                 message.status().message()}))
        return 1;
      continue;
    }
    if (std::holds_alternative<ShutdownMessage>(*message))
      return 0;
    if (const auto *request = std::get_if<EvaluateMessage>(&*message)) {
      if (!evaluate(*request, *mode, ahead.get()))
        return 1;
      continue;
    }
    if (!send(ErrorMessage{std::nullopt,
                           std::string("unexpected message type '") +
                               getMessageType(*message) +
                               "' (a worker reads 'evaluate' and "
                               "'shutdown')"}))
      return 1;
  }
}
