//===- KernelDatabaseTest.cpp - Tests of the kernel database ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The contract every implementation meets runs once for each: memory, SQLite
// and PostgreSQL (whose cases skip unless a test server runs: ctest runs them
// as KoptKernelDbTests.postgres, under test/Support/with-postgres.sh). The
// SQLite file's own guarantees (schema versions, refusing foreign files,
// read-only files, many processes at once, a writer killed mid-write)
// follow; PostgresKernelDatabaseTest.cpp has the server's.
//
//===----------------------------------------------------------------------===//

#include "KernelDbTestHelpers.h"

#include "kopt/Runtime/KernelDatabase.h"
#include "kopt/Runtime/TaskPlan.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sched.h>
#include <sstream>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kopt::runtime;
using namespace kopt::runtime::testing;

namespace {

//===----------------------------------------------------------------------===//
// Both implementations
//===----------------------------------------------------------------------===//

class KernelDatabaseTest : public ::testing::TestWithParam<std::string> {
protected:
  std::unique_ptr<KernelDatabase> makeDatabase(const std::string &name) {
    if (GetParam() == "memory")
      return std::make_unique<MemoryKernelDatabase>();
    if (GetParam() == "postgres") {
      Result<std::unique_ptr<KernelDatabase>> db =
          openKernelDatabase(testPostgresUrl(servers.create()));
      EXPECT_TRUE(db.isOk()) << db.status().toString();
      return db ? std::move(*db) : nullptr;
    }
    return openOrDie(dir.file(name));
  }
  void SetUp() override {
    if (GetParam() == "postgres")
      if (std::string why = whyNoTestPostgres(); !why.empty())
        GTEST_SKIP() << why;
    db = makeDatabase("kernels.db");
  }
  void TearDown() override { db.reset(); }

  TempDir dir;
  /// Declared before `db`, so that the databases go after their connections.
  TestPostgresDatabases servers;
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
  broken.plan = makePlan("broken");
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

TEST_P(KernelDatabaseTest, ListsEachFingerprintOnce) {
  ASSERT_TRUE(db);
  Result<std::vector<DeviceFingerprint>> none = db->listFingerprints();
  ASSERT_TRUE(none.isOk()) << none.status().message();
  EXPECT_TRUE(none->empty());
  KernelRecord other = makeRecord("task-b", 2.0);
  other.fingerprint.smCount = 108;
  ASSERT_TRUE(db->put(makeRecord("task-a", 1.0)).isOk());
  ASSERT_TRUE(db->put(makeRecord("task-b", 1.0)).isOk());
  ASSERT_TRUE(db->put(other).isOk());
  Result<std::vector<DeviceFingerprint>> listed = db->listFingerprints();
  ASSERT_TRUE(listed.isOk()) << listed.status().message();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_LT((*listed)[0].hash(), (*listed)[1].hash());
  std::set<std::string> hashes = {(*listed)[0].hash(), (*listed)[1].hash()};
  EXPECT_EQ(hashes, (std::set<std::string>{makeFingerprint().hash(),
                                           other.fingerprint.hash()}));
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
  Result<ImportSummary> imported = fresh->importJsonLines(*text);
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  EXPECT_EQ(imported->added, 3u);
  EXPECT_EQ(imported->attemptsAdded, 1u);
  EXPECT_EQ(*fresh->list(), *db->list());
  EXPECT_EQ(*fresh->listAttempts(), *db->listAttempts());
  EXPECT_EQ(*fresh->exportJsonLines(), *text);

  // Importing merges: the faster valid record stays.
  std::unique_ptr<KernelDatabase> faster = makeDatabase("faster.db");
  ASSERT_TRUE(faster->put(makeRecord("a", 0.5)).isOk());
  ASSERT_TRUE(faster->importJsonLines(*text).isOk());
  EXPECT_EQ((*faster->lookup("a", makeFingerprint()))->winner.medianMs, 0.5);
  EXPECT_EQ((*faster->lookup("b", makeFingerprint()))->winner.medianMs, 2.0);

  // Importing the same lines again changes nothing.
  imported = fresh->importJsonLines(*text);
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  EXPECT_EQ(imported->added + imported->replaced, 0u);
  EXPECT_EQ(imported->kept, 3u);
  EXPECT_EQ(imported->attemptsAdded, 0u);
  EXPECT_EQ(imported->attemptsPresent, 1u);
  EXPECT_EQ(*fresh->exportJsonLines(), *text);

  Result<ImportSummary> bad =
      fresh->importJsonLines("\n{\"type\": \"kernel\"}\n", "bad.jsonl");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("bad.jsonl:2: "), std::string::npos)
      << bad.status().message();
}

TEST_P(KernelDatabaseTest, ImportIsAllOrNothing) {
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->put(makeRecord("a", 2.0)).isOk());
  std::string before = *db->exportJsonLines();

  MemoryKernelDatabase source;
  ASSERT_TRUE(source.put(makeRecord("a", 1.0)).isOk());
  ASSERT_TRUE(source.put(makeRecord("b", 1.0)).isOk());
  ASSERT_TRUE(source.addAttempt(makeAttempt("b", true)).isOk());
  std::string good = *source.exportJsonLines();

