//===- WorkerClientTest.cpp - Tests of the worker client --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Runs the built kopt-worker (KOPT_WORKER_PATH) and makes it misbehave with
// KOPT_WORKER_TEST_MODE. Every client is a local, so its destructor kills its
// worker even when an assertion returns early; the fixture checks that no
// worker a test saw outlives it, and kills any that does.
//
//===----------------------------------------------------------------------===//

#include "kopt/Evaluator/WorkerClient.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "WorkerTestUtils.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <iterator>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

using namespace mlir::kopt;
namespace rt = ::kopt::runtime;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

TEST(WorkerEnvironmentTest, KeepsMulticastOffWhateverTheCallerSays) {
  const char *parent[] = {"PATH=/bin", "CUDA_VISIBLE_DEVICES=0,1",
                          "NCCL_NVLS_ENABLE=1", nullptr};
  std::vector<std::string> environment = makeWorkerEnvironment(
      {"CUDA_VISIBLE_DEVICES=1", "NVSHMEM_DISABLE_NVLS=0"},
      const_cast<char *const *>(parent));
  auto count = [&](const std::string &entry) {
    return std::count(environment.begin(), environment.end(), entry);
  };
  EXPECT_EQ(count("PATH=/bin"), 1);
  EXPECT_EQ(count("CUDA_VISIBLE_DEVICES=1"), 1);
  EXPECT_EQ(count("CUDA_VISIBLE_DEVICES=0,1"), 0);
  EXPECT_EQ(count("NCCL_NVLS_ENABLE=1"), 0);
  EXPECT_EQ(count("NVSHMEM_DISABLE_NVLS=0"), 0);
  for (const char *entry : kMulticastOffEnvironment)
    EXPECT_EQ(count(entry), 1) << entry;
  EXPECT_EQ(environment.size(), 2u + std::size(kMulticastOffEnvironment));
}

/// Options that run the built worker in test mode `mode` ("" is normal),
/// with short deadlines.
WorkerOptions makeOptions(const std::string &mode = "") {
  WorkerOptions options;
  options.executable = KOPT_WORKER_PATH;
  options.environment = {"KOPT_WORKER_TEST_MODE=" + mode};
  options.startTimeout = milliseconds(10000);
  options.requestTimeout = milliseconds(10000);
  options.shutdownGrace = milliseconds(500);
  return options;
}

/// Sets the test mode of the next worker `client` starts.
void setMode(WorkerClient &client, const std::string &mode) {
  client.getOptions().environment = {"KOPT_WORKER_TEST_MODE=" + mode};
}

/// Expects process `pid` to be gone and reaped: no process, no zombie.
void expectGone(pid_t pid) {
  ASSERT_GT(pid, 0);
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1) << "process " << pid << " still exists";
  EXPECT_EQ(errno, ESRCH);
  int status;
  errno = 0;
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), -1)
      << "process " << pid << " is an unreaped child";
  EXPECT_EQ(errno, ECHILD);
}

/// Expects one report per candidate of a two-candidate request, each failed
/// with `check` and a reason starting with `reasonPrefix`.
void expectAllFailed(llvm::Expected<std::vector<rt::EvalReport>> &reports,
                     rt::FailedCheck check, const std::string &reasonPrefix) {
  ASSERT_TRUE(static_cast<bool>(reports))
      << llvm::toString(reports.takeError());
  ASSERT_EQ(reports->size(), 2u);
  for (size_t i = 0; i < reports->size(); ++i) {
    const rt::EvalReport &report = (*reports)[i];
    EXPECT_EQ(report.candidate, static_cast<int64_t>(i));
    EXPECT_FALSE(report.valid);
    EXPECT_EQ(report.failedCheck, check)
        << rt::stringifyFailedCheck(report.failedCheck);
    std::string reason = getWorkerFailureReason(report);
    EXPECT_EQ(reason.rfind(reasonPrefix, 0), 0u)
        << "reason '" << reason << "' does not start with '" << reasonPrefix
        << "'";
  }
}

