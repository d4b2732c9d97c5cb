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
// implementation, a file (SQLite) implementation and, where kopt is built
// with libpq, a PostgreSQL implementation shared by a fleet;
// `openKernelDatabase` picks one from a path or a URL.
// docs/KernelDatabase.md describes the schema.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_KERNELDATABASE_H
#define KOPT_RUNTIME_KERNELDATABASE_H

#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/Status.h"

#include <cstdint>
#include <functional>
#include <iosfwd>
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
  /// Set on a valid record measured under another driver or NVRTC version
  /// than the current one (see KernelRevalidation.h). Lookups on the
  /// record's own fingerprint still return it.
  bool stale = false;

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
  /// For a candidate a model wrote: the exchange that produced it (model,
  /// round, prompt and answer, token counts, latency, cost estimate; see
  /// docs/LLM.md). Null otherwise. Never holds an API key.
  json::Value exchange;

  bool operator==(const AttemptRecord &other) const;
  bool operator!=(const AttemptRecord &other) const {
    return !(*this == other);
  }
};

/// Counts over a database.
struct KernelDatabaseStats {
  size_t records = 0;
  size_t validRecords = 0;
  size_t staleRecords = 0;
  size_t attempts = 0;
  size_t failedAttempts = 0;
  /// Records that keep a cubin, and a PTX.
  size_t cubins = 0;
  size_t ptxs = 0;
  /// Bytes of every stored cubin and PTX.
  int64_t binaryBytes = 0;
};

/// Which records a listing returns.
struct RecordFilter {
  /// Only records whose task key starts with this; empty for all.
  std::string taskKeyPrefix;
  /// Read the cubin and PTX bytes. Without them `cubin` and `ptx` stay
  /// empty, and a non-empty `cubinHash` or `ptxHash` says the record has one.
  bool withBinaries = true;
};

/// What storing a record did.
enum class PutOutcome {
  /// There was no record for its key and fingerprint.
  Added,
  /// It was better than the stored record, which it replaced.
  Replaced,
  /// The stored record was at least as good and stays.
  Kept,
};

/// What an import did.
struct ImportSummary {
  size_t added = 0;
  size_t replaced = 0;
  size_t kept = 0;
  size_t attemptsAdded = 0;
  /// Attempts skipped because an identical one was stored.
  size_t attemptsPresent = 0;
};

/// What an export wrote.
struct ExportSummary {
  size_t records = 0;
  size_t attempts = 0;
};

/// What `prune` removes: records (when `records` is set) and attempts (when
/// `attempts` is set) that match every given condition.
struct PruneOptions {
  bool records = true;
  bool attempts = false;
  /// Only what was last written before this time (seconds since the Unix
  /// epoch): a record's `updatedAt`, an attempt's `time`.
  std::optional<int64_t> before;
  /// Only invalid records and failed attempts.
  bool invalidOnly = false;
  /// Only this fingerprint hash, when not empty.
  std::string fingerprintHash;
  /// Report what would go, and change nothing.
  bool dryRun = false;
};

/// What `prune` removed (or would remove, in a dry run).
struct PruneSummary {
  /// The removed records, without binaries.
  std::vector<KernelRecord> records;
  size_t attempts = 0;
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

/// The name of a record in messages: `record <task key> on <fingerprint
/// hash>`.
std::string describeRecord(const KernelRecord &record);

namespace detail {
/// Returns `record` with what `put` fills: missing binary hashes and zero
/// timestamps.
KernelRecord prepareForPut(const KernelRecord &record);
/// Checks that each binary of `record` matches its stored hash.
Status checkBinaryHashes(const KernelRecord &record);
/// Appends to `problems` what is wrong with `record` itself: binaries that do
/// not match their hashes, a plan that is not a `kopt.plan/1` document of
/// the record's task, or (when the record carries its task in
/// `validation.task`) a plan that `verifyStoredPlan` refuses for it. The
/// checks of `verify` on every record.
void checkRecord(const KernelRecord &record,
                 std::vector<std::string> &problems);
/// `prepareForPut(record)`, or an `invalid-argument` error listing what
/// `checkRecord` finds: every backend's `merge` calls it before writing,
/// so import, the autotuner and the fleet store only what `verify` accepts.
Result<KernelRecord> prepareForMerge(const KernelRecord &record);
/// Whether `prune` with `options` removes `record`, or `attempt`.
bool isPruned(const PruneOptions &options, const KernelRecord &record);
bool isPruned(const PruneOptions &options, const AttemptRecord &attempt);
/// SHA-256 of `bytes`, as 64 hex digits.
std::string sha256Hex(std::string_view bytes);
/// The content hash a database server keeps with a record: SHA-256 over
/// its stored JSON `recordJson` and its binaries.
std::string contentHash(std::string_view recordJson,
                        const std::optional<std::string> &cubin,
                        const std::optional<std::string> &ptx);
/// The error for a loaded record whose content does not match its content
/// hash (the record is refused).
Status contentHashMismatch(std::string_view taskKey,
                           std::string_view fingerprintHash);
} // namespace detail

/// Tuned kernels keyed by task key plus device and toolchain fingerprint.
///
/// Every write is atomic, and `transact` groups several into one. Errors of
/// the file implementation name the file.
class KernelDatabase {
public:
  /// Visits one record; an error stops the walk and is returned.
  using RecordCallback = std::function<Status(const KernelRecord &)>;
  /// Visits one attempt; an error stops the walk and is returned.
  using AttemptCallback = std::function<Status(const AttemptRecord &)>;

