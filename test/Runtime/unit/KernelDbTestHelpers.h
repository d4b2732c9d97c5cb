//===- KernelDbTestHelpers.h - Records and files for DB tests ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What the kernel database tests share: a fingerprint, records and attempts
// with known contents, a temporary folder, raw access to files and, where
// kopt has its PostgreSQL backend, fresh databases on the test server that
// test/Support/with-postgres.sh starts.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_RUNTIME_UNIT_KERNELDBTESTHELPERS_H
#define KOPT_TEST_RUNTIME_UNIT_KERNELDBTESTHELPERS_H

#include "kopt/Runtime/KernelDatabase.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#ifdef KOPT_HAVE_POSTGRES
#include <libpq-fe.h>
#endif

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <unistd.h>

namespace kopt::runtime::testing {

/// An H200-like fingerprint: sm_90, driver and NVRTC 12.4.
inline DeviceFingerprint makeFingerprint() {
  DeviceFingerprint fp;
  fp.computeCapability = "sm_90";
  fp.smCount = 132;
  fp.memoryBandwidthMBps = 4800000;
  fp.l2Bytes = 52428800;
  fp.driverVersion = "12.4";
  fp.nvrtcVersion = "12.4";
  fp.codegenVersion = "1";
  fp.precision = "fp32";
  return fp;
}

/// A minimal `kopt.plan/1` document for task `key`: one kernel launch.
inline json::Value makePlan(const std::string &key) {
  json::Value plan = json::Value::object();
  plan.set("schema", "kopt.plan/1");
  plan.set("task_key", key);
  plan.set("proposer", "llm");
  plan.set("variant", "v1");
  json::Value source = json::Value::object();
  source.set("id", "k0");
  source.set("code", "__global__ void k() {}");
  plan.set("sources", json::Value::array({source}));
  json::Value step = json::Value::object();
  step.set("kind", "launch");
  step.set("source", "k0");
  step.set("entry", "k");
  step.set("grid", json::Value::array({"1", "1", "1"}));
  step.set("block", json::Value::array({"32", "1", "1"}));
  step.set("args", json::Value::array());
  plan.set("steps", json::Value::array({step}));
  return plan;
}

/// A valid record for task `key` on `makeFingerprint()` whose winner's
/// median is `medianMs`, with a cubin, PTX and fixed timestamps.
inline KernelRecord makeRecord(const std::string &key, double medianMs) {
  KernelRecord record;
  record.taskKey = key;
  record.fingerprint = makeFingerprint();
  record.plan = makePlan(key);
  record.cubin = std::string("\x7f"
                             "ELF\0\x01\x02",
                             7);
  record.ptx = std::string(".version 8.0\n");
  record.winner = {medianMs, medianMs * 0.9, medianMs * 0.95, medianMs * 1.1};
  record.baseline = {2 * medianMs, 1.8 * medianMs, 1.9 * medianMs,
                     2.2 * medianMs};
  record.validation = json::Value::object();
  record.validation.set("inputs_tried", 3);
  record.validation.set("max_abs_error", 1.5e-7);
  record.provenance = {"llm", "some-model", "abc123", 2};
  record.createdAt = 1700000000;
  record.updatedAt = 1700000001;
  return record;
}

/// An attempt for task `key` that passed or failed (`output-mismatch`).
inline AttemptRecord makeAttempt(const std::string &key, bool valid) {
  AttemptRecord attempt;
  attempt.taskKey = key;
  attempt.fingerprint = makeFingerprint();
  attempt.plan = json::Value::object();
  attempt.plan.set("variant", valid ? "good" : "bad");
  attempt.proposer = "llm";
  attempt.valid = valid;
  attempt.failedCheck = valid ? "" : "output-mismatch";
  attempt.feedback = json::Value::object();
  attempt.feedback.set("max_abs_error", valid ? 0.0 : 3.0);
  attempt.time = 1700000100;
  return attempt;
}

/// A fresh temporary directory, removed afterwards.
class TempDir {
public:
  /// Makes the directory.
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "kopt-db-XXXXXX").string();
    char *made = ::mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all,
                                 ignored);
    std::filesystem::remove_all(path, ignored);
  }
  /// The path of `name` in the directory.
  std::string file(const std::string &name) const { return path + "/" + name; }

