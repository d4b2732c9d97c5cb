//===- JobChildTest.cpp - Tests of a job's child process --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Runs one attempt at a job in /bin/sh children that write an outcome, crash,
// hang, fail or say nothing, and reads and writes the files a job's child
// exchanges with its worker.
//
//===----------------------------------------------------------------------===//

#include "kopt/Fleet/JobChild.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "gtest/gtest.h"

#include <chrono>
#include <fstream>

using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

namespace {

rt::TuningJob makeJob() {
  rt::TuningJob job;
  job.id = 12;
  job.taskKey = "0123456789abcdef";
  job.task = rt::json::Value::object();
  job.task.set("schema", rt::json::Value("kopt.task/1"));
  return job;
}

/// The child: /bin/sh running `script`, with the job file as `$1`, the
/// outcome file as `$2` and `arguments` after them.
JobChildCommand shell(const std::string &script,
                      std::vector<std::string> arguments = {}) {
  JobChildCommand command;
  command.program = {"/bin/sh", "-c", script, "sh"};
  command.arguments = std::move(arguments);
  return command;
}

/// Writes the outcome `error`/`how` as the child would.
constexpr const char *kWriteOutcome =
    "printf '{\"error\": \"%s\", \"how\": \"%s\"}' \"$3\" \"$4\" "
    "> \"${2#--job-outcome=}\"";

/// A path in a fresh temporary folder, removed with it.
struct TemporaryFolder {
  llvm::SmallString<128> path;
  TemporaryFolder() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("kopt-job-test", path));
  }
  ~TemporaryFolder() { llvm::sys::fs::remove_directories(path); }
  std::string file(const std::string &name) const {
    return (path + "/" + name).str();
  }
};

TEST(JobChildTest, OutcomeOfTheChildIsRead) {
  JobResult result =
      runJobInChildProcess(makeJob(), shell(kWriteOutcome, {"", "tuned"}));
  EXPECT_TRUE(result.finished);
  EXPECT_EQ(result.error, "");
  EXPECT_EQ(result.how, "tuned");

  result = runJobInChildProcess(
      makeJob(), shell(kWriteOutcome, {"no valid candidate", ""}));
  EXPECT_TRUE(result.finished);
  EXPECT_EQ(result.error, "no valid candidate");
}

TEST(JobChildTest, ChildReadsTheJobItWasGiven) {
  TemporaryFolder folder;
  std::string copy = folder.file("job.json");
  JobResult result = runJobInChildProcess(
      makeJob(),
      shell("cp \"${1#--run-job=}\" \"$5\" && " + std::string(kWriteOutcome),
            {"", "hit", copy}));
  ASSERT_TRUE(result.finished) << result.error;
  auto job = readJobFile(copy);
  ASSERT_TRUE(bool(job)) << llvm::toString(job.takeError());
  EXPECT_EQ(job->id, 12);
  EXPECT_EQ(job->taskKey, "0123456789abcdef");
  EXPECT_EQ(rt::json::write(job->task), rt::json::write(makeJob().task));
}

TEST(JobChildTest, ChildGetsTheEnvironment) {
  JobChildCommand command =
      shell("[ \"$KOPT_JOB_TEST\" = yes ] && " + std::string(kWriteOutcome),
            {"", "tuned"});
  EXPECT_FALSE(runJobInChildProcess(makeJob(), command).finished);
  command.environment = {"KOPT_JOB_TEST=yes"};
  EXPECT_TRUE(runJobInChildProcess(makeJob(), command).finished);
}

TEST(JobChildTest, CrashIsAnUnfinishedAttempt) {
  JobResult result = runJobInChildProcess(makeJob(), shell("kill -SEGV $$"));
  EXPECT_FALSE(result.finished);
  EXPECT_EQ(result.error, "the compile child crashed (Segmentation fault)");
}

TEST(JobChildTest, HangIsKilledAtTheTimeout) {
  JobChildCommand command = shell("sleep 30");
  command.timeoutSeconds = 1;
  auto start = std::chrono::steady_clock::now();
  JobResult result = runJobInChildProcess(makeJob(), command);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_FALSE(result.finished);
  EXPECT_EQ(result.error,
            "the compile child ran past the job timeout of 1 s and was killed");
}

TEST(JobChildTest, ExitWithoutOutcomeIsAnUnfinishedAttempt) {
  JobResult result = runJobInChildProcess(makeJob(), shell("exit 3"));
  EXPECT_FALSE(result.finished);
  EXPECT_EQ(result.error, "the compile child exited with status 3");

  result = runJobInChildProcess(makeJob(), shell("exit 0"));
  EXPECT_FALSE(result.finished);
  EXPECT_EQ(result.error, "the compile child exited without an outcome");

  result = runJobInChildProcess(
      makeJob(), shell("echo '{\"error\": 1}' > \"${2#--job-outcome=}\""));
  EXPECT_FALSE(result.finished);
  EXPECT_EQ(result.error, "the compile child exited without an outcome");
}

TEST(JobChildTest, MissingProgramIsAnUnfinishedAttempt) {
  JobChildCommand command;
  command.program = {"/nonexistent/kopt", "serve-worker"};
  JobResult result = runJobInChildProcess(makeJob(), command);
  EXPECT_FALSE(result.finished);
  EXPECT_EQ(result.error, "the compile child could not be started: No such "
                          "file or directory");
}

TEST(JobChildTest, OutcomeFileRoundTrips) {
  TemporaryFolder folder;
  std::string path = folder.file("outcome.json");
  ASSERT_FALSE(bool(writeJobOutcome(path, "why \"not\"", "")));
  auto text = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(text));
  auto document = rt::json::parse((*text)->getBuffer().str());
  ASSERT_TRUE(bool(document));
  ASSERT_NE(document->find("error"), nullptr);
  EXPECT_EQ(*document->find("error")->getString(), "why \"not\"");
  EXPECT_EQ(*document->find("how")->getString(), "");
}

TEST(JobChildTest, BadJobFilesAreErrors) {
  TemporaryFolder folder;
  std::string missing = folder.file("missing.json");
  auto job = readJobFile(missing);
  ASSERT_FALSE(bool(job));
  EXPECT_EQ(llvm::toString(job.takeError()),
            "cannot read job file '" + missing +
                "': No such file or directory");

  std::string broken = folder.file("broken.json");
  std::ofstream(broken) << "{\"id\": ";
  job = readJobFile(broken);
  ASSERT_FALSE(bool(job));
  EXPECT_EQ(
      llvm::toString(job.takeError()).rfind("job file '" + broken + "': ", 0),
      0u);
}

TEST(JobChildTest, OutcomeWriteErrorIsReturned) {
  if (!llvm::sys::fs::exists("/dev/full"))
    GTEST_SKIP() << "no /dev/full here";
  llvm::Error error = writeJobOutcome("/dev/full", "", "tuned");
  ASSERT_TRUE(bool(error));
  EXPECT_EQ(llvm::toString(std::move(error)),
            "cannot write '/dev/full': No space left on device");
}

} // namespace
