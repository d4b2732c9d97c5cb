//===- PostgresKernelDatabase.cpp - The kernel database in PostgreSQL -----===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The SQLite file's tables, in the `kopt` schema of a PostgreSQL database
// that many machines share, plus what sharing needs: each record carries a
// SHA-256 content hash over its stored JSON and binaries, checked whenever it
// is loaded, and the database role that stored it (`stored_by`, filled by
// the server), which lookups can require to be a trusted worker's. The
// tuning queue's `jobs` table lives here too (PostgresTuningQueue.cpp).
//
// Concurrency: a merge is one INSERT ... ON CONFLICT DO UPDATE whose WHERE
// clause is `isBetterRecord`, so concurrent writers of one key keep the
// better record without a lock; merging an attempt takes a transaction-level
// advisory lock on it, so concurrent imports store it once. Creating and
// migrating the tables holds an advisory lock, so many processes may open a
// fresh database at once. Errors name the URL without its password.
//
//===----------------------------------------------------------------------===//

#include "PostgresKernelDatabase.h"

#include <ctime>
#include <limits>

using namespace kopt::runtime;
using postgres::Connection;
using postgres::Param;
using postgres::Rows;

namespace {

/// The advisory lock class of kopt's locks (the first key of
/// pg_advisory_xact_lock(int, int)).
constexpr const char *kLockClass = "7301";

/// The statements that bring the tables from version `index` to `index + 1`.
const char *const kMigrations[] = {
    // 0 -> 1: SQLite's schema 3, plus content hashes, writers and the queue.
    "CREATE SCHEMA IF NOT EXISTS kopt;"
    "CREATE TABLE kopt.schema_version(version INTEGER NOT NULL);"
    "CREATE TABLE kopt.kernels("
    "  task_key TEXT COLLATE \"C\" NOT NULL,"
    "  fingerprint_hash TEXT COLLATE \"C\" NOT NULL,"
    "  fingerprint TEXT NOT NULL,"
    "  valid INTEGER NOT NULL,"
    "  median_ms DOUBLE PRECISION NOT NULL,"
    "  record TEXT NOT NULL,"
    "  cubin BYTEA, cubin_hash TEXT,"
    "  ptx BYTEA, ptx_hash TEXT,"
    "  created_at BIGINT NOT NULL,"
    "  updated_at BIGINT NOT NULL,"
    "  stale INTEGER NOT NULL DEFAULT 0,"
    "  content_hash TEXT NOT NULL,"
    "  stored_by TEXT NOT NULL DEFAULT current_user,"
    "  PRIMARY KEY(task_key, fingerprint_hash));"
    "CREATE TABLE kopt.attempts("
    "  id BIGSERIAL PRIMARY KEY,"
    "  task_key TEXT COLLATE \"C\" NOT NULL,"
    "  fingerprint_hash TEXT COLLATE \"C\" NOT NULL,"
    "  valid INTEGER NOT NULL,"
    "  attempt TEXT NOT NULL,"
    "  created_at BIGINT NOT NULL);"
    "CREATE INDEX attempts_by_key ON kopt.attempts(task_key, "
    "fingerprint_hash);"
    "CREATE TABLE kopt.jobs("
    "  id BIGSERIAL PRIMARY KEY,"
    "  task_key TEXT COLLATE \"C\" NOT NULL,"
    "  target TEXT NOT NULL,"
    "  precision_policy TEXT NOT NULL,"
    "  task TEXT NOT NULL,"
    "  state TEXT NOT NULL DEFAULT 'queued' CHECK(state IN ('queued', "
    "'claimed', 'done', 'failed')),"
    "  claimed_by TEXT,"
    "  lease_expires_at BIGINT,"
    "  claims INTEGER NOT NULL DEFAULT 0,"
    "  error TEXT,"
    "  enqueued_by TEXT NOT NULL DEFAULT current_user,"
    "  created_at BIGINT NOT NULL,"
    "  updated_at BIGINT NOT NULL,"
    "  UNIQUE(task_key, target, precision_policy));"
    "CREATE INDEX jobs_by_state ON kopt.jobs(state, id);"
    "INSERT INTO kopt.schema_version(version) VALUES(1);",
    // 1 -> 2: a job's attempts since it was queued, bounded by the workers.
    "ALTER TABLE kopt.jobs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;"
    "UPDATE kopt.jobs SET attempts = claims;"
    "UPDATE kopt.schema_version SET version = 2;",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) ==
                  kPostgresSchemaVersion,
              "one migration per schema version");

