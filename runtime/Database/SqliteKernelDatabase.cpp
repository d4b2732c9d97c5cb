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
// (BEGIN IMMEDIATE) and waits up to the busy timeout for other processes; a
// write inside `transact` is a savepoint of its transaction. A file that
// cannot be written, or lies in a folder that cannot be, is only read; where
// SQLite cannot make a WAL file's shared memory, it is read as immutable
// (docs/KernelDatabase.md). Every error names the file.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/KernelDatabase.h"

#include "Sqlite.h"

#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
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
    // 2 -> 3: mark winners measured under another driver or NVRTC.
    "ALTER TABLE kernels ADD COLUMN stale INTEGER NOT NULL DEFAULT 0;"
    "UPDATE schema_version SET version = 3;",
    // 3 -> 4: a content hash per record, checked when it is loaded; the
    // migration fills it for the records already stored (fillContentHashes).
    "ALTER TABLE kernels ADD COLUMN content_hash TEXT;"
    "UPDATE schema_version SET version = 4;",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) ==
                  SqliteKernelDatabase::kSchemaVersion,
              "one migration per schema version");

/// Computes the content hash of every record that has none (those stored
/// before schema version 4), in the migration's transaction.
static Status fillContentHashes(sqlite::Database &db) {
  Result<sqlite::Statement> select = sqlite::Statement::prepare(
      db, "SELECT rowid, record, cubin, ptx FROM kernels WHERE content_hash "
          "IS NULL");
  if (!select)
    return select.status();
  std::vector<std::pair<int64_t, std::string>> hashes;
  while (true) {
    Result<bool> row = select->step();
    if (!row)
      return row.status();
    if (!*row)
      break;
    hashes.emplace_back(
        select->integer(0),
        detail::contentHash(select->text(1), select->blob(2), select->blob(3)));
  }
  for (const auto &[rowid, hash] : hashes) {
    Result<sqlite::Statement> update = sqlite::Statement::prepare(
        db, "UPDATE kernels SET content_hash = ?1 WHERE rowid = ?2");
    if (!update)
      return update.status();
    update->bind(1, hash).bind(2, rowid);
    if (Status status = update->run(); !status.isOk())
      return status;
  }
  return Status::success();
}

/// What `where` selects of a task key prefix bound as `?1`.
constexpr const char *kKeyPrefixCondition =
    "substr(task_key, 1, length(?1)) = ?1";

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

/// Why a file is not a kopt database although SQLite reads it.
constexpr const char *kNoKoptTables =
    "an SQLite database without kopt's tables";

/// The schema version of `db`: 0 for an empty database.
Result<int64_t> readVersion(sqlite::Database &db) {
  Result<std::set<std::string>> tables = listTables(db);
  if (!tables)
    return tables.status();
  if (tables->empty())
    return int64_t(0);
  if (!tables->count("schema_version") || !tables->count("kernels"))
    return Status::error(StatusCode::InvalidArgument, kNoKoptTables);
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

/// The folder that holds `path`.
std::string parentFolder(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// The URI that opens `path` read-only; `immutable` also tells SQLite that
/// nobody changes the file while it is open, so it needs no lock and no
/// shared-memory file beside it.
std::string readOnlyUri(const std::string &path, bool immutable) {
  // An absolute path gets an empty authority, so `//x` stays a path.
  std::string uri = path.rfind('/', 0) == 0 ? "file://" : "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      static const char digits[] = "0123456789ABCDEF";
      uri += '%';
      uri += digits[static_cast<unsigned char>(c) >> 4];
      uri += digits[c & 15];
    } else {
      uri += c;
    }
  }
  return uri + (immutable ? "?mode=ro&immutable=1" : "?mode=ro");
}

/// The size of the file at `path`, or 0 when there is none.
off_t getFileSize(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 ? info.st_size : 0;
}

/// Puts `db` in the journal mode `mode` ("wal" or "delete"). Switching needs
/// an exclusive lock, and SQLite does not wait for it with the busy handler,
/// so several processes creating one file at once retry here, for up to
/// `timeoutMs`.
Status switchJournal(sqlite::Database &db, const std::string &mode,
                     int timeoutMs) {
  for (int waitedMs = 0;; waitedMs += 10) {
    Result<sqlite::Statement> pragma =
        sqlite::Statement::prepare(db, "PRAGMA journal_mode=" + mode);
    Result<bool> row = pragma ? pragma->step() : Result<bool>(pragma.status());
    if (row && *row && pragma->text(0) == mode)
      return Status::success();
    int code = sqlite3_errcode(db.get()) & 0xff;
    if (!row && (code == SQLITE_BUSY || code == SQLITE_LOCKED) &&
        waitedMs < timeoutMs) {
      ::usleep(10000);
      continue;
    }
    if (!row)
      return row.status();
    return Status::error(StatusCode::IoError,
                         "SQLite kept journal mode '" +
                             (*row ? pragma->text(0) : std::string()) + "'");
  }
}

