//===- SqliteKernelDatabase.cpp - The kernel database in SQLite -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One SQLite file in WAL mode. Opening checks the file before writing to it:
// a file that is not SQLite, SQLite without kopt's tables, or a newer schema
// is refused untouched. An older schema is migrated forward, one version at a
// time, in a transaction. Every write takes the write lock up front
// (BEGIN IMMEDIATE) and waits up to the busy timeout for other processes.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/KernelDatabase.h"

#include "Sqlite.h"

#include <sqlite3.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace kopt::runtime;

namespace {

/// The statements that bring a database from version `index` to version
/// `index + 1`; index 0 creates version 1.
const char *const kMigrations[] = {
    // 0 -> 1: the initial schema.
    "CREATE TABLE schema_version(version INTEGER NOT NULL);"
    "CREATE TABLE kernels("
    "  task_key TEXT NOT NULL,"
    "  fingerprint_hash TEXT NOT NULL,"
    "  fingerprint TEXT NOT NULL,"
    "  valid INTEGER NOT NULL,"
    "  median_ms REAL NOT NULL,"
    "  record TEXT NOT NULL,"
    "  cubin BLOB, cubin_hash TEXT,"
    "  ptx BLOB, ptx_hash TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  PRIMARY KEY(task_key, fingerprint_hash));"
    "CREATE TABLE attempts("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  task_key TEXT NOT NULL,"
    "  fingerprint_hash TEXT NOT NULL,"
    "  valid INTEGER NOT NULL,"
    "  attempt TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL);"
    "INSERT INTO schema_version(version) VALUES(1);",
    // 1 -> 2: look attempts up by key.
    "CREATE INDEX attempts_by_key ON attempts(task_key, fingerprint_hash);"
    "UPDATE schema_version SET version = 2;",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) ==
                  SqliteKernelDatabase::kSchemaVersion,
              "one migration per schema version");

/// The columns `readRecord` expects, in order.
constexpr const char *kRecordColumns =
    "record, cubin, cubin_hash, ptx, ptx_hash";

Result<KernelRecord> readRecord(const sqlite::Statement &statement) {
  Result<json::Value> value = json::parse(statement.text(0));
  if (!value)
    return value.status().withContext("stored record");
  Result<KernelRecord> record = kernelRecordFromJson(*value);
  if (!record)
    return record.status().withContext("stored record");
  record->cubin = statement.blob(1);
  record->cubinHash = record->cubin ? statement.text(2) : std::string();
  record->ptx = statement.blob(3);
  record->ptxHash = record->ptx ? statement.text(4) : std::string();
  return record;
}

/// The table names in `db`.
Result<std::set<std::string>> listTables(sqlite::Database &db) {
  Result<sqlite::Statement> statement = sqlite::Statement::prepare(
      db, "SELECT name FROM sqlite_master WHERE type = 'table'");
  if (!statement)
    return statement.status();
  std::set<std::string> names;
  while (true) {
    Result<bool> row = statement->step();
    if (!row)
      return row.status();
    if (!*row)
      return names;
    names.insert(statement->text(0));
  }
}

/// The schema version of `db`: 0 for an empty database.
Result<int64_t> readVersion(sqlite::Database &db) {
  Result<std::set<std::string>> tables = listTables(db);
  if (!tables)
    return tables.status();
  if (tables->empty())
    return int64_t(0);
  if (!tables->count("schema_version") || !tables->count("kernels"))
    return Status::error(StatusCode::InvalidArgument,
                         "an SQLite database without kopt's tables");
  Result<sqlite::Statement> statement =
      sqlite::Statement::prepare(db, "SELECT MAX(version) FROM schema_version");
  if (!statement)
    return statement.status();
  Result<bool> row = statement->step();
  if (!row)
    return row.status();
  if (!*row || statement->integer(0) < 1)
    return Status::error(StatusCode::InvalidArgument,
                         "the schema_version table holds no version");
  return statement->integer(0);
}

} // namespace