/// What `where` selects of a task key prefix bound as `$1`.
constexpr const char *kKeyPrefixCondition =
    "left(task_key, length($1::text)) = $1::text";

/// Rows fetched per page when walking records and attempts.
constexpr int kPageSize = 64;

/// The schema version of the database on `db`: 0 when it has no kopt
/// tables.
Result<int64_t> readVersion(Connection &db) {
  // From pg_class through the statement's snapshot: to_regclass would
  // read the catalog caches, which may not yet show tables that another
  // process created while this one waited for the migration lock.
  Result<Rows> tables = db.query(
      "SELECT COUNT(*) FILTER (WHERE c.relname = 'schema_version') > 0, "
      "COUNT(*) FILTER (WHERE c.relname = 'kernels') > 0 FROM "
      "pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = "
      "c.relnamespace WHERE n.nspname = 'kopt' AND c.relkind = 'r'");
  if (!tables)
    return tables.status();
  bool version = tables->boolean(0, 0), kernels = tables->boolean(0, 1);
  if (!version && !kernels)
    return int64_t(0);
  if (!version || !kernels)
    return Status::error(StatusCode::InvalidArgument,
                         "not a kopt kernel database (its 'kopt' schema "
                         "lacks kopt's tables)");
  Result<Rows> rows = db.query("SELECT MAX(version) FROM kopt.schema_version");
  if (!rows)
    return rows.status();
  if (rows->isNull(0, 0) || rows->integer(0, 0) < 1)
    return Status::error(StatusCode::InvalidArgument,
                         "not a kopt kernel database (the schema_version "
                         "table holds no version)");
  return rows->integer(0, 0);
}

} // namespace

Result<Connection> kopt::runtime::connectPostgres(
    const std::string &url, bool readOnly, bool create,
    const KernelDatabaseOptions &options, int64_t &version) {
  std::string name = redactDatabaseUrl(url);
  auto fail = [&](const Status &status, const std::string &doing = {}) {
    return Status::error(status.code(),
                         "kernel database '" + name +
                             "': " + (doing.empty() ? "" : doing + ": ") +
                             status.message());
  };
  Result<Connection> db = Connection::open(url, options.connectTimeoutSeconds,
                                           options.statementTimeoutMs);
  if (!db)
    return fail(db.status());
  if (readOnly)
    if (Status status = db->exec("SET default_transaction_read_only = on");
        !status.isOk())
      return fail(status);
  Result<int64_t> found = readVersion(*db);
  if (!found)
    return fail(found.status());
  if (*found > kPostgresSchemaVersion)
    return fail(Status::error(StatusCode::Unsupported,
                              "schema version " + std::to_string(*found) +
                                  " is newer than this kopt supports (" +
                                  std::to_string(kPostgresSchemaVersion) +
                                  ")"));
  version = *found;
  if (*found == kPostgresSchemaVersion || readOnly) {
    if (*found == 0)
      return fail(Status::error(StatusCode::InvalidArgument,
                                "holds no kopt tables, and is opened "
                                "read-only; nothing to read"));
    return db;
  }
  if (*found == 0 && !create)
    return fail(Status::error(StatusCode::IoError, "holds no kopt tables"));

  // Several processes may open a fresh database at once: one migrates while
  // the others wait, then find the tables.
  Result<postgres::Transaction> transaction = postgres::Transaction::begin(*db);
  if (!transaction)
    return fail(transaction.status());
  if (Status status = db->exec(std::string("SELECT pg_advisory_xact_lock(") +
                               kLockClass + ", 0)");
      !status.isOk())
    return fail(status);
  found = readVersion(*db);
  if (!found)
    return fail(found.status());
  for (int64_t from = *found; from < kPostgresSchemaVersion; ++from)
    if (Status status = db->exec(kMigrations[from]); !status.isOk())
      return fail(status,
                  "cannot migrate from schema version " + std::to_string(from));
  if (Status status = transaction->commit(); !status.isOk())
    return fail(status);
  version = kPostgresSchemaVersion;
  return db;
}

