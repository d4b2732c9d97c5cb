//===- KernelDatabase.cpp - Records and the memory database -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What both kernel database implementations share: fingerprints, record JSON,
// the rule that decides which record wins, and JSON lines export and import.
// The memory implementation is here too.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/KernelDatabase.h"

#include "Support/FieldReader.h"
#include "kopt/Runtime/Hash.h"
#include "kopt/Runtime/PlanVerifier.h"
#include "kopt/Runtime/TaskPlan.h"

#include <ctime>
#include <istream>
#include <limits>
#include <ostream>
#include <sstream>

using namespace kopt::runtime;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string kopt::runtime::hashBytes(std::string_view bytes) {
  uint64_t hash = fnv1a64(bytes.data(), bytes.size());
  static const char digits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4)
    text[i] = digits[hash & 15];
  return text;
}

static std::string toHex(std::string_view bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    text.push_back(digits[c >> 4]);
    text.push_back(digits[c & 15]);
  }
  return text;
}

static int hexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static std::optional<std::string> fromHex(std::string_view text) {
  if (text.size() % 2)
    return std::nullopt;
  std::string bytes;
  bytes.reserve(text.size() / 2);
  for (size_t i = 0; i < text.size(); i += 2) {
    int high = hexDigit(text[i]), low = hexDigit(text[i + 1]);
    if (high < 0 || low < 0)
      return std::nullopt;
    bytes.push_back(static_cast<char>(high * 16 + low));
  }
  return bytes;
}

static int64_t now() { return static_cast<int64_t>(std::time(nullptr)); }

//===----------------------------------------------------------------------===//
// Fingerprints and records
//===----------------------------------------------------------------------===//

std::string DeviceFingerprint::toString() const {
  return "cc=" + computeCapability + ";sms=" + std::to_string(smCount) +
         ";bw=" + std::to_string(memoryBandwidthMBps) +
         ";l2=" + std::to_string(l2Bytes) + ";driver=" + driverVersion +
         ";nvrtc=" + nvrtcVersion + ";codegen=" + codegenVersion +
         ";precision=" + precision;
}

std::string DeviceFingerprint::hash() const { return hashBytes(toString()); }

bool KernelRecord::operator==(const KernelRecord &other) const {
  return taskKey == other.taskKey && fingerprint == other.fingerprint &&
         valid == other.valid && plan == other.plan && cubin == other.cubin &&
         ptx == other.ptx && cubinHash == other.cubinHash &&
         ptxHash == other.ptxHash && winner == other.winner &&
         baseline == other.baseline && validation == other.validation &&
         provenance == other.provenance && createdAt == other.createdAt &&
         updatedAt == other.updatedAt && stale == other.stale;
}

bool AttemptRecord::operator==(const AttemptRecord &other) const {
  return taskKey == other.taskKey && fingerprint == other.fingerprint &&
         plan == other.plan && proposer == other.proposer &&
         valid == other.valid && failedCheck == other.failedCheck &&
         feedback == other.feedback && time == other.time &&
         exchange == other.exchange;
}

bool kopt::runtime::isBetterRecord(const KernelRecord &incoming,
                                   const KernelRecord &existing) {
  if (incoming.valid != existing.valid)
    return incoming.valid;
  return incoming.winner.medianMs < existing.winner.medianMs;
}

json::Value kopt::runtime::toJson(const DeviceFingerprint &fingerprint) {
  json::Value value = json::Value::object();
  value.set("compute_capability", fingerprint.computeCapability);
  value.set("sm_count", fingerprint.smCount);
  value.set("memory_bandwidth_mbps", fingerprint.memoryBandwidthMBps);
  value.set("l2_bytes", fingerprint.l2Bytes);
  value.set("driver_version", fingerprint.driverVersion);
  value.set("nvrtc_version", fingerprint.nvrtcVersion);
  value.set("codegen_version", fingerprint.codegenVersion);
  value.set("precision", fingerprint.precision);
  return value;
}

constexpr int64_t kAnyInteger = std::numeric_limits<int64_t>::max();

