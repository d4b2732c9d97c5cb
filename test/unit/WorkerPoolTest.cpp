//===- WorkerPoolTest.cpp - Tests of the worker pool ------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Runs pools of the built kopt-worker (KOPT_WORKER_PATH) in its test modes
// (KOPT_WORKER_TEST_MODE): no GPU needed. The devices are only names here:
// a worker in a test mode reports its CUDA_VISIBLE_DEVICES in its hello.
//
//===----------------------------------------------------------------------===//

#include "kopt/Evaluator/WorkerPool.h"

#include "WorkerTestUtils.h"
#include "gtest/gtest.h"

#include <cerrno>
#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

using namespace mlir::kopt;
namespace rt = ::kopt::runtime;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

/// A pool of the built worker in test mode `mode` on `devices`.
WorkerPoolOptions makeOptions(const std::string &mode,
                              std::vector<std::string> devices) {
  WorkerPoolOptions options;
  options.worker.executable = KOPT_WORKER_PATH;
  options.worker.environment = {"KOPT_WORKER_TEST_MODE=" + mode};
  options.worker.startTimeout = milliseconds(10000);
  options.worker.requestTimeout = milliseconds(10000);
  options.worker.shutdownGrace = milliseconds(500);
  options.devices = std::move(devices);
  return options;
}

/// Expects process `pid` to be gone and reaped.
void expectGone(pid_t pid) {
  ASSERT_GT(pid, 0);
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1) << "process " << pid << " still exists";
  EXPECT_EQ(errno, ESRCH);
}

/// Milliseconds since `begin`.
long long since(Clock::time_point begin) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - begin).count();
}

class WorkerPoolTest : public ::testing::Test {
protected:
  /// Remembers the running workers of `pool`.
  void track(const WorkerPool &pool) {
    for (size_t i = 0; i < pool.size(); ++i)
      if (pid_t pid = pool.getWorker(i).pid; pid > 0)
        pids.push_back(pid);
  }

  /// Fails the test for any tracked worker still running, and kills it.
  void TearDown() override {
    for (pid_t pid : pids) {
      int status;
      if (::waitpid(pid, &status, WNOHANG) != 0)
        continue;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ADD_FAILURE() << "worker " << pid << " outlived its test";
    }
  }

  std::vector<pid_t> pids;
};

TEST(WorkerPoolDevicesTest, ResolvesDevices) {
  WorkerPoolOptions options;
  options.devices = {"GPU-abc", "4"};
  EXPECT_EQ(resolvePoolDevices(options, "0,1"), options.devices);
  options.devices.clear();
  EXPECT_EQ(resolvePoolDevices(options, nullptr),
            std::vector<std::string>{"0"});
  EXPECT_EQ(resolvePoolDevices(options, "2, 3,"),
            (std::vector<std::string>{"2", "3"}));
  // Set but empty: the caller sees no GPU, and neither may the worker.
  EXPECT_EQ(resolvePoolDevices(options, ""), std::vector<std::string>{""});
  options.deviceCount = 2;
  EXPECT_EQ(resolvePoolDevices(options, nullptr),
            (std::vector<std::string>{"0", "1"}));
  options.deviceCount = 1;
  EXPECT_EQ(resolvePoolDevices(options, "5,6"), std::vector<std::string>{"5"});
}

TEST_F(WorkerPoolTest, EachWorkerSeesOnlyItsDevice) {
  WorkerPool pool(makeOptions("slow:0", {"3", "5"}));
  ASSERT_EQ(pool.size(), 2u);
  llvm::Error error = pool.start();
  ASSERT_FALSE(static_cast<bool>(error)) << llvm::toString(std::move(error));
  track(pool);
  for (size_t i = 0; i < 2; ++i) {
    WorkerPoolEntry worker = pool.getWorker(i);
    EXPECT_GT(worker.pid, 0);
    EXPECT_FALSE(worker.busy);
    ASSERT_TRUE(worker.hello.has_value());
    EXPECT_NE(worker.hello->device.name.find(
                  "[CUDA_VISIBLE_DEVICES=" + worker.device + "]"),
              std::string::npos)
        << worker.hello->device.name;
  }
  EXPECT_EQ(pool.getWorker(0).device, "3");
  EXPECT_EQ(pool.getWorker(1).device, "5");
}

TEST_F(WorkerPoolTest, RequestsOnTwoWorkersRunConcurrently) {
  WorkerPool pool(makeOptions("slow:400", {"0", "1"}));
  ASSERT_FALSE(static_cast<bool>(pool.start()));
  track(pool);
  Clock::time_point begin = Clock::now();
  size_t used[2] = {9, 9};
  bool answered[2] = {false, false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      auto reports = pool.evaluate(mlir::kopt::testing::makeWorkerRequest(t),
                                   std::nullopt, &used[t]);
      answered[t] = static_cast<bool>(reports) && reports->size() == 2;
      if (!reports)
        llvm::consumeError(reports.takeError());
    });
  for (std::thread &thread : threads)
    thread.join();
  long long elapsed = since(begin);
  EXPECT_TRUE(answered[0] && answered[1]);
  EXPECT_NE(used[0], used[1]);
  EXPECT_GE(elapsed, 400);
  // One request's time, not two (with room for a loaded machine).
  EXPECT_LT(elapsed, 750);
}