/// Expects the normal answer of this build's worker: both candidates not
/// compiled, with the "no GPU or CUDA driver" evidence.
void expectUnavailable(llvm::Expected<std::vector<rt::EvalReport>> &reports) {
  ASSERT_TRUE(static_cast<bool>(reports))
      << llvm::toString(reports.takeError());
  ASSERT_EQ(reports->size(), 2u);
  for (size_t i = 0; i < reports->size(); ++i) {
    const rt::EvalReport &report = (*reports)[i];
    EXPECT_EQ(report.candidate, static_cast<int64_t>(i));
    EXPECT_FALSE(report.compiled);
    EXPECT_FALSE(report.valid);
    EXPECT_EQ(report.failedCheck, rt::FailedCheck::Compile);
    EXPECT_EQ(getWorkerFailureReason(report), "");
    const rt::json::Value *message = report.evidence.find("message");
    ASSERT_TRUE(message && message->getString());
    EXPECT_EQ(*message->getString(), "no GPU or CUDA driver on this machine");
  }
}

class WorkerClientTest : public ::testing::Test {
protected:
  /// Remembers the running worker of `client`.
  pid_t track(const WorkerClient &client) {
    pid_t pid = client.getPid();
    if (pid > 0)
      pids.push_back(pid);
    return pid;
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

TEST_F(WorkerClientTest, HelloRoundTrip) {
  WorkerClient client(makeOptions());
  EXPECT_FALSE(client.isRunning());
  llvm::Error error = client.start();
  ASSERT_FALSE(static_cast<bool>(error)) << llvm::toString(std::move(error));
  track(client);
  EXPECT_TRUE(client.isRunning());
  EXPECT_GT(client.getPid(), 0);
  EXPECT_EQ(client.getStartCount(), 1u);
  ASSERT_TRUE(client.getHello().has_value());
  EXPECT_EQ(client.getHello()->device.name, "none");
  // Starting again keeps the running worker.
  pid_t pid = client.getPid();
  ASSERT_FALSE(static_cast<bool>(client.start()));
  EXPECT_EQ(client.getPid(), pid);
  EXPECT_EQ(client.getStartCount(), 1u);
}

TEST_F(WorkerClientTest, EvaluateGivesOneReportPerCandidate) {
  WorkerClient client(makeOptions());
  auto reports = client.evaluate(mlir::kopt::testing::makeWorkerRequest(1));
  pid_t pid = track(client);
  expectUnavailable(reports);
  // The same worker answers the next request.
  auto again = client.evaluate(mlir::kopt::testing::makeWorkerRequest(2));
  expectUnavailable(again);
  EXPECT_EQ(client.getPid(), pid);
  EXPECT_EQ(client.getStartCount(), 1u);
  EXPECT_EQ(client.getLastFailure(), "");
}

TEST_F(WorkerClientTest, RefusedRequestKeepsTheWorker) {
  WorkerClient client(makeOptions());
  rt::EvaluateMessage request = mlir::kopt::testing::makeWorkerRequest(3);
  request.task = rt::json::Value::object();
  auto refused = client.evaluate(request);
  pid_t pid = track(client);
  ASSERT_FALSE(static_cast<bool>(refused));
  std::string message = llvm::toString(refused.takeError());
  EXPECT_NE(message.find("refused request 3"), std::string::npos) << message;
  EXPECT_NE(message.find("task"), std::string::npos) << message;
  auto reports = client.evaluate(mlir::kopt::testing::makeWorkerRequest(4));
  expectUnavailable(reports);
  EXPECT_EQ(client.getPid(), pid);
}

TEST_F(WorkerClientTest, CrashIsRecordedWithTheSignal) {
  WorkerClient client(makeOptions("crash"));
  ASSERT_FALSE(static_cast<bool>(client.start()));
  pid_t crashed = track(client);
  auto reports = client.evaluate(mlir::kopt::testing::makeWorkerRequest(1));
  expectAllFailed(reports, rt::FailedCheck::Crash, "crash: signal 6");
  EXPECT_EQ(client.getLastFailure().rfind("crash: signal 6", 0), 0u)
      << client.getLastFailure();
  EXPECT_FALSE(client.isRunning());
  expectGone(crashed);

  setMode(client, "");
  auto next = client.evaluate(mlir::kopt::testing::makeWorkerRequest(2));
  track(client);
  expectUnavailable(next);
  EXPECT_EQ(client.getStartCount(), 2u);
  EXPECT_NE(client.getPid(), crashed);
}

TEST_F(WorkerClientTest, HangTimesOutAndKillsTheWorker) {
  WorkerClient client(makeOptions("hang"));
  ASSERT_FALSE(static_cast<bool>(client.start()));
  pid_t hung = track(client);
  Clock::time_point begin = Clock::now();
  auto reports = client.evaluate(mlir::kopt::testing::makeWorkerRequest(1),
                                 milliseconds(300));
  auto elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - begin);
  expectAllFailed(reports, rt::FailedCheck::Timeout, "timeout after 300 ms");
  EXPECT_GE(elapsed.count(), 300);
  EXPECT_LT(elapsed.count(), 300 + 3000);
  EXPECT_FALSE(client.isRunning());
  expectGone(hung);

  setMode(client, "");
  auto next = client.evaluate(mlir::kopt::testing::makeWorkerRequest(2),
                              milliseconds(5000));
  track(client);
  expectUnavailable(next);
}

TEST_F(WorkerClientTest, SlowWorkerWithinItsDeadlineAnswers) {
  WorkerClient client(makeOptions("slow:50"));
  auto reports = client.evaluate(mlir::kopt::testing::makeWorkerRequest(1),
                                 milliseconds(5000));
  track(client);
  expectUnavailable(reports);

  // The same slowness past a short deadline is a timeout.
  WorkerClient late(makeOptions("slow:5000"));
  ASSERT_FALSE(static_cast<bool>(late.start()));
  pid_t pid = track(late);
  auto timedOut = late.evaluate(mlir::kopt::testing::makeWorkerRequest(2),
                                milliseconds(200));
  expectAllFailed(timedOut, rt::FailedCheck::Timeout, "timeout after 200 ms");
  expectGone(pid);
}

TEST_F(WorkerClientTest, FakeWorkerMakesUpTheSameReportsEveryTime) {
  WorkerClient client(makeOptions("fake:20"));
  auto reports = client.evaluate(mlir::kopt::testing::makeWorkerRequest(1));
  track(client);
  ASSERT_TRUE(static_cast<bool>(reports))
      << llvm::toString(reports.takeError());
  ASSERT_EQ(reports->size(), 2u);
  // The baseline is valid and timed, and is its own speedup of 1.
  const rt::EvalReport &baseline = (*reports)[0];
  EXPECT_TRUE(baseline.valid);
  ASSERT_TRUE(baseline.times.has_value());
  EXPECT_GE(baseline.times->medianUs, 20.0);
  EXPECT_LT(baseline.times->medianUs, 120.0);
  EXPECT_DOUBLE_EQ(baseline.speedup.value_or(0), 1.0);
  EXPECT_EQ((*reports)[1].candidate, 1);
  // The same plans, the same reports, whatever the request.
  auto again = client.evaluate(mlir::kopt::testing::makeWorkerRequest(2));
  ASSERT_TRUE(static_cast<bool>(again)) << llvm::toString(again.takeError());
  EXPECT_EQ(*again, *reports);
  // An unreadable task is still refused, as a real worker refuses it.
  rt::EvaluateMessage request = mlir::kopt::testing::makeWorkerRequest(3);
  request.task = rt::json::Value::object();
  auto refused = client.evaluate(request);
  ASSERT_FALSE(static_cast<bool>(refused));
  llvm::consumeError(refused.takeError());
}

TEST_F(WorkerClientTest, GarbageIsAProtocolError) {
  WorkerClient client(makeOptions("garbage"));
  ASSERT_FALSE(static_cast<bool>(client.start()));
  pid_t broken = track(client);
  auto reports = client.evaluate(mlir::kopt::testing::makeWorkerRequest(1),
                                 milliseconds(5000));
  expectAllFailed(reports, rt::FailedCheck::Crash, "protocol error: ");
  EXPECT_FALSE(client.isRunning());
  expectGone(broken);

  setMode(client, "");
  auto next = client.evaluate(mlir::kopt::testing::makeWorkerRequest(2));
  track(client);
  expectUnavailable(next);
}

TEST_F(WorkerClientTest, ExitAfterHelloIsACrash) {
  WorkerClient client(makeOptions("exit-after-hello"));
  ASSERT_FALSE(static_cast<bool>(client.start()));
  pid_t exited = track(client);
  // A request larger than a pipe's buffer makes the write itself meet the
  // closed pipe, so SIGPIPE must not reach this process.
  rt::EvaluateMessage request = mlir::kopt::testing::makeWorkerRequest(1);
  request.candidates[1].set("padding", std::string(1 << 20, 'x'));
  auto reports = client.evaluate(request, milliseconds(5000));
  track(client);
  expectAllFailed(reports, rt::FailedCheck::Crash, "crash: ");
  EXPECT_FALSE(client.isRunning());
  expectGone(exited);

  setMode(client, "");
  auto next = client.evaluate(mlir::kopt::testing::makeWorkerRequest(2));
  track(client);
  expectUnavailable(next);
}

TEST_F(WorkerClientTest, DestructionLeavesNoChild) {
  pid_t pid;
  {
    WorkerClient client(makeOptions());
    ASSERT_FALSE(static_cast<bool>(client.start()));
    pid = track(client);
    ASSERT_GT(pid, 0);
  }
  expectGone(pid);
}

TEST_F(WorkerClientTest, DestructionKillsAWorkerThatIgnoresShutdown) {
  // A fake worker: says hello, then sleeps without reading its input.
  rt::HelloMessage fakeHello;
  fakeHello.device.smCount = 1;
  std::string hello = rt::encode(fakeHello);
  WorkerOptions options = makeOptions();
  options.executable = "/bin/sh";
  std::string printHello = "printf '";
  uint32_t length = static_cast<uint32_t>(hello.size());
  for (int shift = 0; shift < 32; shift += 8) {
    char octal[8];
    std::snprintf(octal, sizeof(octal), "\\%03o", (length >> shift) & 0xFF);
    printHello += octal;
  }
  printHello += hello + "'; exec sleep 30";
  options.arguments = {"-c", printHello};
  options.shutdownGrace = milliseconds(200);
  pid_t pid;
  Clock::time_point begin;
  {
    WorkerClient client(options);
    llvm::Error error = client.start();
    pid = track(client);
    ASSERT_FALSE(static_cast<bool>(error)) << llvm::toString(std::move(error));
    begin = Clock::now();
  }
  auto elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - begin);
  EXPECT_LT(elapsed.count(), 200 + 3000);
  expectGone(pid);
}

