//===- Protocol.h - Messages between the compiler and a worker --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The evaluator worker (`kopt-worker`, one per GPU) and its caller exchange
// frames over pipes: a 4-byte little-endian payload length, then a UTF-8
// JSON object with `"protocol": "kopt.worker/1"` and a `"type"`. This header
// defines the messages as plain structs, their encoding and decoding, and
// frame I/O on file descriptors. docs/EvaluatorProtocol.md is the reference
// for the wire format.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_PROTOCOL_H
#define KOPT_RUNTIME_PROTOCOL_H

#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/Status.h"
#include "kopt/Runtime/TaskPlan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kopt::runtime {

/// The protocol's name; a message carries `kopt.worker/<version>`.
inline constexpr const char *kProtocolName = "kopt.worker";
/// The protocol version this code speaks; any other version is refused.
inline constexpr int64_t kProtocolVersion = 1;
/// Default bound on a frame's payload, in bytes.
inline constexpr uint32_t kDefaultMaxFrameBytes = 64u << 20;

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

/// The device a worker owns.
struct WorkerDeviceInfo {
  /// As the driver names it (`NVIDIA H200`).
  std::string name;
  /// Compute capability, such as 9 and 0 for sm_90.
  int64_t computeCapabilityMajor = 0;
  int64_t computeCapabilityMinor = 0;
  /// Number of streaming multiprocessors.
  int64_t smCount = 0;
  /// L2 cache size in bytes.
  int64_t l2Bytes = 0;
  /// Memory bandwidth in GB/s (1e9 bytes per second).
  double memoryBandwidthGBps = 0;

  bool operator==(const WorkerDeviceInfo &other) const;
};

/// worker -> caller, first message after start: what the worker runs on.
struct HelloMessage {
  WorkerDeviceInfo device;
  /// CUDA driver version, `major.minor` (`12.8`).
  std::string driverVersion;
  /// NVRTC version, `major.minor`.
  std::string nvrtcVersion;

  bool operator==(const HelloMessage &other) const;
};

/// How an evaluation runs.
struct EvaluateOptions {
  /// Input sets each candidate is validated on.
  int64_t validationSets = 5;
  /// Timed repetitions per candidate, after warm-up.
  int64_t repetitions = 20;
  /// Warm-up before timing, in milliseconds.
  double warmupMs = 25;
  /// Seeds the input generator, so an evaluation can be repeated; at least
  /// 0.
  int64_t seed = 0;
  /// The largest speedup over the baseline a valid candidate of this task
  /// reached in an earlier request; 1 or less (the default, 0) means none.
  /// A candidate that cannot come near it is timed briefly (the timing
  /// cut, docs/Evaluator.md).
  double incumbentSpeedup = 0;

  bool operator==(const EvaluateOptions &other) const;
};

/// fp64 reference values of one output at sampled points.
struct OutputReference {
  /// The task output's name.
  std::string output;
  /// Row-major linear indices into the output.
  std::vector<int64_t> indices;
  /// The fp64 reference value at each index (finite: JSON has no NaN).
  std::vector<double> values;

  bool operator==(const OutputReference &other) const;
};

/// Reference values for validation set 0, computed by the caller in fp64 on
/// the inputs that the evaluator's input generator gives for `seed` and
/// `distribution` (include/kopt/Runtime/Evaluator/InputGenerator.h,
/// `generateInputSet`).
struct ReferenceSet {
  /// The validation set it is for: 0 in `reference`, 1 or more in
  /// `laterReferences`.
  int64_t inputSet = 0;
  /// The seed of `generateInputSet` for that set.
  int64_t seed = 0;
  /// The distribution's name: `normal`, `large-mean`, `wide-range` or
  /// `small-int`.
  std::string distribution = "normal";
  /// Sampled outputs; outputs not named are not checked against fp64.
  std::vector<OutputReference> outputs;

  bool operator==(const ReferenceSet &other) const;
};

/// caller -> worker: compile, validate and time candidates of one task.
struct EvaluateMessage {
  /// Chosen by the caller; the report carries it back.
  int64_t requestId = 0;
  /// The `kopt.task/1` document.
  json::Value task;
  /// `kopt.plan/1` documents; the first is the baseline. Decoding checks
  /// only that each is an object: a malformed plan fails as a candidate
  /// (check `compile`), not as a message.
  std::vector<json::Value> candidates;
  EvaluateOptions options;
  /// fp64 reference values for set 0, when the caller computed them.
  std::optional<ReferenceSet> reference;
  /// fp64 reference values for later sets (each names its set, 1 to
  /// `validation_sets - 1`, at most once). On those sets a candidate may
  /// differ from the baseline by as much as the baseline's own fp64 error
  /// allows (docs/Evaluator.md, "Ill-conditioned sets").
  std::vector<ReferenceSet> laterReferences;
  /// `kopt.plan/1` documents that later requests of this task will carry:
  /// the worker starts compiling their sources in the background (NVRTC
  /// only), so that those requests find them compiled. Not evaluated now;
  /// entries it cannot read are ignored.
  std::vector<json::Value> compileAhead;

  bool operator==(const EvaluateMessage &other) const;
};

/// The check that made a candidate invalid.
enum class FailedCheck {
  None,
  Compile,
  OutputMismatch,
  UnwrittenOutput,
  Redzone,
  InputModified,
  Nondeterministic,
  InputIndependent,
  LaunchCount,
  PostTimingMismatch,
  BelowPhysicalFloor,
  Crash,
  Timeout,
};

/// The wire name of `check` (`output-mismatch`); "" for None.
const char *stringifyFailedCheck(FailedCheck check);
/// Parses a wire name; std::nullopt for an unknown one.
std::optional<FailedCheck> parseFailedCheck(std::string_view name);

