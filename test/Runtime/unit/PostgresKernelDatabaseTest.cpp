//===- PostgresKernelDatabaseTest.cpp - The shared database -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What a database shared by a fleet adds to the contract (which
// KernelDatabaseTest.cpp runs on PostgreSQL too): URLs and passwords,
// content hashes checked at load, trusted writers, many processes at once,
// and the tuning queue. The cases that need a server skip unless one runs
// (ctest runs them as KoptKernelDbTests.postgres, under
// test/Support/with-postgres.sh).
//
//===----------------------------------------------------------------------===//

#include "KernelDbTestHelpers.h"

#include "kopt/Runtime/KernelDatabase.h"
#include "kopt/Runtime/TuningQueue.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <set>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace kopt::runtime;
using namespace kopt::runtime::testing;

namespace {

//===----------------------------------------------------------------------===//
// Without a server
//===----------------------------------------------------------------------===//

TEST(DatabaseUrlTest, PicksTheBackend) {
  EXPECT_TRUE(isPostgresUrl("postgresql://db.example/kopt"));
  EXPECT_TRUE(isPostgresUrl("postgres:///kopt?service=fleet"));
  EXPECT_FALSE(isPostgresUrl("kernels.db"));
  EXPECT_FALSE(isPostgresUrl("/var/cache/postgresql://x"));
  // libpq keyword strings, in any case, with quoted values.
  EXPECT_TRUE(isPostgresUrl("host=db.example dbname=kopt"));
  EXPECT_TRUE(isPostgresUrl("HOST=db port = 5432 options='-c x=y'"));
  EXPECT_TRUE(isPostgresUrl("service=fleet"));
  EXPECT_FALSE(isPostgresUrl("/tmp/host=db"));
  EXPECT_FALSE(isPostgresUrl("kernels=1.db"));
  EXPECT_FALSE(isPostgresUrl("host=db dbname='unclosed"));
}

TEST(DatabaseUrlTest, RedactsPasswords) {
  EXPECT_EQ(redactDatabaseUrl("postgresql://kopt:s3cret@db:5432/kopt"),
            "postgresql://kopt:***@db:5432/kopt");
  EXPECT_EQ(redactDatabaseUrl("postgresql://db/kopt?user=u&password=s3cret"),
            "postgresql://db/kopt?user=u&password=***");
  EXPECT_EQ(redactDatabaseUrl("postgresql://kopt@db/kopt"),
            "postgresql://kopt@db/kopt");
  EXPECT_TRUE(hasPassword("postgresql://u:p@h/d"));
  EXPECT_TRUE(hasPassword("postgresql:///d?password=p"));
  EXPECT_FALSE(hasPassword("postgresql://u@h/d?sslmode=require"));
  EXPECT_FALSE(hasPassword("postgresql://u:@h/d"));
}

TEST(DatabaseUrlTest, RefusesPasswordsOnTheCommandLine) {
  KernelDatabaseOptions options;
  options.fromCommandLine = true;
  Result<std::unique_ptr<KernelDatabase>> db =
      openKernelDatabase("postgresql://kopt:s3cret@127.0.0.1:1/kopt", options);
  ASSERT_FALSE(db.isOk());
  EXPECT_EQ(db.status().message().find("s3cret"), std::string::npos)
      << db.status().message();
  EXPECT_NE(db.status().message().find("PGPASSWORD"), std::string::npos)
      << db.status().message();
  Result<std::unique_ptr<TuningQueue>> queue =
      TuningQueue::open("postgresql://kopt:s3cret@127.0.0.1:1/kopt", true);
  ASSERT_FALSE(queue.isOk());
  EXPECT_EQ(queue.status().message().find("s3cret"), std::string::npos);
}

TEST(DatabaseUrlTest, RefusesEverySpellingOfPassword) {
  KernelDatabaseOptions options;
  options.fromCommandLine = true;
  for (const char *location :
       {"postgresql://127.0.0.1:1/kopt?PASSWORD=FAKE-PW",
        "postgresql://127.0.0.1:1/kopt?pass%77ord=FAKE-PW",
        "postgres://127.0.0.1:1/kopt?user=u&Password=FAKE-PW",
        "host=127.0.0.1 port=1 password=FAKE-PW",
        "host=127.0.0.1 port=1 PASSWORD = 'FAKE-PW'"}) {
    EXPECT_TRUE(hasPassword(location)) << location;
    Result<std::unique_ptr<KernelDatabase>> db =
        openKernelDatabase(location, options);
    ASSERT_FALSE(db.isOk()) << location;
    EXPECT_EQ(db.status().message().find("FAKE-PW"), std::string::npos)
        << db.status().message();
    EXPECT_NE(db.status().message().find("refusing a password"),
              std::string::npos)
        << db.status().message();
  }
}

TEST(DatabaseUrlTest, KeywordStringIsNotAFile) {
  // Never a SQLite file named after the string, and never the password in
  // the error (from the environment a password is allowed).
  TempDir dir;
  std::string location = "host=127.0.0.1 port=1 dbname=kopt "
                         "password=FAKE-PW connect_timeout=2";
  char *previous = ::getcwd(nullptr, 0);
  ASSERT_EQ(::chdir(dir.file("").c_str()), 0);
  Result<std::unique_ptr<KernelDatabase>> db = openKernelDatabase(location);
  bool created = std::filesystem::exists(location);
  ASSERT_EQ(::chdir(previous), 0);
  std::free(previous);
  ASSERT_FALSE(db.isOk());
  EXPECT_FALSE(created);
  EXPECT_EQ(db.status().message().find("FAKE-PW"), std::string::npos)
      << db.status().message();
  EXPECT_NE(db.status().message().find("password=***"), std::string::npos)
      << db.status().message();
  EXPECT_EQ(db.status().message().find("SQLite"), std::string::npos)
      << db.status().message();
}

#ifdef KOPT_HAVE_POSTGRES
TEST(DatabaseUrlTest, ListenerThatNeverAnswersTimesOut) {
  // A socket that takes connections and never says a word.
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(
      ::bind(listener, reinterpret_cast<sockaddr *>(&address), sizeof(address)),
      0);
  ASSERT_EQ(::listen(listener, 8), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(
      ::getsockname(listener, reinterpret_cast<sockaddr *>(&address), &length),
      0);
  std::string url =
      "postgresql://kopt@127.0.0.1:" + std::to_string(ntohs(address.sin_port)) +
      "/kopt";
  KernelDatabaseOptions options;
  options.connectTimeoutSeconds = 2;
  auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<KernelDatabase>> db = openKernelDatabase(url, options);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ::close(listener);
  ASSERT_FALSE(db.isOk());
  EXPECT_LT(seconds, 10) << db.status().message();
  EXPECT_EQ(db.status().code(), StatusCode::Unavailable);
  EXPECT_NE(db.status().message().find("timeout"), std::string::npos)
      << db.status().message();
}

TEST(DatabaseUrlTest, DefaultTimeoutsAreBounded) {
  KernelDatabaseOptions options;
  EXPECT_GT(options.connectTimeoutSeconds, 0);
  EXPECT_GT(options.statementTimeoutMs, 0);
}
#endif

TEST(DatabaseUrlTest, ErrorsNeverShowThePassword) {
  // From the environment a password is allowed; the failure to connect
  // (nothing listens on port 1) must not print it.
  Result<std::unique_ptr<KernelDatabase>> db = openKernelDatabase(
      "postgresql://kopt:s3cret@127.0.0.1:1/kopt?connect_timeout=2");
  ASSERT_FALSE(db.isOk());
  EXPECT_EQ(db.status().message().find("s3cret"), std::string::npos)
      << db.status().message();
  EXPECT_NE(db.status().message().find("kernel database 'postgresql://"),
            std::string::npos)
      << db.status().message();
}

TEST(DatabaseUrlTest, QueueNeedsPostgres) {
  TempDir dir;
  Result<std::unique_ptr<TuningQueue>> queue =
      TuningQueue::open(dir.file("kernels.db"), false);
  ASSERT_FALSE(queue.isOk());
  EXPECT_NE(queue.status().message().find("needs a PostgreSQL database"),
            std::string::npos)
      << queue.status().message();
}

TEST(ContentHashTest, IsSha256) {
  EXPECT_EQ(detail::sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(detail::sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(detail::sha256Hex(
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Binaries count, and where one ends matters.
  EXPECT_NE(detail::contentHash("{}", std::string("ab"), std::string("c")),
            detail::contentHash("{}", std::string("a"), std::string("bc")));
  EXPECT_NE(detail::contentHash("{}", std::nullopt, std::nullopt),
            detail::contentHash("{}", std::string(), std::nullopt));
}

//===----------------------------------------------------------------------===//
// On a server
//===----------------------------------------------------------------------===//

class PostgresTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (std::string why = whyNoTestPostgres(); !why.empty())
      GTEST_SKIP() << why;
    name = databases.create();
    url = testPostgresUrl(name);
  }

  std::unique_ptr<KernelDatabase> open(KernelDatabaseOptions options = {}) {
    Result<std::unique_ptr<KernelDatabase>> db =
        openKernelDatabase(url, options);
    EXPECT_TRUE(db.isOk()) << db.status().toString();
    return db ? std::move(*db) : nullptr;
  }

  std::unique_ptr<TuningQueue> openQueue() {
    Result<std::unique_ptr<TuningQueue>> queue = TuningQueue::open(url, false);
    EXPECT_TRUE(queue.isOk()) << queue.status().toString();
    return queue ? std::move(*queue) : nullptr;
  }

  /// A `kopt.task/1`-like document for `key`.
  static json::Value makeTask(const std::string &key) {
    json::Value task = json::Value::object();
    task.set("key", key);
    return task;
  }

  TestPostgresDatabases databases;
  std::string name;
  std::string url;
};

TEST_F(PostgresTest, RefusesTamperedRecordsAtLoad) {
  auto db = open();
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->put(makeRecord("good", 1.0)).isOk());
  ASSERT_TRUE(db->put(makeRecord("tampered", 1.0)).isOk());
  EXPECT_TRUE(db->verify().isOk());
  // A faster time written behind kopt's back: the JSON no longer matches
  // the hash taken when the record was stored.
  execPostgres(name, "UPDATE kopt.kernels SET record = replace(record, "
                     "'\"median_ms\":1,', '\"median_ms\":0.001,') WHERE "
                     "task_key = 'tampered'");
  Result<std::optional<KernelRecord>> found =
      db->lookup("tampered", makeFingerprint());
  ASSERT_FALSE(found.isOk());
  EXPECT_NE(found.status().message().find(
                "record tampered on " + makeFingerprint().hash() +
                ": its content does not match its content hash; refusing it"),
            std::string::npos)
      << found.status().message();
  EXPECT_TRUE(db->lookup("good", makeFingerprint())->has_value());
  Result<std::vector<std::string>> problems = db->findProblems();
  ASSERT_TRUE(problems.isOk());
  ASSERT_FALSE(problems->empty());
  EXPECT_NE((*problems)[0].find("content does not match"), std::string::npos)
      << (*problems)[0];
  EXPECT_FALSE(db->exportJsonLines().isOk());

  // A swapped binary is refused too.
  execPostgres(name, "UPDATE kopt.kernels SET record = replace(record, "
                     "'\"median_ms\":0.001,', '\"median_ms\":1,'), cubin = "
                     "'\\x00'::bytea WHERE task_key = 'tampered'");
  found = db->lookup("tampered", makeFingerprint());
  ASSERT_FALSE(found.isOk());
  EXPECT_NE(found.status().message().find("refusing it"), std::string::npos)
      << found.status().message();
}

TEST_F(PostgresTest, LooksUpOnlyTrustedWriters) {
  {
    auto db = open();
    ASSERT_TRUE(db && db->put(makeRecord("task", 1.0)).isOk());
  }
  EXPECT_EQ(execPostgres(name, "SELECT stored_by FROM kopt.kernels"),
            "postgres");
  KernelDatabaseOptions options;
  options.trustedWriters = {"kopt_worker"};
  auto db = open(options);
  ASSERT_TRUE(db);
  EXPECT_FALSE(db->lookup("task", makeFingerprint())->has_value());
  options.trustedWriters = {"kopt_worker", "postgres"};
  db = open(options);
  EXPECT_TRUE(db->lookup("task", makeFingerprint())->has_value());
}

TEST_F(PostgresTest, ReadOnlyRefusesWrites) {
  KernelDatabaseOptions options;
  options.readOnly = true;
  Result<std::unique_ptr<KernelDatabase>> empty =
      openKernelDatabase(url, options);
  ASSERT_FALSE(empty.isOk());
  EXPECT_NE(empty.status().message().find("holds no kopt tables"),
            std::string::npos);
  {
    auto db = open();
    ASSERT_TRUE(db && db->put(makeRecord("task", 1.0)).isOk());
  }
  auto db = open(options);
  ASSERT_TRUE(db);
  EXPECT_EQ(db->getSchemaVersion(), 2);
  EXPECT_TRUE(db->lookup("task", makeFingerprint())->has_value());
  Result<bool> put = db->put(makeRecord("other", 1.0));
  ASSERT_FALSE(put.isOk());
  EXPECT_EQ(put.status().code(), StatusCode::Unavailable);
  EXPECT_NE(put.status().message().find("read-only"), std::string::npos);
  EXPECT_TRUE(db->verify().isOk());
}

TEST_F(PostgresTest, RefusesNewerSchema) {
  { ASSERT_TRUE(open()); }
  execPostgres(name, "UPDATE kopt.schema_version SET version = 99");
  Result<std::unique_ptr<KernelDatabase>> db = openKernelDatabase(url);
  ASSERT_FALSE(db.isOk());
  EXPECT_EQ(db.status().code(), StatusCode::Unsupported);
}

TEST_F(PostgresTest, ConcurrentOpenersAndImportsMergeOnce) {
  // Nobody creates the tables first; every process imports the shared lines
  // and its own.
  MemoryKernelDatabase shared;
  for (int r = 0; r < 10; ++r) {
    std::string key = "shared" + std::to_string(r);
    ASSERT_TRUE(shared.put(makeRecord(key, 1.0)).isOk());
    ASSERT_TRUE(shared.addAttempt(makeAttempt(key, true)).isOk());
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
      Result<std::unique_ptr<KernelDatabase>> db = openKernelDatabase(url);
      if (!db) {
        std::fprintf(stderr, "%s\n", db.status().message().c_str());
        ::_exit(3);
      }
      Result<ImportSummary> imported = (*db)->importJsonLines(sharedText);
      if (imported)
        imported = (*db)->importJsonLines(*own.exportJsonLines());
      if (!imported) {
        std::fprintf(stderr, "%s\n", imported.status().message().c_str());
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
  auto db = open();
  ASSERT_TRUE(db);
  EXPECT_TRUE(db->verify().isOk());
  Result<KernelDatabaseStats> stats = db->stats();
  ASSERT_TRUE(stats.isOk());
  EXPECT_EQ(stats->records, size_t(10 + kProcesses * kRecords));
  EXPECT_EQ(stats->attempts, size_t(10 + kProcesses * kRecords));
}

TEST_F(PostgresTest, ExportsTheSameBytesAsSqlite) {
  // One export imported into each backend exports the same bytes again.
  MemoryKernelDatabase source;
  ASSERT_TRUE(source.put(makeRecord("a", 1.0)).isOk());
  KernelRecord stale = makeRecord("b", 2.0);
  stale.stale = true;
  ASSERT_TRUE(source.put(stale).isOk());
  ASSERT_TRUE(source.addAttempt(makeAttempt("a", false)).isOk());
  std::string text = *source.exportJsonLines();
  TempDir dir;
  auto sqlite = openOrDie(dir.file("kernels.db"));
  ASSERT_TRUE(sqlite && sqlite->importJsonLines(text).isOk());
  auto postgres = open();
  ASSERT_TRUE(postgres && postgres->importJsonLines(text).isOk());
  EXPECT_EQ(*postgres->exportJsonLines(), *sqlite->exportJsonLines());
  EXPECT_EQ(*postgres->exportJsonLines(), text);
}

//===----------------------------------------------------------------------===//
// The tuning queue
//===----------------------------------------------------------------------===//

TEST_F(PostgresTest, EnqueuesEachMissingTaskOnce) {
  auto db = open();
  auto queue = openQueue();
  ASSERT_TRUE(db && queue);
  ASSERT_TRUE(db->put(makeRecord("stored", 1.0)).isOk());
  std::string target = makeFingerprint().hash();
  EXPECT_EQ(*queue->enqueue("stored", target, "fp32", makeTask("stored")),
            EnqueueOutcome::InDatabase);
  // For any device: a record of the precision is enough.
  EXPECT_EQ(*queue->enqueue("stored", "", "fp32", makeTask("stored")),
            EnqueueOutcome::InDatabase);
  EXPECT_EQ(*queue->enqueue("stored", "", "tf32", makeTask("stored")),
            EnqueueOutcome::Queued);
  EXPECT_EQ(*queue->enqueue("missing", target, "fp32", makeTask("missing")),
            EnqueueOutcome::Queued);
  EXPECT_EQ(*queue->enqueue("missing", target, "fp32", makeTask("missing")),
            EnqueueOutcome::AlreadyQueued);
  Result<QueueStats> stats = queue->stats();
  ASSERT_TRUE(stats.isOk()) << stats.status().toString();
  EXPECT_EQ(stats->queued, 2u);

  // A worker of another device or precision takes none of the targeted job.
  DeviceFingerprint other = makeFingerprint();
  other.smCount = 108;
  Result<std::optional<TuningJob>> job =
      queue->claim("w", other.hash(), "fp32", 60, 3);
  ASSERT_TRUE(job.isOk());
  EXPECT_FALSE(job->has_value());
  job = queue->claim("w", target, "fp32", 60, 3);
  ASSERT_TRUE(job.isOk() && job->has_value());
  EXPECT_EQ((*job)->taskKey, "missing");
  EXPECT_EQ((*job)->task, makeTask("missing"));
  EXPECT_EQ((*job)->claims, 1);
  EXPECT_TRUE(*queue->finish(**job, /*done=*/true));
  // Done, and its record pruned since: queued again.
  EXPECT_EQ(*queue->enqueue("missing", target, "fp32", makeTask("missing")),
            EnqueueOutcome::Queued);
}

TEST_F(PostgresTest, ExpiredLeasesAreTakenOverAndTheOldClaimIsVoid) {
  auto queue = openQueue();
  ASSERT_TRUE(queue);
  ASSERT_TRUE(queue->enqueue("task", "", "fp32", makeTask("task")).isOk());
  std::string fp = makeFingerprint().hash();
  Result<std::optional<TuningJob>> first = queue->claim("w1", fp, "fp32", 1, 3);
  ASSERT_TRUE(first.isOk() && first->has_value());
  // Under a live lease nobody else gets it.
  EXPECT_FALSE(queue->claim("w2", fp, "fp32", 60, 3)->has_value());
  EXPECT_TRUE(*queue->renew(**first, 1));
  ::sleep(3);
  EXPECT_EQ(queue->stats()->expired, 1u);
  Result<std::optional<TuningJob>> second =
      queue->claim("w2", fp, "fp32", 60, 3);
  ASSERT_TRUE(second.isOk() && second->has_value());
  EXPECT_EQ((*second)->id, (*first)->id);
  EXPECT_EQ((*second)->claims, 2);
  // The first worker woke up: its claim is void.
  EXPECT_FALSE(*queue->renew(**first, 60));
  EXPECT_FALSE(*queue->finish(**first, true));
  EXPECT_TRUE(*queue->finish(**second, false, "no GPU"));
  Result<QueueStats> stats = queue->stats();
  EXPECT_EQ(stats->failed, 1u);
  EXPECT_EQ(stats->reclaims, 1u);
  EXPECT_EQ(*queue->retryFailed(), 1u);
  EXPECT_EQ(queue->stats()->queued, 1u);
}

TEST_F(PostgresTest, AJobIsTriedABoundedNumberOfTimes) {
  auto queue = openQueue();
  ASSERT_TRUE(queue);
  ASSERT_TRUE(queue->enqueue("poison", "", "fp32", makeTask("poison")).isOk());
  std::string fp = makeFingerprint().hash();
  // Two attempts whose compile child crashed: put back each time.
  for (int64_t attempt = 1; attempt <= 2; ++attempt) {
    Result<std::optional<TuningJob>> job =
        queue->claim("w", fp, "fp32", 60, /*maxAttempts=*/3);
    ASSERT_TRUE(job.isOk() && job->has_value());
    EXPECT_EQ((*job)->attempts, attempt);
    EXPECT_TRUE(*queue->release(**job, "the compile child crashed"));
  }
  EXPECT_EQ(queue->stats()->queued, 1u);
  // The third claim's worker dies outright: once its lease lapses, the job's
  // attempts are spent and it is failed rather than claimed again.
  Result<std::optional<TuningJob>> last = queue->claim("w", fp, "fp32", 1, 3);
  ASSERT_TRUE(last.isOk() && last->has_value());
  EXPECT_EQ((*last)->attempts, 3);
  ::sleep(3);
  EXPECT_FALSE(queue->claim("w2", fp, "fp32", 60, 3)->has_value());
  Result<std::vector<TuningJob>> jobs = queue->list();
  ASSERT_TRUE(jobs.isOk() && jobs->size() == 1u);
  EXPECT_EQ((*jobs)[0].state, "failed");
  EXPECT_NE((*jobs)[0].error.find("claimed 3 times"), std::string::npos)
      << (*jobs)[0].error;
  EXPECT_NE((*jobs)[0].error.find("the compile child crashed"),
            std::string::npos)
      << (*jobs)[0].error;
  // Queued again by hand, it gets its attempts back.
  EXPECT_EQ(*queue->retryFailed(), 1u);
  Result<std::optional<TuningJob>> again = queue->claim("w", fp, "fp32", 60, 3);
  ASSERT_TRUE(again.isOk() && again->has_value());
  EXPECT_EQ((*again)->attempts, 1);
  EXPECT_EQ((*again)->claims, 4);
}

TEST_F(PostgresTest, ConcurrentClaimsTakeEachJobOnce) {
  auto queue = openQueue();
  ASSERT_TRUE(queue);
  constexpr int kJobs = 200, kThreads = 4;
  for (int i = 0; i < kJobs; ++i) {
    std::string key = "task" + std::to_string(i);
    ASSERT_TRUE(queue->enqueue(key, "", "fp32", makeTask(key)).isOk());
  }
  std::mutex mutex;
  std::map<int64_t, int> taken;
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      // One connection per thread.
      Result<std::unique_ptr<TuningQueue>> own = TuningQueue::open(url, false);
      if (!own) {
        failed = true;
        return;
      }
      std::string worker = "w" + std::to_string(t);
      while (true) {
        Result<std::optional<TuningJob>> job =
            (*own)->claim(worker, makeFingerprint().hash(), "fp32", 60, 3);
        if (!job) {
          failed = true;
          return;
        }
        if (!*job)
          return;
        {
          std::lock_guard<std::mutex> lock(mutex);
          ++taken[(*job)->id];
        }
        Result<bool> finished = (*own)->finish(**job, true);
        if (!finished || !*finished)
          failed = true;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_FALSE(failed);
  EXPECT_EQ(taken.size(), size_t(kJobs));
  for (const auto &entry : taken)
    EXPECT_EQ(entry.second, 1) << "job " << entry.first;
  Result<QueueStats> stats = queue->stats();
  ASSERT_TRUE(stats.isOk());
  EXPECT_EQ(stats->done, size_t(kJobs));
  EXPECT_EQ(stats->reclaims, 0u);
}

} // namespace
