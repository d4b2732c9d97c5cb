//===- ServeWorkerTest.cpp - Tests of the serve-worker job loop -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Drives `serveJobs` with a queue in memory, job runners that succeed, fail
// or crash, a fake clock and a counted wait: no PostgreSQL, no GPU. The last
// cases run real child processes (/bin/sh) that crash and hang.
//
//===----------------------------------------------------------------------===//

#include "kopt/Fleet/ServeWorker.h"
#include "kopt/Fleet/LeaseKeeper.h"

#include "FakeTuningQueue.h"
#include "gtest/gtest.h"

#include <chrono>
#include <thread>

using namespace mlir::kopt;
using mlir::kopt::testing::FakeTuningQueue;
namespace rt = ::kopt::runtime;
using Ending = FakeTuningQueue::Ending;

namespace {

constexpr const char *kKey = "abcdef0123456789abcdef";
constexpr const char *kCrash = "the compile child crashed (Segmentation fault)";

ServeWorkerOptions makeOptions(unsigned maxAttempts = 3) {
  ServeWorkerOptions options;
  options.name = "w1";
  options.fingerprintHash = "fp1";
  options.precision = "tf32";
  options.leaseSeconds = 60;
  options.once = true;
  options.maxAttempts = maxAttempts;
  return options;
}

/// A runner that answers `results` in turn (the last one from then on), and
/// a clock at which each job takes 2.5 s.
struct ScriptedRunner {
  std::vector<JobResult> results;
  std::vector<int64_t> ran;
  double clock = 100;

