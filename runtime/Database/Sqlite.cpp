//===- Sqlite.cpp - RAII wrappers over the SQLite C API ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Sqlite.h"

#include <sqlite3.h>

#include <cstring>

using namespace kopt::runtime;
using namespace kopt::runtime::sqlite;

//===----------------------------------------------------------------------===//
// Database
//===----------------------------------------------------------------------===//

Result<Database> Database::open(const std::string &path, int flags) {
  Database db;
  int rc = sqlite3_open_v2(path.c_str(), &db.handle, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message =
        db.handle ? sqlite3_errmsg(db.handle) : sqlite3_errstr(rc);
    return Status::error(StatusCode::IoError, "cannot open: " + message);
  }
  sqlite3_extended_result_codes(db.handle, 1);
  return db;
}

Database &Database::operator=(Database &&other) noexcept {
  if (this != &other) {
    if (handle)
      sqlite3_close_v2(handle);
    handle = other.handle;
    other.handle = nullptr;
  }
  return *this;
}

Database::~Database() {
  if (handle)
    sqlite3_close_v2(handle);
}

Status Database::exec(const std::string &sql) {
  if (sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
    return error();
  return Status::success();
}

Status Database::error(std::string_view what) const {
  int code = sqlite3_errcode(handle) & 0xff;
  StatusCode statusCode = StatusCode::IoError;
  if (code == SQLITE_READONLY)
    statusCode = StatusCode::Unavailable;
  else if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
    statusCode = StatusCode::InvalidArgument;
  std::string message = sqlite3_errmsg(handle);
  // For a failed read or write, the system's reason says more ("No space
  // left on device", "File too large").
  int systemError = sqlite3_system_errno(handle);
  if ((code == SQLITE_IOERR || code == SQLITE_FULL ||
       code == SQLITE_CANTOPEN) &&
      systemError != 0)
    message += std::string(" (") + std::strerror(systemError) + ")";
  if (!what.empty())
    message = std::string(what) + ": " + message;
  return Status::error(statusCode, message);
}

int64_t Database::changes() const { return sqlite3_changes64(handle); }

bool Database::inTransaction() const {
  return sqlite3_get_autocommit(handle) == 0;
}

//===----------------------------------------------------------------------===//
// Statement
//===----------------------------------------------------------------------===//

Result<Statement> Statement::prepare(Database &db, const std::string &sql) {
  sqlite3_stmt *handle = nullptr;
  if (sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &handle, nullptr) !=
      SQLITE_OK)
    return db.error();
  return Statement(db, handle);
}

Statement::~Statement() {
  if (handle)
    sqlite3_finalize(handle);
}

Statement &Statement::bind(int index, std::string_view text) {
  // An empty view may have no data pointer, which SQLite would bind as NULL.
  if (sqlite3_bind_text64(handle, index, text.data() ? text.data() : "",
                          text.size(), SQLITE_TRANSIENT,
                          SQLITE_UTF8) != SQLITE_OK &&
      bindStatus.isOk())
    bindStatus = db->error("cannot bind a parameter");
  return *this;
}

Statement &Statement::bind(int index, int64_t number) {
  if (sqlite3_bind_int64(handle, index, number) != SQLITE_OK &&
      bindStatus.isOk())
    bindStatus = db->error("cannot bind a parameter");
  return *this;
}

Statement &Statement::bind(int index, double number) {
  if (sqlite3_bind_double(handle, index, number) != SQLITE_OK &&
      bindStatus.isOk())
    bindStatus = db->error("cannot bind a parameter");
  return *this;
}

Statement &Statement::bindBlob(int index,
                               const std::optional<std::string> &bytes) {
  int rc = bytes ? sqlite3_bind_blob64(handle, index, bytes->data(),
                                       bytes->size(), SQLITE_TRANSIENT)
                 : sqlite3_bind_null(handle, index);
  if (rc != SQLITE_OK && bindStatus.isOk())
    bindStatus = db->error("cannot bind a parameter");
  return *this;
}

Result<bool> Statement::step() {
  if (!bindStatus.isOk())
    return bindStatus;
  int rc = sqlite3_step(handle);
  if (rc == SQLITE_ROW)
    return true;
  if (rc == SQLITE_DONE)
    return false;
  return db->error();
}

Status Statement::run() {
  while (true) {
    Result<bool> row = step();
    if (!row)
      return row.status();
    if (!*row)
      return Status::success();
  }
}

std::string Statement::text(int column) const {
  const unsigned char *data = sqlite3_column_text(handle, column);
  if (!data)
    return std::string();
  return std::string(reinterpret_cast<const char *>(data),
                     sqlite3_column_bytes(handle, column));
}

int64_t Statement::integer(int column) const {
  return sqlite3_column_int64(handle, column);
}

double Statement::real(int column) const {
  return sqlite3_column_double(handle, column);
}

bool Statement::isNull(int column) const {
  return sqlite3_column_type(handle, column) == SQLITE_NULL;
}

std::optional<std::string> Statement::blob(int column) const {
  if (sqlite3_column_type(handle, column) == SQLITE_NULL)
    return std::nullopt;
  const void *data = sqlite3_column_blob(handle, column);
  int size = sqlite3_column_bytes(handle, column);
  if (!data || size == 0)
    return std::string();
  return std::string(static_cast<const char *>(data), size);
}

//===----------------------------------------------------------------------===//
// Transaction
//===----------------------------------------------------------------------===//

Result<Transaction> Transaction::begin(Database &db, const char *sql) {
  // SQLite has no nested transactions; an inner one is a savepoint, which
  // RELEASE commits into the outer transaction.
  bool nested = db.inTransaction();
  if (Status status = db.exec(nested ? "SAVEPOINT kopt_nested" : sql);
      !status.isOk())
    return status.withContext("cannot begin a transaction");
  return Transaction(db, nested);
}

Result<Transaction> Transaction::begin(Database &db) {
  return begin(db, "BEGIN IMMEDIATE");
}

Result<Transaction> Transaction::beginRead(Database &db) {
  return begin(db, "BEGIN DEFERRED");
}

Transaction::~Transaction() {
  if (!db)
    return;
  // SQLite may have rolled the whole transaction back already (after a full
  // disk, for one); then these fail, and there is nothing left to undo.
  if (nested)
    db->exec("ROLLBACK TO kopt_nested; RELEASE kopt_nested").ignore();
  else
    db->exec("ROLLBACK").ignore();
}

Status Transaction::commit() {
  Status status = db->exec(nested ? "RELEASE kopt_nested" : "COMMIT");
  if (!status.isOk())
    return status.withContext("cannot commit");
  db = nullptr;
  return status;
}