  // A malformed last line: none of the good lines before it stay.
  for (std::string bad : {"{\"type\": \"kernel\", \"record\": {}}",
                          "{\"type\": \"plan\"}", "not json"}) {
    Result<ImportSummary> imported =
        db->importJsonLines(good + bad + "\n", "in.jsonl");
    ASSERT_FALSE(imported.isOk()) << bad;
    EXPECT_EQ(imported.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(imported.status().message().find("in.jsonl:4: "),
              std::string::npos)
        << imported.status().message();
    EXPECT_EQ(*db->exportJsonLines(), before);
  }

  Result<ImportSummary> imported = db->importJsonLines(good);
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  EXPECT_EQ(imported->added, 1u);
  EXPECT_EQ(imported->replaced, 1u);
  EXPECT_EQ(imported->kept, 0u);
  EXPECT_EQ(imported->attemptsAdded, 1u);
}

TEST_P(KernelDatabaseTest, TransactionsRollBackAndNest) {
  ASSERT_TRUE(db);
  Status status = db->transact([&] {
    EXPECT_TRUE(db->put(makeRecord("a", 1.0)).isOk());
    Status inner = db->transact([&] {
      EXPECT_TRUE(db->put(makeRecord("b", 1.0)).isOk());
      return Status::error(StatusCode::Internal, "inner fails");
    });
    EXPECT_FALSE(inner.isOk());
    EXPECT_TRUE(db->addAttempt(makeAttempt("a", true)).isOk());
    return Status::success();
  });
  ASSERT_TRUE(status.isOk()) << status.toString();
  EXPECT_EQ(db->list()->size(), 1u);
  EXPECT_EQ(db->listAttempts()->size(), 1u);

  status = db->transact([&] {
    EXPECT_TRUE(db->put(makeRecord("c", 1.0)).isOk());
    return Status::error(StatusCode::Internal, "outer fails");
  });
  EXPECT_EQ(status.message(), "outer fails");
  EXPECT_FALSE(db->lookup("c", makeFingerprint())->has_value());
}

TEST_P(KernelDatabaseTest, ListsByKeyPrefixWithOrWithoutBinaries) {
  ASSERT_TRUE(db);
  for (const char *key : {"abc1", "abc2", "abd", "b"})
    ASSERT_TRUE(db->put(makeRecord(key, 1.0)).isOk());
  KernelRecord bare = makeRecord("abc3", 1.0);
  bare.cubin.reset();
  ASSERT_TRUE(db->put(bare).isOk());
  ASSERT_TRUE(db->addAttempt(makeAttempt("abc1", false)).isOk());
  ASSERT_TRUE(db->addAttempt(makeAttempt("b", false)).isOk());

  RecordFilter filter;
  filter.taskKeyPrefix = "abc";
  Result<std::vector<KernelRecord>> listed = db->list(filter);
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[0].taskKey, "abc1");
  EXPECT_TRUE((*listed)[0].cubin.has_value());
  EXPECT_EQ((*listed)[2].taskKey, "abc3");

  filter.withBinaries = false;
  listed = db->list(filter);
  ASSERT_TRUE(listed.isOk());
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_FALSE((*listed)[0].cubin.has_value());
  EXPECT_FALSE((*listed)[0].ptx.has_value());
  EXPECT_EQ((*listed)[0].cubinHash, hashBytes(*makeRecord("x", 1).cubin));
  EXPECT_EQ((*listed)[2].cubinHash, "");
  EXPECT_NE((*listed)[2].ptxHash, "");

  EXPECT_EQ(db->listAttempts("abc")->size(), 1u);
  EXPECT_EQ(db->listAttempts("")->size(), 2u);
  EXPECT_EQ(db->listAttempts("z")->size(), 0u);
}

TEST_P(KernelDatabaseTest, StaleFlagRoundTrips) {
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->put(makeRecord("a", 1.0)).isOk());
  ASSERT_TRUE(db->put(makeRecord("b", 1.0)).isOk());
  std::string fingerprint = makeFingerprint().hash();
  EXPECT_TRUE(*db->setStale("a", fingerprint, true));
  EXPECT_FALSE(*db->setStale("missing", fingerprint, true));

  Result<std::optional<KernelRecord>> found =
      db->lookup("a", makeFingerprint());
  ASSERT_TRUE(found.isOk() && found->has_value());
  EXPECT_TRUE((*found)->stale);
  EXPECT_FALSE((*db->lookup("b", makeFingerprint()))->stale);
  EXPECT_EQ(db->stats()->staleRecords, 1u);
  EXPECT_TRUE(db->verify().isOk()) << db->verify().toString();

  std::string text = *db->exportJsonLines();
  EXPECT_NE(text.find("\"stale\":true"), std::string::npos);
  std::unique_ptr<KernelDatabase> copy = makeDatabase("copy.db");
  ASSERT_TRUE(copy->importJsonLines(text).isOk());
  EXPECT_EQ(*copy->exportJsonLines(), text);

  EXPECT_TRUE(*db->setStale("a", fingerprint, false));
  EXPECT_EQ(db->stats()->staleRecords, 0u);
}

TEST_P(KernelDatabaseTest, CountsBinaries) {
  ASSERT_TRUE(db);
  KernelRecord record = makeRecord("a", 1.0);
  ASSERT_TRUE(db->put(record).isOk());
  KernelRecord bare = makeRecord("b", 1.0);
  bare.cubin.reset();
  ASSERT_TRUE(db->put(bare).isOk());
  Result<KernelDatabaseStats> stats = db->stats();
  ASSERT_TRUE(stats.isOk());
  EXPECT_EQ(stats->cubins, 1u);
  EXPECT_EQ(stats->ptxs, 2u);
  EXPECT_EQ(stats->binaryBytes,
            int64_t(record.cubin->size() + 2 * record.ptx->size()));
}