  virtual ~KernelDatabase();

  /// Where the database lives, for messages: a file's path, or a URL
  /// without its password.
  virtual std::string getLocation() const { return "<memory>"; }

  /// The version of the stored schema (0 in memory).
  virtual int64_t getSchemaVersion() const { return 0; }

  /// Returns the valid record for `taskKey` on `fingerprint`, std::nullopt
  /// when there is none, or an error when the database cannot be read.
  virtual Result<std::optional<KernelRecord>>
  lookup(std::string_view taskKey, const DeviceFingerprint &fingerprint) = 0;

  /// Stores `record` unless the stored record for its key and fingerprint is
  /// better (see `isBetterRecord`), and says which happened. A record that
  /// `verify` would report (`detail::checkRecord`) is refused with
  /// `invalid-argument` before anything is written.
  virtual Result<PutOutcome> merge(const KernelRecord &record) = 0;

  /// Like `merge`; returns whether `record` was stored.
  Result<bool> put(const KernelRecord &record);

  /// Appends `attempt`.
  virtual Status addAttempt(const AttemptRecord &attempt) = 0;

  /// Appends `attempt` unless an identical attempt is stored; returns whether
  /// it was appended.
  virtual Result<bool> mergeAttempt(const AttemptRecord &attempt) = 0;

  /// Calls `callback` on every record that `filter` selects, ordered by task
  /// key then fingerprint hash.
  virtual Status forEachRecord(const RecordFilter &filter,
                               const RecordCallback &callback) = 0;

  /// Calls `callback` on every attempt whose task key starts with
  /// `taskKeyPrefix`, in the order they were added.
  virtual Status forEachAttempt(std::string_view taskKeyPrefix,
                                const AttemptCallback &callback) = 0;

  /// The records that `filter` selects, ordered by task key then fingerprint
  /// hash.
  Result<std::vector<KernelRecord>> list(const RecordFilter &filter = {});

  /// The attempts whose task key starts with `taskKeyPrefix`, in the order
  /// they were added.
  Result<std::vector<AttemptRecord>>
  listAttempts(std::string_view taskKeyPrefix = {});

  /// Counts records, attempts and binaries.
  virtual Result<KernelDatabaseStats> stats() = 0;

  /// The distinct fingerprints of the stored records, ordered by hash;
  /// reads one record per fingerprint, not every record.
  virtual Result<std::vector<DeviceFingerprint>> listFingerprints() = 0;

  /// Checks the storage, every stored binary against its hash and every
  /// stored plan; returns one line per problem, none when all is well, or an
  /// error when the check could not run.
  virtual Result<std::vector<std::string>> findProblems() = 0;

  /// `findProblems` as one status: an `internal` error naming each problem.
  Status verify();

  /// Sets the stale flag of the record for `taskKey` on `fingerprintHash`;
  /// returns false when there is no such record.
  virtual Result<bool> setStale(std::string_view taskKey,
                                std::string_view fingerprintHash,
                                bool stale) = 0;

  /// Removes what `options` selects, in one transaction (nothing in a dry
  /// run), and says what that was.
  virtual Result<PruneSummary> prune(const PruneOptions &options) = 0;

