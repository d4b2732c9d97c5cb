//===- AdversarialSuiteTest.cpp - Cheating plans must be caught -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Runs the evaluator's adversarial suite (test/Evaluator/adversarial) through
// the real evaluation path and checks that every cheating or broken candidate
// is rejected with one of the failed checks its manifest entry expects, and
// that every honest candidate is valid. Candidates marked `isolate` (the
// endless loop, the faulting launch) run in a `kopt-worker` process spoken
// to over pipes, so that a hang or a poisoned context cannot take the test
// down; the rest call evaluateCandidates directly, with CUPTI launch
// accounting when CUPTI is present. Prints a summary table.
//
// The suite is found through $KOPT_ADVERSARIAL_DIR, else
// test/Evaluator/adversarial under the working directory (scripts/gpu-check
// runs from the repository root), else under the source tree it was built
// from. The worker is $KOPT_WORKER, else kopt-worker beside this binary.
// Skips without a CUDA driver; KOPT_REQUIRE_GPU=1 makes that a failure.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Evaluator/Evaluator.h"

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Cuda/Cupti.h"
#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/Protocol.h"
#include "kopt/Runtime/TaskPlan.h"

#include "GpuTestFixture.h"
#include "TestInputs.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace kopt::runtime;

namespace {

std::string findWorker() {
  if (const char *worker = std::getenv("KOPT_WORKER"))
    return worker;
  char path[4096];
  ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0)
    return "kopt-worker";
  std::string self(path, length);
  return self.substr(0, self.rfind('/') + 1) + "kopt-worker";
}

std::string getString(const json::Value &object, const char *key) {
  const json::Value *value = object.find(key);
  const std::string *text = value ? value->getString() : nullptr;
  return text ? *text : "";
}

/// What a report says, as the manifest spells it.
std::string describeOutcome(const EvalReport &report) {
  if (report.valid)
    return "valid";
  return stringifyFailedCheck(report.failedCheck);
}

/// Evaluates `baseline` and `candidate` in a fresh kopt-worker, with
/// `deadlineSeconds` for the answer; returns the candidate's outcome, or
/// `timeout` / `crash` when the worker hangs or dies.
std::string evaluateInWorker(const json::Value &task,
                             const json::Value &baseline,
                             const json::Value &candidate, int deadlineSeconds,
                             std::string &detail) {
  int toWorker[2], fromWorker[2];
  if (pipe(toWorker) != 0 || pipe(fromWorker) != 0) {
    detail = "pipe failed";
    return "harness-error";
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, toWorker[0], 0);
  posix_spawn_file_actions_adddup2(&actions, fromWorker[1], 1);
  for (int fd : {toWorker[0], toWorker[1], fromWorker[0], fromWorker[1]})
    posix_spawn_file_actions_addclose(&actions, fd);
  std::string worker = findWorker();
  char *argv[] = {const_cast<char *>(worker.c_str()), nullptr};
  pid_t pid = 0;
  int spawned =
      posix_spawn(&pid, worker.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(toWorker[0]);
  close(fromWorker[1]);
  if (spawned != 0) {
    close(toWorker[1]);
    close(fromWorker[0]);
    detail = "cannot start " + worker;
    return "harness-error";
  }
  // A dead worker must give an error on write, not a SIGPIPE.
  struct sigaction ignore = {}, previous = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &previous);

  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(deadlineSeconds);
  auto waitReadable = [&]() {
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0)
        return false;
      pollfd entry = {fromWorker[0], POLLIN, 0};
      int ready = poll(&entry, 1, static_cast<int>(left));
      if (ready > 0)
        return true;
    }
  };

  std::string outcome;
  // hello, then one request.
  if (!waitReadable()) {
    outcome = "timeout";
  } else if (auto hello = readMessage(fromWorker[0]);
             !hello || !std::holds_alternative<HelloMessage>(*hello)) {
    outcome = "crash";
    detail = "no hello from the worker";
  } else {
    EvaluateMessage request;
    request.requestId = 1;
    request.task = task;
    request.candidates = {baseline, candidate};
    request.options.seed = 1234;
    Status sent = writeMessage(toWorker[1], request);
    if (!sent.isOk()) {
      outcome = "crash";
      detail = sent.message();
    } else if (!waitReadable()) {
      outcome = "timeout";
      detail = "no report within " + std::to_string(deadlineSeconds) + " s";
    } else if (auto answer = readMessage(fromWorker[0]); !answer) {
      outcome = "crash";
      detail = answer.status().message();
    } else if (const auto *report = std::get_if<ReportMessage>(&*answer)) {
      if (report->reports.size() != 2) {
        outcome = "harness-error";
        detail = "the report has the wrong number of candidates";
      } else {
        outcome = describeOutcome(report->reports[1]);
        detail = json::write(report->reports[1].evidence);
      }
    } else {
      outcome = "harness-error";
      detail = std::string("the worker answered ") + getMessageType(*answer);
    }
  }
  Status bye = writeMessage(toWorker[1], ShutdownMessage());
  bye.ignore();
  close(toWorker[1]);
  close(fromWorker[0]);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  sigaction(SIGPIPE, &previous, nullptr);
  return outcome;
}