/// Reads the fingerprint fields with `read`; absent fields keep defaults.
static DeviceFingerprint readFingerprint(FieldReader &read,
                                         const json::Value &value) {
  DeviceFingerprint fp;
  fp.computeCapability = read.string("compute_capability", false);
  fp.smCount = read.integer("sm_count", fp.smCount, -kAnyInteger, kAnyInteger);
  fp.memoryBandwidthMBps =
      read.integer("memory_bandwidth_mbps", fp.memoryBandwidthMBps,
                   -kAnyInteger, kAnyInteger);
  fp.l2Bytes = read.integer("l2_bytes", fp.l2Bytes, -kAnyInteger, kAnyInteger);
  fp.driverVersion = read.string("driver_version", false);
  fp.nvrtcVersion = read.string("nvrtc_version", false);
  fp.codegenVersion = read.string("codegen_version", false);
  if (value.find("precision"))
    fp.precision = read.string("precision");
  return fp;
}

Result<DeviceFingerprint>
kopt::runtime::deviceFingerprintFromJson(const json::Value &value) {
  FieldReader read(value, "fingerprint");
  DeviceFingerprint fp = readFingerprint(read, value);
  if (!read.isOk())
    return read.status();
  return fp;
}

/// The fingerprint object `record` must hold, read into `fp`.
static void readRecordFingerprint(FieldReader &read, DeviceFingerprint &fp) {
  if (const json::Value *object = read.object("fingerprint")) {
    FieldReader inner(*object, "fingerprint");
    fp = readFingerprint(inner, *object);
    if (!inner.isOk())
      read.fail(inner.status().message());
  }
}

static json::Value toJson(const TimingSummary &times) {
  json::Value value = json::Value::object();
  value.set("median_ms", times.medianMs);
  value.set("min_ms", times.minMs);
  value.set("p10_ms", times.p10Ms);
  value.set("p90_ms", times.p90Ms);
  return value;
}

/// Reads the timing object `key`, when present, into `times`.
static void readTimes(FieldReader &read, std::string_view key,
                      TimingSummary &times) {
  const json::Value *object = read.object(key, /*required=*/false);
  if (!object)
    return;
  FieldReader inner(*object, std::string(key));
  times.medianMs = inner.number("median_ms", times.medianMs);
  times.minMs = inner.number("min_ms", times.minMs);
  times.p10Ms = inner.number("p10_ms", times.p10Ms);
  times.p90Ms = inner.number("p90_ms", times.p90Ms);
  if (!inner.isOk())
    read.fail(inner.status().message());
}

json::Value kopt::runtime::toJson(const KernelRecord &record,
                                  bool withBinaries) {
  json::Value value = json::Value::object();
  value.set("task_key", record.taskKey);
  value.set("fingerprint", toJson(record.fingerprint));
  value.set("valid", record.valid);
  value.set("plan", record.plan);
  if (record.cubin) {
    value.set("cubin_hash", record.cubinHash);
    if (withBinaries)
      value.set("cubin", toHex(*record.cubin));
  }
  if (record.ptx) {
    value.set("ptx_hash", record.ptxHash);
    if (withBinaries)
      value.set("ptx", toHex(*record.ptx));
  }
  value.set("winner", ::toJson(record.winner));
  value.set("baseline", ::toJson(record.baseline));
  value.set("validation", record.validation);
  json::Value provenance = json::Value::object();
  provenance.set("proposer", record.provenance.proposer);
  provenance.set("model", record.provenance.model);
  provenance.set("prompt_hash", record.provenance.promptHash);
  provenance.set("round", record.provenance.round);
  value.set("provenance", std::move(provenance));
  value.set("created_at", record.createdAt);
  value.set("updated_at", record.updatedAt);
  // Only when set, so that records written before the flag existed and
  // records without it read and write the same.
  if (record.stale)
    value.set("stale", true);
  return value;
}

/// Reads the hex-encoded binary `key`, when present, into `out`.
static void readBinary(FieldReader &read, std::string_view key,
                       std::optional<std::string> &out) {
  std::string text = read.string(key, /*required=*/false);
  if (text.empty())
    return;
  out = fromHex(text);
  if (!out)
    read.fail("'" + std::string(key) + "' must be a hex string");
}

/// Reads the task key, which must be present and non-empty.
static std::string readTaskKey(FieldReader &read) {
  std::string key = read.string("task_key");
  if (read.isOk() && key.empty())
    read.fail("'task_key' must be a non-empty string");
  return key;
}

