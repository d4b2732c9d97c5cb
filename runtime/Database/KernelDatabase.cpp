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

#include <ctime>

using namespace kopt::runtime;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string kopt::runtime::hashBytes(std::string_view bytes) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
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

static Status fieldError(std::string_view key, std::string_view what) {
  return Status::error(StatusCode::InvalidArgument,
                       "field '" + std::string(key) + "' " + std::string(what));
}

/// Reads string member `key` of `object` into `out`; a missing member leaves
/// `out` unchanged.
static Status readString(const json::Value &object, std::string_view key,
                         std::string &out) {
  const json::Value *member = object.find(key);
  if (!member)
    return Status::success();
  const std::string *text = member->getString();
  if (!text)
    return fieldError(key, "must be a string");
  out = *text;
  return Status::success();
}

static Status readInteger(const json::Value &object, std::string_view key,
                          int64_t &out) {
  const json::Value *member = object.find(key);
  if (!member)
    return Status::success();
  std::optional<int64_t> number = member->getInteger();
  if (!number)
    return fieldError(key, "must be an integer");
  out = *number;
  return Status::success();
}

static Status readNumber(const json::Value &object, std::string_view key,
                         double &out) {
  const json::Value *member = object.find(key);
  if (!member)
    return Status::success();
  std::optional<double> number = member->getNumber();
  if (!number)
    return fieldError(key, "must be a number");
  out = *number;
  return Status::success();
}

static Status readBool(const json::Value &object, std::string_view key,
                       bool &out) {
  const json::Value *member = object.find(key);
  if (!member)
    return Status::success();
  std::optional<bool> flag = member->getBool();
  if (!flag)
    return fieldError(key, "must be a boolean");
  out = *flag;
  return Status::success();
}

#define KOPT_DB_TRY(expr)                                                      \
  do {                                                                         \
    Status tryStatus = (expr);                                                 \
    if (!tryStatus.isOk())                                                     \
      return tryStatus;                                                        \
  } while (false)

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
         updatedAt == other.updatedAt;
}

