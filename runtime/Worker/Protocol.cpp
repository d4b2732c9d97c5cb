//===- Protocol.cpp - Compiler and worker messages --------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Encoding and decoding of the worker protocol (docs/EvaluatorProtocol.md),
// and frame I/O. Frames are read and written with plain read/write loops that
// resume after short transfers and EINTR, and wait with poll() when a
// descriptor is non-blocking, so either end may use blocking or non-blocking
// descriptors.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Protocol.h"

#include "Support/FieldReader.h"

#include <cerrno>
#include <cstring>
#include <limits>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace kopt::runtime;

static constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

//===----------------------------------------------------------------------===//
// Message types
//===----------------------------------------------------------------------===//

bool WorkerDeviceInfo::operator==(const WorkerDeviceInfo &other) const {
  return name == other.name &&
         computeCapabilityMajor == other.computeCapabilityMajor &&
         computeCapabilityMinor == other.computeCapabilityMinor &&
         smCount == other.smCount && l2Bytes == other.l2Bytes &&
         memoryBandwidthGBps == other.memoryBandwidthGBps;
}

bool HelloMessage::operator==(const HelloMessage &other) const {
  return device == other.device && driverVersion == other.driverVersion &&
         nvrtcVersion == other.nvrtcVersion;
}

bool EvaluateOptions::operator==(const EvaluateOptions &other) const {
  return validationSets == other.validationSets &&
         repetitions == other.repetitions && warmupMs == other.warmupMs &&
         seed == other.seed && incumbentSpeedup == other.incumbentSpeedup;
}

bool OutputReference::operator==(const OutputReference &other) const {
  return output == other.output && indices == other.indices &&
         values == other.values;
}

bool ReferenceSet::operator==(const ReferenceSet &other) const {
  return inputSet == other.inputSet && seed == other.seed &&
         distribution == other.distribution && outputs == other.outputs;
}

bool EvaluateMessage::operator==(const EvaluateMessage &other) const {
  return requestId == other.requestId && task == other.task &&
         candidates == other.candidates && options == other.options &&
         reference == other.reference &&
         laterReferences == other.laterReferences &&
         compileAhead == other.compileAhead;
}

bool Timing::operator==(const Timing &other) const {
  return medianUs == other.medianUs && minUs == other.minUs &&
         p10Us == other.p10Us && p90Us == other.p90Us &&
         repetitions == other.repetitions;
}

bool EvalReport::operator==(const EvalReport &other) const {
  return candidate == other.candidate && compiled == other.compiled &&
         compileLog == other.compileLog && valid == other.valid &&
         failedCheck == other.failedCheck && evidence == other.evidence &&
         times == other.times && speedup == other.speedup &&
         suspicious == other.suspicious && smClockMhz == other.smClockMhz &&
         temperatureC == other.temperatureC && phases == other.phases;
}

namespace {
/// The phases' names in `phases` (seconds, hence `_s`), in order.
struct PhaseField {
  const char *name;
  double EvalPhases::*member;
};
constexpr PhaseField kPhaseFields[] = {
    {"compile_s", &EvalPhases::compileS},
    {"allocate_s", &EvalPhases::allocateS},
    {"inputs_s", &EvalPhases::inputsS},
    {"runs_s", &EvalPhases::runsS},
    {"checks_s", &EvalPhases::checksS},
    {"compare_s", &EvalPhases::compareS},
    {"reference_s", &EvalPhases::referenceS},
    {"timing_s", &EvalPhases::timingS},
    {"timed_kernel_s", &EvalPhases::timedKernelS},
    {"total_s", &EvalPhases::totalS},
    {"request_s", &EvalPhases::requestS},
};
} // namespace

bool EvalPhases::operator==(const EvalPhases &other) const {
  for (const PhaseField &field : kPhaseFields)
    if (this->*field.member != other.*field.member)
      return false;
  return true;
}

bool ReportMessage::operator==(const ReportMessage &other) const {
  return requestId == other.requestId && reports == other.reports;
}

bool ErrorMessage::operator==(const ErrorMessage &other) const {
  return requestId == other.requestId && message == other.message;
}

