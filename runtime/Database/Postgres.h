//===- Postgres.h - RAII wrappers over libpq --------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A connection, a query's rows and a transaction, each releasing what it
// holds when destroyed, as Sqlite.h does for SQLite: a transaction rolls back
// unless committed, and a transaction begun inside another one is a savepoint
// of it. Parameters travel separately from the SQL text (never spliced into
// it); binaries travel as binary parameters. Errors come back as Status
// values: the server's message, with a code that says what kind of failure
// it was (connection, read-only, I/O).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_DATABASE_POSTGRES_H
#define KOPT_RUNTIME_DATABASE_POSTGRES_H

#include "kopt/Runtime/Status.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct pg_conn;
struct pg_result;

namespace kopt::runtime::postgres {

/// One query parameter: text, bytes or NULL.
struct Param {
  std::optional<std::string> value;
  bool binary = false;

  Param(std::string_view text) : value(std::string(text)) {}
  Param(const std::string &text) : value(text) {}
  Param(const char *text) : value(std::string(text)) {}
  Param(int64_t number) : value(std::to_string(number)) {}
  Param(int number) : value(std::to_string(number)) {}
  Param(bool flag) : value(flag ? "true" : "false") {}
  Param(double number);
  /// Bytes for a BYTEA column, or NULL when `bytes` is empty.
  static Param bytes(const std::optional<std::string> &bytes) {
    Param param{std::string_view()};
    param.value = bytes;
    param.binary = true;
    return param;
  }
};

/// The rows a query returned.
class Rows {
public:
  Rows() = default;
  explicit Rows(pg_result *handle) : handle(handle) {}
  Rows(Rows &&other) noexcept : handle(other.handle) { other.handle = nullptr; }
  Rows &operator=(Rows &&other) noexcept;
  Rows(const Rows &) = delete;
  Rows &operator=(const Rows &) = delete;
  ~Rows();

  /// How many rows there are.
  int size() const;
  /// Column values of `row` (0-based), in text form.
  std::string text(int row, int column) const;
  int64_t integer(int row, int column) const;
  double real(int row, int column) const;
  bool boolean(int row, int column) const;
  bool isNull(int row, int column) const;
  /// A BYTEA column's bytes, or std::nullopt when NULL.
  std::optional<std::string> bytes(int row, int column) const;

private:
  pg_result *handle = nullptr;
};

/// One open connection to a server.
class Connection {
public:
  /// Connects with `conninfo` (a postgresql:// URL or libpq keywords).
  /// Passwords come from the environment, a password file or a service
  /// file, as libpq reads them. Connecting gives up after
  /// `connectTimeoutSeconds` unless `conninfo` or PGCONNECT_TIMEOUT sets
  /// `connect_timeout`; each statement after `statementTimeoutMs` unless
  /// the session already has a `statement_timeout` (from `options` in
  /// `conninfo`, PGOPTIONS or the role's or database's settings). 0 leaves
  /// either to libpq and the server.
  static Result<Connection> open(const std::string &conninfo,
                                 int connectTimeoutSeconds,
                                 int statementTimeoutMs);

  Connection() = default;
  Connection(Connection &&other) noexcept : handle(other.handle) {
    other.handle = nullptr;
  }
  Connection &operator=(Connection &&other) noexcept;
  Connection(const Connection &) = delete;
  Connection &operator=(const Connection &) = delete;
  ~Connection();

  /// Runs `sql` with `params` ($1, $2, ...) and returns its rows.
  Result<Rows> query(const std::string &sql,
                     const std::vector<Param> &params = {});
  /// Runs `sql`, which may hold several statements when it has no
  /// parameters, and returns no rows.
  Status exec(const std::string &sql, const std::vector<Param> &params = {});
  /// Whether a transaction is open on this connection.
  bool inTransaction() const;
  /// The raw handle.
  pg_conn *get() const { return handle; }

private:
  pg_conn *handle = nullptr;
};

/// A transaction that rolls back when destroyed unless committed.
class Transaction {
public:
  /// Begins a write transaction or, inside an open transaction, a savepoint
  /// that commits or rolls back with it.
  static Result<Transaction> begin(Connection &db);
  /// Begins a read-only transaction that reads one snapshot (REPEATABLE
  /// READ); inside an open transaction, a savepoint.
  static Result<Transaction> beginRead(Connection &db);

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
  Transaction(Connection &db, bool nested) : db(&db), nested(nested) {}
  static Result<Transaction> begin(Connection &db, const char *sql);
  Connection *db;
  /// Whether this is a savepoint inside an outer transaction.
  bool nested;
};

} // namespace kopt::runtime::postgres

#endif // KOPT_RUNTIME_DATABASE_POSTGRES_H
