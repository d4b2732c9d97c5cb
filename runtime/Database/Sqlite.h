//===- Sqlite.h - RAII wrappers over the SQLite C API -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A connection, a prepared statement and a transaction, each releasing what
// it holds when destroyed; a transaction rolls back unless committed, and a
// transaction begun inside another one is a savepoint of it. Errors come back
// as Status values, never exceptions: SQLite's message, with a code that says
// what kind of failure it was (read-only, corrupted file, I/O).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_DATABASE_SQLITE_H
#define KOPT_RUNTIME_DATABASE_SQLITE_H

#include "kopt/Runtime/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace kopt::runtime::sqlite {

/// One open connection to a database file.
class Database {
public:
  /// Opens `path` with SQLite open `flags`.
  static Result<Database> open(const std::string &path, int flags);

  Database() = default;
  Database(Database &&other) noexcept : handle(other.handle) {
    other.handle = nullptr;
  }
  Database &operator=(Database &&other) noexcept;
  Database(const Database &) = delete;
  Database &operator=(const Database &) = delete;
  ~Database();

  /// Runs `sql`, which may hold several statements and return no rows.
  Status exec(const std::string &sql);
  /// The connection's last error, prefixed with `what` and ": " unless
  /// `what` is empty.
  Status error(std::string_view what = {}) const;
  /// Rows changed by the last INSERT, UPDATE or DELETE.
  int64_t changes() const;
  /// Whether a transaction is open on this connection.
  bool inTransaction() const;
  /// The raw handle.
  sqlite3 *get() const { return handle; }

private:
  sqlite3 *handle = nullptr;
};

/// One prepared statement.
class Statement {
public:
  /// Prepares `sql` on `db`.
  static Result<Statement> prepare(Database &db, const std::string &sql);

  Statement(Statement &&other) noexcept : db(other.db), handle(other.handle) {
    other.handle = nullptr;
  }
  Statement(const Statement &) = delete;
  Statement &operator=(const Statement &) = delete;
  Statement &operator=(Statement &&) = delete;
  ~Statement();

  /// Binds parameter `index` (1-based).
  Statement &bind(int index, std::string_view text);
  Statement &bind(int index, int64_t number);
  Statement &bind(int index, double number);
  /// Binds a blob, or NULL when `bytes` is empty.
  Statement &bindBlob(int index, const std::optional<std::string> &bytes);

  /// Steps once: true when a row is ready, false when done.
  Result<bool> step();
  /// Steps until done; for statements that return no rows.
  Status run();

  /// Column values of the current row (0-based).
  std::string text(int column) const;
  int64_t integer(int column) const;
  double real(int column) const;
  /// The blob in `column`, or std::nullopt when NULL.
  std::optional<std::string> blob(int column) const;
  /// Whether `column` is NULL.
  bool isNull(int column) const;

private:
  Statement(Database &db, sqlite3_stmt *handle) : db(&db), handle(handle) {}
  Database *db;
  sqlite3_stmt *handle;
  Status bindStatus;
};

/// A transaction that rolls back when destroyed unless committed.
class Transaction {
public:
  /// Begins a write transaction: an IMMEDIATE one, which takes the write lock
  /// now (waiting up to the busy timeout), or, inside an open transaction, a
  /// savepoint that commits or rolls back with it.
  static Result<Transaction> begin(Database &db);
  /// Begins a read transaction (DEFERRED), which reads one snapshot of the
  /// file; inside an open transaction, a savepoint.
  static Result<Transaction> beginRead(Database &db);

  Transaction(Transaction &&other) noexcept
      : db(other.db), nested(other.nested) {
    other.db = nullptr;
  }
  Transaction(const Transaction &) = delete;
  Transaction &operator=(const Transaction &) = delete;
  Transaction &operator=(Transaction &&) = delete;
  ~Transaction();

  /// Commits; afterwards the destructor does nothing.
  Status commit();

private:
  Transaction(Database &db, bool nested) : db(&db), nested(nested) {}
  static Result<Transaction> begin(Database &db, const char *sql);
  Database *db;
  /// Whether this is a savepoint inside an outer transaction.
  bool nested;
};

} // namespace kopt::runtime::sqlite

#endif // KOPT_RUNTIME_DATABASE_SQLITE_H