namespace {

/// The columns `decodeRecord` expects, in order.
std::string recordColumns(bool withBinaries) {
  return std::string("task_key, fingerprint_hash, record, ") +
         (withBinaries ? "cubin" : "NULL::bytea") + ", cubin_hash, " +
         (withBinaries ? "ptx" : "NULL::bytea") +
         ", ptx_hash, stale, cubin IS NOT NULL, ptx IS NOT NULL, "
         "content_hash, stored_by";
}

/// Reads the record in `row` of rows that selected `recordColumns`.
Result<KernelRecord> decodeRecord(const Rows &rows, int row) {
  Result<json::Value> value = json::parse(rows.text(row, 2));
  if (!value)
    return value.status();
  Result<KernelRecord> record = kernelRecordFromJson(*value);
  if (!record)
    return record.status();
  record->cubin = rows.bytes(row, 3);
  record->cubinHash = rows.boolean(row, 8) ? rows.text(row, 4) : "";
  record->ptx = rows.bytes(row, 5);
  record->ptxHash = rows.boolean(row, 9) ? rows.text(row, 6) : "";
  record->stale = rows.integer(row, 7) != 0;
  return record;
}

/// Whether `row` (selected with binaries) matches its content hash.
bool matchesContentHash(const Rows &rows, int row) {
  return detail::contentHash(rows.text(row, 2), rows.bytes(row, 3),
                             rows.bytes(row, 5)) == rows.text(row, 10);
}

int64_t now() { return static_cast<int64_t>(std::time(nullptr)); }

} // namespace

namespace kopt::runtime {

/// A kernel database in the `kopt` schema of a PostgreSQL database.
class PostgresKernelDatabase final : public KernelDatabase {
public:
  PostgresKernelDatabase(Connection db, std::string url, bool readOnly,
                         int64_t version, std::vector<std::string> trusted)
      : db(std::move(db)), name(redactDatabaseUrl(url)), readOnly(readOnly),
        schemaVersion(version), trustedWriters(std::move(trusted)) {}

  std::string getLocation() const override { return name; }
  int64_t getSchemaVersion() const override { return schemaVersion; }

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
  /// `status` with the URL, and what was being done, in front.
  Status fail(const Status &status, const std::string &doing = {}) const {
    return Status::error(status.code(),
                         "kernel database '" + name +
                             "': " + (doing.empty() ? "" : doing + ": ") +
                             status.message());
  }

  Status checkWritable() const {
    if (readOnly)
      return Status::error(StatusCode::Unavailable,
                           "kernel database '" + name +
                               "' is read-only (opened read-only); cannot "
                               "write to it");
    return Status::success();
  }

  /// `decodeRecord`, with an error that names the database and the record.
  Result<KernelRecord> readRecord(const Rows &rows, int row) const {
    Result<KernelRecord> record = decodeRecord(rows, row);
    if (!record)
      return fail(record.status(), "record " + rows.text(row, 0) + " on " +
                                       rows.text(row, 1) + " does not read");
    return record;
  }

  /// Refuses a loaded row whose content does not match its hash.
  Status checkContent(const Rows &rows, int row) const {
    if (matchesContentHash(rows, row))
      return Status::success();
    return fail(
        detail::contentHashMismatch(rows.text(row, 0), rows.text(row, 1)));
  }