/// Timing of one candidate, in microseconds.
struct Timing {
  double medianUs = 0;
  double minUs = 0;
  double p10Us = 0;
  double p90Us = 0;
  /// Number of timed repetitions.
  int64_t repetitions = 0;

  bool operator==(const Timing &other) const;
};

/// Where one candidate's evaluation spent its time, in seconds of wall
/// time in the worker (docs/Evaluator.md, "Where the time goes"). Each
/// phase counts the work done for this candidate; `request` is the whole
/// request's.
struct EvalPhases {
  /// Runners of the first set: plan checks, NVRTC (or its cache), module
  /// loading, device allocation.
  double compileS = 0;
  /// Runners of the later sets: device allocation.
  double allocateS = 0;
  /// Drawing the input sets on the device and checksumming them.
  double inputsS = 0;
  /// The validation runs themselves (launch to synchronize).
  double runsS = 0;
  /// Poisoning, redzones, input checksums, unwritten elements, output
  /// checksums, the two-run and interleaving checks.
  double checksS = 0;
  /// Comparisons with the baseline's outputs (every set and after timing).
  double compareS = 0;
  /// Checks against the fp64 references (the sampled points).
  double referenceS = 0;
  /// Warm-up, timed runs with their poisoning and checks, re-measurements.
  double timingS = 0;
  /// The timed runs' own event times added up: the candidate's run time
  /// times its repetitions.
  double timedKernelS = 0;
  /// Everything above, and whatever else was spent on this candidate.
  double totalS = 0;
  /// The whole request, every candidate and the set-up.
  double requestS = 0;

  bool operator==(const EvalPhases &other) const;
};

/// The outcome of one candidate.
struct EvalReport {
  /// Index of the candidate in the request (0 is the baseline).
  int64_t candidate = 0;
  /// Whether NVRTC compiled every source, and its log.
  bool compiled = false;
  std::string compileLog;
  /// Whether every validation check passed.
  bool valid = false;
  /// The first failed check; `None` exactly when `valid`.
  FailedCheck failedCheck = FailedCheck::None;
  /// Free-form support for the verdict: worst elements with index, expected
  /// and actual values, input sets tried, maximum errors. Always an object.
  json::Value evidence = json::Value::object();
  /// Present when the candidate was timed.
  std::optional<Timing> times;
  /// Baseline median over this candidate's median, when both were timed.
  std::optional<double> speedup;
  /// Set when the speedup was implausible (over 10x) and stayed so when
  /// re-measured, or when the event timing disagreed with CUPTI's kernel
  /// durations (`timing_cross_check` in the evidence).
  bool suspicious = false;
  /// SM clock and GPU temperature while timing, when known.
  std::optional<double> smClockMhz;
  std::optional<double> temperatureC;
  /// Where the evaluation's time went, when the worker measured it.
  std::optional<EvalPhases> phases;

  bool operator==(const EvalReport &other) const;
};

/// worker -> caller: one report per candidate, in the request's order.
struct ReportMessage {
  int64_t requestId = 0;
  std::vector<EvalReport> reports;

  bool operator==(const ReportMessage &other) const;
};

/// Either way: something went wrong outside any one candidate.
struct ErrorMessage {
  /// The request the error answers, when there is one.
  std::optional<int64_t> requestId;
  std::string message;

  bool operator==(const ErrorMessage &other) const;
};

/// caller -> worker: finish and exit.
struct ShutdownMessage {
  bool operator==(const ShutdownMessage &) const { return true; }
};

/// Any protocol message.
using Message = std::variant<HelloMessage, EvaluateMessage, ReportMessage,
                             ErrorMessage, ShutdownMessage>;

/// The `type` of `message` (`hello`, `evaluate`, ...).
const char *getMessageType(const Message &message);

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

/// Converts `message` to its JSON object, with `protocol` and `type` first.
json::Value toJson(const Message &message);
/// Converts `message` to compact JSON text.
std::string encode(const Message &message);
/// Converts one report to JSON.
json::Value toJson(const EvalReport &report);

/// Whether `report`'s candidate was timed only briefly because it could not
/// win (`evidence.timing_cut`, docs/Evaluator.md): its times never make it
/// a winner.
bool isTimingCut(const EvalReport &report);

/// Reads a message object. Refuses another protocol or major version and
/// unknown types; ignores unknown fields (they may be added within a
/// version).
Result<Message> messageFromJson(const json::Value &value);
/// Parses and reads a message from JSON text.
Result<Message> decode(std::string_view text);
/// Reads one report object.
Result<EvalReport> evalReportFromJson(const json::Value &value);

//===----------------------------------------------------------------------===//
// Frames
//===----------------------------------------------------------------------===//

/// Writes one frame holding `payload` to `fd`, resuming after short writes
/// and EINTR. Refuses a payload over `maxBytes`. A closed reader gives an
/// IoError; on sockets SIGPIPE is suppressed, on pipes the caller should
/// ignore SIGPIPE.
Status writeFrame(int fd, std::string_view payload,
                  uint32_t maxBytes = kDefaultMaxFrameBytes);

/// Reads one frame's payload from `fd`, resuming after short reads and
/// EINTR. End of input before the first byte gives `StatusCode::Closed`;
/// end of input inside a frame gives an IoError; a length over `maxBytes`
/// gives OutOfRange before anything is allocated.
Result<std::string> readFrame(int fd,
                              uint32_t maxBytes = kDefaultMaxFrameBytes);

/// Encodes `message` and writes it as one frame.
Status writeMessage(int fd, const Message &message,
                    uint32_t maxBytes = kDefaultMaxFrameBytes);

/// Reads one frame and decodes the message in it.
Result<Message> readMessage(int fd, uint32_t maxBytes = kDefaultMaxFrameBytes);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_PROTOCOL_H