Result<KernelRecord>
kopt::runtime::kernelRecordFromJson(const json::Value &value) {
  FieldReader read(value, "kernel record");
  KernelRecord record;
  record.taskKey = readTaskKey(read);
  readRecordFingerprint(read, record.fingerprint);
  record.valid = read.boolean("valid", record.valid);
  if (const json::Value *plan = value.find("plan"))
    record.plan = *plan;
  readBinary(read, "cubin", record.cubin);
  readBinary(read, "ptx", record.ptx);
  record.cubinHash = read.string("cubin_hash", false);
  record.ptxHash = read.string("ptx_hash", false);
  readTimes(read, "winner", record.winner);
  readTimes(read, "baseline", record.baseline);
  if (const json::Value *validation = value.find("validation"))
    record.validation = *validation;
  if (const json::Value *object = read.object("provenance", false)) {
    FieldReader provenance(*object, "provenance");
    record.provenance.proposer = provenance.string("proposer", false);
    record.provenance.model = provenance.string("model", false);
    record.provenance.promptHash = provenance.string("prompt_hash", false);
    record.provenance.round = provenance.integer(
        "round", record.provenance.round, -kAnyInteger, kAnyInteger);
    if (!provenance.isOk())
      read.fail(provenance.status().message());
  }
  record.createdAt =
      read.integer("created_at", record.createdAt, -kAnyInteger, kAnyInteger);
  record.updatedAt =
      read.integer("updated_at", record.updatedAt, -kAnyInteger, kAnyInteger);
  record.stale = read.boolean("stale", record.stale);
  if (!read.isOk())
    return read.status();
  return record;
}

std::string kopt::runtime::describeRecord(const KernelRecord &record) {
  return "record " + record.taskKey + " on " + record.fingerprint.hash();
}

json::Value kopt::runtime::toJson(const AttemptRecord &attempt) {
  json::Value value = json::Value::object();
  value.set("task_key", attempt.taskKey);
  value.set("fingerprint", toJson(attempt.fingerprint));
  value.set("plan", attempt.plan);
  value.set("proposer", attempt.proposer);
  value.set("valid", attempt.valid);
  value.set("failed_check", attempt.failedCheck);
  value.set("feedback", attempt.feedback);
  value.set("time", attempt.time);
  if (!attempt.exchange.isNull())
    value.set("exchange", attempt.exchange);
  return value;
}

Result<AttemptRecord>
kopt::runtime::attemptRecordFromJson(const json::Value &value) {
  FieldReader read(value, "attempt");
  AttemptRecord attempt;
  attempt.taskKey = readTaskKey(read);
  readRecordFingerprint(read, attempt.fingerprint);
  if (const json::Value *plan = value.find("plan"))
    attempt.plan = *plan;
  attempt.proposer = read.string("proposer", false);
  attempt.valid = read.boolean("valid", attempt.valid);
  attempt.failedCheck = read.string("failed_check", false);
  if (const json::Value *feedback = value.find("feedback"))
    attempt.feedback = *feedback;
  attempt.time = read.integer("time", attempt.time, -kAnyInteger, kAnyInteger);
  if (const json::Value *exchange = value.find("exchange"))
    attempt.exchange = *exchange;
  if (!read.isOk())
    return read.status();
  return attempt;
}

//===----------------------------------------------------------------------===//
// KernelDatabase
//===----------------------------------------------------------------------===//

KernelDatabase::~KernelDatabase() = default;

Result<bool> KernelDatabase::put(const KernelRecord &record) {
  Result<PutOutcome> outcome = merge(record);
  if (!outcome)
    return outcome.status();
  return *outcome != PutOutcome::Kept;
}

Result<std::vector<KernelRecord>>
KernelDatabase::list(const RecordFilter &filter) {
  std::vector<KernelRecord> records;
  Status status = forEachRecord(filter, [&](const KernelRecord &record) {
    records.push_back(record);
    return Status::success();
  });
  if (!status.isOk())
    return status;
  return records;
}

Result<std::vector<AttemptRecord>>
KernelDatabase::listAttempts(std::string_view taskKeyPrefix) {
  std::vector<AttemptRecord> attempts;
  Status status =
      forEachAttempt(taskKeyPrefix, [&](const AttemptRecord &attempt) {
        attempts.push_back(attempt);
        return Status::success();
      });
  if (!status.isOk())
    return status;
  return attempts;
}

Status KernelDatabase::verify() {
  Result<std::vector<std::string>> problems = findProblems();
  if (!problems)
    return problems.status();
  if (problems->empty())
    return Status::success();
  std::string text;
  for (const std::string &problem : *problems)
    text += (text.empty() ? "" : "; ") + problem;
  return Status::error(StatusCode::Internal, text);
}