  /// Runs `body` in a write transaction (a savepoint inside another).
  Status write(const std::function<Status()> &body) {
    if (Status status = checkWritable(); !status.isOk())
      return status;
    Result<postgres::Transaction> transaction =
        postgres::Transaction::begin(db);
    if (!transaction)
      return fail(transaction.status());
    if (Status status = body(); !status.isOk())
      return status;
    if (Status status = transaction->commit(); !status.isOk())
      return fail(status);
    return Status::success();
  }

  Result<bool> insertAttempt(const AttemptRecord &incoming, bool onlyIfNew);

  Connection db;
  std::string name;
  bool readOnly;
  int64_t schemaVersion;
  std::vector<std::string> trustedWriters;
};

} // namespace kopt::runtime

Result<std::unique_ptr<KernelDatabase>>
kopt::runtime::openPostgresKernelDatabase(
    const std::string &url, const KernelDatabaseOptions &options) {
  int64_t version = 0;
  Result<Connection> db =
      connectPostgres(url, options.readOnly, options.create, options, version);
  if (!db)
    return db.status();
  return std::unique_ptr<KernelDatabase>(new PostgresKernelDatabase(
      std::move(*db), url, options.readOnly, version, options.trustedWriters));
}

/// The trusted writers as a PostgreSQL array literal, `{"a","b"}`.
static std::string toArrayLiteral(const std::vector<std::string> &names) {
  std::string text = "{";
  for (const std::string &name : names) {
    if (text.size() > 1)
      text += ",";
    text += "\"";
    for (char c : name) {
      if (c == '"' || c == '\\')
        text += '\\';
      text += c;
    }
    text += "\"";
  }
  return text + "}";
}

Result<std::optional<KernelRecord>>
PostgresKernelDatabase::lookup(std::string_view taskKey,
                               const DeviceFingerprint &fingerprint) {
  std::string sql = "SELECT " + recordColumns(/*withBinaries=*/true) +
                    " FROM kopt.kernels WHERE task_key = $1 AND "
                    "fingerprint_hash = $2 AND valid = 1";
  std::vector<Param> params = {taskKey, fingerprint.hash()};
  if (!trustedWriters.empty()) {
    sql += " AND stored_by = ANY($3::text[])";
    params.push_back(toArrayLiteral(trustedWriters));
  }
  Result<Rows> rows = db.query(sql, params);
  if (!rows)
    return fail(rows.status(), "cannot look up");
  if (rows->size() == 0)
    return std::optional<KernelRecord>();
  if (Status status = checkContent(*rows, 0); !status.isOk())
    return status;
  Result<KernelRecord> record = readRecord(*rows, 0);
  if (!record)
    return record.status();
  if (Status status = detail::checkBinaryHashes(*record); !status.isOk())
    return fail(status, "refusing it");
  return std::optional<KernelRecord>(std::move(*record));
}