private:
  std::string path;
};

/// The bytes of the file at `path`.
inline std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Replaces the file at `path` with `bytes`.
inline void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

/// Runs `sql` on `path` directly through SQLite, bypassing kopt.
inline void execRaw(const std::string &path, const std::string &sql) {
  sqlite3 *db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char *error = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

/// Opens the database at `path`, failing the test when it cannot.
inline std::unique_ptr<SqliteKernelDatabase>
openOrDie(const std::string &path) {
  Result<std::unique_ptr<SqliteKernelDatabase>> db =
      SqliteKernelDatabase::open(path);
  EXPECT_TRUE(db.isOk()) << db.status().toString();
  return db ? std::move(*db) : nullptr;
}

/// Why PostgreSQL tests cannot run here, or empty when they can: the
/// backend must be built and a test server running
/// (test/Support/with-postgres.sh, which ctest's `KoptKernelDbTests.postgres`
/// uses).
inline std::string whyNoTestPostgres() {
#ifndef KOPT_HAVE_POSTGRES
  return "kopt was built without PostgreSQL (libpq)";
#else
  if (!std::getenv("KOPT_TEST_POSTGRES_HOST"))
    return "no PostgreSQL test server (run under "
           "test/Support/with-postgres.sh, as ctest's "
           "KoptKernelDbTests.postgres does)";
  return "";
#endif
}

/// The URL of database `name` on the test server.
inline std::string testPostgresUrl(const std::string &name) {
  const char *host = std::getenv("KOPT_TEST_POSTGRES_HOST");
  const char *port = std::getenv("KOPT_TEST_POSTGRES_PORT");
  return "postgresql:///" + name + "?host=" + (host ? host : "") +
         "&port=" + (port ? port : "5432") + "&user=postgres";
}

#ifdef KOPT_HAVE_POSTGRES
/// Runs `sql` on database `name` of the test server directly through libpq,
/// bypassing kopt; returns the first value of the first row, if any.
inline std::string execPostgres(const std::string &name,
                                const std::string &sql) {
  PGconn *connection = PQconnectdb(testPostgresUrl(name).c_str());
  EXPECT_EQ(PQstatus(connection), CONNECTION_OK) << PQerrorMessage(connection);
  PGresult *result = PQexec(connection, sql.c_str());
  ExecStatusType status = PQresultStatus(result);
  EXPECT_TRUE(status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)
      << sql << ": " << PQresultErrorMessage(result);
  std::string value;
  if (status == PGRES_TUPLES_OK && PQntuples(result) > 0 &&
      PQnfields(result) > 0)
    value = PQgetvalue(result, 0, 0);
  PQclear(result);
  PQfinish(connection);
  return value;
}
#endif

/// Fresh databases on the test server, dropped when this goes.
class TestPostgresDatabases {
public:
  ~TestPostgresDatabases() {
#ifdef KOPT_HAVE_POSTGRES
    for (const std::string &name : names)
      execPostgres("postgres",
                   "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
#endif
  }
  /// Creates an empty database and returns its name.
  std::string create() {
    static int counter = 0;
    std::string name = "kopt_test_" + std::to_string(::getpid()) + "_" +
                       std::to_string(counter++);
#ifdef KOPT_HAVE_POSTGRES
    execPostgres("postgres", "CREATE DATABASE " + name);
#endif
    names.push_back(name);
    return name;
  }

private:
  std::vector<std::string> names;
};

} // namespace kopt::runtime::testing

#endif // KOPT_TEST_RUNTIME_UNIT_KERNELDBTESTHELPERS_H