Result<ExportSummary> KernelDatabase::exportJsonLines(std::ostream &out) {
  ExportSummary summary;
  std::string line;
  auto writeLine = [&](std::string_view type, std::string_view member,
                       json::Value value) {
    json::Value object = json::Value::object();
    object.set("type", type);
    object.set(member, std::move(value));
    line.clear();
    json::writeTo(object, line);
    line.push_back('\n');
    out.write(line.data(), static_cast<std::streamsize>(line.size()));
    if (!out)
      return Status::error(StatusCode::IoError, "cannot write the export");
    return Status::success();
  };
  Status status = readSnapshot([&] {
    Status status = forEachRecord({}, [&](const KernelRecord &record) {
      ++summary.records;
      return writeLine("kernel", "record",
                       toJson(record, /*withBinaries=*/true));
    });
    if (!status.isOk())
      return status;
    return forEachAttempt({}, [&](const AttemptRecord &attempt) {
      ++summary.attempts;
      return writeLine("attempt", "attempt", toJson(attempt));
    });
  });
  if (!status.isOk())
    return status;
  return summary;
}

Result<std::string> KernelDatabase::exportJsonLines() {
  std::ostringstream out;
  Result<ExportSummary> summary = exportJsonLines(out);
  if (!summary)
    return summary.status();
  return out.str();
}

Result<ImportSummary> KernelDatabase::importJsonLines(std::istream &in,
                                                      std::string_view name) {
  ImportSummary summary;
  Status status = transact([&]() -> Status {
    std::string line;
    for (size_t lineNumber = 1; std::getline(in, line); ++lineNumber) {
      if (line.find_first_not_of(" \t\r") == std::string::npos)
        continue;
      auto malformed = [&](const Status &status) {
        return Status::error(StatusCode::InvalidArgument,
                             std::string(name) + ":" +
                                 std::to_string(lineNumber) + ": " +
                                 status.message());
      };
      Result<json::Value> value = json::parse(line);
      if (!value)
        return malformed(value.status());
      const json::Value *type = value->find("type");
      const std::string *typeName = type ? type->getString() : nullptr;
      if (typeName && *typeName == "kernel" && value->find("record")) {
        Result<KernelRecord> record =
            kernelRecordFromJson(*value->find("record"));
        if (!record)
          return malformed(record.status());
        // A record `verify` would report is refused as a bad line.
        Result<PutOutcome> outcome = merge(*record);
        if (!outcome)
          return outcome.status().code() == StatusCode::InvalidArgument
                     ? malformed(outcome.status())
                     : outcome.status();
        ++(*outcome == PutOutcome::Added      ? summary.added
           : *outcome == PutOutcome::Replaced ? summary.replaced
                                              : summary.kept);
      } else if (typeName && *typeName == "attempt" && value->find("attempt")) {
        Result<AttemptRecord> attempt =
            attemptRecordFromJson(*value->find("attempt"));
        if (!attempt)
          return malformed(attempt.status());
        Result<bool> added = mergeAttempt(*attempt);
        if (!added)
          return added.status();
        ++(*added ? summary.attemptsAdded : summary.attemptsPresent);
      } else {
        return malformed(Status::error(
            StatusCode::InvalidArgument,
            "not a kernel or attempt line (it needs \"type\": \"kernel\" "
            "with \"record\", or \"type\": \"attempt\" with \"attempt\")"));
      }
    }
    if (in.bad())
      return Status::error(StatusCode::IoError,
                           std::string(name) + ": cannot read");
    return Status::success();
  });
  if (!status.isOk())
    return status;
  return summary;
}

Result<ImportSummary> KernelDatabase::importJsonLines(std::string_view text,
                                                      std::string_view name) {
  std::istringstream in{std::string(text)};
  return importJsonLines(in, name);
}

/// Fills what `put` fills: missing hashes and timestamps.
KernelRecord kopt::runtime::detail::prepareForPut(const KernelRecord &record) {
  KernelRecord prepared = record;
  if (prepared.cubin && prepared.cubinHash.empty())
    prepared.cubinHash = hashBytes(*prepared.cubin);
  if (prepared.ptx && prepared.ptxHash.empty())
    prepared.ptxHash = hashBytes(*prepared.ptx);
  if (!prepared.cubin)
    prepared.cubinHash.clear();
  if (!prepared.ptx)
    prepared.ptxHash.clear();
  int64_t time = now();
  if (prepared.createdAt == 0)
    prepared.createdAt = time;
  if (prepared.updatedAt == 0)
    prepared.updatedAt = time;
  return prepared;
}