TEST_P(KernelDatabaseTest, PrunesWhatItIsTold) {
  ASSERT_TRUE(db);
  DeviceFingerprint other = makeFingerprint();
  other.computeCapability = "sm_80";
  auto add = [&](const std::string &key, int64_t updatedAt, bool valid,
                 const DeviceFingerprint &fingerprint) {
    KernelRecord record = makeRecord(key, 1.0);
    record.updatedAt = updatedAt;
    record.valid = valid;
    record.fingerprint = fingerprint;
    ASSERT_TRUE(db->put(record).isOk());
    AttemptRecord attempt = makeAttempt(key, valid);
    attempt.time = updatedAt;
    attempt.fingerprint = fingerprint;
    ASSERT_TRUE(db->addAttempt(attempt).isOk());
  };
  add("old", 1000, true, makeFingerprint());
  add("old-invalid", 1000, false, makeFingerprint());
  add("new", 5000, true, makeFingerprint());
  add("new-invalid", 5000, false, makeFingerprint());
  add("other", 5000, true, other);
  std::string before = *db->exportJsonLines();

  auto keys = [](const PruneSummary &summary) {
    std::vector<std::string> keys;
    for (const KernelRecord &record : summary.records)
      keys.push_back(record.taskKey);
    return keys;
  };

  PruneOptions options;
  options.before = 2000;
  options.attempts = true;
  options.dryRun = true;
  Result<PruneSummary> pruned = db->prune(options);
  ASSERT_TRUE(pruned.isOk()) << pruned.status().toString();
  EXPECT_EQ(keys(*pruned), (std::vector<std::string>{"old", "old-invalid"}));
  EXPECT_EQ(pruned->attempts, 2u);
  EXPECT_FALSE(pruned->records[0].cubin.has_value());
  EXPECT_EQ(*db->exportJsonLines(), before);

  // Conditions combine: invalid and old.
  options = PruneOptions();
  options.before = 2000;
  options.invalidOnly = true;
  pruned = db->prune(options);
  ASSERT_TRUE(pruned.isOk());
  EXPECT_EQ(keys(*pruned), (std::vector<std::string>{"old-invalid"}));
  EXPECT_EQ(pruned->attempts, 0u);
  EXPECT_EQ(db->list()->size(), 4u);
  EXPECT_EQ(db->listAttempts()->size(), 5u);

  // Attempts only: the failed ones.
  options = PruneOptions();
  options.records = false;
  options.attempts = true;
  options.invalidOnly = true;
  pruned = db->prune(options);
  ASSERT_TRUE(pruned.isOk());
  EXPECT_TRUE(pruned->records.empty());
  EXPECT_EQ(pruned->attempts, 2u);
  EXPECT_EQ(db->listAttempts()->size(), 3u);

  // One fingerprint, records and attempts.
  options = PruneOptions();
  options.attempts = true;
  options.fingerprintHash = other.hash();
  pruned = db->prune(options);
  ASSERT_TRUE(pruned.isOk());
  EXPECT_EQ(keys(*pruned), (std::vector<std::string>{"other"}));
  EXPECT_EQ(pruned->attempts, 1u);
  EXPECT_EQ(db->list()->size(), 3u);
  EXPECT_EQ(db->listAttempts()->size(), 2u);
  EXPECT_TRUE(db->verify().isOk());
}

/// A `kopt.task/1` document for task `key`: one f32[256] input and output.
static json::Value makeTaskJson(const std::string &key) {
  KernelTask task;
  task.key = key;
  task.name = "g";
  task.kind = "elementwise";
  TensorSpec tensor;
  tensor.shape = {256};
  tensor.name = "in0";
  task.inputs.push_back(tensor);
  tensor.name = "out0";
  task.outputs.push_back(tensor);
  task.mlir = "func.func @g()";
  return toJson(task);
}

/// Records that `verify` would report, by what is wrong with them, with
/// the reason `merge` gives.
static std::vector<std::pair<KernelRecord, std::string>> makeBadRecords() {
  std::vector<std::pair<KernelRecord, std::string>> bad;
  KernelRecord noPlan = makeRecord("no-plan", 1.0);
  noPlan.plan = json::Value();
  bad.push_back({noPlan, "stored plan does not read: plan: expected a JSON "
                         "object"});
  KernelRecord noSteps = makeRecord("no-steps", 1.0);
  noSteps.plan.erase("steps");
  bad.push_back({noSteps, "stored plan does not read: plan: missing array "
                          "'steps'"});
  KernelRecord otherTask = makeRecord("other-task", 1.0);
  otherTask.plan = makePlan("someone-else");
  bad.push_back({otherTask, "stored plan is for task someone-else"});
  KernelRecord tampered = makeRecord("tampered", 1.0);
  tampered.cubinHash = "0000000000000000";
  bad.push_back({tampered, "cubin does not match its stored hash"});
  // A plan whose launch passes no tensor, for a task with an output.
  KernelRecord unfit = makeRecord("unfit", 1.0);
  unfit.validation.set("task", makeTaskJson("unfit"));
  bad.push_back({unfit, "stored plan does not fit its task: no step of the "
                        "plan writes output 'out0'"});
  KernelRecord foreignTask = makeRecord("foreign-task", 1.0);
  foreignTask.validation.set("task", makeTaskJson("another"));
  bad.push_back({foreignTask, "stored plan does not fit its task: the plan "
                              "is for task 'foreign-task', not 'another'"});
  return bad;
}