  /// Runs `body` in one write transaction: the changes it makes through this
  /// database are kept when it succeeds, and none of them when it fails.
  /// Transactions nest.
  virtual Status transact(const std::function<Status()> &body) = 0;

  /// Runs `body`, whose reads all see one snapshot of the database.
  virtual Status readSnapshot(const std::function<Status()> &body) = 0;

  /// Writes every record (binaries in hex) and then every attempt, one JSON
  /// object per line, each tagged `"type": "kernel"` or `"type": "attempt"`,
  /// from one snapshot.
  Result<ExportSummary> exportJsonLines(std::ostream &out);
  /// `exportJsonLines` into a string.
  Result<std::string> exportJsonLines();

  /// Merges lines written by `exportJsonLines` in one transaction: each
  /// record goes through `merge` (the better one stays) and each attempt
  /// through `mergeAttempt`. A malformed line (named `name:LINE:`) or a
  /// failed write leaves the database as it was.
  Result<ImportSummary> importJsonLines(std::istream &in,
                                        std::string_view name = "<input>");
  /// `importJsonLines` from a string.
  Result<ImportSummary> importJsonLines(std::string_view text,
                                        std::string_view name = "<input>");
};

/// A kernel database in memory, for tests and one-shot runs.
class MemoryKernelDatabase final : public KernelDatabase {
public:
  Result<std::optional<KernelRecord>>
  lookup(std::string_view taskKey,
         const DeviceFingerprint &fingerprint) override;
  Result<PutOutcome> merge(const KernelRecord &record) override;
  Status addAttempt(const AttemptRecord &attempt) override;
  Result<bool> mergeAttempt(const AttemptRecord &attempt) override;
  Status forEachRecord(const RecordFilter &filter,
                       const RecordCallback &callback) override;
  Status forEachAttempt(std::string_view taskKeyPrefix,
                        const AttemptCallback &callback) override;
  Result<KernelDatabaseStats> stats() override;
  Result<std::vector<DeviceFingerprint>> listFingerprints() override;
  Result<std::vector<std::string>> findProblems() override;
  Result<bool> setStale(std::string_view taskKey,
                        std::string_view fingerprintHash, bool stale) override;
  Result<PruneSummary> prune(const PruneOptions &options) override;
  Status transact(const std::function<Status()> &body) override;
  Status readSnapshot(const std::function<Status()> &body) override;

private:
  /// Records by (task key, fingerprint hash).
  std::map<std::pair<std::string, std::string>, KernelRecord> records;
  std::vector<AttemptRecord> attempts;
};

/// The journal of a SQLite file opened for writing.
enum class SqliteJournal {
  /// Write-ahead log: readers never block writers; for files many processes
  /// share.
  Wal,
  /// A rollback journal, deleted after each transaction: a file meant to be
  /// shipped and read where it cannot be written.
  Delete,
};

/// How to open a database file.
struct SqliteOpenOptions {
  /// Open read-only even when the file is writable.
  bool readOnly = false;
  /// Create the file when it does not exist.
  bool create = true;
  /// How long a write waits for another process's lock, in milliseconds.
  int busyTimeoutMs = 30000;
  /// Refuse a damaged file, checked with SQLite's quick check before
  /// anything is written: a write into a damaged file could spread the
  /// damage. The check reads the whole file.
  bool checkIntegrity = false;
  /// The journal a file opened for writing is switched to.
  SqliteJournal journal = SqliteJournal::Wal;
};

/// A kernel database in one SQLite file in WAL mode, safe for many processes
/// at once. Every write runs in a transaction.
class SqliteKernelDatabase final : public KernelDatabase {
public:
  /// The schema version this code writes; older files are migrated forward.
  static constexpr int64_t kSchemaVersion = 4;

  /// Opens (or creates) the database at `path`. Fails without writing to the
  /// file when it is not SQLite, is SQLite without kopt's tables, or has a
  /// newer schema. A file without write permission, or in a folder without
  /// it, opens read-only, and then every write fails; a read-only file of an
  /// older schema is read as it is. A read-only WAL file whose folder cannot
  /// hold its shared-memory file is read as immutable when no write-ahead
  /// log with changes lies beside it (docs/KernelDatabase.md).
  static Result<std::unique_ptr<SqliteKernelDatabase>>
  open(const std::string &path, const SqliteOpenOptions &options = {});

