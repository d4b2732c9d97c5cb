//===- KernelDatabase.h - Kernels keyed by task and device ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The kernel database keeps, for each task key and device/toolchain
// fingerprint, the fastest valid plan found so far, with its binaries, times,
// validation evidence and provenance, plus every attempt made. It has a memory
// implementation and a file (SQLite) implementation; docs/KernelDatabase.md
// describes the schema.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_KERNELDATABASE_H
#define KOPT_RUNTIME_KERNELDATABASE_H

#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kopt::runtime {

/// What a tuned kernel depends on besides its task: the device and the
/// toolchain that built and measured it.
struct DeviceFingerprint {
  /// Compute capability, such as `sm_90`.
  std::string computeCapability;
  int64_t smCount = 0;
  /// Peak memory bandwidth in MB/s.
  int64_t memoryBandwidthMBps = 0;
  int64_t l2Bytes = 0;
  std::string driverVersion;
  std::string nvrtcVersion;
  /// The version of kopt's code generator.
  std::string codegenVersion;
  /// The precision policy: `fp32`, `tf32` or `bf16`.
  std::string precision = "fp32";

  /// A stable text form naming every field, such as
  /// `cc=sm_90;sms=132;bw=4800000;l2=52428800;driver=...`.
  std::string toString() const;
  /// A stable 16-hex-digit hash of `toString()`.
  std::string hash() const;

  bool operator==(const DeviceFingerprint &other) const {
    return toString() == other.toString();
  }
  bool operator!=(const DeviceFingerprint &other) const {
    return !(*this == other);
  }
};

/// Times of one plan, in milliseconds.
struct TimingSummary {
  double medianMs = 0;
  double minMs = 0;
  double p10Ms = 0;
  double p90Ms = 0;

  bool operator==(const TimingSummary &other) const {
    return medianMs == other.medianMs && minMs == other.minMs &&
           p10Ms == other.p10Ms && p90Ms == other.p90Ms;
  }
};

/// Who proposed a plan and how.
struct Provenance {
  /// `baseline`, `builtin` or `llm`.
  std::string proposer;
  /// The model that wrote the plan, when one did.
  std::string model;
  /// A hash of the prompt that produced the plan.
  std::string promptHash;
  /// The search round that produced the plan.
  int64_t round = 0;

  bool operator==(const Provenance &other) const {
    return proposer == other.proposer && model == other.model &&
           promptHash == other.promptHash && round == other.round;
  }
};

/// The winning plan for one task on one device and toolchain.
struct KernelRecord {
  /// The task's SHA-256 key.
  std::string taskKey;
  DeviceFingerprint fingerprint;
  /// Whether the plan passed validation; only valid records are returned by
  /// lookups.
  bool valid = true;
  /// The winning `kopt.plan/1` document, sources included.
  json::Value plan;
  /// Compiled binaries, when kept.
  std::optional<std::string> cubin;
  std::optional<std::string> ptx;
  /// Hashes of `cubin` and `ptx` (see `hashBytes`); `put` fills empty ones.
  std::string cubinHash;
  std::string ptxHash;
  /// The winner's and the baseline's times.
  TimingSummary winner;
  TimingSummary baseline;
  /// Validation evidence: inputs tried, maximum errors.
  json::Value validation;
  Provenance provenance;
  /// Seconds since the Unix epoch; `put` fills zeros.
  int64_t createdAt = 0;
  int64_t updatedAt = 0;

  bool operator==(const KernelRecord &other) const;
  bool operator!=(const KernelRecord &other) const { return !(*this == other); }
};

/// One candidate tried for a task, kept whatever its outcome.
struct AttemptRecord {
  std::string taskKey;
  DeviceFingerprint fingerprint;
  /// The candidate `kopt.plan/1` document.
  json::Value plan;
  std::string proposer;
  /// Whether the candidate passed every check.
  bool valid = false;
  /// The check that failed, when one did.
  std::string failedCheck;
  /// Feedback and evidence for the proposer.
  json::Value feedback;
  /// Seconds since the Unix epoch; `addAttempt` fills a zero.
  int64_t time = 0;

  bool operator==(const AttemptRecord &other) const;
  bool operator!=(const AttemptRecord &other) const {
    return !(*this == other);
  }
};

/// Counts over a database.
struct KernelDatabaseStats {
  size_t records = 0;
  size_t validRecords = 0;
  size_t attempts = 0;
  size_t failedAttempts = 0;
};

/// The hash the database keeps for a binary: 16 hex digits of FNV-1a 64.
std::string hashBytes(std::string_view bytes);

/// Writes `record` as a JSON object; binaries are hex strings when
/// `withBinaries` is set.
json::Value toJson(const KernelRecord &record, bool withBinaries);
/// Writes `attempt` as a JSON object.
json::Value toJson(const AttemptRecord &attempt);
/// Writes `fingerprint` as a JSON object.
json::Value toJson(const DeviceFingerprint &fingerprint);
/// Reads a record written by `toJson`.
Result<KernelRecord> kernelRecordFromJson(const json::Value &value);
/// Reads an attempt written by `toJson`.
Result<AttemptRecord> attemptRecordFromJson(const json::Value &value);
/// Reads a fingerprint written by `toJson`.
Result<DeviceFingerprint> deviceFingerprintFromJson(const json::Value &value);