TEST_P(KernelDatabaseTest, RefusesRecordsThatVerifyWouldReport) {
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->put(makeRecord("good", 1.0)).isOk());
  KernelRecord fits = makeRecord("fits", 1.0);
  fits.validation.set("task", makeTaskJson("fits"));
  json::Value steps = *fits.plan.find("steps");
  json::Value step = steps.at(0);
  step.set("args", json::Value::array({"in0", "out0"}));
  fits.plan.set("steps", json::Value::array({step}));
  ASSERT_TRUE(db->put(fits).isOk());
  std::string before = *db->exportJsonLines();
  std::string fingerprint = makeFingerprint().hash();
  for (const auto &[record, why] : makeBadRecords()) {
    Result<bool> put = db->put(record);
    ASSERT_FALSE(put.isOk()) << record.taskKey;
    EXPECT_EQ(put.status().code(), StatusCode::InvalidArgument);
    EXPECT_EQ(put.status().message(), "refusing to store record " +
                                          record.taskKey + " on " +
                                          fingerprint + ": " + why);
    // The same through an import line: nothing of the file goes in.
    MemoryKernelDatabase source;
    ASSERT_TRUE(source.put(makeRecord("a", 1.0)).isOk());
    std::string line =
        "{\"type\":\"kernel\",\"record\":" + json::write(toJson(record, true)) +
        "}\n";
    Result<ImportSummary> imported =
        db->importJsonLines(*source.exportJsonLines() + line, "in.jsonl");
    ASSERT_FALSE(imported.isOk()) << record.taskKey;
    EXPECT_NE(imported.status().message().find("in.jsonl:2: refusing to "
                                               "store record " +
                                               record.taskKey),
              std::string::npos)
        << imported.status().message();
  }
  EXPECT_EQ(*db->exportJsonLines(), before);
  EXPECT_TRUE(db->verify().isOk()) << db->verify().toString();
}

INSTANTIATE_TEST_SUITE_P(Implementations, KernelDatabaseTest,
                         ::testing::Values("memory", "sqlite", "postgres"),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

//===----------------------------------------------------------------------===//
// SQLite file
//===----------------------------------------------------------------------===//

TEST(SqliteKernelDatabaseTest, VerifyFindsPlansBrokenBehindItsBack) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db && db->put(makeRecord("good", 1.0)).isOk());
    ASSERT_TRUE(db->put(makeRecord("no-steps", 1.0)).isOk());
  }
  // Without its content hash, as a record of an older schema.
  execRaw(path, "UPDATE kernels SET content_hash = NULL, record = "
                "json_remove(record, '$.plan.steps') WHERE task_key = "
                "'no-steps'");
  auto db = openOrDie(path);
  ASSERT_TRUE(db);
  Result<std::vector<std::string>> problems = db->findProblems();
  ASSERT_TRUE(problems.isOk()) << problems.status().toString();
  ASSERT_EQ(problems->size(), 1u);
  EXPECT_EQ((*problems)[0], "record no-steps on " + makeFingerprint().hash() +
                                ": stored plan does not read: plan: missing "
                                "array 'steps'");
  EXPECT_FALSE(db->verify().isOk());
}

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
  EXPECT_EQ(db->getSchemaVersion(), SqliteKernelDatabase::kSchemaVersion);
  ASSERT_TRUE(db->put(makeRecord("task", 1.0)).isOk());
  ASSERT_TRUE(db->addAttempt(makeAttempt("task", true)).isOk());
  EXPECT_TRUE(db->verify().isOk());
}

/// Turns the current file at `path` into the version 3 it was before the
/// content hash.
void downgradeToVersion3(const std::string &path) {
  execRaw(path, "ALTER TABLE kernels DROP COLUMN content_hash;"
                "UPDATE schema_version SET version = 3;");
}

/// Turns the current file at `path` into the version 2 it was before the
/// stale flag.
void downgradeToVersion2(const std::string &path) {
  downgradeToVersion3(path);
  execRaw(path, "ALTER TABLE kernels DROP COLUMN stale;"
                "UPDATE schema_version SET version = 2;");
}

/// Edits the stored JSON of the records at `path` in a way every check but
/// the content hash accepts (an extra space).
void addSpaceToStoredJson(const std::string &path) {
  execRaw(path, "UPDATE kernels SET record = replace(record, '\"valid\"', "
                "'\"valid\" ')");
}

TEST(SqliteKernelDatabaseTest, MigratesVersion3AndHashesStoredRecords) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db && db->put(makeRecord("task", 1.0)).isOk());
  }
  downgradeToVersion3(path);
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db);
    EXPECT_EQ(db->getSchemaVersion(), SqliteKernelDatabase::kSchemaVersion);
    Result<std::optional<KernelRecord>> found =
        db->lookup("task", makeFingerprint());
    ASSERT_TRUE(found.isOk() && found->has_value());
    EXPECT_TRUE(db->verify().isOk());
  }
  // The migration hashed the stored record: editing it now is caught.
  addSpaceToStoredJson(path);
  auto db = openOrDie(path);
  ASSERT_TRUE(db);
  EXPECT_FALSE(db->lookup("task", makeFingerprint()).isOk());
}