class SqliteKernelDatabase::Impl {
public:
  sqlite::Database db;
  std::string path;
  bool readOnly = false;

  Status checkWritable() const {
    if (readOnly)
      return Status::error(StatusCode::Unavailable,
                           "kernel database '" + path +
                               "' is open read-only; cannot write");
    return Status::success();
  }
};

SqliteKernelDatabase::SqliteKernelDatabase(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}

SqliteKernelDatabase::~SqliteKernelDatabase() = default;

bool SqliteKernelDatabase::isReadOnly() const { return impl->readOnly; }

Result<std::unique_ptr<SqliteKernelDatabase>>
SqliteKernelDatabase::open(const std::string &path,
                           const SqliteOpenOptions &options) {
  auto refuse = [&](StatusCode code, const std::string &why) {
    return Status::error(code, "kernel database '" + path + "': " + why);
  };

  // Look at the file before SQLite does, so that nothing is written to a
  // file that is not ours.
  struct stat info;
  bool exists = ::stat(path.c_str(), &info) == 0;
  bool readOnly = options.readOnly;
  if (exists) {
    if (!S_ISREG(info.st_mode))
      return refuse(StatusCode::InvalidArgument, "not a regular file");
    if (info.st_size > 0) {
      char header[16] = {};
      FILE *file = std::fopen(path.c_str(), "rb");
      if (!file)
        return refuse(StatusCode::IoError, std::strerror(errno));
      size_t read = std::fread(header, 1, sizeof(header), file);
      std::fclose(file);
      if (read != sizeof(header) ||
          std::memcmp(header, "SQLite format 3", 16) != 0)
        return refuse(StatusCode::InvalidArgument,
                      "not a kopt kernel database (not an SQLite file)");
    }
    if (!(info.st_mode & S_IWUSR) || ::access(path.c_str(), W_OK) != 0)
      readOnly = true;
  } else if (!options.create || readOnly) {
    return refuse(StatusCode::IoError, "no such file");
  }

  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->readOnly = readOnly;
  int flags = readOnly ? SQLITE_OPEN_READONLY
                       : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  Result<sqlite::Database> db = sqlite::Database::open(path, flags);
  if (!db)
    return db.status();
  impl->db = std::move(*db);
  sqlite3_busy_timeout(impl->db.get(), options.busyTimeoutMs);

  Result<int64_t> version = readVersion(impl->db);
  if (!version)
    return refuse(StatusCode::InvalidArgument, "not a kopt kernel database (" +
                                                   version.status().message() +
                                                   ")");
  if (*version > kSchemaVersion)
    return refuse(StatusCode::Unsupported,
                  "schema version " + std::to_string(*version) +
                      " is newer than this kopt supports (" +
                      std::to_string(kSchemaVersion) + ")");
  if (readOnly) {
    if (*version < kSchemaVersion)
      return refuse(StatusCode::Unavailable,
                    "schema version " + std::to_string(*version) +
                        " needs a migration, but the file is read-only");
    return std::unique_ptr<SqliteKernelDatabase>(
        new SqliteKernelDatabase(std::move(impl)));
  }

  Status wal = impl->db.exec("PRAGMA journal_mode=WAL");
  if (!wal.isOk())
    return wal.withContext("kernel database '" + path + "'");
  if (*version < kSchemaVersion) {
    Result<sqlite::Transaction> transaction =
        sqlite::Transaction::begin(impl->db);
    if (!transaction)
      return transaction.status().withContext("kernel database '" + path + "'");
    // Another process may have migrated while this one waited for the lock.
    version = readVersion(impl->db);
    if (!version)
      return version.status();
    for (int64_t from = *version; from < kSchemaVersion; ++from) {
      Status status = impl->db.exec(kMigrations[from]);
      if (!status.isOk())
        return status.withContext("migrating kernel database '" + path +
                                  "' from version " + std::to_string(from));
    }
    Status status = transaction->commit();
    if (!status.isOk())
      return status.withContext("kernel database '" + path + "'");
  }
  return std::unique_ptr<SqliteKernelDatabase>(
      new SqliteKernelDatabase(std::move(impl)));
}