/// Runs `pragma` (`integrity_check` or `quick_check`) and appends each line
/// it reports to `problems`. Returns false when SQLite could not finish it,
/// which it also reports: then the file is too damaged to read further.
bool checkIntegrity(sqlite::Database &db, const char *pragma,
                    std::vector<std::string> &problems) {
  Result<sqlite::Statement> check =
      sqlite::Statement::prepare(db, std::string("PRAGMA ") + pragma);
  Result<bool> row = check ? check->step() : Result<bool>(check.status());
  for (; row && *row; row = check->step()) {
    // One row may hold several lines, under a header naming the schema.
    std::string text = check->text(0);
    for (size_t begin = 0; begin < text.size();) {
      size_t end = std::min(text.find('\n', begin), text.size());
      std::string line = text.substr(begin, end - begin);
      begin = end + 1;
      if (line != "ok" && line != "*** in database main ***" && !line.empty())
        problems.push_back("integrity check: " + line);
    }
  }
  if (!row) {
    problems.push_back("the file is damaged: " + row.status().message());
    return false;
  }
  return true;
}

} // namespace

class SqliteKernelDatabase::Impl {
public:
  sqlite::Database db;
  std::string path;
  bool readOnly = false;
  int64_t schemaVersion = 0;

  /// `status` with the file's name, and what was being done, in front.
  Status fail(const Status &status, const std::string &doing = {}) const {
    return Status::error(status.code(),
                         "kernel database '" + path +
                             "': " + (doing.empty() ? "" : doing + ": ") +
                             status.message());
  }

  Status checkWritable() const {
    if (readOnly)
      return Status::error(StatusCode::Unavailable,
                           "kernel database '" + path +
                               "' is read-only (no write permission, or "
                               "opened read-only); cannot write to it");
    return Status::success();
  }

  /// The stale flag's column; files older than version 3, which are only
  /// ever read, have none.
  const char *staleColumn() const { return schemaVersion >= 3 ? "stale" : "0"; }

  /// The content hash's column; files older than version 4 have none.
  const char *contentHashColumn() const {
    return schemaVersion >= 4 ? "content_hash" : "NULL";
  }

  /// The columns `readRecord` expects, in order.
  std::string recordColumns(bool withBinaries) const {
    return std::string("task_key, fingerprint_hash, record, ") +
           (withBinaries ? "cubin" : "NULL") + ", cubin_hash, " +
           (withBinaries ? "ptx" : "NULL") + ", ptx_hash, " + staleColumn() +
           ", cubin IS NOT NULL, ptx IS NOT NULL, " + contentHashColumn();
  }

  /// Whether the current row (selected with binaries) matches its content
  /// hash; a row without one (stored before version 4 and never
  /// migrated, in a read-only file) has nothing to check.
  static bool matchesContentHash(const sqlite::Statement &statement) {
    if (statement.isNull(10))
      return true;
    return detail::contentHash(statement.text(2), statement.blob(3),
                               statement.blob(5)) == statement.text(10);
  }

  /// `readRecord` for a row selected with binaries, refusing one whose
  /// content does not match its hash.
  Result<KernelRecord> readCheckedRecord(const sqlite::Statement &statement) {
    if (!matchesContentHash(statement))
      return fail(
          detail::contentHashMismatch(statement.text(0), statement.text(1)));
    return readRecord(statement);
  }

  /// Reads the record in the current row of a statement that selected
  /// `recordColumns`; the error says what does not read.
  static Result<KernelRecord> decodeRecord(const sqlite::Statement &statement) {
    Result<json::Value> value = json::parse(statement.text(2));
    if (!value)
      return value.status();
    Result<KernelRecord> record = kernelRecordFromJson(*value);
    if (!record)
      return record.status();
    record->cubin = statement.blob(3);
    record->cubinHash = statement.integer(8) ? statement.text(4) : "";
    record->ptx = statement.blob(5);
    record->ptxHash = statement.integer(9) ? statement.text(6) : "";
    record->stale = statement.integer(7) != 0;
    return record;
  }