TEST(SqliteKernelDatabaseTest, RefusesRecordsEditedBehindItsBack) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db && db->put(makeRecord("task", 1.0)).isOk());
  }
  addSpaceToStoredJson(path);
  auto db = openOrDie(path);
  ASSERT_TRUE(db);
  Result<std::optional<KernelRecord>> found =
      db->lookup("task", makeFingerprint());
  ASSERT_FALSE(found.isOk());
  EXPECT_NE(found.status().message().find("content hash"), std::string::npos);
  Result<std::vector<std::string>> problems = db->findProblems();
  ASSERT_TRUE(problems.isOk());
  ASSERT_EQ(problems->size(), 1u);
  EXPECT_NE((*problems)[0].find("does not match its content hash"),
            std::string::npos);
  // Listing without binaries cannot check the hash, and still reads.
  RecordFilter filter;
  filter.withBinaries = false;
  EXPECT_TRUE(db->list(filter).isOk());
  EXPECT_FALSE(db->list().isOk());
}

TEST(SqliteKernelDatabaseTest, MigratesVersion2) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db && db->put(makeRecord("task", 1.0)).isOk());
  }
  downgradeToVersion2(path);
  auto db = openOrDie(path);
  ASSERT_TRUE(db);
  EXPECT_EQ(db->getSchemaVersion(), SqliteKernelDatabase::kSchemaVersion);
  Result<std::optional<KernelRecord>> found =
      db->lookup("task", makeFingerprint());
  ASSERT_TRUE(found.isOk() && found->has_value());
  EXPECT_FALSE((*found)->stale);
  EXPECT_TRUE(*db->setStale("task", makeFingerprint().hash(), true));
  EXPECT_TRUE(db->verify().isOk());
}

TEST(SqliteKernelDatabaseTest, ReadsOlderReadOnlyFileAsItIs) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db && db->put(makeRecord("task", 1.0)).isOk());
    ASSERT_TRUE(db->addAttempt(makeAttempt("task", false)).isOk());
  }
  downgradeToVersion2(path);
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  std::string before = readBytes(path);
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db);
    EXPECT_TRUE(db->isReadOnly());
    EXPECT_EQ(db->getSchemaVersion(), 2);
    Result<std::vector<KernelRecord>> records = db->list();
    ASSERT_TRUE(records.isOk()) << records.status().toString();
    ASSERT_EQ(records->size(), 1u);
    EXPECT_FALSE((*records)[0].stale);
    EXPECT_EQ(db->stats()->staleRecords, 0u);
    EXPECT_TRUE(db->verify().isOk()) << db->verify().toString();
    EXPECT_TRUE(db->exportJsonLines().isOk());
  }
  EXPECT_EQ(readBytes(path), before);
}

TEST(SqliteKernelDatabaseTest, RefusesWritesToReadOnlyFileUntouched) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db && db->put(makeRecord("task", 1.0)).isOk());
  }
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  std::string before = readBytes(path);
  auto db = openOrDie(path);
  ASSERT_TRUE(db);
  Result<ImportSummary> imported =
      db->importJsonLines(*db->exportJsonLines(), "in.jsonl");
  ASSERT_FALSE(imported.isOk());
  EXPECT_EQ(imported.status().code(), StatusCode::Unavailable);
  EXPECT_EQ(imported.status().message(),
            "kernel database '" + path +
                "' is read-only (no write permission, or opened read-only); "
                "cannot write to it");
  EXPECT_FALSE(db->setStale("task", makeFingerprint().hash(), true).isOk());
  PruneOptions prune;
  prune.invalidOnly = false;
  EXPECT_FALSE(db->prune(prune).isOk());
  // A dry run only reads.
  prune.dryRun = true;
  Result<PruneSummary> pruned = db->prune(prune);
  ASSERT_TRUE(pruned.isOk()) << pruned.status().toString();
  EXPECT_EQ(pruned->records.size(), 1u);
  db.reset();
  EXPECT_EQ(readBytes(path), before);
}

TEST(SqliteKernelDatabaseTest, RefusesMissingFolder) {
  TempDir dir;
  std::string path = dir.file("no/such/kernels.db");
  Result<std::unique_ptr<SqliteKernelDatabase>> db =
      SqliteKernelDatabase::open(path);
  ASSERT_FALSE(db.isOk());
  EXPECT_EQ(db.status().message(),
            "kernel database '" + path + "': cannot create it: the folder '" +
                dir.file("no/such") + "' does not exist");
  EXPECT_FALSE(std::filesystem::exists(dir.file("no")));

  SqliteOpenOptions options;
  options.create = false;
  db = SqliteKernelDatabase::open(dir.file("absent.db"), options);
  ASSERT_FALSE(db.isOk());
  EXPECT_EQ(db.status().message(),
            "kernel database '" + dir.file("absent.db") + "': no such file");
  EXPECT_FALSE(std::filesystem::exists(dir.file("absent.db")));
}