TEST_F(WorkerClientTest, StartFailsWithoutHello) {
  WorkerOptions options = makeOptions();
  options.executable = "/bin/sh";
  options.arguments = {"-c", "exec sleep 30"};
  options.startTimeout = milliseconds(300);
  WorkerClient client(options);
  llvm::Error error = client.start();
  ASSERT_TRUE(static_cast<bool>(error));
  std::string message = llvm::toString(std::move(error));
  EXPECT_NE(message.find("timeout after 300 ms"), std::string::npos) << message;
  EXPECT_FALSE(client.isRunning());
  EXPECT_EQ(client.getStartCount(), 1u);
}

TEST_F(WorkerClientTest, MissingExecutableIsAnError) {
  WorkerOptions options = makeOptions();
  options.executable = std::string(KOPT_WORKER_PATH) + ".missing";
  WorkerClient client(options);
  auto reports = client.evaluate(mlir::kopt::testing::makeWorkerRequest(1));
  ASSERT_FALSE(static_cast<bool>(reports));
  std::string message = llvm::toString(reports.takeError());
  EXPECT_NE(message.find("cannot run"), std::string::npos) << message;
  EXPECT_FALSE(client.isRunning());
}

TEST_F(WorkerClientTest, DefaultWorkerIsBesideTheExecutable) {
  std::string path = getDefaultWorkerPath();
  EXPECT_EQ(llvm::sys::path::filename(path), "kopt-worker");
  // The test binary and kopt-worker are built into the same directory.
  EXPECT_TRUE(llvm::sys::fs::equivalent(path, KOPT_WORKER_PATH)) << path;
  EXPECT_EQ(WorkerClient().getExecutable(), path);
}

} // namespace