bool AttemptRecord::operator==(const AttemptRecord &other) const {
  return taskKey == other.taskKey && fingerprint == other.fingerprint &&
         plan == other.plan && proposer == other.proposer &&
         valid == other.valid && failedCheck == other.failedCheck &&
         feedback == other.feedback && time == other.time;
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

Result<DeviceFingerprint>
kopt::runtime::deviceFingerprintFromJson(const json::Value &value) {
  if (!value.isObject())
    return Status::error(StatusCode::InvalidArgument,
                         "a fingerprint must be an object");
  DeviceFingerprint fp;
  KOPT_DB_TRY(readString(value, "compute_capability", fp.computeCapability));
  KOPT_DB_TRY(readInteger(value, "sm_count", fp.smCount));
  KOPT_DB_TRY(
      readInteger(value, "memory_bandwidth_mbps", fp.memoryBandwidthMBps));
  KOPT_DB_TRY(readInteger(value, "l2_bytes", fp.l2Bytes));
  KOPT_DB_TRY(readString(value, "driver_version", fp.driverVersion));
  KOPT_DB_TRY(readString(value, "nvrtc_version", fp.nvrtcVersion));
  KOPT_DB_TRY(readString(value, "codegen_version", fp.codegenVersion));
  KOPT_DB_TRY(readString(value, "precision", fp.precision));
  return fp;
}

static json::Value toJson(const TimingSummary &times) {
  json::Value value = json::Value::object();
  value.set("median_ms", times.medianMs);
  value.set("min_ms", times.minMs);
  value.set("p10_ms", times.p10Ms);
  value.set("p90_ms", times.p90Ms);
  return value;
}

static Status readTimes(const json::Value &object, std::string_view key,
                        TimingSummary &times) {
  const json::Value *value = object.find(key);
  if (!value)
    return Status::success();
  if (!value->isObject())
    return fieldError(key, "must be an object");
  KOPT_DB_TRY(readNumber(*value, "median_ms", times.medianMs));
  KOPT_DB_TRY(readNumber(*value, "min_ms", times.minMs));
  KOPT_DB_TRY(readNumber(*value, "p10_ms", times.p10Ms));
  KOPT_DB_TRY(readNumber(*value, "p90_ms", times.p90Ms));
  return Status::success();
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
  return value;
}

static Status readBinary(const json::Value &object, std::string_view key,
                         std::optional<std::string> &out) {
  const json::Value *member = object.find(key);
  if (!member)
    return Status::success();
  const std::string *text = member->getString();
  if (!text)
    return fieldError(key, "must be a hex string");
  out = fromHex(*text);
  if (!out)
    return fieldError(key, "must be a hex string");
  return Status::success();
}

Result<KernelRecord>
kopt::runtime::kernelRecordFromJson(const json::Value &value) {
  if (!value.isObject())
    return Status::error(StatusCode::InvalidArgument,
                         "a kernel record must be an object");
  KernelRecord record;
  KOPT_DB_TRY(readString(value, "task_key", record.taskKey));
  if (record.taskKey.empty())
    return fieldError("task_key", "must be a non-empty string");
  const json::Value *fingerprint = value.find("fingerprint");
  if (!fingerprint)
    return fieldError("fingerprint", "is missing");
  Result<DeviceFingerprint> fp = deviceFingerprintFromJson(*fingerprint);
  if (!fp)
    return fp.status();
  record.fingerprint = *fp;
  KOPT_DB_TRY(readBool(value, "valid", record.valid));
  if (const json::Value *plan = value.find("plan"))
    record.plan = *plan;
  KOPT_DB_TRY(readBinary(value, "cubin", record.cubin));
  KOPT_DB_TRY(readBinary(value, "ptx", record.ptx));
  KOPT_DB_TRY(readString(value, "cubin_hash", record.cubinHash));
  KOPT_DB_TRY(readString(value, "ptx_hash", record.ptxHash));
  KOPT_DB_TRY(readTimes(value, "winner", record.winner));
  KOPT_DB_TRY(readTimes(value, "baseline", record.baseline));
  if (const json::Value *validation = value.find("validation"))
    record.validation = *validation;
  if (const json::Value *provenance = value.find("provenance")) {
    if (!provenance->isObject())
      return fieldError("provenance", "must be an object");
    KOPT_DB_TRY(
        readString(*provenance, "proposer", record.provenance.proposer));
    KOPT_DB_TRY(readString(*provenance, "model", record.provenance.model));
    KOPT_DB_TRY(
        readString(*provenance, "prompt_hash", record.provenance.promptHash));
    KOPT_DB_TRY(readInteger(*provenance, "round", record.provenance.round));
  }
  KOPT_DB_TRY(readInteger(value, "created_at", record.createdAt));
  KOPT_DB_TRY(readInteger(value, "updated_at", record.updatedAt));
  return record;
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
  return value;
}

Result<AttemptRecord>
kopt::runtime::attemptRecordFromJson(const json::Value &value) {
  if (!value.isObject())
    return Status::error(StatusCode::InvalidArgument,
                         "an attempt must be an object");
  AttemptRecord attempt;
  KOPT_DB_TRY(readString(value, "task_key", attempt.taskKey));
  if (attempt.taskKey.empty())
    return fieldError("task_key", "must be a non-empty string");
  const json::Value *fingerprint = value.find("fingerprint");
  if (!fingerprint)
    return fieldError("fingerprint", "is missing");
  Result<DeviceFingerprint> fp = deviceFingerprintFromJson(*fingerprint);
  if (!fp)
    return fp.status();
  attempt.fingerprint = *fp;
  if (const json::Value *plan = value.find("plan"))
    attempt.plan = *plan;
  KOPT_DB_TRY(readString(value, "proposer", attempt.proposer));
  KOPT_DB_TRY(readBool(value, "valid", attempt.valid));
  KOPT_DB_TRY(readString(value, "failed_check", attempt.failedCheck));
  if (const json::Value *feedback = value.find("feedback"))
    attempt.feedback = *feedback;
  KOPT_DB_TRY(readInteger(value, "time", attempt.time));
  return attempt;
}

//===----------------------------------------------------------------------===//
// KernelDatabase
//===----------------------------------------------------------------------===//

KernelDatabase::~KernelDatabase() = default;

Result<std::string> KernelDatabase::exportJsonLines() {
  Result<std::vector<KernelRecord>> records = list();
  if (!records)
    return records.status();
  Result<std::vector<AttemptRecord>> attempts = listAttempts();
  if (!attempts)
    return attempts.status();
  std::string text;
  for (const KernelRecord &record : *records) {
    json::Value line = json::Value::object();
    line.set("type", "kernel");
    line.set("record", toJson(record, /*withBinaries=*/true));
    json::writeTo(line, text);
    text.push_back('\n');
  }
  for (const AttemptRecord &attempt : *attempts) {
    json::Value line = json::Value::object();
    line.set("type", "attempt");
    line.set("attempt", toJson(attempt));
    json::writeTo(line, text);
    text.push_back('\n');
  }
  return text;
}

Result<size_t> KernelDatabase::importJsonLines(std::string_view text) {
  size_t stored = 0, lineNumber = 0;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view()
                                         : text.substr(end + 1);
    ++lineNumber;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos)
      continue;
    std::string where = "line " + std::to_string(lineNumber);
    Result<json::Value> value = json::parse(line);
    if (!value)
      return value.status().withContext(where);
    const json::Value *type = value->find("type");
    const std::string *typeName = type ? type->getString() : nullptr;
    if (typeName && *typeName == "kernel" && value->find("record")) {
      Result<KernelRecord> record =
          kernelRecordFromJson(*value->find("record"));
      if (!record)
        return record.status().withContext(where);
      Result<bool> put = this->put(*record);
      if (!put)
        return put.status().withContext(where);
      stored += *put ? 1 : 0;
    } else if (typeName && *typeName == "attempt" && value->find("attempt")) {
      Result<AttemptRecord> attempt =
          attemptRecordFromJson(*value->find("attempt"));
      if (!attempt)
        return attempt.status().withContext(where);
      KOPT_DB_TRY(addAttempt(*attempt).withContext(where));
    } else {
      return Status::error(StatusCode::InvalidArgument,
                           where + ": not a kernel or attempt line");
    }
  }
  return stored;
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
  std::string where =
      "record " + record.taskKey + " on " + record.fingerprint.hash() + ": ";
  if (record.cubin && hashBytes(*record.cubin) != record.cubinHash)
    return Status::error(StatusCode::Internal,
                         where + "cubin does not match its stored hash");
  if (record.ptx && hashBytes(*record.ptx) != record.ptxHash)
    return Status::error(StatusCode::Internal,
                         where + "PTX does not match its stored hash");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// MemoryKernelDatabase