Result<PutOutcome> PostgresKernelDatabase::merge(const KernelRecord &incoming) {
  Result<KernelRecord> prepared = detail::prepareForMerge(incoming);
  if (!prepared)
    return prepared.status();
  KernelRecord record = std::move(*prepared);
  std::string doing = "cannot store " + describeRecord(record);
  // As in SQLite, the stale flag lives in its column only.
  json::Value recordJson = toJson(record, /*withBinaries=*/false);
  recordJson.erase("stale");
  std::string text = json::write(recordJson);
  std::string hash = detail::contentHash(text, record.cubin, record.ptx);

  PutOutcome outcome = PutOutcome::Added;
  Status status = write([&]() -> Status {
    // One statement: the WHERE clause is isBetterRecord, so concurrent
    // writers of one key keep the better record.
    Result<Rows> rows = db.query(
        "INSERT INTO kopt.kernels AS k(task_key, fingerprint_hash, "
        "fingerprint, valid, median_ms, record, cubin, cubin_hash, ptx, "
        "ptx_hash, created_at, updated_at, stale, content_hash) VALUES($1, "
        "$2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) "
        "ON CONFLICT (task_key, fingerprint_hash) DO UPDATE SET "
        "fingerprint = EXCLUDED.fingerprint, valid = EXCLUDED.valid, "
        "median_ms = EXCLUDED.median_ms, record = EXCLUDED.record, "
        "cubin = EXCLUDED.cubin, cubin_hash = EXCLUDED.cubin_hash, "
        "ptx = EXCLUDED.ptx, ptx_hash = EXCLUDED.ptx_hash, "
        "created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, "
        "stale = EXCLUDED.stale, content_hash = EXCLUDED.content_hash, "
        "stored_by = current_user "
        "WHERE (EXCLUDED.valid <> k.valid AND EXCLUDED.valid = 1) OR "
        "(EXCLUDED.valid = k.valid AND EXCLUDED.median_ms < k.median_ms) "
        "RETURNING (xmax = 0)",
        {record.taskKey, record.fingerprint.hash(),
         record.fingerprint.toString(), int64_t(record.valid ? 1 : 0),
         record.winner.medianMs, text, Param::bytes(record.cubin),
         record.cubinHash, Param::bytes(record.ptx), record.ptxHash,
         record.createdAt, record.updatedAt, int64_t(record.stale ? 1 : 0),
         hash});
    if (!rows)
      return fail(rows.status(), doing);
    if (rows->size() == 0)
      outcome = PutOutcome::Kept;
    else
      outcome = rows->boolean(0, 0) ? PutOutcome::Added : PutOutcome::Replaced;
    return Status::success();
  });
  if (!status.isOk())
    return status;
  return outcome;
}

Result<bool>
PostgresKernelDatabase::insertAttempt(const AttemptRecord &incoming,
                                      bool onlyIfNew) {
  if (incoming.taskKey.empty())
    return Status::error(StatusCode::InvalidArgument,
                         "an attempt needs a task key");
  AttemptRecord attempt = incoming;
  if (attempt.time == 0)
    attempt.time = now();
  std::string fingerprintHash = attempt.fingerprint.hash();
  std::string text = json::write(toJson(attempt));
  std::string doing = "cannot store an attempt for task " + attempt.taskKey;
  bool inserted = false;
  Status status = write([&]() -> Status {
    if (onlyIfNew) {
      // Concurrent imports of one attempt wait for each other here, until
      // the first one's transaction ends; then the others find it.
      Result<Rows> found = db.query(
          std::string("SELECT pg_advisory_xact_lock(") + kLockClass +
              ", hashtext($1::text || $2::text || $3::text)), EXISTS(SELECT 1 "
              "FROM "
              "kopt.attempts WHERE task_key = $1 AND fingerprint_hash = $2 "
              "AND attempt = $3)",
          {attempt.taskKey, fingerprintHash, text});
      if (!found)
        return fail(found.status(), doing);
      if (found->boolean(0, 1))
        return Status::success();
    }
    Status status =
        db.exec("INSERT INTO kopt.attempts(task_key, fingerprint_hash, valid, "
                "attempt, created_at) VALUES($1, $2, $3, $4, $5)",
                {attempt.taskKey, fingerprintHash,
                 int64_t(attempt.valid ? 1 : 0), text, attempt.time});
    if (!status.isOk())
      return fail(status, doing);
    inserted = true;
    return Status::success();
  });
  if (!status.isOk())
    return status;
  return inserted;
}

Status PostgresKernelDatabase::addAttempt(const AttemptRecord &attempt) {
  Result<bool> inserted = insertAttempt(attempt, /*onlyIfNew=*/false);
  return inserted ? Status::success() : inserted.status();
}