  /// `decodeRecord`, with an error that names the file and the record.
  Result<KernelRecord> readRecord(const sqlite::Statement &statement) const {
    Result<KernelRecord> record = decodeRecord(statement);
    if (!record)
      return fail(record.status(), "record " + statement.text(0) + " on " +
                                       statement.text(1) + " does not read");
    return record;
  }

  /// Runs `body` in a write transaction (a savepoint inside another).
  Status write(const std::function<Status()> &body) {
    if (Status status = checkWritable(); !status.isOk())
      return status;
    Result<sqlite::Transaction> transaction = sqlite::Transaction::begin(db);
    if (!transaction)
      return fail(transaction.status());
    if (Status status = body(); !status.isOk())
      return status;
    if (Status status = transaction->commit(); !status.isOk())
      return fail(status);
    return Status::success();
  }
};

SqliteKernelDatabase::SqliteKernelDatabase(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}

SqliteKernelDatabase::~SqliteKernelDatabase() = default;

bool SqliteKernelDatabase::isReadOnly() const { return impl->readOnly; }

const std::string &SqliteKernelDatabase::getPath() const { return impl->path; }

int64_t SqliteKernelDatabase::getSchemaVersion() const {
  return impl->schemaVersion;
}

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
        return refuse(StatusCode::IoError,
                      std::string("cannot read it: ") + std::strerror(errno));
      size_t read = std::fread(header, 1, sizeof(header), file);
      std::fclose(file);
      if (read != sizeof(header) ||
          std::memcmp(header, "SQLite format 3", 16) != 0)
        return refuse(StatusCode::InvalidArgument,
                      "not a kopt kernel database (not an SQLite file)");
    }
    // SQLite writes its journal, or its WAL and shared-memory files, beside
    // the database: a file in a folder that cannot be written can only be
    // read.
    if (!(info.st_mode & S_IWUSR) || ::access(path.c_str(), W_OK) != 0 ||
        ::access(parentFolder(path).c_str(), W_OK) != 0)
      readOnly = true;
  } else if (!options.create || readOnly) {
    return refuse(StatusCode::IoError, "no such file");
  } else {
    std::string folder = parentFolder(path);
    struct stat folderInfo;
    if (::stat(folder.c_str(), &folderInfo) != 0)
      return refuse(StatusCode::IoError, "cannot create it: the folder '" +
                                             folder + "' does not exist");
    if (!S_ISDIR(folderInfo.st_mode))
      return refuse(StatusCode::IoError,
                    "cannot create it: '" + folder + "' is not a folder");
    if (::access(folder.c_str(), W_OK) != 0)
      return refuse(StatusCode::Unavailable, "cannot create it: the folder '" +
                                                 folder + "' is not writable");
  }

  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->readOnly = readOnly;
  int flags = readOnly ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
                       : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  auto connect = [&](bool immutable) -> Status {
    Result<sqlite::Database> db = sqlite::Database::open(
        readOnly ? readOnlyUri(path, immutable) : path, flags);
    if (!db)
      return impl->fail(db.status());
    impl->db = std::move(*db);
    sqlite3_busy_timeout(impl->db.get(), options.busyTimeoutMs);
    return Status::success();
  };
  if (Status status = connect(/*immutable=*/false); !status.isOk())
    return status;

  auto refuseUnreadable = [&](const Status &status) {
    if (status.message() == kNoKoptTables ||
        status.message().rfind("the schema_version", 0) == 0)
      return refuse(StatusCode::InvalidArgument,
                    "not a kopt kernel database (" + status.message() + ")");
    if (status.code() == StatusCode::InvalidArgument)
      return refuse(StatusCode::InvalidArgument,
                    "cannot read it (corrupted, or not a database): " +
                        status.message());
    return refuse(status.code(), "cannot read it: " + status.message());
  };
  Result<int64_t> version = readVersion(impl->db);
  if (!version && readOnly &&
      version.status().code() != StatusCode::InvalidArgument) {
    // A WAL file read where its shared-memory file cannot be made (a
    // read-only folder or mount). Without a write-ahead log holding
    // changes, the database file alone is the whole database: it is read
    // as immutable. A log with changes cannot be read without its
    // shared memory, and ignoring it would lose them.
    if (getFileSize(path + "-wal") > 0)
      return refuse(StatusCode::Unavailable,
                    "cannot read it where it is: its write-ahead log '" + path +
                        "-wal' holds changes, and the folder or file is "
                        "read-only (" +
                        version.status().message() +
                        "); open it once where it can be written, or ship a "
                        "file written by 'kopt db export --journal=delete'");
    if (Status status = connect(/*immutable=*/true); !status.isOk())
      return status;
    version = readVersion(impl->db);
  }
  if (!version)
    return refuseUnreadable(version.status());
  if (*version > kSchemaVersion)
    return refuse(StatusCode::Unsupported,
                  "schema version " + std::to_string(*version) +
                      " is newer than this kopt supports (" +
                      std::to_string(kSchemaVersion) + ")");
  impl->schemaVersion = *version;
  if (options.checkIntegrity) {
    std::vector<std::string> problems;
    checkIntegrity(impl->db, "quick_check", problems);
    if (!problems.empty())
      return refuse(StatusCode::InvalidArgument,
                    "the file is damaged (" + problems.front() +
                        (problems.size() > 1 ? ", and more" : "") +
                        "); 'kopt db verify' lists the problems");
  }
  if (readOnly) {
    if (*version == 0)
      return refuse(StatusCode::InvalidArgument,
                    "an empty file, and read-only; nothing to read");
    return std::unique_ptr<SqliteKernelDatabase>(
        new SqliteKernelDatabase(std::move(impl)));
  }

  bool wal = options.journal == SqliteJournal::Wal;
  if (Status status = switchJournal(impl->db, wal ? "wal" : "delete",
                                    options.busyTimeoutMs);
      !status.isOk())
    return impl->fail(status, wal ? "cannot switch to WAL mode"
                                  : "cannot switch to a rollback journal");
  if (*version < kSchemaVersion) {
    Result<sqlite::Transaction> transaction =
        sqlite::Transaction::begin(impl->db);
    if (!transaction)
      return impl->fail(transaction.status());
    // Another process may have migrated while this one waited for the lock.
    version = readVersion(impl->db);
    if (!version)
      return refuseUnreadable(version.status());
    for (int64_t from = *version; from < kSchemaVersion; ++from) {
      Status status = impl->db.exec(kMigrations[from]);
      if (!status.isOk())
        return impl->fail(status, "cannot migrate from schema version " +
                                      std::to_string(from));
    }
    if (*version < 4)
      if (Status status = fillContentHashes(impl->db); !status.isOk())
        return impl->fail(status, "cannot migrate to schema version 4");
    Status status = transaction->commit();
    if (!status.isOk())
      return impl->fail(status);
    impl->schemaVersion = kSchemaVersion;
  }
  return std::unique_ptr<SqliteKernelDatabase>(
      new SqliteKernelDatabase(std::move(impl)));
}

