//===- Postgres.cpp - RAII wrappers over libpq ------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Postgres.h"

#include "kopt/Runtime/Redact.h"

#include <libpq-fe.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace kopt::runtime;
using namespace kopt::runtime::postgres;

/// libpq's messages end in a newline, and may span lines; one line reads
/// better after a prefix.
static std::string oneLine(const char *text) {
  std::string message = text ? text : "";
  while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
    message.pop_back();
  for (char &c : message)
    if (c == '\n')
      c = ' ';
  return message;
}

/// The status code for a failure of SQLSTATE `state`.
static StatusCode codeOfState(const char *state) {
  if (!state)
    return StatusCode::IoError;
  std::string_view code(state);
  // 08: connection exceptions; 25006: a write in a read-only transaction;
  // 42501: insufficient privilege.
  if (code.substr(0, 2) == "08" || code == "25006" || code == "42501")
    return StatusCode::Unavailable;
  // 22: data exceptions; 23: integrity constraint violations.
  if (code.substr(0, 2) == "22" || code.substr(0, 2) == "23")
    return StatusCode::InvalidArgument;
  return StatusCode::IoError;
}

Param::Param(double number) {
  // Enough digits to read back the same double.
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", number);
  value = text;
}

//===----------------------------------------------------------------------===//
// Rows
//===----------------------------------------------------------------------===//

Rows &Rows::operator=(Rows &&other) noexcept {
  if (this != &other) {
    if (handle)
      PQclear(handle);
    handle = other.handle;
    other.handle = nullptr;
  }
  return *this;
}

Rows::~Rows() {
  if (handle)
    PQclear(handle);
}

int Rows::size() const { return handle ? PQntuples(handle) : 0; }

std::string Rows::text(int row, int column) const {
  return std::string(PQgetvalue(handle, row, column),
                     PQgetlength(handle, row, column));
}

int64_t Rows::integer(int row, int column) const {
  return std::strtoll(PQgetvalue(handle, row, column), nullptr, 10);
}

double Rows::real(int row, int column) const {
  return std::strtod(PQgetvalue(handle, row, column), nullptr);
}

bool Rows::boolean(int row, int column) const {
  const char *value = PQgetvalue(handle, row, column);
  return value[0] == 't' || value[0] == '1';
}

bool Rows::isNull(int row, int column) const {
  return PQgetisnull(handle, row, column) != 0;
}

std::optional<std::string> Rows::bytes(int row, int column) const {
  if (isNull(row, column))
    return std::nullopt;
  size_t length = 0;
  unsigned char *bytes = PQunescapeBytea(
      reinterpret_cast<const unsigned char *>(PQgetvalue(handle, row, column)),
      &length);
  if (!bytes)
    return std::string();
  std::string result(reinterpret_cast<char *>(bytes), length);
  PQfreemem(bytes);
  return result;
}

//===----------------------------------------------------------------------===//
// Connection
//===----------------------------------------------------------------------===//

Result<Connection> Connection::open(const std::string &conninfo,
                                    int connectTimeoutSeconds,
                                    int statementTimeoutMs) {
  Connection db;
  // libpq's default is to wait as long as the system does. Keywords before
  // the expanded `dbname` are defaults that `conninfo` overrides.
  std::string timeout = std::to_string(connectTimeoutSeconds);
  bool defaultTimeout =
      connectTimeoutSeconds > 0 && !std::getenv("PGCONNECT_TIMEOUT");
  const char *keywords[] = {"connect_timeout", "dbname", nullptr};
  const char *values[] = {timeout.c_str(), conninfo.c_str(), nullptr};
  db.handle = PQconnectdbParams(defaultTimeout ? keywords : keywords + 1,
                                defaultTimeout ? values : values + 1,
                                /*expand_dbname=*/1);
  if (!db.handle)
    return Status::error(StatusCode::Unavailable,
                         "cannot connect: out of memory");
  if (PQstatus(db.handle) != CONNECTION_OK)
    return Status::error(StatusCode::Unavailable,
                         "cannot connect: " +
                             redactSecrets(oneLine(PQerrorMessage(db.handle))));
  // Quiet notices ("relation already exists, skipping") would otherwise go
  // to stderr.
  PQsetNoticeProcessor(
      db.handle, [](void *, const char *) {}, nullptr);
  if (statementTimeoutMs > 0) {
    Result<Rows> current = db.query("SHOW statement_timeout");
    if (!current)
      return current.status();
    if (current->size() == 1 && current->text(0, 0) == "0")
      if (Status status = db.exec("SET statement_timeout = " +
                                  std::to_string(statementTimeoutMs));
          !status.isOk())
        return status;
  }
  return db;
}

Connection &Connection::operator=(Connection &&other) noexcept {
  if (this != &other) {
    if (handle)
      PQfinish(handle);
    handle = other.handle;
    other.handle = nullptr;
  }
  return *this;
}

Connection::~Connection() {
  if (handle)
    PQfinish(handle);
}

Result<Rows> Connection::query(const std::string &sql,
                               const std::vector<Param> &params) {
  std::vector<const char *> values;
  std::vector<int> lengths, formats;
  for (const Param &param : params) {
    values.push_back(param.value ? param.value->data() : nullptr);
    lengths.push_back(param.value ? int(param.value->size()) : 0);
    formats.push_back(param.binary ? 1 : 0);
  }
  PGresult *result =
      params.empty()
          ? PQexec(handle, sql.c_str())
          : PQexecParams(handle, sql.c_str(), int(params.size()), nullptr,
                         values.data(), lengths.data(), formats.data(), 0);
  Rows rows(result);
  ExecStatusType status = result ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)
    return rows;
  const char *state =
      result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string message =
      oneLine(result ? PQresultErrorMessage(result) : PQerrorMessage(handle));
  if (message.rfind("ERROR:  ", 0) == 0)
    message = message.substr(8);
  if (PQstatus(handle) != CONNECTION_OK)
    return Status::error(StatusCode::Unavailable,
                         "lost the connection: " + message);
  return Status::error(codeOfState(state), message);
}

Status Connection::exec(const std::string &sql,
                        const std::vector<Param> &params) {
  Result<Rows> rows = query(sql, params);
  return rows ? Status::success() : rows.status();
}

bool Connection::inTransaction() const {
  return PQtransactionStatus(handle) != PQTRANS_IDLE;
}

//===----------------------------------------------------------------------===//
// Transaction
//===----------------------------------------------------------------------===//

Result<Transaction> Transaction::begin(Connection &db, const char *sql) {
  bool nested = db.inTransaction();
  if (Status status = db.exec(nested ? "SAVEPOINT kopt_nested" : sql);
      !status.isOk())
    return status.withContext("cannot begin a transaction");
  return Transaction(db, nested);
}

Result<Transaction> Transaction::begin(Connection &db) {
  return begin(db, "BEGIN");
}

Result<Transaction> Transaction::beginRead(Connection &db) {
  return begin(db, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
}

Transaction::~Transaction() {
  if (!db)
    return;
  // After a lost connection these fail, and the server has rolled back.
  if (nested)
    db->exec("ROLLBACK TO SAVEPOINT kopt_nested; RELEASE SAVEPOINT kopt_nested")
        .ignore();
  else
    db->exec("ROLLBACK").ignore();
}

Status Transaction::commit() {
  Status status = db->exec(nested ? "RELEASE SAVEPOINT kopt_nested" : "COMMIT");
  if (!status.isOk())
    return status.withContext("cannot commit");
  db = nullptr;
  return status;
}