/// Whether `incoming` should replace `existing` for the same key and
/// fingerprint: a valid record beats an invalid one, and among records of the
/// same validity the lower median time wins (ties keep `existing`).
bool isBetterRecord(const KernelRecord &incoming, const KernelRecord &existing);

namespace detail {
/// Returns `record` with what `put` fills: missing binary hashes and zero
/// timestamps.
KernelRecord prepareForPut(const KernelRecord &record);
/// Checks that each binary of `record` matches its stored hash.
Status checkBinaryHashes(const KernelRecord &record);
} // namespace detail

/// Tuned kernels keyed by task key plus device and toolchain fingerprint.
class KernelDatabase {
public:
  virtual ~KernelDatabase();

  /// Returns the valid record for `taskKey` on `fingerprint`, std::nullopt
  /// when there is none, or an error when the database cannot be read.
  virtual Result<std::optional<KernelRecord>>
  lookup(std::string_view taskKey, const DeviceFingerprint &fingerprint) = 0;

  /// Stores `record` unless the stored record for its key and fingerprint is
  /// better (see `isBetterRecord`). Returns whether `record` was stored.
  virtual Result<bool> put(const KernelRecord &record) = 0;

  /// Appends `attempt`.
  virtual Status addAttempt(const AttemptRecord &attempt) = 0;

  /// Every record, ordered by task key then fingerprint hash.
  virtual Result<std::vector<KernelRecord>> list() = 0;

  /// Every attempt, in the order they were added.
  virtual Result<std::vector<AttemptRecord>> listAttempts() = 0;

  /// Counts records and attempts.
  virtual Result<KernelDatabaseStats> stats() = 0;

  /// Checks the storage and that every stored binary matches its hash;
  /// returns an error naming each problem.
  virtual Status verify() = 0;

  /// Writes every record (binaries in hex) and attempt, one JSON object per
  /// line, each tagged `"type": "kernel"` or `"type": "attempt"`.
  Result<std::string> exportJsonLines();

  /// Merges lines written by `exportJsonLines`: each record goes through
  /// `put` (the better one stays) and each attempt is appended. Stops at the
  /// first malformed line, naming it; lines before it stay merged. Returns
  /// the number of records stored.
  Result<size_t> importJsonLines(std::string_view text);
};

/// A kernel database in memory, for tests and one-shot runs.
class MemoryKernelDatabase final : public KernelDatabase {
public:
  Result<std::optional<KernelRecord>>
  lookup(std::string_view taskKey,
         const DeviceFingerprint &fingerprint) override;
  Result<bool> put(const KernelRecord &record) override;
  Status addAttempt(const AttemptRecord &attempt) override;
  Result<std::vector<KernelRecord>> list() override;
  Result<std::vector<AttemptRecord>> listAttempts() override;
  Result<KernelDatabaseStats> stats() override;
  Status verify() override;

private:
  /// Records by (task key, fingerprint hash).
  std::map<std::pair<std::string, std::string>, KernelRecord> records;
  std::vector<AttemptRecord> attempts;
};

/// How to open a database file.
struct SqliteOpenOptions {
  /// Open read-only even when the file is writable.
  bool readOnly = false;
  /// Create the file when it does not exist.
  bool create = true;
  /// How long a write waits for another process's lock, in milliseconds.
  int busyTimeoutMs = 30000;
};

/// A kernel database in one SQLite file in WAL mode, safe for many processes
/// at once. Every write runs in a transaction.
class SqliteKernelDatabase final : public KernelDatabase {
public:
  /// The schema version this code writes; older files are migrated forward.
  static constexpr int64_t kSchemaVersion = 2;

  /// Opens (or creates) the database at `path`. Fails without writing to the
  /// file when it is not SQLite, is SQLite without kopt's tables, or has a
  /// newer schema. A file without write permission opens read-only, and then
  /// every write fails.
  static Result<std::unique_ptr<SqliteKernelDatabase>>
  open(const std::string &path, const SqliteOpenOptions &options = {});

  ~SqliteKernelDatabase() override;

  /// Whether writes are refused.
  bool isReadOnly() const;

  Result<std::optional<KernelRecord>>
  lookup(std::string_view taskKey,
         const DeviceFingerprint &fingerprint) override;
  Result<bool> put(const KernelRecord &record) override;
  Status addAttempt(const AttemptRecord &attempt) override;
  Result<std::vector<KernelRecord>> list() override;
  Result<std::vector<AttemptRecord>> listAttempts() override;
  Result<KernelDatabaseStats> stats() override;
  Status verify() override;

  class Impl;

private:
  explicit SqliteKernelDatabase(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_KERNELDATABASE_H
