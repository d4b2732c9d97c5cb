//===- KernelDatabaseTest.cpp - Tests of the kernel database ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The behaviour both implementations share runs once for each; the SQLite
// file's own guarantees (schema versions, refusing foreign files, read-only
// files, many processes at once, a writer killed mid-write) follow.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/KernelDatabase.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kopt::runtime;

namespace {

DeviceFingerprint makeFingerprint() {
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

KernelRecord makeRecord(const std::string &key, double medianMs) {
  KernelRecord record;
  record.taskKey = key;
  record.fingerprint = makeFingerprint();
  record.plan = json::Value::object();
  record.plan.set("schema", "kopt.plan/1");
  record.plan.set("task_key", key);
  json::Value source = json::Value::object();
  source.set("id", "k0");
  source.set("code", "__global__ void k() {}");
  record.plan.set("sources", json::Value::array({source}));
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

AttemptRecord makeAttempt(const std::string &key, bool valid) {
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
  std::string file(const std::string &name) const { return path + "/" + name; }

private:
  std::string path;
};

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

/// Runs `sql` on `path` directly through SQLite, bypassing kopt.
void execRaw(const std::string &path, const std::string &sql) {
  sqlite3 *db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char *error = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

std::unique_ptr<SqliteKernelDatabase> openOrDie(const std::string &path) {
  Result<std::unique_ptr<SqliteKernelDatabase>> db =
      SqliteKernelDatabase::open(path);
  EXPECT_TRUE(db.isOk()) << db.status().toString();
  return db ? std::move(*db) : nullptr;
}

//===----------------------------------------------------------------------===//
// Both implementations
//===----------------------------------------------------------------------===//

class KernelDatabaseTest : public ::testing::TestWithParam<std::string> {
protected:
  std::unique_ptr<KernelDatabase> makeDatabase(const std::string &name) {
    if (GetParam() == "memory")
      return std::make_unique<MemoryKernelDatabase>();
    return openOrDie(dir.file(name));
  }
  void SetUp() override { db = makeDatabase("kernels.db"); }

  TempDir dir;
  std::unique_ptr<KernelDatabase> db;
};

TEST_P(KernelDatabaseTest, RoundTripsRecord) {
  ASSERT_TRUE(db);
  KernelRecord record = makeRecord("task-a", 1.0);
  Result<bool> stored = db->put(record);
  ASSERT_TRUE(stored.isOk()) << stored.status().toString();
  EXPECT_TRUE(*stored);

  KernelRecord expected = record;
  expected.cubinHash = hashBytes(*record.cubin);
  expected.ptxHash = hashBytes(*record.ptx);
  Result<std::optional<KernelRecord>> found =
      db->lookup("task-a", makeFingerprint());
  ASSERT_TRUE(found.isOk()) << found.status().toString();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ(**found, expected);

  // A record without binaries stays without them.
  KernelRecord bare = makeRecord("task-b", 1.0);
  bare.cubin.reset();
  bare.ptx.reset();
  bare.createdAt = bare.updatedAt = 0;
  ASSERT_TRUE(db->put(bare).isOk());
  found = db->lookup("task-b", makeFingerprint());
  ASSERT_TRUE(found.isOk() && found->has_value());
  EXPECT_FALSE((*found)->cubin.has_value());
  EXPECT_FALSE((*found)->ptx.has_value());
  EXPECT_GT((*found)->createdAt, 0);
  EXPECT_TRUE(db->verify().isOk());
}

TEST_P(KernelDatabaseTest, ReturnsFastestRecord) {
  ASSERT_TRUE(db);
  EXPECT_TRUE(*db->put(makeRecord("task", 2.0)));
  EXPECT_TRUE(*db->put(makeRecord("task", 1.0)));
  EXPECT_FALSE(*db->put(makeRecord("task", 3.0)));
  KernelRecord invalid = makeRecord("task", 0.5);
  invalid.valid = false;
  EXPECT_FALSE(*db->put(invalid));

  Result<std::optional<KernelRecord>> found =
      db->lookup("task", makeFingerprint());
  ASSERT_TRUE(found.isOk() && found->has_value());
  EXPECT_EQ((*found)->winner.medianMs, 1.0);

  // An invalid record is kept but never returned.
  KernelRecord broken = invalid;
  broken.taskKey = "broken";
  EXPECT_TRUE(*db->put(broken));
  found = db->lookup("broken", makeFingerprint());
  ASSERT_TRUE(found.isOk());
  EXPECT_FALSE(found->has_value());
  Result<KernelDatabaseStats> stats = db->stats();
  ASSERT_TRUE(stats.isOk());
  EXPECT_EQ(stats->records, 2u);
  EXPECT_EQ(stats->validRecords, 1u);
}

TEST_P(KernelDatabaseTest, KeepsAttempts) {
  ASSERT_TRUE(db);
  std::vector<AttemptRecord> attempts = {
      makeAttempt("t", false), makeAttempt("t", true), makeAttempt("u", false)};
  for (const AttemptRecord &attempt : attempts)
    ASSERT_TRUE(db->addAttempt(attempt).isOk());
  Result<std::vector<AttemptRecord>> listed = db->listAttempts();
  ASSERT_TRUE(listed.isOk());
  EXPECT_EQ(*listed, attempts);
  Result<KernelDatabaseStats> stats = db->stats();
  ASSERT_TRUE(stats.isOk());
  EXPECT_EQ(stats->attempts, 3u);
  EXPECT_EQ(stats->failedAttempts, 2u);
  EXPECT_EQ(stats->records, 0u);
}

TEST_P(KernelDatabaseTest, FingerprintMismatchMisses) {
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->put(makeRecord("task", 1.0)).isOk());
  DeviceFingerprint other = makeFingerprint();
  other.smCount = 108;
  Result<std::optional<KernelRecord>> found = db->lookup("task", other);
  ASSERT_TRUE(found.isOk());
  EXPECT_FALSE(found->has_value());
  other = makeFingerprint();
  other.precision = "tf32";
  found = db->lookup("task", other);
  ASSERT_TRUE(found.isOk());
  EXPECT_FALSE(found->has_value());
  found = db->lookup("other-task", makeFingerprint());
  ASSERT_TRUE(found.isOk());
  EXPECT_FALSE(found->has_value());
}

TEST_P(KernelDatabaseTest, ExportImportRoundTrips) {
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->put(makeRecord("a", 1.0)).isOk());
  ASSERT_TRUE(db->put(makeRecord("b", 2.0)).isOk());
  KernelRecord bare = makeRecord("c", 3.0);
  bare.cubin.reset();
  ASSERT_TRUE(db->put(bare).isOk());
  ASSERT_TRUE(db->addAttempt(makeAttempt("a", false)).isOk());
  Result<std::string> text = db->exportJsonLines();
  ASSERT_TRUE(text.isOk());

  std::unique_ptr<KernelDatabase> fresh = makeDatabase("fresh.db");
  ASSERT_TRUE(fresh);
  Result<size_t> imported = fresh->importJsonLines(*text);
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  EXPECT_EQ(*imported, 3u);
  EXPECT_EQ(*fresh->list(), *db->list());
  EXPECT_EQ(*fresh->listAttempts(), *db->listAttempts());
  EXPECT_EQ(*fresh->exportJsonLines(), *text);

  // Importing merges: the faster valid record stays.
  std::unique_ptr<KernelDatabase> faster = makeDatabase("faster.db");
  ASSERT_TRUE(faster->put(makeRecord("a", 0.5)).isOk());
  ASSERT_TRUE(faster->importJsonLines(*text).isOk());
  EXPECT_EQ((*faster->lookup("a", makeFingerprint()))->winner.medianMs, 0.5);
  EXPECT_EQ((*faster->lookup("b", makeFingerprint()))->winner.medianMs, 2.0);

  Result<size_t> bad = fresh->importJsonLines("\n{\"type\": \"kernel\"}\n");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos)
      << bad.status().message();
}

TEST_P(KernelDatabaseTest, VerifyDetectsTamperedBinaryHash) {
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->put(makeRecord("good", 1.0)).isOk());
  EXPECT_TRUE(db->verify().isOk());
  KernelRecord tampered = makeRecord("tampered", 1.0);
  tampered.cubinHash = "0000000000000000";
  ASSERT_TRUE(db->put(tampered).isOk());
  Status status = db->verify();
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("tampered"), std::string::npos)
      << status.message();
}