Result<bool>
PostgresKernelDatabase::mergeAttempt(const AttemptRecord &attempt) {
  return insertAttempt(attempt, /*onlyIfNew=*/true);
}

Status PostgresKernelDatabase::forEachRecord(const RecordFilter &filter,
                                             const RecordCallback &callback) {
  // Page by key, so that no page holds more than a few records' binaries.
  std::string lastKey, lastHash;
  for (bool first = true;; first = false) {
    Result<Rows> rows = db.query(
        "SELECT " + recordColumns(filter.withBinaries) +
            " FROM kopt.kernels WHERE " + kKeyPrefixCondition +
            " AND ($2 OR (task_key, fingerprint_hash) > ($3, $4)) ORDER BY "
            "task_key, fingerprint_hash LIMIT " +
            std::to_string(kPageSize),
        {filter.taskKeyPrefix, first, lastKey, lastHash});
    if (!rows)
      return fail(rows.status(), "cannot list records");
    for (int row = 0; row < rows->size(); ++row) {
      if (filter.withBinaries)
        if (Status status = checkContent(*rows, row); !status.isOk())
          return status;
      Result<KernelRecord> record = readRecord(*rows, row);
      if (!record)
        return record.status();
      if (Status status = callback(*record); !status.isOk())
        return status;
    }
    if (rows->size() < kPageSize)
      return Status::success();
    lastKey = rows->text(rows->size() - 1, 0);
    lastHash = rows->text(rows->size() - 1, 1);
  }
}

Status PostgresKernelDatabase::forEachAttempt(std::string_view taskKeyPrefix,
                                              const AttemptCallback &callback) {
  int64_t lastId = 0;
  while (true) {
    Result<Rows> rows =
        db.query(std::string("SELECT id, attempt FROM kopt.attempts WHERE ") +
                     kKeyPrefixCondition + " AND id > $2 ORDER BY id LIMIT " +
                     std::to_string(kPageSize * 4),
                 {taskKeyPrefix, lastId});
    if (!rows)
      return fail(rows.status(), "cannot list attempts");
    for (int row = 0; row < rows->size(); ++row) {
      std::string doing = "attempt " + rows->text(row, 0) + " does not read";
      Result<json::Value> value = json::parse(rows->text(row, 1));
      if (!value)
        return fail(value.status(), doing);
      Result<AttemptRecord> attempt = attemptRecordFromJson(*value);
      if (!attempt)
        return fail(attempt.status(), doing);
      if (Status status = callback(*attempt); !status.isOk())
        return status;
    }
    if (rows->size() < kPageSize * 4)
      return Status::success();
    lastId = rows->integer(rows->size() - 1, 0);
  }
}

Result<KernelDatabaseStats> PostgresKernelDatabase::stats() {
  KernelDatabaseStats stats;
  Status status = readSnapshot([&]() -> Status {
    Result<Rows> kernels = db.query(
        "SELECT COUNT(*), COALESCE(SUM(valid), 0), COALESCE(SUM(stale), 0), "
        "COUNT(cubin), COUNT(ptx), COALESCE(SUM(length(cubin)), 0) + "
        "COALESCE(SUM(length(ptx)), 0) FROM kopt.kernels");
    if (!kernels)
      return fail(kernels.status(), "cannot count records");
    stats.records = static_cast<size_t>(kernels->integer(0, 0));
    stats.validRecords = static_cast<size_t>(kernels->integer(0, 1));
    stats.staleRecords = static_cast<size_t>(kernels->integer(0, 2));
    stats.cubins = static_cast<size_t>(kernels->integer(0, 3));
    stats.ptxs = static_cast<size_t>(kernels->integer(0, 4));
    stats.binaryBytes = kernels->integer(0, 5);
    Result<Rows> attempts = db.query(
        "SELECT COUNT(*), COALESCE(SUM(1 - valid), 0) FROM kopt.attempts");
    if (!attempts)
      return fail(attempts.status(), "cannot count attempts");
    stats.attempts = static_cast<size_t>(attempts->integer(0, 0));
    stats.failedAttempts = static_cast<size_t>(attempts->integer(0, 1));
    return Status::success();
  });
  if (!status.isOk())
    return status;
  return stats;
}