//===----------------------------------------------------------------------===//

Result<std::optional<KernelRecord>>
MemoryKernelDatabase::lookup(std::string_view taskKey,
                             const DeviceFingerprint &fingerprint) {
  auto it = records.find({std::string(taskKey), fingerprint.hash()});
  if (it == records.end() || !it->second.valid)
    return std::optional<KernelRecord>();
  return std::optional<KernelRecord>(it->second);
}

Result<bool> MemoryKernelDatabase::put(const KernelRecord &record) {
  if (record.taskKey.empty())
    return Status::error(StatusCode::InvalidArgument,
                         "a kernel record needs a task key");
  std::pair<std::string, std::string> key{record.taskKey,
                                          record.fingerprint.hash()};
  auto it = records.find(key);
  if (it != records.end() && !isBetterRecord(record, it->second))
    return false;
  records[key] = detail::prepareForPut(record);
  return true;
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

Result<std::vector<KernelRecord>> MemoryKernelDatabase::list() {
  std::vector<KernelRecord> all;
  for (const auto &entry : records)
    all.push_back(entry.second);
  return all;
}

Result<std::vector<AttemptRecord>> MemoryKernelDatabase::listAttempts() {
  return attempts;
}

Result<KernelDatabaseStats> MemoryKernelDatabase::stats() {
  KernelDatabaseStats stats;
  stats.records = records.size();
  for (const auto &entry : records)
    stats.validRecords += entry.second.valid ? 1 : 0;
  stats.attempts = attempts.size();
  for (const AttemptRecord &attempt : attempts)
    stats.failedAttempts += attempt.valid ? 0 : 1;
  return stats;
}

Status MemoryKernelDatabase::verify() {
  std::string problems;
  for (const auto &entry : records) {
    Status status = detail::checkBinaryHashes(entry.second);
    if (!status.isOk())
      problems += (problems.empty() ? "" : "; ") + status.message();
  }
  if (!problems.empty())
    return Status::error(StatusCode::Internal, problems);
  return Status::success();
}