Status kopt::runtime::detail::checkBinaryHashes(const KernelRecord &record) {
  std::string where = describeRecord(record) + ": ";
  if (record.cubin && hashBytes(*record.cubin) != record.cubinHash)
    return Status::error(StatusCode::Internal,
                         where + "cubin does not match its stored hash");
  if (record.ptx && hashBytes(*record.ptx) != record.ptxHash)
    return Status::error(StatusCode::Internal,
                         where + "PTX does not match its stored hash");
  return Status::success();
}

void kopt::runtime::detail::checkRecord(const KernelRecord &record,
                                        std::vector<std::string> &problems) {
  std::string where = describeRecord(record) + ": ";
  if (Status status = checkBinaryHashes(record); !status.isOk())
    problems.push_back(status.message());
  Result<KernelPlan> plan = kernelPlanFromJson(record.plan);
  if (!plan) {
    problems.push_back(where +
                       "stored plan does not read: " + plan.status().message());
    return;
  }
  if (plan->taskKey != record.taskKey) {
    problems.push_back(where + "stored plan is for task " + plan->taskKey);
    return;
  }
  // The task the record was tuned for, when it carries it (the autotuner
  // stores it for re-validation): the plan must fit it.
  const json::Value *task =
      record.validation.isObject() ? record.validation.find("task") : nullptr;
  if (!task)
    return;
  Result<KernelTask> parsed = kernelTaskFromJson(*task);
  if (!parsed)
    problems.push_back(where + "its task (validation.task) does not read: " +
                       parsed.status().message());
  else if (Status status = verifyStoredPlan(*plan, *parsed); !status.isOk())
    problems.push_back(
        where + "stored plan does not fit its task: " + status.message());
}

Result<KernelRecord>
kopt::runtime::detail::prepareForMerge(const KernelRecord &record) {
  if (record.taskKey.empty())
    return Status::error(StatusCode::InvalidArgument,
                         "a kernel record needs a task key");
  KernelRecord prepared = prepareForPut(record);
  std::vector<std::string> problems;
  checkRecord(prepared, problems);
  if (problems.empty())
    return prepared;
  std::string text = "refusing to store " + describeRecord(prepared) + ": ";
  for (size_t i = 0; i < problems.size(); ++i) {
    // Each problem starts with the record's name, said once here.
    std::string problem = problems[i];
    std::string name = describeRecord(prepared) + ": ";
    if (problem.rfind(name, 0) == 0)
      problem = problem.substr(name.size());
    text += (i ? "; " : "") + problem;
  }
  return Status::error(StatusCode::InvalidArgument, text);
}

bool kopt::runtime::detail::isPruned(const PruneOptions &options,
                                     const KernelRecord &record) {
  return options.records &&
         (!options.before || record.updatedAt < *options.before) &&
         (!options.invalidOnly || !record.valid) &&
         (options.fingerprintHash.empty() ||
          record.fingerprint.hash() == options.fingerprintHash);
}

bool kopt::runtime::detail::isPruned(const PruneOptions &options,
                                     const AttemptRecord &attempt) {
  return options.attempts &&
         (!options.before || attempt.time < *options.before) &&
         (!options.invalidOnly || !attempt.valid) &&
         (options.fingerprintHash.empty() ||
          attempt.fingerprint.hash() == options.fingerprintHash);
}

//===----------------------------------------------------------------------===//
// MemoryKernelDatabase
//===----------------------------------------------------------------------===//

static bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

Result<std::optional<KernelRecord>>
MemoryKernelDatabase::lookup(std::string_view taskKey,
                             const DeviceFingerprint &fingerprint) {
  auto it = records.find({std::string(taskKey), fingerprint.hash()});
  if (it == records.end() || !it->second.valid)
    return std::optional<KernelRecord>();
  return std::optional<KernelRecord>(it->second);
}

Result<PutOutcome> MemoryKernelDatabase::merge(const KernelRecord &incoming) {
  Result<KernelRecord> prepared = detail::prepareForMerge(incoming);
  if (!prepared)
    return prepared.status();
  const KernelRecord &record = *prepared;
  std::pair<std::string, std::string> key{record.taskKey,
                                          record.fingerprint.hash()};
  auto it = records.find(key);
  if (it != records.end() && !isBetterRecord(record, it->second))
    return PutOutcome::Kept;
  PutOutcome outcome =
      it == records.end() ? PutOutcome::Added : PutOutcome::Replaced;
  records[key] = record;
  return outcome;
}