Result<std::vector<DeviceFingerprint>>
PostgresKernelDatabase::listFingerprints() {
  Result<Rows> rows =
      db.query("SELECT DISTINCT ON (fingerprint_hash) " +
               recordColumns(/*withBinaries=*/false) +
               " FROM kopt.kernels ORDER BY fingerprint_hash, task_key");
  if (!rows)
    return fail(rows.status(), "cannot list fingerprints");
  std::vector<DeviceFingerprint> fingerprints;
  for (int row = 0; row < rows->size(); ++row) {
    Result<KernelRecord> record = readRecord(*rows, row);
    if (!record)
      return record.status();
    fingerprints.push_back(record->fingerprint);
  }
  return fingerprints;
}

Result<std::vector<std::string>> PostgresKernelDatabase::findProblems() {
  std::vector<std::string> problems;
  auto failed = [&](const std::string &what, const Status &status) {
    problems.push_back(what + ": " + status.message());
    return Status::success();
  };
  auto check = [&]() -> Status {
    Result<Rows> version =
        db.query("SELECT COUNT(*), MAX(version) FROM kopt.schema_version");
    if (!version)
      return failed("cannot read the schema version", version.status());
    if (version->integer(0, 0) != 1 || version->integer(0, 1) != schemaVersion)
      problems.push_back("schema_version should hold one row, " +
                         std::to_string(schemaVersion) + "; it holds " +
                         std::to_string(version->integer(0, 0)));

    std::string lastKey, lastHash;
    for (bool first = true;; first = false) {
      Result<Rows> rows = db.query(
          "SELECT " + recordColumns(/*withBinaries=*/true) +
              ", fingerprint, valid, median_ms FROM kopt.kernels WHERE ($1 "
              "OR (task_key, fingerprint_hash) > ($2, $3)) ORDER BY "
              "task_key, fingerprint_hash LIMIT " +
              std::to_string(kPageSize),
          {first, lastKey, lastHash});
      if (!rows)
        return failed("cannot read the records", rows.status());
      for (int row = 0; row < rows->size(); ++row) {
        std::string where =
            "record " + rows->text(row, 0) + " on " + rows->text(row, 1) + ": ";
        if (!matchesContentHash(*rows, row))
          problems.push_back(where +
                             "its content does not match its content hash");
        Result<KernelRecord> record = decodeRecord(*rows, row);
        if (!record) {
          problems.push_back(where + "stored JSON does not read: " +
                             record.status().message());
          continue;
        }
        if (record->taskKey != rows->text(row, 0) ||
            record->fingerprint.hash() != rows->text(row, 1) ||
            record->fingerprint.toString() != rows->text(row, 12))
          problems.push_back(where + "its key columns do not match its JSON");
        if (int64_t(record->valid) != rows->integer(row, 13) ||
            record->winner.medianMs != rows->real(row, 14))
          problems.push_back(where + "its valid or median_ms column does not "
                                     "match its JSON");
        detail::checkRecord(*record, problems);
      }
      if (rows->size() < kPageSize)
        break;
      lastKey = rows->text(rows->size() - 1, 0);
      lastHash = rows->text(rows->size() - 1, 1);
    }

    Result<Rows> attempts =
        db.query("SELECT id, task_key, attempt FROM kopt.attempts ORDER BY id");
    if (!attempts)
      return failed("cannot read the attempts", attempts.status());
    for (int row = 0; row < attempts->size(); ++row) {
      std::string where = "attempt " + attempts->text(row, 0) + " for task " +
                          attempts->text(row, 1) + ": ";
      Result<json::Value> value = json::parse(attempts->text(row, 2));
      Result<AttemptRecord> attempt =
          value ? attemptRecordFromJson(*value) : value.status();
      if (!attempt)
        problems.push_back(
            where + "stored JSON does not read: " + attempt.status().message());
      else if (attempt->taskKey != attempts->text(row, 1))
        problems.push_back(where + "its key column does not match its JSON");
    }
    return Status::success();
  };
  Status status = readSnapshot(check);
  if (!status.isOk())
    return status;
  return problems;
}