Result<std::optional<KernelRecord>>
SqliteKernelDatabase::lookup(std::string_view taskKey,
                             const DeviceFingerprint &fingerprint) {
  Result<sqlite::Statement> statement = sqlite::Statement::prepare(
      impl->db, std::string("SELECT ") + kRecordColumns +
                    " FROM kernels WHERE task_key = ?1 AND "
                    "fingerprint_hash = ?2 AND valid = 1");
  if (!statement)
    return statement.status();
  statement->bind(1, taskKey).bind(2, fingerprint.hash());
  Result<bool> row = statement->step();
  if (!row)
    return row.status();
  if (!*row)
    return std::optional<KernelRecord>();
  Result<KernelRecord> record = readRecord(*statement);
  if (!record)
    return record.status();
  return std::optional<KernelRecord>(std::move(*record));
}

Result<bool> SqliteKernelDatabase::put(const KernelRecord &incoming) {
  Status writable = impl->checkWritable();
  if (!writable.isOk())
    return writable;
  if (incoming.taskKey.empty())
    return Status::error(StatusCode::InvalidArgument,
                         "a kernel record needs a task key");
  KernelRecord record = detail::prepareForPut(incoming);
  std::string fingerprintHash = record.fingerprint.hash();

  Result<sqlite::Transaction> transaction =
      sqlite::Transaction::begin(impl->db);
  if (!transaction)
    return transaction.status();
  {
    Result<sqlite::Statement> existing = sqlite::Statement::prepare(
        impl->db, "SELECT valid, median_ms FROM kernels WHERE task_key = ?1 "
                  "AND fingerprint_hash = ?2");
    if (!existing)
      return existing.status();
    existing->bind(1, record.taskKey).bind(2, fingerprintHash);
    Result<bool> row = existing->step();
    if (!row)
      return row.status();
    if (*row) {
      KernelRecord stored;
      stored.valid = existing->integer(0) != 0;
      stored.winner.medianMs = existing->real(1);
      if (!isBetterRecord(record, stored))
        return false;
    }
  }
  Result<sqlite::Statement> insert = sqlite::Statement::prepare(
      impl->db,
      "INSERT OR REPLACE INTO kernels(task_key, fingerprint_hash, "
      "fingerprint, valid, median_ms, record, cubin, cubin_hash, ptx, "
      "ptx_hash, created_at, updated_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, "
      "?8, ?9, ?10, ?11, ?12)");
  if (!insert)
    return insert.status();
  insert->bind(1, record.taskKey)
      .bind(2, fingerprintHash)
      .bind(3, record.fingerprint.toString())
      .bind(4, int64_t(record.valid ? 1 : 0))
      .bind(5, record.winner.medianMs)
      .bind(6, json::write(toJson(record, /*withBinaries=*/false)))
      .bindBlob(7, record.cubin)
      .bind(8, record.cubinHash)
      .bindBlob(9, record.ptx)
      .bind(10, record.ptxHash)
      .bind(11, record.createdAt)
      .bind(12, record.updatedAt);
  Status status = insert->run();
  if (!status.isOk())
    return status;
  status = transaction->commit();
  if (!status.isOk())
    return status;
  return true;
}

Status SqliteKernelDatabase::addAttempt(const AttemptRecord &incoming) {
  Status writable = impl->checkWritable();
  if (!writable.isOk())
    return writable;
  if (incoming.taskKey.empty())
    return Status::error(StatusCode::InvalidArgument,
                         "an attempt needs a task key");
  AttemptRecord attempt = incoming;
  if (attempt.time == 0)
    attempt.time = static_cast<int64_t>(::time(nullptr));
  Result<sqlite::Transaction> transaction =
      sqlite::Transaction::begin(impl->db);
  if (!transaction)
    return transaction.status();
  Result<sqlite::Statement> insert = sqlite::Statement::prepare(
      impl->db, "INSERT INTO attempts(task_key, fingerprint_hash, valid, "
                "attempt, created_at) VALUES(?1, ?2, ?3, ?4, ?5)");
  if (!insert)
    return insert.status();
  insert->bind(1, attempt.taskKey)
      .bind(2, attempt.fingerprint.hash())
      .bind(3, int64_t(attempt.valid ? 1 : 0))
      .bind(4, json::write(toJson(attempt)))
      .bind(5, attempt.time);
  Status status = insert->run();
  if (!status.isOk())
    return status;
  return transaction->commit();
}