/// Fills bytes [`begin`, `end`) of `bytes` with garbage.
void damage(std::string &bytes, size_t begin, size_t end) {
  for (size_t i = begin; i < end && i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(i * 7 + 3);
}

TEST(SqliteKernelDatabaseTest, ReportsCorruptedFileUntouched) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db);
    for (int i = 0; i < 40; ++i)
      ASSERT_TRUE(db->put(makeRecord("task" + std::to_string(i), 1.0)).isOk());
  }
  // Damage two pages of records near the end; the schema still reads.
  std::string bytes = readBytes(path);
  ASSERT_GT(bytes.size(), size_t(8 * 4096));
  damage(bytes, bytes.size() - 3 * 4096 + 100, bytes.size() - 4096);
  writeBytes(path, bytes);

  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db);
    Result<std::vector<KernelRecord>> records = db->list();
    ASSERT_FALSE(records.isOk());
    EXPECT_EQ(records.status().code(), StatusCode::InvalidArgument);
    EXPECT_EQ(records.status().message(),
              "kernel database '" + path +
                  "': cannot list records: database disk image is malformed");
    Result<std::vector<std::string>> problems = db->findProblems();
    ASSERT_TRUE(problems.isOk()) << problems.status().toString();
    ASSERT_FALSE(problems->empty());
    EXPECT_EQ(problems->front().rfind("integrity check: ", 0), 0u)
        << problems->front();
  }
  EXPECT_EQ(readBytes(path), bytes);

  // A writer that asks for the check is refused before it writes.
  SqliteOpenOptions options;
  options.checkIntegrity = true;
  Result<std::unique_ptr<SqliteKernelDatabase>> db =
      SqliteKernelDatabase::open(path, options);
  ASSERT_FALSE(db.isOk());
  EXPECT_EQ(db.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(db.status().message().rfind(
                "kernel database '" + path + "': the file is damaged (", 0),
            0u)
      << db.status().message();
  EXPECT_EQ(readBytes(path), bytes);

  // Damage all but the first page: not even the schema reads.
  damage(bytes, 4096, bytes.size());
  writeBytes(path, bytes);
  db = SqliteKernelDatabase::open(path);
  ASSERT_FALSE(db.isOk());
  EXPECT_EQ(db.status().message(),
            "kernel database '" + path +
                "': cannot read it (corrupted, or not a database): database "
                "disk image is malformed");
  EXPECT_EQ(readBytes(path), bytes);
}

TEST(SqliteKernelDatabaseTest, FileSizeLimitLeavesFileUnchanged) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db && db->put(makeRecord("before", 1.0)).isOk());
  }
  std::string before = readBytes(path);
  MemoryKernelDatabase source;
  for (int i = 0; i < 16; ++i) {
    KernelRecord record = makeRecord("big" + std::to_string(i), 1.0);
    record.cubin = std::string(size_t(128) << 10, char('a' + i));
    ASSERT_TRUE(source.put(record).isOk());
  }
  std::string text = *source.exportJsonLines();

  // The child may write no file beyond 1 MiB, as if the disk were full; its
  // writes fail instead of killing it. It reports the error on a pipe.
  int pipeFds[2];
  ASSERT_EQ(::pipe(pipeFds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipeFds[0]);
    std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {1 << 20, 1 << 20};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0)
      ::_exit(2);
    Result<std::unique_ptr<SqliteKernelDatabase>> db =
        SqliteKernelDatabase::open(path);
    if (!db)
      ::_exit(3);
    Result<ImportSummary> imported = (*db)->importJsonLines(text, "big.jsonl");
    if (imported)
      ::_exit(4);
    std::string message = imported.status().message();
    if (::write(pipeFds[1], message.data(), message.size()) < 0)
      ::_exit(5);
    db->reset();
    ::_exit(0);
  }
  ::close(pipeFds[1]);
  std::string message;
  char buffer[256];
  for (ssize_t n; (n = ::read(pipeFds[0], buffer, sizeof(buffer))) > 0;)
    message.append(buffer, n);
  ::close(pipeFds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(message.rfind("kernel database '" + path + "': ", 0), 0u)
      << message;
  EXPECT_TRUE(message.find("disk is full") != std::string::npos ||
              message.find("disk I/O error") != std::string::npos)
      << message;

  EXPECT_EQ(readBytes(path), before);
  auto db = openOrDie(path);
  ASSERT_TRUE(db);
  EXPECT_TRUE(db->verify().isOk());
  EXPECT_EQ(db->list()->size(), 1u);
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

/// Runs `body` in a child process that sees `folder` read-only: as root
/// (whom permissions do not stop), on a read-only bind mount in a mount
/// namespace of the child's own; otherwise with the folder and its files
/// made read-only. `body` returns what went wrong, empty for nothing.
/// Returns false, with what went wrong in `message`, when `body` failed;
/// sets `skipped` when root cannot mount here.
static bool runWithReadOnlyFolder(const std::string &folder,
                                  const std::function<std::string()> &body,
                                  std::string &message, bool &skipped) {
  skipped = false;
  int pipeFds[2];
  if (::pipe(pipeFds) != 0)
    return false;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipeFds[0]);
    if (::geteuid() == 0) {
      if (::unshare(CLONE_NEWNS) != 0 ||
          ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          ::mount(folder.c_str(), folder.c_str(), nullptr, MS_BIND, nullptr) !=
              0 ||
          ::mount(nullptr, folder.c_str(), nullptr,
                  MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0)
        ::_exit(77);
    } else {
      for (const auto &entry : std::filesystem::directory_iterator(folder))
        ::chmod(entry.path().c_str(), 0444);
      ::chmod(folder.c_str(), 0555);
    }
    // Proof that the folder cannot be written.
    if (::access(folder.c_str(), W_OK) == 0)
      ::_exit(78);
    std::string problem = body();
    if (::write(pipeFds[1], problem.data(), problem.size()) < 0)
      ::_exit(3);
    ::_exit(problem.empty() ? 0 : 1);
  }
  ::close(pipeFds[1]);
  char buffer[256];
  for (ssize_t n; (n = ::read(pipeFds[0], buffer, sizeof(buffer))) > 0;)
    message.append(buffer, n);
  ::close(pipeFds[0]);
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
    return false;
  skipped = WEXITSTATUS(status) == 77;
  if (WEXITSTATUS(status) == 78)
    message = "the folder stayed writable";
  return WEXITSTATUS(status) == 0;
}