namespace {
struct FailedCheckName {
  FailedCheck check;
  const char *name;
};
} // namespace

static const FailedCheckName kFailedChecks[] = {
    {FailedCheck::Compile, "compile"},
    {FailedCheck::OutputMismatch, "output-mismatch"},
    {FailedCheck::UnwrittenOutput, "unwritten-output"},
    {FailedCheck::Redzone, "redzone"},
    {FailedCheck::InputModified, "input-modified"},
    {FailedCheck::Nondeterministic, "nondeterministic"},
    {FailedCheck::InputIndependent, "input-independent"},
    {FailedCheck::LaunchCount, "launch-count"},
    {FailedCheck::PostTimingMismatch, "post-timing-mismatch"},
    {FailedCheck::BelowPhysicalFloor, "below-physical-floor"},
    {FailedCheck::Crash, "crash"},
    {FailedCheck::Timeout, "timeout"},
};

const char *kopt::runtime::stringifyFailedCheck(FailedCheck check) {
  for (const FailedCheckName &entry : kFailedChecks)
    if (entry.check == check)
      return entry.name;
  return "";
}

std::optional<FailedCheck>
kopt::runtime::parseFailedCheck(std::string_view name) {
  for (const FailedCheckName &entry : kFailedChecks)
    if (name == entry.name)
      return entry.check;
  return std::nullopt;
}