TEST_F(WorkerPoolTest, ARequestWaitsForAFreeWorker) {
  WorkerPool pool(makeOptions("slow:200", {"0"}));
  ASSERT_FALSE(static_cast<bool>(pool.start()));
  track(pool);
  Clock::time_point begin = Clock::now();
  std::vector<std::thread> threads;
  int answered = 0;
  std::mutex mutex;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      auto reports = pool.evaluate(mlir::kopt::testing::makeWorkerRequest(t));
      std::lock_guard<std::mutex> lock(mutex);
      if (reports)
        answered += reports->size() == 2;
      else
        llvm::consumeError(reports.takeError());
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(answered, 3);
  EXPECT_GE(since(begin), 600);
  EXPECT_EQ(pool.getWorker(0).startCount, 1u);
}

TEST_F(WorkerPoolTest, ARequestWhoseWorkerDiesGoesToAnother) {
  WorkerPool pool(makeOptions("slow:0", {"0", "1"}));
  pool.getWorkerOptions(0).environment.front() = "KOPT_WORKER_TEST_MODE=crash";
  ASSERT_FALSE(static_cast<bool>(pool.start()));
  track(pool);
  pid_t other = pool.getWorker(1).pid;
  size_t used = 9;
  auto reports = pool.evaluate(mlir::kopt::testing::makeWorkerRequest(1),
                               std::nullopt, &used);
  ASSERT_TRUE(static_cast<bool>(reports))
      << llvm::toString(reports.takeError());
  // Worker 0 took it and died; worker 1 answered (as a worker without a
  // GPU does).
  EXPECT_EQ(used, 1u);
  ASSERT_EQ(reports->size(), 2u);
  EXPECT_FALSE(isWorkerDeath(*reports));
  for (const rt::EvalReport &report : *reports)
    EXPECT_EQ(getWorkerFailureReason(report), "");
  WorkerPoolEntry crashed = pool.getWorker(0);
  EXPECT_EQ(crashed.pid, -1);
  EXPECT_FALSE(crashed.busy);
  EXPECT_EQ(crashed.lastFailure.rfind("crash: signal", 0), 0u);
  WorkerPoolEntry survivor = pool.getWorker(1);
  EXPECT_EQ(survivor.pid, other);
  EXPECT_FALSE(survivor.busy);
  EXPECT_EQ(survivor.startCount, 1u);
  EXPECT_EQ(survivor.lastFailure, "");
  EXPECT_EQ(::kill(other, 0), 0);
  // The dead worker starts afresh for the next request (and dies again).
  reports = pool.evaluate(mlir::kopt::testing::makeWorkerRequest(2),
                          std::nullopt, &used);
  ASSERT_TRUE(static_cast<bool>(reports));
  EXPECT_EQ(used, 1u);
  EXPECT_EQ(pool.getWorker(0).startCount, 2u);
  EXPECT_EQ(pool.getWorker(1).pid, other);
}

TEST_F(WorkerPoolTest, ARequestThatKillsTwoWorkersNamesBoth) {
  WorkerPool pool(makeOptions("crash", {"3", "5"}));
  size_t used = 9;
  auto reports = pool.evaluate(mlir::kopt::testing::makeWorkerRequest(1),
                               std::nullopt, &used);
  track(pool);
  ASSERT_TRUE(static_cast<bool>(reports))
      << llvm::toString(reports.takeError());
  EXPECT_EQ(used, 1u);
  ASSERT_EQ(reports->size(), 2u);
  for (const rt::EvalReport &report : *reports) {
    EXPECT_EQ(report.failedCheck, rt::FailedCheck::Crash);
    std::string reason = getWorkerFailureReason(report);
    EXPECT_EQ(reason.rfind("crash on two devices: CUDA_VISIBLE_DEVICES=3: "
                           "crash: signal",
                           0),
              0u)
        << reason;
    EXPECT_NE(reason.find("; then CUDA_VISIBLE_DEVICES=5: crash: signal"),
              std::string::npos)
        << reason;
  }
  // Each died once: the request was not sent a third time.
  EXPECT_EQ(pool.getWorker(0).startCount, 1u);
  EXPECT_EQ(pool.getWorker(1).startCount, 1u);
  EXPECT_FALSE(pool.getWorker(0).busy);
  EXPECT_FALSE(pool.getWorker(1).busy);
}