  ~SqliteKernelDatabase() override;

  /// Whether writes are refused.
  bool isReadOnly() const;
  /// The file's path, as given to `open`.
  const std::string &getPath() const;
  /// The file's schema version (older than `kSchemaVersion` only when it was
  /// opened read-only).
  int64_t getSchemaVersion() const override;
  std::string getLocation() const override { return getPath(); }

  Result<std::optional<KernelRecord>>
  lookup(std::string_view taskKey,
         const DeviceFingerprint &fingerprint) override;
  Result<PutOutcome> merge(const KernelRecord &record) override;
  Status addAttempt(const AttemptRecord &attempt) override;
  Result<bool> mergeAttempt(const AttemptRecord &attempt) override;
  Status forEachRecord(const RecordFilter &filter,
                       const RecordCallback &callback) override;
  Status forEachAttempt(std::string_view taskKeyPrefix,
                        const AttemptCallback &callback) override;
  Result<KernelDatabaseStats> stats() override;
  Result<std::vector<DeviceFingerprint>> listFingerprints() override;
  Result<std::vector<std::string>> findProblems() override;
  Result<bool> setStale(std::string_view taskKey,
                        std::string_view fingerprintHash, bool stale) override;
  Result<PruneSummary> prune(const PruneOptions &options) override;
  Status transact(const std::function<Status()> &body) override;
  Status readSnapshot(const std::function<Status()> &body) override;

  class Impl;

private:
  explicit SqliteKernelDatabase(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// Writes every record and attempt of `source`, from one snapshot, into a
/// new SQLite file at `path` with the journal `journal`
/// (`SqliteJournal::Delete` for a file to ship and read where it cannot be
/// written). The file is written under a temporary name beside `path` and
/// renamed when complete; fails, writing nothing, when `path` exists.
Result<ExportSummary> exportSqliteFile(KernelDatabase &source,
                                       const std::string &path,
                                       SqliteJournal journal);

/// How to open a kernel database by path or URL.
struct KernelDatabaseOptions {
  /// Never write: a file must exist, a server must hold kopt's tables.
  bool readOnly = false;
  /// Create the file, or the tables on a server, when missing.
  bool create = true;
  /// SQLite: refuse a damaged file before writing (SqliteOpenOptions).
  bool checkIntegrity = false;
  /// SQLite: how long a write waits for another process's lock.
  int busyTimeoutMs = 30000;
  /// PostgreSQL: how long connecting may take, unless the URL or
  /// PGCONNECT_TIMEOUT sets `connect_timeout`; 0 for libpq's default (no
  /// limit).
  int connectTimeoutSeconds = 10;
  /// PostgreSQL: the `statement_timeout` of the session, unless it already
  /// has one (`options=-c statement_timeout=...` in the URL, PGOPTIONS, the
  /// role's or database's settings); 0 for none.
  int statementTimeoutMs = 60000;
  /// The location came from a command line, which lands in shell histories,
  /// process lists and logs: a URL with a password is then refused.
  bool fromCommandLine = false;
  /// PostgreSQL: lookups only return records stored by these database roles
  /// (the workers'); empty for any. `KOPT_DB_TRUSTED_WRITERS`
  /// (comma-separated) fills it when empty.
  std::vector<std::string> trustedWriters;
};

/// Whether `location` names a PostgreSQL database: a `postgresql://` or
/// `postgres://` URL, or a libpq keyword string (`host=db dbname=kopt`).
bool isPostgresUrl(std::string_view location);

/// Whether `location` carries a password in any spelling (`user:secret@`,
/// a `password=` parameter in any case or percent-encoding; see
/// `hasCredentials` in Redact.h).
bool hasPassword(std::string_view location);

/// `location` with any password replaced by `***`, for messages and logs
/// (`redactCredentials` in Redact.h).
std::string redactDatabaseUrl(std::string_view location);

/// Opens the database at `location`: a SQLite file for a path, PostgreSQL
/// for a `postgresql://` or `postgres://` URL (an `unsupported` error where
/// kopt was built without libpq). Errors name the location without its
/// password.
Result<std::unique_ptr<KernelDatabase>>
openKernelDatabase(const std::string &location,
                   const KernelDatabaseOptions &options = {});

/// The location named by `KOPT_DB` in the environment, or empty.
std::string getDatabaseFromEnvironment();

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_KERNELDATABASE_H
