//===- Sqlite.cpp - RAII wrappers over the SQLite C API ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Sqlite.h"

#include <sqlite3.h>

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
    return Status::error(StatusCode::IoError,
                         "cannot open '" + path + "': " + message);
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
    return error("cannot run '" + sql + "'");
  return Status::success();
}

Status Database::error(std::string_view what) const {
  int code = sqlite3_errcode(handle);
  StatusCode statusCode = StatusCode::IoError;
  if ((code & 0xff) == SQLITE_READONLY)
    statusCode = StatusCode::Unavailable;
  return Status::error(statusCode,
                       std::string(what) + ": " + sqlite3_errmsg(handle));
}

//===----------------------------------------------------------------------===//
// Statement
//===----------------------------------------------------------------------===//

Result<Statement> Statement::prepare(Database &db, const std::string &sql) {
  sqlite3_stmt *handle = nullptr;
  if (sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &handle, nullptr) !=
      SQLITE_OK)
    return db.error("cannot prepare '" + sql + "'");
  return Statement(db, handle);
}

Statement::~Statement() {
  if (handle)
    sqlite3_finalize(handle);
}

Statement &Statement::bind(int index, std::string_view text) {
  if (sqlite3_bind_text64(handle, index, text.data(), text.size(),
                          SQLITE_TRANSIENT, SQLITE_UTF8) != SQLITE_OK &&
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
  return db->error("statement failed");
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

Result<Transaction> Transaction::begin(Database &db) {
  Status status = db.exec("BEGIN IMMEDIATE");
  if (!status.isOk())
    return status;
  return Transaction(db);
}

Transaction::~Transaction() {
  if (db)
    db->exec("ROLLBACK").ignore();
}

Status Transaction::commit() {
  Status status = db->exec("COMMIT");
  if (status.isOk())
    db = nullptr;
  return status;
}