TEST_F(WorkerPoolTest, ALoneWorkerThatDiesKeepsItsAnswer) {
  WorkerPool pool(makeOptions("crash", {"0"}));
  auto reports = pool.evaluate(mlir::kopt::testing::makeWorkerRequest(1));
  ASSERT_TRUE(static_cast<bool>(reports));
  ASSERT_TRUE(isWorkerDeath(*reports));
  EXPECT_EQ(getWorkerFailureReason(reports->front()).rfind("crash: signal", 0),
            0u);
  EXPECT_EQ(pool.getWorker(0).startCount, 1u);
}

TEST_F(WorkerPoolTest, TheCrashDeviceHookKillsOnlyItsWorker) {
  WorkerPoolOptions options = makeOptions("fake", {"0", "1", "2"});
  options.worker.environment.push_back("KOPT_WORKER_TEST_CRASH_DEVICE=0,2");
  WorkerPool pool(options);
  ASSERT_FALSE(static_cast<bool>(pool.start()));
  track(pool);
  // A caller that holds worker 0 for all its requests.
  std::optional<size_t> held = pool.acquire();
  ASSERT_EQ(held, std::optional<size_t>(0));
  EXPECT_TRUE(pool.getWorker(0).busy);
  size_t index = *held;
  std::vector<std::string> deaths;
  // Only the workers the filter allows: worker 1 is not one of them.
  auto reports = pool.evaluateOn(
      index, mlir::kopt::testing::makeWorkerRequest(1), std::nullopt,
      [](size_t i) { return i != 1; }, &deaths);
  ASSERT_TRUE(static_cast<bool>(reports));
  EXPECT_EQ(index, 2u);
  EXPECT_TRUE(isWorkerDeath(*reports));
  ASSERT_EQ(deaths.size(), 1u);
  EXPECT_EQ(deaths[0].rfind("CUDA_VISIBLE_DEVICES=0: crash: signal", 0), 0u);
  // The caller now holds worker 2 and no longer worker 0.
  EXPECT_FALSE(pool.getWorker(0).busy);
  EXPECT_TRUE(pool.getWorker(2).busy);
  // From 2 (dying) to 1 (answering), which the caller keeps.
  deaths.clear();
  reports = pool.evaluateOn(
      index, mlir::kopt::testing::makeWorkerRequest(2), std::nullopt,
      [](size_t i) { return i != 0; }, &deaths);
  ASSERT_TRUE(static_cast<bool>(reports));
  EXPECT_FALSE(isWorkerDeath(*reports));
  EXPECT_TRUE((*reports)[0].valid);
  EXPECT_EQ(index, 1u);
  ASSERT_EQ(deaths.size(), 1u);
  EXPECT_EQ(deaths[0].rfind("CUDA_VISIBLE_DEVICES=2: crash: signal", 0), 0u);
  EXPECT_TRUE(pool.getWorker(1).busy);
  EXPECT_FALSE(pool.getWorker(2).busy);
  pool.release(index);
  EXPECT_FALSE(pool.getWorker(1).busy);
}

TEST_F(WorkerPoolTest, AcquireTakesTheLowestFreeAllowedWorker) {
  WorkerPool pool(makeOptions("fake", {"0", "1", "2"}));
  EXPECT_EQ(pool.acquire([](size_t) { return false; }), std::nullopt);
  EXPECT_EQ(pool.acquire(), std::optional<size_t>(0));
  EXPECT_EQ(pool.acquire([](size_t i) { return i != 1; }),
            std::optional<size_t>(2));
  EXPECT_EQ(pool.acquire(), std::optional<size_t>(1));
  // All held: a request waits until one is given back.
  std::optional<size_t> later;
  std::thread waiter([&] { later = pool.acquire(); });
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(later.has_value());
  pool.release(2);
  waiter.join();
  EXPECT_EQ(later, std::optional<size_t>(2));
  for (size_t i = 0; i < 3; ++i)
    pool.release(i);
}

TEST_F(WorkerPoolTest, DestructionLeavesNoChildren) {
  std::vector<pid_t> workers;
  {
    WorkerPool pool(makeOptions("slow:0", {"0", "1"}));
    ASSERT_FALSE(static_cast<bool>(pool.start()));
    track(pool);
    for (size_t i = 0; i < pool.size(); ++i)
      workers.push_back(pool.getWorker(i).pid);
  }
  ASSERT_EQ(workers.size(), 2u);
  for (pid_t pid : workers)
    expectGone(pid);
}

TEST_F(WorkerPoolTest, DefaultsToTheProcessDevices) {
  WorkerPoolOptions options = makeOptions("slow:0", {});
  options.devices.clear();
  WorkerPool pool(options);
  // The process's CUDA_VISIBLE_DEVICES decides; there is always a worker.
  EXPECT_GE(pool.size(), 1u);
}

} // namespace