INSTANTIATE_TEST_SUITE_P(Implementations, KernelDatabaseTest,
                         ::testing::Values("memory", "sqlite"),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

//===----------------------------------------------------------------------===//
// SQLite file
//===----------------------------------------------------------------------===//

TEST(SqliteKernelDatabaseTest, DetectsTamperedStoredHash) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db && db->put(makeRecord("task", 1.0)).isOk());
  }
  execRaw(path, "UPDATE kernels SET ptx = X'00'");
  auto db = openOrDie(path);
  ASSERT_TRUE(db);
  EXPECT_FALSE(db->verify().isOk());
}

TEST(SqliteKernelDatabaseTest, RefusesNewerSchemaUntouched) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  { ASSERT_TRUE(openOrDie(path)); }
  execRaw(path, "UPDATE schema_version SET version = 99");
  std::string before = readBytes(path);
  Result<std::unique_ptr<SqliteKernelDatabase>> db =
      SqliteKernelDatabase::open(path);
  ASSERT_FALSE(db.isOk());
  EXPECT_EQ(db.status().code(), StatusCode::Unsupported);
  EXPECT_NE(db.status().message().find("newer"), std::string::npos);
  EXPECT_EQ(readBytes(path), before);
}

TEST(SqliteKernelDatabaseTest, MigratesVersion1) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  execRaw(path,
          "CREATE TABLE schema_version(version INTEGER NOT NULL);"
          "CREATE TABLE kernels(task_key TEXT NOT NULL, fingerprint_hash TEXT "
          "NOT NULL, fingerprint TEXT NOT NULL, valid INTEGER NOT NULL, "
          "median_ms REAL NOT NULL, record TEXT NOT NULL, cubin BLOB, "
          "cubin_hash TEXT, ptx BLOB, ptx_hash TEXT, created_at INTEGER NOT "
          "NULL, updated_at INTEGER NOT NULL, PRIMARY KEY(task_key, "
          "fingerprint_hash));"
          "CREATE TABLE attempts(id INTEGER PRIMARY KEY AUTOINCREMENT, "
          "task_key TEXT NOT NULL, fingerprint_hash TEXT NOT NULL, valid "
          "INTEGER NOT NULL, attempt TEXT NOT NULL, created_at INTEGER NOT "
          "NULL);"
          "INSERT INTO schema_version(version) VALUES(1);");
  auto db = openOrDie(path);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->put(makeRecord("task", 1.0)).isOk());
  ASSERT_TRUE(db->addAttempt(makeAttempt("task", true)).isOk());
  EXPECT_TRUE(db->verify().isOk());
}