Result<std::vector<KernelRecord>> SqliteKernelDatabase::list() {
  Result<sqlite::Statement> statement = sqlite::Statement::prepare(
      impl->db, std::string("SELECT ") + kRecordColumns +
                    " FROM kernels ORDER BY task_key, fingerprint_hash");
  if (!statement)
    return statement.status();
  std::vector<KernelRecord> records;
  while (true) {
    Result<bool> row = statement->step();
    if (!row)
      return row.status();
    if (!*row)
      return records;
    Result<KernelRecord> record = readRecord(*statement);
    if (!record)
      return record.status();
    records.push_back(std::move(*record));
  }
}

Result<std::vector<AttemptRecord>> SqliteKernelDatabase::listAttempts() {
  Result<sqlite::Statement> statement = sqlite::Statement::prepare(
      impl->db, "SELECT attempt FROM attempts ORDER BY id");
  if (!statement)
    return statement.status();
  std::vector<AttemptRecord> attempts;
  while (true) {
    Result<bool> row = statement->step();
    if (!row)
      return row.status();
    if (!*row)
      return attempts;
    Result<json::Value> value = json::parse(statement->text(0));
    if (!value)
      return value.status().withContext("stored attempt");
    Result<AttemptRecord> attempt = attemptRecordFromJson(*value);
    if (!attempt)
      return attempt.status().withContext("stored attempt");
    attempts.push_back(std::move(*attempt));
  }
}

Result<KernelDatabaseStats> SqliteKernelDatabase::stats() {
  KernelDatabaseStats stats;
  Result<sqlite::Statement> kernels = sqlite::Statement::prepare(
      impl->db, "SELECT COUNT(*), TOTAL(valid) FROM kernels");
  if (!kernels)
    return kernels.status();
  Result<bool> row = kernels->step();
  if (!row)
    return row.status();
  stats.records = static_cast<size_t>(kernels->integer(0));
  stats.validRecords = static_cast<size_t>(kernels->real(1));
  Result<sqlite::Statement> attempts = sqlite::Statement::prepare(
      impl->db, "SELECT COUNT(*), TOTAL(1 - valid) FROM attempts");
  if (!attempts)
    return attempts.status();
  row = attempts->step();
  if (!row)
    return row.status();
  stats.attempts = static_cast<size_t>(attempts->integer(0));
  stats.failedAttempts = static_cast<size_t>(attempts->real(1));
  return stats;
}

Status SqliteKernelDatabase::verify() {
  std::string problems;
  Result<sqlite::Statement> check =
      sqlite::Statement::prepare(impl->db, "PRAGMA integrity_check");
  if (!check)
    return check.status();
  while (true) {
    Result<bool> row = check->step();
    if (!row)
      return row.status().withContext("integrity check");
    if (!*row)
      break;
    std::string line = check->text(0);
    if (line != "ok")
      problems += (problems.empty() ? "" : "; ") + line;
  }
  Result<std::vector<KernelRecord>> records = list();
  if (!records)
    return records.status();
  for (const KernelRecord &record : *records) {
    Status status = detail::checkBinaryHashes(record);
    if (!status.isOk())
      problems += (problems.empty() ? "" : "; ") + status.message();
  }
  if (!problems.empty())
    return Status::error(StatusCode::Internal,
                         "kernel database '" + impl->path + "': " + problems);
  return Status::success();
}