/// What reading the database at `path` finds wrong, as `kopt db list`,
/// `export`, `verify` and `kopt compile --tune=never` read it; empty when
/// `expectedExport` comes back.
static std::string readEverything(const std::string &path,
                                  const std::string &expectedExport) {
  for (bool readOnly : {true, false}) {
    KernelDatabaseOptions options;
    options.readOnly = readOnly;
    Result<std::unique_ptr<KernelDatabase>> db =
        openKernelDatabase(path, options);
    if (!db)
      return db.status().toString();
    Result<std::optional<KernelRecord>> found =
        (*db)->lookup("task", makeFingerprint());
    if (!found || !*found)
      return "lookup: " + found.status().toString();
    if (Status status = (*db)->verify(); !status.isOk())
      return "verify: " + status.toString();
    Result<std::string> text = (*db)->exportJsonLines();
    if (!text || *text != expectedExport)
      return "export: " + text.status().toString();
    Result<bool> put = (*db)->put(makeRecord("other", 1.0));
    if (put || put.status().code() != StatusCode::Unavailable)
      return "a write was not refused as read-only";
  }
  return "";
}

TEST(SqliteKernelDatabaseTest, ReadsFileInReadOnlyFolder) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db && db->put(makeRecord("task", 1.0)).isOk());
    ASSERT_TRUE(db->addAttempt(makeAttempt("task", false)).isOk());
  }
  // Written in WAL mode, and closed: no log, no shared memory beside it.
  ASSERT_FALSE(std::filesystem::exists(path + "-shm"));
  std::string expected = *openOrDie(path)->exportJsonLines();
  std::string message;
  bool skipped = false;
  bool ok = runWithReadOnlyFolder(
      dir.file(""), [&] { return readEverything(path, expected); }, message,
      skipped);
  if (skipped)
    GTEST_SKIP() << "root cannot mount a read-only folder here";
  EXPECT_TRUE(ok) << message;
}

TEST(SqliteKernelDatabaseTest, RefusesLogWithChangesInReadOnlyFolder) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  TempDir copy;
  std::string copied = copy.file("kernels.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db && db->put(makeRecord("task", 1.0)).isOk());
    // A copy taken while the log holds the record.
    std::filesystem::copy_file(path, copied);
    std::filesystem::copy_file(path + "-wal", copied + "-wal");
  }
  ASSERT_GT(std::filesystem::file_size(copied + "-wal"), 0u);
  std::string message;
  bool skipped = false;
  runWithReadOnlyFolder(
      copy.file(""),
      [&]() -> std::string {
        SqliteOpenOptions options;
        options.readOnly = true;
        auto db = SqliteKernelDatabase::open(copied, options);
        if (db)
          return "opened";
        return db.status().message();
      },
      message, skipped);
  if (skipped)
    GTEST_SKIP() << "root cannot mount a read-only folder here";
  EXPECT_NE(
      message.find("its write-ahead log '" + copied + "-wal' holds changes"),
      std::string::npos)
      << message;
  EXPECT_NE(message.find("--journal=delete"), std::string::npos) << message;
  EXPECT_EQ(message.find("corrupted"), std::string::npos) << message;
}

TEST(SqliteKernelDatabaseTest, ExportsFileForShipping) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  auto db = openOrDie(path);
  ASSERT_TRUE(db && db->put(makeRecord("task", 1.0)).isOk());
  ASSERT_TRUE(db->addAttempt(makeAttempt("task", false)).isOk());
  std::string expected = *db->exportJsonLines();

  TempDir shipDir;
  std::string shipped = shipDir.file("shipped.db");
  Result<ExportSummary> summary =
      exportSqliteFile(*db, shipped, SqliteJournal::Delete);
  ASSERT_TRUE(summary.isOk()) << summary.status().toString();
  EXPECT_EQ(summary->records, 1u);
  EXPECT_EQ(summary->attempts, 1u);
  // Bytes 18 and 19 of the header: 1 for a rollback journal, 2 for WAL.
  std::string header = readBytes(shipped).substr(0, 20);
  EXPECT_EQ(header[18], 1);
  EXPECT_EQ(header[19], 1);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(shipDir.file("")),
                          std::filesystem::directory_iterator()),
            1);
  // Never over an existing file.
  Result<ExportSummary> again =
      exportSqliteFile(*db, shipped, SqliteJournal::Delete);
  EXPECT_FALSE(again.isOk());

  std::string message;
  bool skipped = false;
  bool ok = runWithReadOnlyFolder(
      shipDir.file(""), [&] { return readEverything(shipped, expected); },
      message, skipped);
  if (skipped)
    GTEST_SKIP() << "root cannot mount a read-only folder here";
  EXPECT_TRUE(ok) << message;
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