TEST(SqliteKernelDatabaseTest, RefusesForeignFilesUntouched) {
  TempDir dir;
  std::string garbage = dir.file("garbage.db");
  std::string bytes;
  for (int i = 0; i < 200; ++i)
    bytes += "this is not a database " + std::to_string(i) + "\n";
  writeBytes(garbage, bytes);
  Result<std::unique_ptr<SqliteKernelDatabase>> db =
      SqliteKernelDatabase::open(garbage);
  ASSERT_FALSE(db.isOk());
  EXPECT_NE(db.status().message().find("not a kopt kernel database"),
            std::string::npos)
      << db.status().message();
  EXPECT_EQ(readBytes(garbage), bytes);

  // A real SQLite file holding someone else's tables.
  std::string foreign = dir.file("foreign.db");
  execRaw(foreign, "CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT);"
                   "INSERT INTO photos(name) VALUES('cat');");
  std::string before = readBytes(foreign);
  db = SqliteKernelDatabase::open(foreign);
  ASSERT_FALSE(db.isOk());
  EXPECT_NE(db.status().message().find("without kopt's tables"),
            std::string::npos)
      << db.status().message();
  EXPECT_EQ(readBytes(foreign), before);

  // A file with an SQLite header and garbage after it.
  std::string corrupt = dir.file("corrupt.db");
  std::string corruptBytes = std::string("SQLite format 3\0", 16) + bytes;
  writeBytes(corrupt, corruptBytes);
  db = SqliteKernelDatabase::open(corrupt);
  ASSERT_FALSE(db.isOk());
  EXPECT_EQ(readBytes(corrupt), corruptBytes);
}

