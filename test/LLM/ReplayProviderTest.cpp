//===- ReplayProviderTest.cpp - Recorded answers --------------------------===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/LLM/Provider.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include <sys/stat.h>

using namespace mlir::kopt;
using ::testing::HasSubstr;

namespace {

/// A fresh directory, removed with its files at the end.
class TemporaryDirectory {
public:
  TemporaryDirectory() {
    std::error_code code =
        llvm::sys::fs::createUniqueDirectory("kopt-llm-test", path);
    EXPECT_FALSE(code) << code.message();
  }
  ~TemporaryDirectory() { llvm::sys::fs::remove_directories(path); }
  std::string get() const { return std::string(path); }
  std::string file(llvm::StringRef name) const {
    llvm::SmallString<256> result(path);
    llvm::sys::path::append(result, name);
    return std::string(result);
  }

private:
  llvm::SmallString<256> path;
};

LlmRequest makeRequest(std::string user = "Write a fused kernel.") {
  LlmRequest request;
  request.systemPrompt = "You are a CUDA expert.";
  request.userPrompt = std::move(user);
  return request;
}

std::vector<std::string> listFiles(const std::string &directory) {
  std::vector<std::string> names;
  std::error_code code;
  for (llvm::sys::fs::directory_iterator it(directory, code), end;
       !code && it != end; it.increment(code))
    names.push_back(llvm::sys::path::filename(it->path()).str());
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace

TEST(ReplayProviderTest, HashesSystemNulUser) {
  LlmRequest request;
  request.systemPrompt = "sys";
  request.userPrompt = "user";
  EXPECT_EQ(getPromptHash(request),
            "d9a85eb23dd96f9c5e0bfaa3121633c2d678e44c5582ec82120d4132f70ff461");
  LlmRequest userOnly;
  userOnly.userPrompt = "abc";
  EXPECT_EQ(getPromptHash(userOnly),
            "609f6e36d2405585188d5cfd761f407c7cc46a7d3f314c88270469dde315fcd1");
  // Moving text between the prompts changes the hash.
  LlmRequest moved;
  moved.systemPrompt = "sysu";
  moved.userPrompt = "ser";
  EXPECT_NE(getPromptHash(moved), getPromptHash(request));
}

TEST(ReplayProviderTest, RecordsThenReplays) {
  TemporaryDirectory directory;
  std::string answers = directory.file("answers");
  llvm::Expected<std::unique_ptr<LlmProvider>> recorder =
      createProvider("command", {{"command", "cat"}, {"record-dir", answers}});
  ASSERT_TRUE(static_cast<bool>(recorder))
      << llvm::toString(recorder.takeError());
  EXPECT_EQ((*recorder)->getKind(), "record");
  llvm::Expected<LlmResponse> recorded = (*recorder)->complete(makeRequest());
  ASSERT_TRUE(static_cast<bool>(recorded))
      << llvm::toString(recorded.takeError());
  std::string hash = getPromptHash(makeRequest());
  // One whole file and no temporary left behind.
  EXPECT_EQ(listFiles(answers), std::vector<std::string>{hash + ".json"});

  llvm::Expected<std::unique_ptr<LlmProvider>> replay =
      createProvider("replay", {{"dir", answers}});
  ASSERT_TRUE(static_cast<bool>(replay)) << llvm::toString(replay.takeError());
  EXPECT_EQ((*replay)->getKind(), "replay");
  llvm::Expected<LlmResponse> replayed = (*replay)->complete(makeRequest());
  ASSERT_TRUE(static_cast<bool>(replayed))
      << llvm::toString(replayed.takeError());
  EXPECT_EQ(replayed->text, recorded->text);
  EXPECT_EQ(replayed->text, formatCommandInput(makeRequest()));
  EXPECT_EQ(replayed->model, "cat");
  EXPECT_EQ(replayed->attempts, 0u);

  // Recording the same prompt again replaces the answer in place.
  ASSERT_TRUE(static_cast<bool>((*recorder)->complete(makeRequest())));
  EXPECT_EQ(listFiles(answers), std::vector<std::string>{hash + ".json"});
}

TEST(ReplayProviderTest, NamesTheHashOfAMissingAnswer) {
  TemporaryDirectory directory;
  llvm::Expected<std::unique_ptr<LlmProvider>> replay =
      createReplayProvider(directory.get());
  ASSERT_TRUE(static_cast<bool>(replay)) << llvm::toString(replay.takeError());
  llvm::Expected<LlmResponse> response =
      (*replay)->complete(makeRequest("never asked"));
  ASSERT_FALSE(static_cast<bool>(response));
  std::string message = llvm::toString(response.takeError());
  EXPECT_THAT(message, HasSubstr(getPromptHash(makeRequest("never asked"))));
  EXPECT_THAT(message, HasSubstr(directory.get()));
}

TEST(ReplayProviderTest, AnswersFromAHandWrittenTextFile) {
  TemporaryDirectory directory;
  std::string hash = getPromptHash(makeRequest());
  {
    std::error_code code;
    llvm::raw_fd_ostream out(directory.file(hash + ".txt"), code);
    ASSERT_FALSE(code) << code.message();
    out << "```cuda\n__global__ void k() {}\n```\n";
  }
  llvm::Expected<std::unique_ptr<LlmProvider>> replay =
      createReplayProvider(directory.get());
  ASSERT_TRUE(static_cast<bool>(replay)) << llvm::toString(replay.takeError());
  llvm::Expected<LlmResponse> response = (*replay)->complete(makeRequest());
  ASSERT_TRUE(static_cast<bool>(response))
      << llvm::toString(response.takeError());
  EXPECT_EQ(response->text, "```cuda\n__global__ void k() {}\n```\n");
}

TEST(ReplayProviderTest, RejectsABrokenRecord) {
  TemporaryDirectory directory;
  std::string hash = getPromptHash(makeRequest());
  {
    std::error_code code;
    llvm::raw_fd_ostream out(directory.file(hash + ".json"), code);
    ASSERT_FALSE(code) << code.message();
    out << "{\"format\": \"kopt.llm.answer/1\"}";
  }
  llvm::Expected<std::unique_ptr<LlmProvider>> replay =
      createReplayProvider(directory.get());
  ASSERT_TRUE(static_cast<bool>(replay)) << llvm::toString(replay.takeError());
  llvm::Expected<LlmResponse> response = (*replay)->complete(makeRequest());
  ASSERT_FALSE(static_cast<bool>(response));
  EXPECT_THAT(llvm::toString(response.takeError()),
              HasSubstr("has no \"text\""));
}

TEST(ReplayProviderTest, RefusesARecordNestedTooDeep) {
  // 100,000 levels would exhaust llvm::json::parse's stack.
  TemporaryDirectory directory;
  std::string hash = getPromptHash(makeRequest());
  {
    std::error_code code;
    llvm::raw_fd_ostream out(directory.file(hash + ".json"), code);
    ASSERT_FALSE(code) << code.message();
    out << "{\"format\": \"kopt.llm.answer/1\", \"text\": \"x\", \"extra\": "
        << std::string(100000, '[') << std::string(100000, ']') << "}";
  }
  llvm::Expected<std::unique_ptr<LlmProvider>> replay =
      createReplayProvider(directory.get());
  ASSERT_TRUE(static_cast<bool>(replay)) << llvm::toString(replay.takeError());
  llvm::Expected<LlmResponse> response = (*replay)->complete(makeRequest());
  ASSERT_FALSE(static_cast<bool>(response));
  EXPECT_THAT(llvm::toString(response.takeError()),
              HasSubstr("nesting deeper than 128 levels"));
}

TEST(ReplayProviderTest, RefusesARecordThatIsNotAFile) {
  TemporaryDirectory directory;
  std::string hash = getPromptHash(makeRequest());
  std::string fifo = directory.file(hash + ".txt");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  llvm::Expected<std::unique_ptr<LlmProvider>> replay =
      createReplayProvider(directory.get());
  ASSERT_TRUE(static_cast<bool>(replay)) << llvm::toString(replay.takeError());
  llvm::Expected<LlmResponse> response = (*replay)->complete(makeRequest());
  ASSERT_FALSE(static_cast<bool>(response));
  EXPECT_THAT(llvm::toString(response.takeError()),
              HasSubstr("is not a regular file"));
}

TEST(ReplayProviderTest, NeedsAnExistingDirectory) {
  llvm::Expected<std::unique_ptr<LlmProvider>> replay =
      createProvider("replay", {{"dir", "/nonexistent/kopt-llm-answers"}});
  ASSERT_FALSE(static_cast<bool>(replay));
  EXPECT_THAT(llvm::toString(replay.takeError()),
              HasSubstr("/nonexistent/kopt-llm-answers does not exist"));
  llvm::Expected<std::unique_ptr<LlmProvider>> noDir =
      createProvider("replay", {});
  ASSERT_FALSE(static_cast<bool>(noDir));
  EXPECT_THAT(llvm::toString(noDir.takeError()), HasSubstr("option 'dir'"));
}

TEST(ReplayProviderTest, DoesNotRecordFailures) {
  TemporaryDirectory directory;
  llvm::Expected<std::unique_ptr<LlmProvider>> recorder = createProvider(
      "command", {{"command", "false"}, {"record-dir", directory.get()}});
  ASSERT_TRUE(static_cast<bool>(recorder))
      << llvm::toString(recorder.takeError());
  llvm::Expected<LlmResponse> response = (*recorder)->complete(makeRequest());
  ASSERT_FALSE(static_cast<bool>(response));
  llvm::consumeError(response.takeError());
  EXPECT_TRUE(listFiles(directory.get()).empty());
}

TEST(ReplayProviderTest, ConcurrentRecordersLeaveWholeFiles) {
  TemporaryDirectory directory;
  llvm::Expected<std::unique_ptr<LlmProvider>> recorder = createProvider(
      "command", {{"command", "cat"}, {"record-dir", directory.get()}});
  ASSERT_TRUE(static_cast<bool>(recorder))
      << llvm::toString(recorder.takeError());
  // Eight threads, two prompts: each prompt is recorded four times at once.
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      llvm::Expected<LlmResponse> response =
          (*recorder)->complete(makeRequest(i % 2 ? "odd" : "even"));
      if (!response) {
        llvm::consumeError(response.takeError());
        ++failures;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failures.load(), 0);
  std::vector<std::string> expected = {
      getPromptHash(makeRequest("even")) + ".json",
      getPromptHash(makeRequest("odd")) + ".json"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(listFiles(directory.get()), expected);
  llvm::Expected<std::unique_ptr<LlmProvider>> replay =
      createReplayProvider(directory.get());
  ASSERT_TRUE(static_cast<bool>(replay)) << llvm::toString(replay.takeError());
  for (const char *user : {"even", "odd"}) {
    llvm::Expected<LlmResponse> response =
        (*replay)->complete(makeRequest(user));
    ASSERT_TRUE(static_cast<bool>(response))
        << llvm::toString(response.takeError());
    EXPECT_EQ(response->text, formatCommandInput(makeRequest(user)));
  }
}