TEST(SqliteKernelDatabaseTest, FullFileSystemLeavesFileUnchanged) {
  // A real full disk: a 1 MiB tmpfs, mounted in a mount namespace of the
  // child's own. That needs privileges; without them the test is skipped.
  MemoryKernelDatabase source;
  for (int i = 0; i < 16; ++i) {
    KernelRecord record = makeRecord("big" + std::to_string(i), 1.0);
    record.cubin = std::string(size_t(128) << 10, char('a' + i));
    ASSERT_TRUE(source.put(record).isOk());
  }
  std::string text = *source.exportJsonLines();
  TempDir dir;
  std::string mountPoint = dir.file("tmpfs");
  ASSERT_EQ(::mkdir(mountPoint.c_str(), 0700), 0);
  std::string path = mountPoint + "/kernels.db";

  int pipeFds[2];
  ASSERT_EQ(::pipe(pipeFds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipeFds[0]);
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", mountPoint.c_str(), "tmpfs", 0, "size=1m") != 0)
      ::_exit(77);
    std::string before;
    {
      Result<std::unique_ptr<SqliteKernelDatabase>> db =
          SqliteKernelDatabase::open(path);
      if (!db || !(*db)->put(makeRecord("before", 1.0)).isOk())
        ::_exit(2);
    }
    before = readBytes(path);
    Result<std::unique_ptr<SqliteKernelDatabase>> db =
        SqliteKernelDatabase::open(path);
    if (!db)
      ::_exit(3);
    Result<ImportSummary> imported = (*db)->importJsonLines(text, "big.jsonl");
    if (imported)
      ::_exit(4);
    db->reset();
    if (readBytes(path) != before)
      ::_exit(5);
    db = SqliteKernelDatabase::open(path);
    if (!db || !(*db)->verify().isOk() || (*db)->list()->size() != 1)
      ::_exit(6);
    std::string message = imported.status().message();
    if (::write(pipeFds[1], message.data(), message.size()) < 0)
      ::_exit(7);
    ::_exit(0);
  }
  ::close(pipeFds[1]);
  std::string message;
  char buffer[256];
  for (ssize_t n; (n = ::read(pipeFds[0], buffer, sizeof(buffer))) > 0;)
    message.append(buffer, n);
  ::close(pipeFds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  if (WEXITSTATUS(status) == 77)
    GTEST_SKIP() << "cannot mount a tmpfs here (needs privileges)";
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(message.rfind("kernel database '" + path + "': cannot ", 0), 0u)
      << message;
  EXPECT_NE(message.find("database or disk is full"), std::string::npos)
      << message;
}

TEST(SqliteKernelDatabaseTest, ConcurrentImportsMergeOnce) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  // Every process imports the shared lines and its own; nobody creates the
  // file first.
  MemoryKernelDatabase shared;
  for (int r = 0; r < 10; ++r) {
    ASSERT_TRUE(
        shared.put(makeRecord("shared" + std::to_string(r), 1.0)).isOk());
    ASSERT_TRUE(
        shared.addAttempt(makeAttempt("shared" + std::to_string(r), true))
            .isOk());
  }
  std::string sharedText = *shared.exportJsonLines();
  constexpr int kProcesses = 4, kRecords = 20;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      MemoryKernelDatabase own;
      for (int r = 0; r < kRecords; ++r) {
        std::string key = "p" + std::to_string(p) + "-r" + std::to_string(r);
        if (!own.put(makeRecord(key, 1.0 + r)).isOk() ||
            !own.addAttempt(makeAttempt(key, false)).isOk())
          ::_exit(2);
      }
      Result<std::unique_ptr<SqliteKernelDatabase>> db =
          SqliteKernelDatabase::open(path);
      if (!db)
        ::_exit(3);
      if (!(*db)->importJsonLines(sharedText).isOk() ||
          !(*db)->importJsonLines(*own.exportJsonLines()).isOk())
        ::_exit(4);
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
  EXPECT_TRUE(db->verify().isOk());
  Result<KernelDatabaseStats> stats = db->stats();
  ASSERT_TRUE(stats.isOk());
  EXPECT_EQ(stats->records, size_t(10 + kProcesses * kRecords));
  EXPECT_EQ(stats->attempts, size_t(10 + kProcesses * kRecords));
}

TEST(SqliteKernelDatabaseTest, KilledTransactionLeavesNothing) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto db = openOrDie(path);
    ASSERT_TRUE(db && db->put(makeRecord("before", 1.0)).isOk());
  }
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
    Status status = (*db)->transact([&] {
      for (int r = 0;; ++r) {
        KernelRecord record = makeRecord("r" + std::to_string(r), 1.0);
        record.cubin = std::string(size_t(256) << 10, char('a' + r % 26));
        if (!(*db)->put(record).isOk())
          ::_exit(3);
        if (r == 20 && ::write(ready[1], "x", 1) != 1)
          ::_exit(4);
      }
      return Status::success();
    });
    ::_exit(status.isOk() ? 5 : 6);
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));

  auto db = openOrDie(path);
  ASSERT_TRUE(db);
  EXPECT_TRUE(db->verify().isOk());
  Result<std::vector<KernelRecord>> records = db->list();
  ASSERT_TRUE(records.isOk());
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].taskKey, "before");
}

} // namespace
