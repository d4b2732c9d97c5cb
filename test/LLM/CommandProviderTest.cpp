//===- CommandProviderTest.cpp - A program as the model -------------------===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/LLM/Provider.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <chrono>

using namespace mlir::kopt;
using ::testing::HasSubstr;

namespace {

std::unique_ptr<LlmProvider>
makeCommand(std::vector<std::string> argv,
            std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  CommandOptions options;
  options.argv = std::move(argv);
  options.timeout = timeout;
  llvm::Expected<std::unique_ptr<LlmProvider>> provider =
      createCommandProvider(std::move(options));
  EXPECT_TRUE(static_cast<bool>(provider))
      << llvm::toString(provider.takeError());
  return provider ? std::move(*provider) : nullptr;
}

std::string getFailure(LlmProvider &provider, const LlmRequest &request) {
  llvm::Expected<LlmResponse> response = provider.complete(request);
  if (response) {
    ADD_FAILURE() << "expected a failure, got: " << response->text;
    return "";
  }
  return llvm::toString(response.takeError());
}

LlmRequest makeRequest() {
  LlmRequest request;
  request.systemPrompt = "system line";
  request.userPrompt = "user line 1\nuser line 2\n";
  return request;
}

} // namespace

TEST(CommandProviderTest, FormatsTheInput) {
  EXPECT_EQ(formatCommandInput(makeRequest()),
            "system line\n\nuser line 1\nuser line 2\n");
  LlmRequest userOnly;
  userOnly.userPrompt = "only";
  EXPECT_EQ(formatCommandInput(userOnly), "only");
}

TEST(CommandProviderTest, TakesStdoutAsTheAnswer) {
  std::unique_ptr<LlmProvider> provider = makeCommand({"cat"});
  ASSERT_TRUE(provider);
  EXPECT_EQ(provider->getKind(), "command");
  llvm::Expected<LlmResponse> response = provider->complete(makeRequest());
  ASSERT_TRUE(static_cast<bool>(response))
      << llvm::toString(response.takeError());
  EXPECT_EQ(response->text, formatCommandInput(makeRequest()));
  EXPECT_EQ(response->model, "cat");
  EXPECT_EQ(response->attempts, 1u);
}

TEST(CommandProviderTest, PassesLargePromptsThrough) {
  LlmRequest request;
  request.userPrompt = std::string(3 << 20, 'k');
  std::unique_ptr<LlmProvider> provider = makeCommand({"cat"});
  ASSERT_TRUE(provider);
  llvm::Expected<LlmResponse> response = provider->complete(request);
  ASSERT_TRUE(static_cast<bool>(response))
      << llvm::toString(response.takeError());
  EXPECT_EQ(response->text.size(), request.userPrompt.size());
}

TEST(CommandProviderTest, AProgramThatIgnoresItsInputIsFine) {
  LlmRequest request;
  request.userPrompt = std::string(1 << 20, 'p');
  std::unique_ptr<LlmProvider> provider =
      makeCommand({"sh", "-c", "echo answer"});
  ASSERT_TRUE(provider);
  llvm::Expected<LlmResponse> response = provider->complete(request);
  ASSERT_TRUE(static_cast<bool>(response))
      << llvm::toString(response.takeError());
  EXPECT_EQ(response->text, "answer\n");
}

TEST(CommandProviderTest, ANonZeroExitFailsWithStderr) {
  std::unique_ptr<LlmProvider> provider = makeCommand({"false"});
  ASSERT_TRUE(provider);
  EXPECT_THAT(getFailure(*provider, makeRequest()),
              HasSubstr("'false' failed with exit status 1 (no stderr)"));

  std::unique_ptr<LlmProvider> noisy =
      makeCommand({"sh", "-c",
                   "cat >/dev/null; echo model is down >&2; "
                   "echo partial; exit 3"});
  ASSERT_TRUE(noisy);
  std::string message = getFailure(*noisy, makeRequest());
  EXPECT_THAT(message, HasSubstr("exit status 3"));
  EXPECT_THAT(message, HasSubstr("model is down"));
}

TEST(CommandProviderTest, KillsAProgramPastItsTimeout) {
  std::unique_ptr<LlmProvider> provider = makeCommand(
      {"sh", "-c", "sleep 30; echo late"}, std::chrono::milliseconds(300));
  ASSERT_TRUE(provider);
  auto start = std::chrono::steady_clock::now();
  std::string message = getFailure(*provider, makeRequest());
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_THAT(message, HasSubstr("timed out after 300 ms"));
  EXPECT_LT(seconds, 5.0);
}

TEST(CommandProviderTest, CapsItsOutput) {
  CommandOptions options;
  options.argv = {"sh", "-c", "head -c 1000000 /dev/zero"};
  options.maxOutputBytes = 4096;
  llvm::Expected<std::unique_ptr<LlmProvider>> provider =
      createCommandProvider(options);
  ASSERT_TRUE(static_cast<bool>(provider))
      << llvm::toString(provider.takeError());
  EXPECT_THAT(getFailure(**provider, makeRequest()),
              HasSubstr("more than the limit of 4096 bytes"));
}

TEST(CommandProviderTest, ReportsAMissingProgram) {
  std::unique_ptr<LlmProvider> provider =
      makeCommand({"kopt-no-such-program-here"});
  ASSERT_TRUE(provider);
  EXPECT_THAT(getFailure(*provider, makeRequest()),
              HasSubstr("cannot run the LLM command "
                        "'kopt-no-such-program-here'"));
}

TEST(CommandProviderTest, NeedsAProgram) {
  llvm::Expected<std::unique_ptr<LlmProvider>> provider =
      createCommandProvider(CommandOptions());
  ASSERT_FALSE(static_cast<bool>(provider));
  EXPECT_THAT(llvm::toString(provider.takeError()),
              HasSubstr("needs a program"));
}