const char *kopt::runtime::getMessageType(const Message &message) {
  static const char *const names[] = {"hello", "evaluate", "report", "error",
                                      "shutdown"};
  static_assert(std::variant_size_v<Message> == 5, "name every message");
  return names[message.index()];
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

json::Value kopt::runtime::toJson(const EvalReport &report) {
  json::Value object = json::Value::object();
  object.set("candidate", report.candidate);
  object.set("compiled", report.compiled);
  object.set("compile_log", report.compileLog);
  object.set("valid", report.valid);
  if (report.failedCheck != FailedCheck::None)
    object.set("failed_check", stringifyFailedCheck(report.failedCheck));
  object.set("evidence", report.evidence.isObject() ? report.evidence
                                                    : json::Value::object());
  if (report.times) {
    json::Value times = json::Value::object();
    times.set("median_us", report.times->medianUs);
    times.set("min_us", report.times->minUs);
    times.set("p10_us", report.times->p10Us);
    times.set("p90_us", report.times->p90Us);
    times.set("repetitions", report.times->repetitions);
    object.set("times", std::move(times));
  }
  if (report.speedup)
    object.set("speedup", *report.speedup);
  if (report.suspicious)
    object.set("suspicious", true);
  if (report.smClockMhz)
    object.set("sm_clock_mhz", *report.smClockMhz);
  if (report.temperatureC)
    object.set("temperature_c", *report.temperatureC);
  if (report.phases) {
    json::Value phases = json::Value::object();
    for (const PhaseField &field : kPhaseFields)
      phases.set(field.name, (*report.phases).*field.member);
    object.set("phases", std::move(phases));
  }
  return object;
}

/// A reference set as JSON (`set` only when it is not 0).
static json::Value encodeReference(const ReferenceSet &set) {
  json::Value reference = json::Value::object();
  if (set.inputSet != 0)
    reference.set("set", set.inputSet);
  reference.set("seed", set.seed);
  reference.set("distribution", set.distribution);
  json::Value outputs = json::Value::array();
  for (const OutputReference &output : set.outputs) {
    json::Value entry = json::Value::object();
    entry.set("name", output.output);
    json::Value indices = json::Value::array();
    for (int64_t index : output.indices)
      indices.push(index);
    json::Value values = json::Value::array();
    for (double number : output.values)
      values.push(number);
    entry.set("indices", std::move(indices));
    entry.set("values", std::move(values));
    outputs.push(std::move(entry));
  }
  reference.set("outputs", std::move(outputs));
  return reference;
}

/// Reads a reference set; `where` names it in errors.
static Result<ReferenceSet> decodeReference(const json::Value &value,
                                            const std::string &where) {
  FieldReader readReference(value, where);
  ReferenceSet set;
  set.inputSet = readReference.integer("set", 0, 0, kMaxInt64, false);
  set.seed = readReference.integer("seed", 0, 0, kMaxInt64, true);
  set.distribution = readReference.string("distribution");
  const json::Value *outputs = readReference.array("outputs");
  if (!readReference.isOk())
    return readReference.status();
  for (size_t i = 0, e = outputs->size(); i < e; ++i) {
    std::string at = where + ": output " + std::to_string(i);
    if (!outputs->at(i).isObject())
      return Status::error(StatusCode::InvalidArgument,
                           at + " is not an object");
    FieldReader readOutput(outputs->at(i), at);
    OutputReference output;
    output.output = readOutput.string("name");
    const json::Value *indices = readOutput.array("indices");
    const json::Value *values = readOutput.array("values");
    if (!readOutput.isOk())
      return readOutput.status();
    for (size_t k = 0; k < indices->size(); ++k) {
      std::optional<int64_t> index = indices->at(k).getInteger();
      if (!index || *index < 0)
        return Status::error(StatusCode::InvalidArgument,
                             at + ": 'indices' holds a value that is "
                                  "not an integer >= 0");
      output.indices.push_back(*index);
    }
    for (size_t k = 0; k < values->size(); ++k) {
      std::optional<double> number = values->at(k).getNumber();
      if (!number)
        return Status::error(StatusCode::InvalidArgument,
                             at + ": 'values' holds a non-number");
      output.values.push_back(*number);
    }
    if (output.indices.size() != output.values.size())
      return Status::error(StatusCode::InvalidArgument,
                           at + ": 'indices' and 'values' differ in "
                                "length");
    set.outputs.push_back(std::move(output));
  }
  return set;
}

namespace {
/// Adds the fields of each message type to its object.
struct FieldWriter {
  json::Value &object;

  void operator()(const HelloMessage &hello) {
    json::Value device = json::Value::object();
    device.set("name", hello.device.name);
    device.set("compute_capability",
               json::Value::array({hello.device.computeCapabilityMajor,
                                   hello.device.computeCapabilityMinor}));
    device.set("sm_count", hello.device.smCount);
    device.set("l2_bytes", hello.device.l2Bytes);
    device.set("memory_bandwidth_gbps", hello.device.memoryBandwidthGBps);
    object.set("device", std::move(device));
    object.set("driver_version", hello.driverVersion);
    object.set("nvrtc_version", hello.nvrtcVersion);
  }
  void operator()(const EvaluateMessage &evaluate) {
    object.set("id", evaluate.requestId);
    object.set("task", evaluate.task);
    object.set("candidates", json::Value::array(evaluate.candidates));
    json::Value options = json::Value::object();
    options.set("validation_sets", evaluate.options.validationSets);
    options.set("repetitions", evaluate.options.repetitions);
    options.set("warmup_ms", evaluate.options.warmupMs);
    options.set("seed", evaluate.options.seed);
    if (evaluate.options.incumbentSpeedup > 0)
      options.set("incumbent_speedup", evaluate.options.incumbentSpeedup);
    object.set("options", std::move(options));
    if (evaluate.reference)
      object.set("reference", encodeReference(*evaluate.reference));
    if (!evaluate.laterReferences.empty()) {
      json::Value later = json::Value::array();
      for (const ReferenceSet &reference : evaluate.laterReferences)
        later.push(encodeReference(reference));
      object.set("later_references", std::move(later));
    }
    if (!evaluate.compileAhead.empty())
      object.set("compile_ahead", json::Value::array(evaluate.compileAhead));
  }
  void operator()(const ReportMessage &report) {
    object.set("id", report.requestId);
    json::Value reports = json::Value::array();
    for (const EvalReport &entry : report.reports)
      reports.push(toJson(entry));
    object.set("reports", std::move(reports));
  }
  void operator()(const ErrorMessage &error) {
    if (error.requestId)
      object.set("id", *error.requestId);
    object.set("message", error.message);
  }
  void operator()(const ShutdownMessage &) {}
};
} // namespace

json::Value kopt::runtime::toJson(const Message &message) {
  json::Value object = json::Value::object();
  object.set("protocol", std::string(kProtocolName) + "/" +
                             std::to_string(kProtocolVersion));
  object.set("type", getMessageType(message));
  std::visit(FieldWriter{object}, message);
  return object;
}

std::string kopt::runtime::encode(const Message &message) {
  return json::write(toJson(message));
}

//===----------------------------------------------------------------------===//
// Decoding
//===----------------------------------------------------------------------===//

Result<EvalReport> kopt::runtime::evalReportFromJson(const json::Value &value) {
  FieldReader read(value, "report");
  EvalReport report;
  report.candidate = read.integer("candidate", 0, 0, kMaxInt64, true);
  report.compiled = read.boolean("compiled", false, true);
  report.compileLog = read.string("compile_log", /*required=*/false);
  report.valid = read.boolean("valid", false, true);
  std::string check;
  if (const json::Value *field = value.find("failed_check");
      field && !field->isNull())
    check = read.string("failed_check");
  if (const json::Value *evidence = read.object("evidence", false))
    report.evidence = *evidence;
  if (const json::Value *times = read.object("times", false)) {
    FieldReader readTimes(*times, "report: times");
    Timing timing;
    timing.medianUs = readTimes.number("median_us", 0, true);
    timing.minUs = readTimes.number("min_us", 0, true);
    timing.p10Us = readTimes.number("p10_us", 0, true);
    timing.p90Us = readTimes.number("p90_us", 0, true);
    timing.repetitions =
        readTimes.integer("repetitions", 0, 1, kMaxInt64, true);
    if (!readTimes.isOk())
      return readTimes.status();
    report.times = timing;
  }
  if (value.find("speedup"))
    report.speedup = read.number("speedup", 0);
  report.suspicious = read.boolean("suspicious", false);
  if (value.find("sm_clock_mhz"))
    report.smClockMhz = read.number("sm_clock_mhz", 0);
  if (value.find("temperature_c"))
    report.temperatureC = read.number("temperature_c", 0);
  if (const json::Value *phases = read.object("phases", false)) {
    FieldReader readPhases(*phases, "report: phases");
    EvalPhases decoded;
    for (const PhaseField &field : kPhaseFields)
      decoded.*field.member = readPhases.number(field.name, 0);
    if (!readPhases.isOk())
      return readPhases.status();
    report.phases = decoded;
  }
  if (!read.isOk())
    return read.status();

  std::string where = "report of candidate " + std::to_string(report.candidate);
  if (report.valid && !check.empty())
    return Status::error(StatusCode::InvalidArgument,
                         where + ": a valid candidate names failed check '" +
                             check + "'");
  if (!report.valid) {
    if (check.empty())
      return Status::error(StatusCode::InvalidArgument,
                           where + ": an invalid candidate needs "
                                   "'failed_check'");
    std::optional<FailedCheck> failed = parseFailedCheck(check);
    if (!failed)
      return Status::error(StatusCode::InvalidArgument,
                           where + ": unknown failed check '" + check + "'");
    report.failedCheck = *failed;
  }
  return report;
}

/// Reads a `hello` message.
static Result<Message> helloFromJson(const json::Value &value) {
  FieldReader read(value, "hello");
  HelloMessage hello;
  const json::Value *device = read.object("device");
  hello.driverVersion = read.string("driver_version");
  hello.nvrtcVersion = read.string("nvrtc_version");
  if (!read.isOk())
    return read.status();
  FieldReader readDevice(*device, "hello: device");
  WorkerDeviceInfo &info = hello.device;
  info.name = readDevice.string("name");
  if (const json::Value *capability = readDevice.array("compute_capability")) {
    std::optional<int64_t> major, minor;
    if (capability->size() == 2) {
      major = capability->at(0).getInteger();
      minor = capability->at(1).getInteger();
    }
    if (!major || !minor || *major < 0 || *minor < 0)
      readDevice.fail("'compute_capability' must be [major, minor]");
    else {
      info.computeCapabilityMajor = *major;
      info.computeCapabilityMinor = *minor;
    }
  }
  info.smCount = readDevice.integer("sm_count", 0, 1, kMaxInt64, true);
  info.l2Bytes = readDevice.integer("l2_bytes", 0, 0, kMaxInt64, true);
  info.memoryBandwidthGBps =
      readDevice.number("memory_bandwidth_gbps", 0, true);
  if (!readDevice.isOk())
    return readDevice.status();
  if (!(info.memoryBandwidthGBps >= 0))
    return Status::error(StatusCode::InvalidArgument,
                         "hello: device: 'memory_bandwidth_gbps' is negative");
  return Message(std::move(hello));
}

/// Reads an `evaluate` message.
static Result<Message> evaluateFromJson(const json::Value &value) {
  FieldReader read(value, "evaluate");
  EvaluateMessage evaluate;
  evaluate.requestId = read.integer("id", 0, 0, kMaxInt64, true);
  const json::Value *task = read.object("task");
  const json::Value *candidates = read.array("candidates");
  const json::Value *options = read.object("options", false);
  if (!read.isOk())
    return read.status();
  evaluate.task = *task;
  if (candidates->size() == 0)
    return Status::error(StatusCode::InvalidArgument,
                         "evaluate: 'candidates' is empty (the first "
                         "candidate is the baseline)");
  for (size_t i = 0, e = candidates->size(); i < e; ++i) {
    if (!candidates->at(i).isObject())
      return Status::error(StatusCode::InvalidArgument,
                           "evaluate: candidate " + std::to_string(i) +
                               " is not an object");
    evaluate.candidates.push_back(candidates->at(i));
  }
  if (options) {
    FieldReader readOptions(*options, "evaluate: options");
    EvaluateOptions &opts = evaluate.options;
    opts.validationSets =
        readOptions.integer("validation_sets", opts.validationSets, 1, 1000);
    opts.repetitions =
        readOptions.integer("repetitions", opts.repetitions, 1, 1000000);
    opts.warmupMs = readOptions.number("warmup_ms", opts.warmupMs);
    opts.seed = readOptions.integer("seed", opts.seed, 0, kMaxInt64);
    opts.incumbentSpeedup =
        readOptions.number("incumbent_speedup", opts.incumbentSpeedup);
    if (!readOptions.isOk())
      return readOptions.status();
    if (!(opts.warmupMs >= 0 && opts.warmupMs <= 600000))
      return Status::error(StatusCode::InvalidArgument,
                           "evaluate: options: 'warmup_ms' must be within "
                           "[0, 600000]");
    if (!(opts.incumbentSpeedup >= 0 && opts.incumbentSpeedup <= 1e9))
      return Status::error(StatusCode::InvalidArgument,
                           "evaluate: options: 'incumbent_speedup' must be "
                           "within [0, 1e9]");
  }
  if (const json::Value *reference = read.object("reference", false)) {
    auto set = decodeReference(*reference, "evaluate: reference");
    if (!set)
      return set.status();
    if (set->inputSet != 0)
      return Status::error(StatusCode::InvalidArgument,
                           "evaluate: reference: 'set' must be 0");
    evaluate.reference = std::move(*set);
  }
  if (const json::Value *later = read.array("later_references", false)) {
    for (size_t i = 0, e = later->size(); i < e; ++i) {
      std::string where = "evaluate: later_references " + std::to_string(i);
      if (!later->at(i).isObject())
        return Status::error(StatusCode::InvalidArgument,
                             where + " is not an object");
      auto set = decodeReference(later->at(i), where);
      if (!set)
        return set.status();
      if (set->inputSet < 1 || set->inputSet >= evaluate.options.validationSets)
        return Status::error(StatusCode::InvalidArgument,
                             where + ": 'set' must be within [1, "
                                     "validation_sets)");
      for (const ReferenceSet &other : evaluate.laterReferences)
        if (other.inputSet == set->inputSet)
          return Status::error(StatusCode::InvalidArgument,
                               where + ": set " +
                                   std::to_string(set->inputSet) +
                                   " has two references");
      evaluate.laterReferences.push_back(std::move(*set));
    }
  }
  if (const json::Value *ahead = read.array("compile_ahead", false))
    for (size_t i = 0, e = ahead->size(); i < e; ++i)
      if (ahead->at(i).isObject())
        evaluate.compileAhead.push_back(ahead->at(i));
  return Message(std::move(evaluate));
}

/// Reads a `report` message.
static Result<Message> reportFromJson(const json::Value &value) {
  FieldReader read(value, "report");
  ReportMessage report;
  report.requestId = read.integer("id", 0, 0, kMaxInt64, true);
  const json::Value *reports = read.array("reports");
  if (!read.isOk())
    return read.status();
  for (size_t i = 0, e = reports->size(); i < e; ++i) {
    Result<EvalReport> entry = evalReportFromJson(reports->at(i));
    if (!entry)
      return entry.status().withContext("reports[" + std::to_string(i) + "]");
    report.reports.push_back(std::move(*entry));
  }
  return Message(std::move(report));
}

/// Reads an `error` message.
static Result<Message> errorFromJson(const json::Value &value) {
  FieldReader read(value, "error");
  ErrorMessage error;
  if (value.find("id"))
    error.requestId = read.integer("id", 0, 0, kMaxInt64);
  error.message = read.string("message");
  if (!read.isOk())
    return read.status();
  return Message(std::move(error));
}

/// Checks the `protocol` field: `kopt.worker/<version>` with this version.
static Status checkProtocol(const json::Value &value) {
  std::string expected =
      std::string(kProtocolName) + "/" + std::to_string(kProtocolVersion);
  const json::Value *field = value.find("protocol");
  if (!field)
    return Status::error(StatusCode::InvalidArgument,
                         "message: missing 'protocol' (expected '" + expected +
                             "')");
  const std::string *text = field->getString();
  if (!text)
    return Status::error(StatusCode::InvalidArgument,
                         "message: 'protocol' must be a string");
  std::string prefix = std::string(kProtocolName) + "/";
  if (text->compare(0, prefix.size(), prefix) != 0)
    return Status::error(StatusCode::Unsupported, "message: protocol '" +
                                                      *text + "' is not '" +
                                                      expected + "'");
  std::string digits = text->substr(prefix.size());
  int64_t major = 0;
  bool wellFormed = !digits.empty() && digits.size() <= 9 &&
                    (digits[0] != '0' || digits.size() == 1);
  for (char c : digits) {
    wellFormed = wellFormed && c >= '0' && c <= '9';
    major = major * 10 + (c - '0');
  }
  if (!wellFormed)
    return Status::error(StatusCode::InvalidArgument,
                         "message: malformed protocol '" + *text +
                             "' (expected '" + expected + "')");
  if (major != kProtocolVersion)
    return Status::error(StatusCode::Unsupported,
                         "message: protocol version " + std::to_string(major) +
                             " is not supported (this side speaks '" +
                             expected + "')");
  return Status::success();
}

Result<Message> kopt::runtime::messageFromJson(const json::Value &value) {
  if (!value.isObject())
    return Status::error(StatusCode::InvalidArgument,
                         "message: expected a JSON object");
  if (Status status = checkProtocol(value); !status.isOk())
    return status;
  const json::Value *typeField = value.find("type");
  const std::string *type = typeField ? typeField->getString() : nullptr;
  if (!type)
    return Status::error(StatusCode::InvalidArgument,
                         "message: missing string 'type'");
  if (*type == "hello")
    return helloFromJson(value);
  if (*type == "evaluate")
    return evaluateFromJson(value);
  if (*type == "report")
    return reportFromJson(value);
  if (*type == "error")
    return errorFromJson(value);
  if (*type == "shutdown")
    return Message(ShutdownMessage());
  return Status::error(StatusCode::Unsupported,
                       "message: unknown type '" + *type + "'");
}

Result<Message> kopt::runtime::decode(std::string_view text) {
  json::ParseLimits limits;
  limits.maxBytes = std::max<size_t>(limits.maxBytes, text.size());
  Result<json::Value> value = json::parse(text, limits);
  if (!value)
    return value.status().withContext("message");
  return messageFromJson(*value);
}

//===----------------------------------------------------------------------===//
// Frames
//===----------------------------------------------------------------------===//

/// Waits until `fd` is ready for `events` (after EAGAIN on a non-blocking
/// descriptor).
static Status waitFor(int fd, short events) {
  pollfd entry = {fd, events, 0};
  while (::poll(&entry, 1, -1) < 0)
    if (errno != EINTR)
      return Status::error(StatusCode::IoError,
                           std::string("poll failed: ") + std::strerror(errno));
  return Status::success();
}

/// Writes all of `data` to `fd`.
static Status writeAll(int fd, const char *data, size_t size) {
  bool socket = true;
  while (size > 0) {
    ssize_t written;
    if (socket) {
      // send() can suppress SIGPIPE where write() cannot.
      written = ::send(fd, data, size, MSG_NOSIGNAL);
      if (written < 0 && errno == ENOTSOCK) {
        socket = false;
        continue;
      }
    } else {
      written = ::write(fd, data, size);
    }
    if (written < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (Status status = waitFor(fd, POLLOUT); !status.isOk())
          return status;
        continue;
      }
      return Status::error(StatusCode::IoError, std::string("write failed: ") +
                                                    std::strerror(errno));
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
  return Status::success();
}

/// Reads up to `size` bytes into `data`, stopping early only at end of
/// input; `got` receives the count.
static Status readAll(int fd, char *data, size_t size, size_t &got) {
  got = 0;
  while (got < size) {
    ssize_t count = ::read(fd, data + got, size - got);
    if (count == 0)
      return Status::success();
    if (count < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (Status status = waitFor(fd, POLLIN); !status.isOk())
          return status;
        continue;
      }
      return Status::error(StatusCode::IoError,
                           std::string("read failed: ") + std::strerror(errno));
    }
    got += static_cast<size_t>(count);
  }
  return Status::success();
}

Status kopt::runtime::writeFrame(int fd, std::string_view payload,
                                 uint32_t maxBytes) {
  if (payload.size() > maxBytes)
    return Status::error(StatusCode::OutOfRange,
                         "frame payload of " + std::to_string(payload.size()) +
                             " bytes is over the limit of " +
                             std::to_string(maxBytes) + " bytes");
  uint32_t length = static_cast<uint32_t>(payload.size());
  char header[4] = {static_cast<char>(length & 0xFF),
                    static_cast<char>((length >> 8) & 0xFF),
                    static_cast<char>((length >> 16) & 0xFF),
                    static_cast<char>((length >> 24) & 0xFF)};
  if (Status status = writeAll(fd, header, sizeof(header)); !status.isOk())
    return status;
  return writeAll(fd, payload.data(), payload.size());
}

Result<std::string> kopt::runtime::readFrame(int fd, uint32_t maxBytes) {
  unsigned char header[4];
  size_t got;
  if (Status status = readAll(fd, reinterpret_cast<char *>(header), 4, got);
      !status.isOk())
    return status;
  if (got == 0)
    return Status::error(StatusCode::Closed,
                         "the peer closed the stream between frames");
  if (got < 4)
    return Status::error(StatusCode::IoError,
                         "end of input inside a frame header (" +
                             std::to_string(got) + " of 4 bytes)");
  uint32_t length = uint32_t(header[0]) | uint32_t(header[1]) << 8 |
                    uint32_t(header[2]) << 16 | uint32_t(header[3]) << 24;
  if (length > maxBytes)
    return Status::error(StatusCode::OutOfRange,
                         "frame of " + std::to_string(length) +
                             " bytes is over the limit of " +
                             std::to_string(maxBytes) + " bytes");
  std::string payload(length, '\0');
  if (Status status = readAll(fd, payload.data(), length, got); !status.isOk())
    return status;
  if (got < length)
    return Status::error(StatusCode::IoError, "end of input inside a frame (" +
                                                  std::to_string(got) + " of " +
                                                  std::to_string(length) +
                                                  " payload bytes)");
  return payload;
}

Status kopt::runtime::writeMessage(int fd, const Message &message,
                                   uint32_t maxBytes) {
  return writeFrame(fd, encode(message), maxBytes);
}

Result<Message> kopt::runtime::readMessage(int fd, uint32_t maxBytes) {
  Result<std::string> payload = readFrame(fd, maxBytes);
  if (!payload)
    return payload.status();
  return decode(*payload);
}

bool kopt::runtime::isTimingCut(const EvalReport &report) {
  return report.evidence.find("timing_cut") != nullptr;
}