Result<bool> PostgresKernelDatabase::setStale(std::string_view taskKey,
                                              std::string_view fingerprintHash,
                                              bool stale) {
  bool changed = false;
  std::string doing = "cannot mark record " + std::string(taskKey) + " on " +
                      std::string(fingerprintHash);
  Status status = write([&]() -> Status {
    Result<Rows> rows =
        db.query("UPDATE kopt.kernels SET stale = $3 WHERE task_key = $1 AND "
                 "fingerprint_hash = $2 RETURNING 1",
                 {taskKey, fingerprintHash, int64_t(stale ? 1 : 0)});
    if (!rows)
      return fail(rows.status(), doing);
    changed = rows->size() > 0;
    return Status::success();
  });
  if (!status.isOk())
    return status;
  return changed;
}

Result<PruneSummary>
PostgresKernelDatabase::prune(const PruneOptions &options) {
  // Both tables take the same conditions: $1 a time before which rows go,
  // $2 whether only invalid rows go, $3 a fingerprint hash or ''.
  const std::string condition = " < $1::bigint AND ($2::int = 0 OR valid = "
                                "0) AND ($3::text = '' OR fingerprint_hash = "
                                "$3::text)";
  const std::string recordCondition = "updated_at" + condition;
  const std::string attemptCondition = "created_at" + condition;
  std::vector<Param> params = {
      options.before.value_or(std::numeric_limits<int64_t>::max()),
      int64_t(options.invalidOnly ? 1 : 0), options.fingerprintHash};

  PruneSummary summary;
  auto body = [&]() -> Status {
    if (options.records) {
      Result<Rows> rows =
          db.query("SELECT " + recordColumns(/*withBinaries=*/false) +
                       " FROM kopt.kernels WHERE " + recordCondition +
                       " ORDER BY task_key, fingerprint_hash",
                   params);
      if (!rows)
        return fail(rows.status(), "cannot select records to prune");
      for (int row = 0; row < rows->size(); ++row) {
        Result<KernelRecord> record = readRecord(*rows, row);
        if (!record)
          return record.status();
        summary.records.push_back(std::move(*record));
      }
      if (!options.dryRun)
        if (Status status = db.exec(
                "DELETE FROM kopt.kernels WHERE " + recordCondition, params);
            !status.isOk())
          return fail(status, "cannot remove records");
    }
    if (options.attempts) {
      Result<Rows> count = db.query(
          "SELECT COUNT(*) FROM kopt.attempts WHERE " + attemptCondition,
          params);
      if (!count)
        return fail(count.status(), "cannot count attempts to prune");
      summary.attempts = static_cast<size_t>(count->integer(0, 0));
      if (!options.dryRun)
        if (Status status = db.exec(
                "DELETE FROM kopt.attempts WHERE " + attemptCondition, params);
            !status.isOk())
          return fail(status, "cannot remove attempts");
    }
    return Status::success();
  };
  Status status = options.dryRun ? readSnapshot(body) : transact(body);
  if (!status.isOk())
    return status;
  return summary;
}

Status PostgresKernelDatabase::transact(const std::function<Status()> &body) {
  return write(body);
}

Status
PostgresKernelDatabase::readSnapshot(const std::function<Status()> &body) {
  Result<postgres::Transaction> transaction =
      postgres::Transaction::beginRead(db);
  if (!transaction)
    return fail(transaction.status());
  if (Status status = body(); !status.isOk())
    return status;
  transaction->commit().ignore();
  return Status::success();
}