struct Row {
  std::string name, expected, got;
  bool ok = false;
};

TEST(AdversarialSuiteTest, EveryCheatIsRejectedForItsReason) {
  auto driver = loadCudaDriver();
  if (!driver) {
    if (gputest::isGpuRequired())
      FAIL() << "KOPT_REQUIRE_GPU=1 but " << driver.status().message();
    GTEST_SKIP() << "the adversarial suite needs a GPU: "
                 << driver.status().message();
  }
  std::string dir = gputest::findTestInputs("KOPT_ADVERSARIAL_DIR",
                                            "test/Evaluator/adversarial");
  auto manifest = gputest::readJsonFile(dir + "manifest.json");
  ASSERT_TRUE(bool(manifest)) << manifest.status().message();
  auto taskJson = gputest::readJsonFile(dir + getString(*manifest, "task"));
  ASSERT_TRUE(bool(taskJson)) << taskJson.status().message();
  auto task = kernelTaskFromJson(*taskJson);
  ASSERT_TRUE(bool(task)) << task.status().message();
  auto baselineJson =
      gputest::readJsonFile(dir + getString(*manifest, "baseline"));
  ASSERT_TRUE(bool(baselineJson)) << baselineJson.status().message();
  auto baseline = kernelPlanFromJson(*baselineJson);
  ASSERT_TRUE(bool(baseline)) << baseline.status().message();

  auto context = CudaContext::create(0);
  ASSERT_TRUE(bool(context)) << context.status().message();

  EvaluatorOptions options;
  options.seed = 1234;
  std::unique_ptr<LaunchRecorder> recorder;
  if (auto created = LaunchRecorder::create()) {
    recorder = std::move(*created);
    options.launchTracer = [&](const PlanExecution &run,
                               size_t expectedLaunches) {
      return recordLaunches(*recorder, run, expectedLaunches);
    };
  } else {
    std::printf("note: no launch accounting: %s\n",
                created.status().message().c_str());
  }

  const json::Value *candidates = manifest->find("candidates");
  ASSERT_TRUE(candidates && candidates->isArray());
  std::vector<Row> rows;
  for (size_t i = 0; i < candidates->size(); ++i) {
    const json::Value &entry = candidates->at(i);
    Row row;
    row.name = getString(entry, "name");
    std::vector<std::string> expected;
    const json::Value *expect = entry.find("expect");
    for (size_t j = 0; expect && j < expect->size(); ++j) {
      expected.push_back(*expect->at(j).getString());
      row.expected += (j ? "|" : "") + expected.back();
    }
    auto planJson = gputest::readJsonFile(dir + getString(entry, "plan"));
    ASSERT_TRUE(bool(planJson)) << planJson.status().message();
    std::string detail;
    const json::Value *isolate = entry.find("isolate");
    if (isolate && isolate->getBool().value_or(false)) {
      row.got = evaluateInWorker(*taskJson, *baselineJson, *planJson,
                                 /*deadlineSeconds=*/90, detail);
    } else {
      auto plan = kernelPlanFromJson(*planJson);
      ASSERT_TRUE(bool(plan)) << plan.status().message();
      auto reports =
          evaluateCandidates(**context, *task, {*baseline, *plan}, options);
      ASSERT_TRUE(bool(reports)) << reports.status().message();
      ASSERT_EQ(reports->size(), 2u);
      EXPECT_TRUE((*reports)[0].valid)
          << row.name
          << ": the baseline failed: " << json::write((*reports)[0].evidence);
      row.got = describeOutcome((*reports)[1]);
      detail = json::write((*reports)[1].evidence);
    }
    row.ok =
        std::find(expected.begin(), expected.end(), row.got) != expected.end();
    EXPECT_TRUE(row.ok) << row.name << ": expected " << row.expected << ", got "
                        << row.got << "; evidence " << detail.substr(0, 2000);
    rows.push_back(row);
  }

  std::printf("\nadversarial suite (%s)\n", dir.c_str());
  std::printf("%-26s %-60s %-22s %s\n", "candidate", "expected", "got",
              "verdict");
  unsigned passed = 0;
  for (const Row &row : rows) {
    std::printf("%-26s %-60s %-22s %s\n", row.name.c_str(),
                row.expected.c_str(), row.got.c_str(), row.ok ? "ok" : "WRONG");
    passed += row.ok;
  }
  std::printf("%u of %zu candidates ended as expected\n", passed, rows.size());
}

} // namespace