  ServeWorkerHooks hooks() {
    ServeWorkerHooks hooks;
    hooks.runJob = [this](const rt::TuningJob &job) {
      ran.push_back(job.id);
      clock += 2.5;
      return results[std::min(ran.size(), results.size()) - 1];
    };
    hooks.now = [this] { return clock; };
    hooks.waitASecond = [] { FAIL() << "the loop waited"; };
    return hooks;
  }
};

JobResult done(const std::string &how) { return {true, "", how}; }
JobResult unfinished(const std::string &error) { return {false, error, ""}; }

/// Runs the loop; fails the test when it fails.
ServeWorkerCounts serve(FakeTuningQueue &queue,
                        const ServeWorkerOptions &options,
                        const ServeWorkerHooks &hooks, std::string &log) {
  llvm::raw_string_ostream os(log);
  auto counts = serveJobs(queue, options, hooks, os);
  if (!counts) {
    ADD_FAILURE() << llvm::toString(counts.takeError());
    return {};
  }
  return *counts;
}

TEST(ServeWorkerTest, DoneJobIsFinishedOnce) {
  FakeTuningQueue queue;
  int64_t id = queue.add(kKey);
  ScriptedRunner runner{{done("tuned")}};
  ServeWorkerHooks hooks = runner.hooks();
  std::vector<std::string> held;
  hooks.holdLease = [&](std::optional<rt::TuningJob> job) {
    held.push_back(job ? std::to_string(job->id) : "none");
  };
  std::string log;
  ServeWorkerCounts counts = serve(queue, makeOptions(), hooks, log);

  EXPECT_EQ(runner.ran, std::vector<int64_t>{id});
  ASSERT_EQ(queue.endings.size(), 1u);
  EXPECT_EQ(queue.endings[0].kind, Ending::Kind::Done);
  EXPECT_EQ(queue.endings[0].error, "");
  EXPECT_EQ(held, (std::vector<std::string>{std::to_string(id), "none"}));
  EXPECT_EQ(counts.done, 1u);
  EXPECT_EQ(counts.failed + counts.lost + counts.putBack, 0u);
  EXPECT_EQ(log, "kopt serve-worker: w1: claimed job 7 (abcdef012345, claim "
                 "1)\n"
                 "kopt serve-worker: w1: job 7 (abcdef012345) done: tuned in "
                 "2.50 s\n"
                 "kopt serve-worker: w1: 1 jobs done, 0 failed, 0 lost, 0 put "
                 "back\n");
  // The worker claims for its own device, precision, lease and bound.
  EXPECT_EQ(queue.lastClaim.worker, "w1");
  EXPECT_EQ(queue.lastClaim.fingerprintHash, "fp1");
  EXPECT_EQ(queue.lastClaim.precision, "tf32");
  EXPECT_EQ(queue.lastClaim.leaseSeconds, 60);
  EXPECT_EQ(queue.lastClaim.maxAttempts, 3);
}

TEST(ServeWorkerTest, CrashedAttemptsAreRetriedUpToTheBound) {
  FakeTuningQueue queue;
  int64_t id = queue.add(kKey);
  ScriptedRunner runner{{unfinished(kCrash)}};
  std::string log;
  ServeWorkerCounts counts = serve(queue, makeOptions(3), runner.hooks(), log);

  EXPECT_EQ(runner.ran, (std::vector<int64_t>{id, id, id}));
  ASSERT_EQ(queue.endings.size(), 3u);
  EXPECT_EQ(queue.endings[0].kind, Ending::Kind::Released);
  EXPECT_EQ(queue.endings[0].error, std::string(kCrash) + " (attempt 1 of 3)");
  EXPECT_EQ(queue.endings[1].kind, Ending::Kind::Released);
  EXPECT_EQ(queue.endings[1].error, std::string(kCrash) + " (attempt 2 of 3)");
  EXPECT_EQ(queue.endings[2].kind, Ending::Kind::Failed);
  EXPECT_EQ(queue.endings[2].error, std::string(kCrash) + " (attempt 3 of 3)");
  EXPECT_TRUE(queue.queued.empty());
  EXPECT_EQ(counts.failed, 1u);
  EXPECT_EQ(counts.putBack, 2u);
  EXPECT_EQ(counts.done + counts.lost, 0u);
  EXPECT_NE(log.find("job 7: " + std::string(kCrash) +
                     " (attempt 2 of 3); queued again\n"),
            std::string::npos)
      << log;
  EXPECT_NE(
      log.find("job 7 failed: " + std::string(kCrash) + " (attempt 3 of 3)\n"),
      std::string::npos)
      << log;
  EXPECT_NE(log.find("claimed job 7 (abcdef012345, claim 3)"),
            std::string::npos)
      << log;
}

TEST(ServeWorkerTest, RetriedJobThatSucceedsIsDone) {
  FakeTuningQueue queue;
  int64_t id = queue.add(kKey);
  ScriptedRunner runner{{unfinished(kCrash), done("replayed")}};
  std::string log;
  ServeWorkerCounts counts = serve(queue, makeOptions(), runner.hooks(), log);

  EXPECT_EQ(runner.ran, (std::vector<int64_t>{id, id}));
  ASSERT_EQ(queue.endings.size(), 2u);
  EXPECT_EQ(queue.endings[0].kind, Ending::Kind::Released);
  EXPECT_EQ(queue.endings[1].kind, Ending::Kind::Done);
  EXPECT_EQ(counts.done, 1u);
  EXPECT_EQ(counts.putBack, 1u);
}

TEST(ServeWorkerTest, FinishedFailureIsNotRetried) {
  FakeTuningQueue queue;
  queue.add(kKey);
  ScriptedRunner runner{{{true, "no valid candidate", ""}}};
  std::string log;
  ServeWorkerCounts counts = serve(queue, makeOptions(), runner.hooks(), log);

  ASSERT_EQ(queue.endings.size(), 1u);
  EXPECT_EQ(queue.endings[0].kind, Ending::Kind::Failed);
  // A tuning failure is the job's outcome, not an attempt's: no count.
  EXPECT_EQ(queue.endings[0].error, "no valid candidate");
  EXPECT_EQ(counts.failed, 1u);
  EXPECT_EQ(counts.putBack, 0u);
  EXPECT_NE(log.find("job 7 failed: no valid candidate\n"), std::string::npos)
      << log;
}

TEST(ServeWorkerTest, JobTakenOverIsLost) {
  FakeTuningQueue queue;
  int64_t id = queue.add(kKey);
  queue.lost.insert(id);
  ScriptedRunner runner{{done("tuned")}};
  std::string log;
  ServeWorkerCounts counts = serve(queue, makeOptions(), runner.hooks(), log);

  EXPECT_EQ(counts.lost, 1u);
  EXPECT_EQ(counts.done, 0u);
  EXPECT_NE(log.find("job 7 lost: its lease expired and another worker took "
                     "it over\n"),
            std::string::npos)
      << log;
}

TEST(ServeWorkerTest, QueueErrorStopsTheLoop) {
  FakeTuningQueue queue;
  queue.add(kKey);
  queue.claimError = "server closed the connection";
  ScriptedRunner runner{{done("tuned")}};
  std::string log;
  llvm::raw_string_ostream os(log);
  auto counts = serveJobs(queue, makeOptions(), runner.hooks(), os);
  ASSERT_FALSE(counts);
  EXPECT_EQ(llvm::toString(counts.takeError()), "server closed the connection");
  EXPECT_TRUE(runner.ran.empty());
  EXPECT_EQ(log, "");
}

TEST(ServeWorkerTest, MaxJobsStopsTheLoop) {
  FakeTuningQueue queue;
  queue.add(kKey);
  queue.add(kKey);
  int64_t third = queue.add(kKey);
  ScriptedRunner runner{{done("hit")}};
  ServeWorkerOptions options = makeOptions();
  options.maxJobs = 2;
  std::string log;
  ServeWorkerCounts counts = serve(queue, options, runner.hooks(), log);

  EXPECT_EQ(counts.done, 2u);
  ASSERT_EQ(queue.queued.size(), 1u);
  EXPECT_EQ(queue.queued[0].id, third);
}

TEST(ServeWorkerTest, EmptyQueueIsPolledUntilAStop) {
  FakeTuningQueue queue;
  ScriptedRunner runner;
  ServeWorkerHooks hooks = runner.hooks();
  unsigned waits = 0;
  hooks.waitASecond = [&] { ++waits; };
  hooks.stopRequested = [&] { return waits >= 5; };
  ServeWorkerOptions options = makeOptions();
  options.once = false;
  options.pollSeconds = 3;
  std::string log;
  ServeWorkerCounts counts = serve(queue, options, hooks, log);

  // Three one-second waits after the first look, two after the second, and
  // the stop ends the wait and the loop.
  EXPECT_EQ(queue.claims, 2u);
  EXPECT_EQ(waits, 5u);
  EXPECT_EQ(counts.done, 0u);
  EXPECT_EQ(
      log,
      "kopt serve-worker: w1: 0 jobs done, 0 failed, 0 lost, 0 put back\n");
}

TEST(ServeWorkerTest, StopFinishesTheJobInHand) {
  FakeTuningQueue queue;
  queue.add(kKey);
  queue.add(kKey);
  ScriptedRunner runner{{done("tuned")}};
  ServeWorkerHooks hooks = runner.hooks();
  bool stop = false;
  auto run = hooks.runJob;
  hooks.runJob = [&](const rt::TuningJob &job) {
    stop = true;
    return run(job);
  };
  hooks.stopRequested = [&] { return stop; };
  std::string log;
  ServeWorkerCounts counts = serve(queue, makeOptions(), hooks, log);

  EXPECT_EQ(counts.done, 1u);
  EXPECT_EQ(queue.endings.size(), 1u);
  EXPECT_EQ(queue.queued.size(), 1u);
}

TEST(ServeWorkerTest, LeaseKeeperRenewsTheJobInHand) {
  auto owned = std::make_unique<FakeTuningQueue>();
  FakeTuningQueue &queue = *owned;
  rt::TuningJob job;
  job.id = 41;
  {
    // A lease of 3 s is renewed every second.
    LeaseKeeper keeper(std::move(owned), 3);
    keeper.hold(job);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(queue.renewMutex);
        if (!queue.renewed.empty())
          break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    keeper.hold(std::nullopt);
    std::lock_guard<std::mutex> lock(queue.renewMutex);
    ASSERT_FALSE(queue.renewed.empty());
    EXPECT_EQ(queue.renewed[0], 41);
  }
}

/// `command` runs `script` in /bin/sh, the job's files as `$1` and `$2`.
JobChildCommand shell(const std::string &script, unsigned timeoutSeconds) {
  JobChildCommand command;
  command.program = {"/bin/sh", "-c", script, "sh"};
  command.timeoutSeconds = timeoutSeconds;
  return command;
}

TEST(ServeWorkerTest, PoisonChildrenFailTheirJobsAfterTheirAttempts) {
  FakeTuningQueue queue;
  queue.add("crash0123456789");
  queue.add("hang0123456789");
  queue.add("good0123456789");
  ServeWorkerHooks hooks;
  hooks.runJob = [](const rt::TuningJob &job) {
    llvm::StringRef key = job.taskKey;
    if (key.starts_with("crash"))
      return runJobInChildProcess(job, shell("kill -SEGV $$", 0));
    if (key.starts_with("hang"))
      return runJobInChildProcess(job, shell("sleep 30", 1));
    return runJobInChildProcess(
        job, shell("printf '{\"error\": \"\", \"how\": \"tuned\"}' "
                   "> \"${2#--job-outcome=}\"",
                   0));
  };
  std::string log;
  ServeWorkerCounts counts = serve(queue, makeOptions(2), hooks, log);

  EXPECT_EQ(counts.done, 1u);
  EXPECT_EQ(counts.failed, 2u);
  EXPECT_EQ(counts.putBack, 2u);
  EXPECT_NE(
      log.find("job 7 failed: " + std::string(kCrash) + " (attempt 2 of 2)\n"),
      std::string::npos)
      << log;
  EXPECT_NE(log.find("job 8 failed: the compile child ran past the job "
                     "timeout of 1 s and was killed (attempt 2 of 2)\n"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("job 9 (good01234567) done: tuned in "), std::string::npos)
      << log;
}

} // namespace