TEST(SqliteKernelDatabaseTest, OpensReadOnlyFileReadOnly) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db && db->put(makeRecord("task", 1.0)).isOk());
  }
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  auto db = openOrDie(path);
  ASSERT_TRUE(db);
  EXPECT_TRUE(db->isReadOnly());
  Result<std::optional<KernelRecord>> found =
      db->lookup("task", makeFingerprint());
  ASSERT_TRUE(found.isOk()) << found.status().toString();
  EXPECT_TRUE(found->has_value());
  Result<bool> put = db->put(makeRecord("other", 1.0));
  ASSERT_FALSE(put.isOk());
  EXPECT_NE(put.status().message().find("read-only"), std::string::npos);
  EXPECT_FALSE(db->addAttempt(makeAttempt("task", true)).isOk());
  EXPECT_TRUE(db->verify().isOk());
}

TEST(SqliteKernelDatabaseTest, ConcurrentWriters) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  { ASSERT_TRUE(openOrDie(path)); }
  constexpr int kProcesses = 4, kRecords = 50;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Result<std::unique_ptr<SqliteKernelDatabase>> db =
          SqliteKernelDatabase::open(path);
      if (!db)
        ::_exit(2);
      for (int r = 0; r < kRecords; ++r) {
        std::string key = "p" + std::to_string(p) + "-r" + std::to_string(r);
        Result<bool> stored = (*db)->put(makeRecord(key, 1.0 + r));
        if (!stored || !*stored)
          ::_exit(3);
        if (!(*db)->addAttempt(makeAttempt(key, true)).isOk())
          ::_exit(4);
      }
      db->reset();
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child status " << status;
  }
  auto db = openOrDie(path);
  ASSERT_TRUE(db);
  Result<KernelDatabaseStats> stats = db->stats();
  ASSERT_TRUE(stats.isOk());
  EXPECT_EQ(stats->records, size_t(kProcesses * kRecords));
  EXPECT_EQ(stats->attempts, size_t(kProcesses * kRecords));
  for (int p = 0; p < kProcesses; ++p)
    for (int r = 0; r < kRecords; ++r) {
      std::string key = "p" + std::to_string(p) + "-r" + std::to_string(r);
      EXPECT_TRUE(db->lookup(key, makeFingerprint())->has_value()) << key;
    }
  EXPECT_TRUE(db->verify().isOk());
}

TEST(SqliteKernelDatabaseTest, SurvivesWriterKilledMidWrite) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  { ASSERT_TRUE(openOrDie(path)); }
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(ready[0]);
    Result<std::unique_ptr<SqliteKernelDatabase>> db =
        SqliteKernelDatabase::open(path);
    if (!db)
      ::_exit(2);
    for (int r = 0;; ++r) {
      KernelRecord record = makeRecord("r" + std::to_string(r), 1.0);
      record.cubin = std::string(size_t(256) << 10, char('a' + r % 26));
      if (!(*db)->put(record).isOk())
        ::_exit(3);
      if (r == 3 && ::write(ready[1], "x", 1) != 1)
        ::_exit(4);
    }
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  ::usleep(20000);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));

  auto db = openOrDie(path);
  ASSERT_TRUE(db);
  EXPECT_TRUE(db->verify().isOk());
  Result<KernelDatabaseStats> stats = db->stats();
  ASSERT_TRUE(stats.isOk());
  EXPECT_GE(stats->records, 4u);
  EXPECT_TRUE(db->put(makeRecord("after", 1.0)).isOk());
}

} // namespace