Result<std::optional<KernelRecord>>
SqliteKernelDatabase::lookup(std::string_view taskKey,
                             const DeviceFingerprint &fingerprint) {
  Result<sqlite::Statement> statement = sqlite::Statement::prepare(
      impl->db, "SELECT " + impl->recordColumns(/*withBinaries=*/true) +
                    " FROM kernels WHERE task_key = ?1 AND "
                    "fingerprint_hash = ?2 AND valid = 1");
  if (!statement)
    return impl->fail(statement.status(), "cannot look up");
  statement->bind(1, taskKey).bind(2, fingerprint.hash());
  Result<bool> row = statement->step();
  if (!row)
    return impl->fail(row.status(), "cannot look up");
  if (!*row)
    return std::optional<KernelRecord>();
  Result<KernelRecord> record = impl->readCheckedRecord(*statement);
  if (!record)
    return record.status();
  return std::optional<KernelRecord>(std::move(*record));
}

Result<PutOutcome> SqliteKernelDatabase::merge(const KernelRecord &incoming) {
  Result<KernelRecord> prepared = detail::prepareForMerge(incoming);
  if (!prepared)
    return prepared.status();
  KernelRecord record = std::move(*prepared);
  std::string fingerprintHash = record.fingerprint.hash();
  std::string doing = "cannot store " + describeRecord(record);
  // The stale flag lives in its column only, so that marking a record does
  // not rewrite its JSON.
  json::Value recordJson = toJson(record, /*withBinaries=*/false);
  recordJson.erase("stale");

  PutOutcome outcome = PutOutcome::Added;
  Status status = impl->write([&]() -> Status {
    Result<sqlite::Statement> existing = sqlite::Statement::prepare(
        impl->db, "SELECT valid, median_ms FROM kernels WHERE task_key = ?1 "
                  "AND fingerprint_hash = ?2");
    if (!existing)
      return impl->fail(existing.status(), doing);
    existing->bind(1, record.taskKey).bind(2, fingerprintHash);
    Result<bool> row = existing->step();
    if (!row)
      return impl->fail(row.status(), doing);
    if (*row) {
      KernelRecord stored;
      stored.valid = existing->integer(0) != 0;
      stored.winner.medianMs = existing->real(1);
      if (!isBetterRecord(record, stored)) {
        outcome = PutOutcome::Kept;
        return Status::success();
      }
      outcome = PutOutcome::Replaced;
    }
    Result<sqlite::Statement> insert = sqlite::Statement::prepare(
        impl->db,
        "INSERT OR REPLACE INTO kernels(task_key, fingerprint_hash, "
        "fingerprint, valid, median_ms, record, cubin, cubin_hash, ptx, "
        "ptx_hash, created_at, updated_at, stale, content_hash) VALUES(?1, "
        "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
    if (!insert)
      return impl->fail(insert.status(), doing);
    std::string text = json::write(recordJson);
    insert->bind(1, record.taskKey)
        .bind(2, fingerprintHash)
        .bind(3, record.fingerprint.toString())
        .bind(4, int64_t(record.valid ? 1 : 0))
        .bind(5, record.winner.medianMs)
        .bind(6, text)
        .bindBlob(7, record.cubin)
        .bind(8, record.cubinHash)
        .bindBlob(9, record.ptx)
        .bind(10, record.ptxHash)
        .bind(11, record.createdAt)
        .bind(12, record.updatedAt)
        .bind(13, int64_t(record.stale ? 1 : 0))
        .bind(14, detail::contentHash(text, record.cubin, record.ptx));
    if (Status status = insert->run(); !status.isOk())
      return impl->fail(status, doing);
    return Status::success();
  });
  if (!status.isOk())
    return status;
  return outcome;
}

/// Inserts `attempt` (its time filled) unless `onlyIfNew` and an identical
/// attempt is stored; returns whether it was inserted.
static Result<bool> insertAttempt(SqliteKernelDatabase::Impl &impl,
                                  const AttemptRecord &incoming,
                                  bool onlyIfNew) {
  if (incoming.taskKey.empty())
    return Status::error(StatusCode::InvalidArgument,
                         "an attempt needs a task key");
  AttemptRecord attempt = incoming;
  if (attempt.time == 0)
    attempt.time = static_cast<int64_t>(::time(nullptr));
  std::string fingerprintHash = attempt.fingerprint.hash();
  std::string text = json::write(toJson(attempt));
  std::string doing = "cannot store an attempt for task " + attempt.taskKey;
  bool inserted = false;
  Status status = impl.write([&]() -> Status {
    if (onlyIfNew) {
      Result<sqlite::Statement> existing = sqlite::Statement::prepare(
          impl.db, "SELECT 1 FROM attempts WHERE task_key = ?1 AND "
                   "fingerprint_hash = ?2 AND attempt = ?3 LIMIT 1");
      if (!existing)
        return impl.fail(existing.status(), doing);
      existing->bind(1, attempt.taskKey).bind(2, fingerprintHash).bind(3, text);
      Result<bool> row = existing->step();
      if (!row)
        return impl.fail(row.status(), doing);
      if (*row)
        return Status::success();
    }
    Result<sqlite::Statement> insert = sqlite::Statement::prepare(
        impl.db, "INSERT INTO attempts(task_key, fingerprint_hash, valid, "
                 "attempt, created_at) VALUES(?1, ?2, ?3, ?4, ?5)");
    if (!insert)
      return impl.fail(insert.status(), doing);
    insert->bind(1, attempt.taskKey)
        .bind(2, fingerprintHash)
        .bind(3, int64_t(attempt.valid ? 1 : 0))
        .bind(4, text)
        .bind(5, attempt.time);
    if (Status status = insert->run(); !status.isOk())
      return impl.fail(status, doing);
    inserted = true;
    return Status::success();
  });
  if (!status.isOk())
    return status;
  return inserted;
}

Status SqliteKernelDatabase::addAttempt(const AttemptRecord &attempt) {
  Result<bool> inserted = insertAttempt(*impl, attempt, /*onlyIfNew=*/false);
  return inserted ? Status::success() : inserted.status();
}

Result<bool> SqliteKernelDatabase::mergeAttempt(const AttemptRecord &attempt) {
  return insertAttempt(*impl, attempt, /*onlyIfNew=*/true);
}

Status SqliteKernelDatabase::forEachRecord(const RecordFilter &filter,
                                           const RecordCallback &callback) {
  Result<sqlite::Statement> statement = sqlite::Statement::prepare(
      impl->db, "SELECT " + impl->recordColumns(filter.withBinaries) +
                    " FROM kernels WHERE " + kKeyPrefixCondition +
                    " ORDER BY task_key, fingerprint_hash");
  if (!statement)
    return impl->fail(statement.status(), "cannot list records");
  statement->bind(1, filter.taskKeyPrefix);
  while (true) {
    Result<bool> row = statement->step();
    if (!row)
      return impl->fail(row.status(), "cannot list records");
    if (!*row)
      return Status::success();
    Result<KernelRecord> record = filter.withBinaries
                                      ? impl->readCheckedRecord(*statement)
                                      : impl->readRecord(*statement);
    if (!record)
      return record.status();
    if (Status status = callback(*record); !status.isOk())
      return status;
  }
}

Status SqliteKernelDatabase::forEachAttempt(std::string_view taskKeyPrefix,
                                            const AttemptCallback &callback) {
  Result<sqlite::Statement> statement = sqlite::Statement::prepare(
      impl->db, std::string("SELECT id, attempt FROM attempts WHERE ") +
                    kKeyPrefixCondition + " ORDER BY id");
  if (!statement)
    return impl->fail(statement.status(), "cannot list attempts");
  statement->bind(1, taskKeyPrefix);
  while (true) {
    Result<bool> row = statement->step();
    if (!row)
      return impl->fail(row.status(), "cannot list attempts");
    if (!*row)
      return Status::success();
    std::string doing =
        "attempt " + std::to_string(statement->integer(0)) + " does not read";
    Result<json::Value> value = json::parse(statement->text(1));
    if (!value)
      return impl->fail(value.status(), doing);
    Result<AttemptRecord> attempt = attemptRecordFromJson(*value);
    if (!attempt)
      return impl->fail(attempt.status(), doing);
    if (Status status = callback(*attempt); !status.isOk())
      return status;
  }
}

Result<KernelDatabaseStats> SqliteKernelDatabase::stats() {
  KernelDatabaseStats stats;
  Status status = readSnapshot([&]() -> Status {
    Result<sqlite::Statement> kernels = sqlite::Statement::prepare(
        impl->db, std::string("SELECT COUNT(*), TOTAL(valid), TOTAL(") +
                      impl->staleColumn() +
                      "), COUNT(cubin), COUNT(ptx), "
                      "TOTAL(length(cubin)) + TOTAL(length(ptx)) FROM kernels");
    if (!kernels)
      return impl->fail(kernels.status(), "cannot count records");
    Result<bool> row = kernels->step();
    if (!row)
      return impl->fail(row.status(), "cannot count records");
    stats.records = static_cast<size_t>(kernels->integer(0));
    stats.validRecords = static_cast<size_t>(kernels->real(1));
    stats.staleRecords = static_cast<size_t>(kernels->real(2));
    stats.cubins = static_cast<size_t>(kernels->integer(3));
    stats.ptxs = static_cast<size_t>(kernels->integer(4));
    stats.binaryBytes = static_cast<int64_t>(kernels->real(5));
    Result<sqlite::Statement> attempts = sqlite::Statement::prepare(
        impl->db, "SELECT COUNT(*), TOTAL(1 - valid) FROM attempts");
    if (!attempts)
      return impl->fail(attempts.status(), "cannot count attempts");
    row = attempts->step();
    if (!row)
      return impl->fail(row.status(), "cannot count attempts");
    stats.attempts = static_cast<size_t>(attempts->integer(0));
    stats.failedAttempts = static_cast<size_t>(attempts->real(1));
    return Status::success();
  });
  if (!status.isOk())
    return status;
  return stats;
}

Result<std::vector<DeviceFingerprint>>
SqliteKernelDatabase::listFingerprints() {
  std::vector<DeviceFingerprint> fingerprints;
  Status status = readSnapshot([&]() -> Status {
    // The hashes come from the primary key's index alone; then one record
    // of each is read for its fingerprint.
    Result<sqlite::Statement> hashes = sqlite::Statement::prepare(
        impl->db, "SELECT DISTINCT fingerprint_hash FROM kernels ORDER BY "
                  "fingerprint_hash");
    if (!hashes)
      return impl->fail(hashes.status(), "cannot list fingerprints");
    std::vector<std::string> found;
    while (true) {
      Result<bool> row = hashes->step();
      if (!row)
        return impl->fail(row.status(), "cannot list fingerprints");
      if (!*row)
        break;
      found.push_back(hashes->text(0));
    }
    for (const std::string &hash : found) {
      Result<sqlite::Statement> one = sqlite::Statement::prepare(
          impl->db, "SELECT " + impl->recordColumns(/*withBinaries=*/false) +
                        " FROM kernels WHERE fingerprint_hash = ?1 LIMIT 1");
      if (!one)
        return impl->fail(one.status(), "cannot list fingerprints");
      one->bind(1, hash);
      Result<bool> row = one->step();
      if (!row)
        return impl->fail(row.status(), "cannot list fingerprints");
      if (!*row)
        continue;
      Result<KernelRecord> record = impl->readRecord(*one);
      if (!record)
        return record.status();
      fingerprints.push_back(record->fingerprint);
    }
    return Status::success();
  });
  if (!status.isOk())
    return status;
  return fingerprints;
}

Result<std::vector<std::string>> SqliteKernelDatabase::findProblems() {
  std::vector<std::string> problems;
  // A statement that fails midway is one more problem, and the end of the
  // check: what follows would only repeat it.
  auto failed = [&](const std::string &what, const Status &status) {
    problems.push_back(what + ": " + status.message());
    return Status::success();
  };
  auto check = [&]() -> Status {
    if (!checkIntegrity(impl->db, "integrity_check", problems))
      return Status::success();

    Result<sqlite::Statement> version = sqlite::Statement::prepare(
        impl->db, "SELECT COUNT(*), MAX(version) FROM schema_version");
    Result<bool> row = version ? version->step() : version.status();
    if (!row)
      return failed("cannot read the schema version", row.status());
    if (version->integer(0) != 1 || version->integer(1) != impl->schemaVersion)
      problems.push_back("schema_version should hold one row, " +
                         std::to_string(impl->schemaVersion) + "; it holds " +
                         std::to_string(version->integer(0)));

    // Every record: its JSON, the columns that repeat it, its binaries and
    // its plan.
    Result<sqlite::Statement> kernels = sqlite::Statement::prepare(
        impl->db, "SELECT " + impl->recordColumns(/*withBinaries=*/true) +
                      ", fingerprint, valid, median_ms FROM kernels ORDER BY "
                      "task_key, fingerprint_hash");
    for (row = kernels ? kernels->step() : kernels.status(); row && *row;
         row = kernels->step()) {
      std::string where =
          "record " + kernels->text(0) + " on " + kernels->text(1) + ": ";
      Result<KernelRecord> record = Impl::decodeRecord(*kernels);
      if (!record) {
        problems.push_back(
            where + "stored JSON does not read: " + record.status().message());
        continue;
      }
      if (!Impl::matchesContentHash(*kernels))
        problems.push_back(where + "its content does not match its content "
                                   "hash");
      if (record->taskKey != kernels->text(0) ||
          record->fingerprint.hash() != kernels->text(1) ||
          record->fingerprint.toString() != kernels->text(11))
        problems.push_back(where + "its key columns do not match its JSON");
      if (int64_t(record->valid) != kernels->integer(12) ||
          record->winner.medianMs != kernels->real(13))
        problems.push_back(where + "its valid or median_ms column does not "
                                   "match its JSON");
      detail::checkRecord(*record, problems);
    }
    if (!row)
      return failed("cannot read the records", row.status());

    // Every attempt's JSON.
    Result<sqlite::Statement> attempts = sqlite::Statement::prepare(
        impl->db, "SELECT id, task_key, attempt FROM attempts ORDER BY id");
    for (row = attempts ? attempts->step() : attempts.status(); row && *row;
         row = attempts->step()) {
      std::string where = "attempt " + std::to_string(attempts->integer(0)) +
                          " for task " + attempts->text(1) + ": ";
      Result<json::Value> value = json::parse(attempts->text(2));
      Result<AttemptRecord> attempt =
          value ? attemptRecordFromJson(*value) : value.status();
      if (!attempt)
        problems.push_back(
            where + "stored JSON does not read: " + attempt.status().message());
      else if (attempt->taskKey != attempts->text(1))
        problems.push_back(where + "its key column does not match its JSON");
    }
    if (!row)
      return failed("cannot read the attempts", row.status());
    return Status::success();
  };
  Status status = readSnapshot(check);
  if (!status.isOk())
    return status;
  return problems;
}

Result<bool> SqliteKernelDatabase::setStale(std::string_view taskKey,
                                            std::string_view fingerprintHash,
                                            bool stale) {
  bool changed = false;
  std::string doing = "cannot mark record " + std::string(taskKey) + " on " +
                      std::string(fingerprintHash);
  Status status = impl->write([&]() -> Status {
    Result<sqlite::Statement> update = sqlite::Statement::prepare(
        impl->db, "UPDATE kernels SET stale = ?3 WHERE task_key = ?1 AND "
                  "fingerprint_hash = ?2");
    if (!update)
      return impl->fail(update.status(), doing);
    update->bind(1, taskKey)
        .bind(2, fingerprintHash)
        .bind(3, int64_t(stale ? 1 : 0));
    if (Status status = update->run(); !status.isOk())
      return impl->fail(status, doing);
    changed = impl->db.changes() > 0;
    return Status::success();
  });
  if (!status.isOk())
    return status;
  return changed;
}

Result<PruneSummary> SqliteKernelDatabase::prune(const PruneOptions &options) {
  // Both tables take the same conditions: ?1 a time before which rows go,
  // ?2 whether only invalid rows go, ?3 a fingerprint hash or ''.
  const std::string condition =
      " < ?1 AND (?2 = 0 OR valid = 0) AND (?3 = '' OR fingerprint_hash = ?3)";
  const std::string recordCondition = "updated_at" + condition;
  const std::string attemptCondition = "created_at" + condition;
  auto bindConditions = [&](sqlite::Statement &statement) {
    statement
        .bind(1, options.before.value_or(std::numeric_limits<int64_t>::max()))
        .bind(2, int64_t(options.invalidOnly ? 1 : 0))
        .bind(3, options.fingerprintHash);
  };
  auto run = [&](const std::string &sql, const std::string &doing) {
    Result<sqlite::Statement> statement =
        sqlite::Statement::prepare(impl->db, sql);
    if (!statement)
      return impl->fail(statement.status(), doing);
    bindConditions(*statement);
    if (Status status = statement->run(); !status.isOk())
      return impl->fail(status, doing);
    return Status::success();
  };

  PruneSummary summary;
  auto body = [&]() -> Status {
    if (options.records) {
      Result<sqlite::Statement> select = sqlite::Statement::prepare(
          impl->db, "SELECT " + impl->recordColumns(/*withBinaries=*/false) +
                        " FROM kernels WHERE " + recordCondition +
                        " ORDER BY task_key, fingerprint_hash");
      if (!select)
        return impl->fail(select.status(), "cannot select records to prune");
      bindConditions(*select);
      while (true) {
        Result<bool> row = select->step();
        if (!row)
          return impl->fail(row.status(), "cannot select records to prune");
        if (!*row)
          break;
        Result<KernelRecord> record = impl->readRecord(*select);
        if (!record)
          return record.status();
        summary.records.push_back(std::move(*record));
      }
      if (!options.dryRun)
        if (Status status = run("DELETE FROM kernels WHERE " + recordCondition,
                                "cannot remove records");
            !status.isOk())
          return status;
    }
    if (options.attempts) {
      Result<sqlite::Statement> count = sqlite::Statement::prepare(
          impl->db, "SELECT COUNT(*) FROM attempts WHERE " + attemptCondition);
      if (!count)
        return impl->fail(count.status(), "cannot count attempts to prune");
      bindConditions(*count);
      Result<bool> row = count->step();
      if (!row)
        return impl->fail(row.status(), "cannot count attempts to prune");
      summary.attempts = static_cast<size_t>(count->integer(0));
      if (!options.dryRun)
        if (Status status =
                run("DELETE FROM attempts WHERE " + attemptCondition,
                    "cannot remove attempts");
            !status.isOk())
          return status;
    }
    return Status::success();
  };
  Status status = options.dryRun ? readSnapshot(body) : transact(body);
  if (!status.isOk())
    return status;
  return summary;
}

Status SqliteKernelDatabase::transact(const std::function<Status()> &body) {
  return impl->write(body);
}

Status SqliteKernelDatabase::readSnapshot(const std::function<Status()> &body) {
  Result<sqlite::Transaction> transaction =
      sqlite::Transaction::beginRead(impl->db);
  if (!transaction)
    return impl->fail(transaction.status());
  if (Status status = body(); !status.isOk())
    return status;
  // Nothing was written, so ending the read cannot lose anything; when
  // COMMIT fails (after SQLite found damage, say) the rollback ends it.
  transaction->commit().ignore();
  return Status::success();
}