Status MemoryKernelDatabase::addAttempt(const AttemptRecord &attempt) {
  if (attempt.taskKey.empty())
    return Status::error(StatusCode::InvalidArgument,
                         "an attempt needs a task key");
  attempts.push_back(attempt);
  if (attempts.back().time == 0)
    attempts.back().time = now();
  return Status::success();
}

Result<bool> MemoryKernelDatabase::mergeAttempt(const AttemptRecord &attempt) {
  for (const AttemptRecord &stored : attempts)
    if (stored == attempt)
      return false;
  Status status = addAttempt(attempt);
  if (!status.isOk())
    return status;
  return true;
}

Status MemoryKernelDatabase::forEachRecord(const RecordFilter &filter,
                                           const RecordCallback &callback) {
  for (const auto &entry : records) {
    if (!startsWith(entry.first.first, filter.taskKeyPrefix))
      continue;
    Status status;
    if (filter.withBinaries) {
      status = callback(entry.second);
    } else {
      KernelRecord record = entry.second;
      record.cubin.reset();
      record.ptx.reset();
      status = callback(record);
    }
    if (!status.isOk())
      return status;
  }
  return Status::success();
}

Status MemoryKernelDatabase::forEachAttempt(std::string_view taskKeyPrefix,
                                            const AttemptCallback &callback) {
  for (const AttemptRecord &attempt : attempts)
    if (startsWith(attempt.taskKey, taskKeyPrefix))
      if (Status status = callback(attempt); !status.isOk())
        return status;
  return Status::success();
}

Result<KernelDatabaseStats> MemoryKernelDatabase::stats() {
  KernelDatabaseStats stats;
  stats.records = records.size();
  for (const auto &entry : records) {
    const KernelRecord &record = entry.second;
    stats.validRecords += record.valid ? 1 : 0;
    stats.staleRecords += record.stale ? 1 : 0;
    stats.cubins += record.cubin ? 1 : 0;
    stats.ptxs += record.ptx ? 1 : 0;
    stats.binaryBytes +=
        static_cast<int64_t>((record.cubin ? record.cubin->size() : 0) +
                             (record.ptx ? record.ptx->size() : 0));
  }
  stats.attempts = attempts.size();
  for (const AttemptRecord &attempt : attempts)
    stats.failedAttempts += attempt.valid ? 0 : 1;
  return stats;
}

Result<std::vector<DeviceFingerprint>>
MemoryKernelDatabase::listFingerprints() {
  std::map<std::string, DeviceFingerprint> byHash;
  for (const auto &entry : records)
    byHash.emplace(entry.second.fingerprint.hash(), entry.second.fingerprint);
  std::vector<DeviceFingerprint> fingerprints;
  for (auto &entry : byHash)
    fingerprints.push_back(std::move(entry.second));
  return fingerprints;
}

Result<std::vector<std::string>> MemoryKernelDatabase::findProblems() {
  std::vector<std::string> problems;
  for (const auto &entry : records)
    detail::checkRecord(entry.second, problems);
  return problems;
}

Result<bool> MemoryKernelDatabase::setStale(std::string_view taskKey,
                                            std::string_view fingerprintHash,
                                            bool stale) {
  auto it = records.find({std::string(taskKey), std::string(fingerprintHash)});
  if (it == records.end())
    return false;
  it->second.stale = stale;
  return true;
}

Result<PruneSummary> MemoryKernelDatabase::prune(const PruneOptions &options) {
  PruneSummary summary;
  for (auto it = records.begin(); it != records.end();) {
    if (!detail::isPruned(options, it->second)) {
      ++it;
      continue;
    }
    KernelRecord removed = it->second;
    removed.cubin.reset();
    removed.ptx.reset();
    summary.records.push_back(std::move(removed));
    it = options.dryRun ? std::next(it) : records.erase(it);
  }
  std::vector<AttemptRecord> kept;
  for (const AttemptRecord &attempt : attempts) {
    if (detail::isPruned(options, attempt))
      ++summary.attempts;
    else if (!options.dryRun)
      kept.push_back(attempt);
  }
  if (!options.dryRun)
    attempts = std::move(kept);
  return summary;
}

Status MemoryKernelDatabase::transact(const std::function<Status()> &body) {
  auto savedRecords = records;
  auto savedAttempts = attempts;
  Status status = body();
  if (!status.isOk()) {
    records = std::move(savedRecords);
    attempts = std::move(savedAttempts);
  }
  return status;
}

Status MemoryKernelDatabase::readSnapshot(const std::function<Status()> &body) {
  return body();
}
