//===- OpenAIProviderTest.cpp - The openai provider against a mock --------===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The `openai` provider against MockServer on loopback: valid answers,
// malformed ones, retries on 429/5xx/timeouts/dropped connections, the size
// cap, concurrency, configuration from the environment, and the rule that
// the API key never appears in an error.
//
//===----------------------------------------------------------------------===//

#include "MockServer.h"

#include "kopt/LLM/Provider.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <chrono>
#include <cstdlib>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace mlir::kopt;
using namespace mlir::kopt::test;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

constexpr const char *kSecret = "sk-test-7f3a9c1e5b2d4f60-DO-NOT-LEAK";

std::string makeAnswer(const std::string &content, int promptTokens = 12,
                       int completionTokens = 34) {
  llvm::json::Object message{{"role", "assistant"}, {"content", content}};
  llvm::json::Object choice{
      {"index", 0}, {"message", std::move(message)}, {"finish_reason", "stop"}};
  llvm::json::Object root{
      {"id", "chatcmpl-1"},
      {"object", "chat.completion"},
      {"model", "served-model"},
      {"choices", llvm::json::Array{std::move(choice)}},
      {"usage",
       llvm::json::Object{{"prompt_tokens", promptTokens},
                          {"completion_tokens", completionTokens},
                          {"total_tokens", promptTokens + completionTokens}}}};
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(root));
  return text;
}

MockReply ok(const std::string &content = "hello") {
  MockReply reply;
  reply.body = makeAnswer(content);
  return reply;
}

MockReply status(int code, std::vector<std::string> headers = {},
                 std::string body = "{\"error\":{\"message\":\"busy\"}}") {
  MockReply reply;
  reply.status = code;
  reply.headers = std::move(headers);
  reply.body = std::move(body);
  return reply;
}

MockReply ofKind(MockReply::Kind kind) {
  MockReply reply = ok();
  reply.kind = kind;
  return reply;
}

LlmRequest makeRequest() {
  LlmRequest request;
  request.systemPrompt = "You write CUDA kernels.";
  request.userPrompt = "Fuse add and relu.";
  request.maxTokens = 256;
  request.temperature = 0.25;
  return request;
}

class OpenAIProviderTest : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_NE(server.getPort(), 0); }

  OpenAIOptions makeOptions() {
    OpenAIOptions options;
    options.endpoint = server.getEndpoint();
    options.model = "mock-model";
    options.apiKey = kSecret;
    options.connectTimeout = std::chrono::milliseconds(2000);
    options.requestTimeout = std::chrono::milliseconds(3000);
    options.maxRetries = 2;
    options.initialBackoff = std::chrono::milliseconds(10);
    return options;
  }

  std::unique_ptr<LlmProvider> makeProvider(OpenAIOptions options) {
    llvm::Expected<std::unique_ptr<LlmProvider>> provider =
        createOpenAIProvider(std::move(options));
    EXPECT_TRUE(static_cast<bool>(provider))
        << llvm::toString(provider.takeError());
    return provider ? std::move(*provider) : nullptr;
  }

  /// Runs `request` and returns its error message, which must exist and
  /// must not contain the key.
  std::string getFailure(LlmProvider &provider,
                         const LlmRequest &request = makeRequest()) {
    llvm::Expected<LlmResponse> response = provider.complete(request);
    if (response) {
      ADD_FAILURE() << "expected a failure, got: " << response->text;
      return "";
    }
    std::string message = llvm::toString(response.takeError());
    EXPECT_THAT(message, Not(HasSubstr(kSecret)));
    return message;
  }

  MockServer server;
};

} // namespace

TEST(RedactSecretTest, ReplacesEveryOccurrence) {
  EXPECT_EQ(redactSecret("key=abc, again abc.", "abc"),
            "key=[REDACTED], again [REDACTED].");
  EXPECT_EQ(redactSecret("nothing here", "abc"), "nothing here");
  EXPECT_EQ(redactSecret("abc", ""), "abc");
  EXPECT_EQ(redactSecret("abcabc", "abc"), "[REDACTED][REDACTED]");
}

TEST_F(OpenAIProviderTest, ReturnsTheAnswerAndItsUsage) {
  server.setScript({ok("__global__ void k() {}")});
  std::unique_ptr<LlmProvider> provider = makeProvider(makeOptions());
  ASSERT_TRUE(provider);
  EXPECT_EQ(provider->getKind(), "openai");
  llvm::Expected<LlmResponse> response = provider->complete(makeRequest());
  ASSERT_TRUE(static_cast<bool>(response))
      << llvm::toString(response.takeError());
  EXPECT_EQ(response->text, "__global__ void k() {}");
  EXPECT_EQ(response->model, "served-model");
  EXPECT_EQ(response->promptTokens, 12u);
  EXPECT_EQ(response->completionTokens, 34u);
  EXPECT_EQ(response->httpStatus, 200);
  EXPECT_EQ(response->attempts, 1u);
  EXPECT_GE(response->latencySeconds, 0.0);

  std::vector<ReceivedRequest> received = server.getReceived();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].requestLine, "POST /v1/chat/completions HTTP/1.1");
  EXPECT_THAT(received[0].headers,
              HasSubstr(std::string("Authorization: Bearer ") + kSecret));
  EXPECT_THAT(received[0].headers, HasSubstr("Content-Type: application/json"));
  llvm::Expected<llvm::json::Value> body = llvm::json::parse(received[0].body);
  ASSERT_TRUE(static_cast<bool>(body)) << llvm::toString(body.takeError());
  const llvm::json::Object *root = body->getAsObject();
  ASSERT_TRUE(root);
  EXPECT_EQ(root->getString("model"), "mock-model");
  EXPECT_EQ(root->getInteger("max_tokens"), 256);
  EXPECT_EQ(root->getNumber("temperature"), 0.25);
  const llvm::json::Array *messages = root->getArray("messages");
  ASSERT_TRUE(messages);
  ASSERT_EQ(messages->size(), 2u);
  EXPECT_EQ((*messages)[0].getAsObject()->getString("role"), "system");
  EXPECT_EQ((*messages)[0].getAsObject()->getString("content"),
            "You write CUDA kernels.");
  EXPECT_EQ((*messages)[1].getAsObject()->getString("role"), "user");
  EXPECT_EQ((*messages)[1].getAsObject()->getString("content"),
            "Fuse add and relu.");
}

TEST_F(OpenAIProviderTest, SendsNoAuthorizationWithoutAKey) {
  server.setScript({ok()});
  OpenAIOptions options = makeOptions();
  options.apiKey.clear();
  ::unsetenv("KOPT_LLM_API_KEY");
  std::unique_ptr<LlmProvider> provider = makeProvider(options);
  ASSERT_TRUE(provider);
  ASSERT_TRUE(static_cast<bool>(provider->complete(makeRequest())));
  std::vector<ReceivedRequest> received = server.getReceived();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_THAT(received[0].headers, Not(HasSubstr("Authorization")));
}

TEST_F(OpenAIProviderTest, MalformedJsonFailsWithoutRetry) {
  server.setScript({status(200, {}, "{\"choices\": [ {\"message\": ")});
  std::unique_ptr<LlmProvider> provider = makeProvider(makeOptions());
  ASSERT_TRUE(provider);
  std::string message = getFailure(*provider);
  EXPECT_THAT(message, HasSubstr("not valid JSON"));
  EXPECT_THAT(message, HasSubstr("{\"choices\""));
  EXPECT_EQ(server.getReceived().size(), 1u);
}

TEST_F(OpenAIProviderTest, RefusesAnAnswerNestedTooDeep) {
  // 200 KB, under the size cap, but deep enough to exhaust a recursive
  // parser's stack.
  server.setScript({status(200, {},
                           "{\"choices\": " + std::string(100000, '[') +
                               std::string(100000, ']') + "}")});
  std::unique_ptr<LlmProvider> provider = makeProvider(makeOptions());
  ASSERT_TRUE(provider);
  std::string message = getFailure(*provider);
  EXPECT_THAT(message, HasSubstr("not valid JSON"));
  EXPECT_THAT(message, HasSubstr("nesting deeper than 128 levels"));
}

TEST_F(OpenAIProviderTest, MissingChoicesFails) {
  server.setScript({status(200, {}, "{\"object\": \"chat.completion\"}")});
  std::unique_ptr<LlmProvider> provider = makeProvider(makeOptions());
  ASSERT_TRUE(provider);
  EXPECT_THAT(getFailure(*provider), HasSubstr("has no choices"));
}

TEST_F(OpenAIProviderTest, MissingContentFails) {
  server.setScript(
      {status(200, {}, "{\"choices\": [{\"message\": {\"role\": \"x\"}}]}")});
  std::unique_ptr<LlmProvider> provider = makeProvider(makeOptions());
  ASSERT_TRUE(provider);
  EXPECT_THAT(getFailure(*provider),
              HasSubstr("no choices[0].message.content"));
}

TEST_F(OpenAIProviderTest, HonoursRetryAfterOn429) {
  server.setScript({status(429, {"Retry-After: 1"}), ok("after the wait")});
  std::unique_ptr<LlmProvider> provider = makeProvider(makeOptions());
  ASSERT_TRUE(provider);
  auto start = std::chrono::steady_clock::now();
  llvm::Expected<LlmResponse> response = provider->complete(makeRequest());
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(static_cast<bool>(response))
      << llvm::toString(response.takeError());
  EXPECT_EQ(response->text, "after the wait");
  EXPECT_EQ(response->attempts, 2u);
  // The backoff alone would have waited 10 ms.
  EXPECT_GE(seconds, 0.95);
  EXPECT_GE(response->latencySeconds, 0.95);
  EXPECT_EQ(server.getReceived().size(), 2u);
}

TEST_F(OpenAIProviderTest, RetriesAfterAServerError) {
  server.setScript({status(500), ok("second time")});
  std::unique_ptr<LlmProvider> provider = makeProvider(makeOptions());
  ASSERT_TRUE(provider);
  llvm::Expected<LlmResponse> response = provider->complete(makeRequest());
  ASSERT_TRUE(static_cast<bool>(response))
      << llvm::toString(response.takeError());
  EXPECT_EQ(response->text, "second time");
  EXPECT_EQ(response->attempts, 2u);
}

TEST_F(OpenAIProviderTest, GivesUpAfterMaxRetries) {
  server.setScript({status(500, {}, "{\"error\": \"overloaded\"}")});
  OpenAIOptions options = makeOptions();
  options.maxRetries = 3;
  std::unique_ptr<LlmProvider> provider = makeProvider(options);
  ASSERT_TRUE(provider);
  std::string message = getFailure(*provider);
  EXPECT_THAT(message, HasSubstr("failed after 4 attempts"));
  EXPECT_THAT(message, HasSubstr("HTTP 500"));
  EXPECT_THAT(message, HasSubstr("overloaded"));
  EXPECT_EQ(server.getReceived().size(), 4u);
}

TEST_F(OpenAIProviderTest, FailsAtOnceOnAClientError) {
  // A server that echoes the key it was given must not get it into errors.
  server.setScript({status(
      401, {}, std::string("{\"error\": \"bad key ") + kSecret + "\"}")});
  std::unique_ptr<LlmProvider> provider = makeProvider(makeOptions());
  ASSERT_TRUE(provider);
  std::string message = getFailure(*provider);
  EXPECT_THAT(message, HasSubstr("HTTP 401"));
  EXPECT_THAT(message, HasSubstr("bad key [REDACTED]"));
  EXPECT_EQ(server.getReceived().size(), 1u);
}

TEST_F(OpenAIProviderTest, RedactsTheKeyEchoedInTheAnswer) {
  // A server that echoes the Authorization header into `content` and
  // `model`.
  MockReply reply;
  std::string echoed = std::string("Bearer ") + kSecret;
  reply.body = makeAnswer("you sent " + echoed);
  size_t at = reply.body.find("served-model");
  ASSERT_NE(at, std::string::npos);
  reply.body.replace(at, 12, echoed);
  server.setScript({reply});
  std::unique_ptr<LlmProvider> provider = makeProvider(makeOptions());
  ASSERT_TRUE(provider);
  llvm::Expected<LlmResponse> response = provider->complete(makeRequest());
  ASSERT_TRUE(static_cast<bool>(response))
      << llvm::toString(response.takeError());
  EXPECT_EQ(response->text, "you sent Bearer [REDACTED]");
  EXPECT_EQ(response->model, "Bearer [REDACTED]");
}

TEST_F(OpenAIProviderTest, KeepsCredentialsOfTheEndpointOutOfErrors) {
  // A key in the endpoint's user information, not known as the API key.
  server.setScript({status(404, {}, "no such route")});
  OpenAIOptions options = makeOptions();
  options.apiKey.clear();
  options.endpoint = "http://user:" + std::string(kSecret) +
                     "@127.0.0.1:" + std::to_string(server.getPort()) + "/v1";
  std::unique_ptr<LlmProvider> provider = makeProvider(options);
  ASSERT_TRUE(provider);
  std::string message = getFailure(*provider);
  EXPECT_THAT(message, HasSubstr("HTTP 404"));
  EXPECT_THAT(message, HasSubstr("http://***@127.0.0.1:"));
}

TEST_F(OpenAIProviderTest, AStalledServerCostsAtMostTheTotalTimeout) {
  server.setScript({ofKind(MockReply::Kind::Hang)});
  OpenAIOptions options = makeOptions();
  options.requestTimeout = std::chrono::milliseconds(400);
  options.totalTimeout = std::chrono::milliseconds(1000);
  options.maxRetries = 100;
  std::unique_ptr<LlmProvider> provider = makeProvider(options);
  ASSERT_TRUE(provider);
  auto start = std::chrono::steady_clock::now();
  std::string message = getFailure(*provider);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_THAT(message, HasSubstr("total-timeout-ms"));
  EXPECT_LT(seconds, 3.0);
  EXPECT_LE(server.getReceived().size(), 4u);
}

TEST(OpenAIProviderConfigTest, DefaultStallBoundIsTenMinutes) {
  OpenAIOptions options;
  EXPECT_EQ(options.totalTimeout, std::chrono::minutes(10));
  EXPECT_LE(options.requestTimeout, options.totalTimeout);
}

TEST_F(OpenAIProviderTest, TimesOutAndRetries) {
  server.setScript({ofKind(MockReply::Kind::Hang)});
  OpenAIOptions options = makeOptions();
  options.requestTimeout = std::chrono::milliseconds(300);
  options.maxRetries = 1;
  std::unique_ptr<LlmProvider> provider = makeProvider(options);
  ASSERT_TRUE(provider);
  auto start = std::chrono::steady_clock::now();
  std::string message = getFailure(*provider);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_THAT(message, HasSubstr("failed after 2 attempts"));
  EXPECT_THAT(message, HasSubstr("Timeout"));
  EXPECT_LT(seconds, 5.0);
  EXPECT_EQ(server.getReceived().size(), 2u);
}

TEST_F(OpenAIProviderTest, RetriesAfterAConnectionDropMidAnswer) {
  server.setScript({ofKind(MockReply::Kind::DropMidBody), ok("whole")});
  std::unique_ptr<LlmProvider> provider = makeProvider(makeOptions());
  ASSERT_TRUE(provider);
  llvm::Expected<LlmResponse> response = provider->complete(makeRequest());
  ASSERT_TRUE(static_cast<bool>(response))
      << llvm::toString(response.takeError());
  EXPECT_EQ(response->text, "whole");
  EXPECT_EQ(response->attempts, 2u);
}

TEST_F(OpenAIProviderTest, ReportsAConnectionThatKeepsDropping) {
  server.setScript({ofKind(MockReply::Kind::DropMidBody)});
  std::unique_ptr<LlmProvider> provider = makeProvider(makeOptions());
  ASSERT_TRUE(provider);
  std::string message = getFailure(*provider);
  EXPECT_THAT(message, HasSubstr("failed after 3 attempts"));
  EXPECT_EQ(server.getReceived().size(), 3u);
}

TEST_F(OpenAIProviderTest, SurvivesAServerThatHangsUpOnALargePrompt) {
  // The client is still sending when the server closes: a send error, not
  // a SIGPIPE that would end the test process.
  server.setScript({ofKind(MockReply::Kind::CloseAfterHead), ok("whole")});
  LlmRequest request = makeRequest();
  request.userPrompt = std::string(16u << 20, 'p');
  std::unique_ptr<LlmProvider> provider = makeProvider(makeOptions());
  ASSERT_TRUE(provider);
  llvm::Expected<LlmResponse> response = provider->complete(request);
  ASSERT_TRUE(static_cast<bool>(response))
      << llvm::toString(response.takeError());
  EXPECT_EQ(response->text, "whole");
  EXPECT_EQ(response->attempts, 2u);
}

TEST_F(OpenAIProviderTest, CapsAHugeAnswer) {
  MockReply huge = ofKind(MockReply::Kind::Huge);
  huge.hugeBytes = 8u << 20;
  server.setScript({huge});
  OpenAIOptions options = makeOptions();
  options.maxResponseBytes = 64 * 1024;
  std::unique_ptr<LlmProvider> provider = makeProvider(options);
  ASSERT_TRUE(provider);
  std::string message = getFailure(*provider);
  EXPECT_THAT(message, HasSubstr("larger than the limit of 65536 bytes"));
  EXPECT_EQ(server.getReceived().size(), 1u);
}

TEST_F(OpenAIProviderTest, RetriesARefusedConnection) {
  // A port that was free a moment ago and has no listener now.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&address), length), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length),
            0);
  ::close(fd);
  OpenAIOptions options = makeOptions();
  options.endpoint =
      "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/v1";
  std::unique_ptr<LlmProvider> provider = makeProvider(options);
  ASSERT_TRUE(provider);
  std::string message = getFailure(*provider);
  EXPECT_THAT(message, HasSubstr("failed after 3 attempts"));
  EXPECT_THAT(message, HasSubstr("onnect"));
}

TEST_F(OpenAIProviderTest, ServesSeveralThreadsAtOnce) {
  server.setScript({ok("parallel")});
  std::unique_ptr<LlmProvider> provider = makeProvider(makeOptions());
  ASSERT_TRUE(provider);
  constexpr int kThreads = 8;
  std::vector<std::string> texts(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      llvm::Expected<LlmResponse> response = provider->complete(makeRequest());
      texts[i] = response ? response->text
                          : "error: " + llvm::toString(response.takeError());
    });
  for (std::thread &thread : threads)
    thread.join();
  for (const std::string &text : texts)
    EXPECT_EQ(text, "parallel");
  EXPECT_EQ(server.getReceived().size(), static_cast<size_t>(kThreads));
}

TEST_F(OpenAIProviderTest, ReadsItsSettingsFromTheEnvironment) {
  server.setScript({ok("from env")});
  ::setenv("KOPT_LLM_ENDPOINT", server.getEndpoint().c_str(), 1);
  ::setenv("KOPT_LLM_MODEL", "env-model", 1);
  ::setenv("KOPT_LLM_API_KEY", kSecret, 1);
  llvm::Expected<std::unique_ptr<LlmProvider>> provider =
      createProvider("openai", {});
  ::unsetenv("KOPT_LLM_ENDPOINT");
  ::unsetenv("KOPT_LLM_MODEL");
  ::unsetenv("KOPT_LLM_API_KEY");
  ASSERT_TRUE(static_cast<bool>(provider))
      << llvm::toString(provider.takeError());
  llvm::Expected<LlmResponse> response = (*provider)->complete(makeRequest());
  ASSERT_TRUE(static_cast<bool>(response))
      << llvm::toString(response.takeError());
  EXPECT_EQ(response->text, "from env");
  std::vector<ReceivedRequest> received = server.getReceived();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_THAT(received[0].body, HasSubstr("\"model\":\"env-model\""));
  EXPECT_THAT(received[0].headers, HasSubstr(kSecret));
}

TEST(OpenAIProviderConfigTest, NeedsAnEndpointAndAModel) {
  ::unsetenv("KOPT_LLM_ENDPOINT");
  ::unsetenv("KOPT_LLM_MODEL");
  OpenAIOptions options;
  options.apiKey = kSecret;
  llvm::Expected<std::unique_ptr<LlmProvider>> noEndpoint =
      createOpenAIProvider(options);
  ASSERT_FALSE(static_cast<bool>(noEndpoint));
  EXPECT_THAT(llvm::toString(noEndpoint.takeError()),
              HasSubstr("KOPT_LLM_ENDPOINT"));
  options.endpoint = "http://127.0.0.1:1/v1";
  llvm::Expected<std::unique_ptr<LlmProvider>> noModel =
      createOpenAIProvider(options);
  ASSERT_FALSE(static_cast<bool>(noModel));
  EXPECT_THAT(llvm::toString(noModel.takeError()), HasSubstr("KOPT_LLM_MODEL"));
}

TEST(OpenAIProviderConfigTest, KeepsTheKeyOutOfConfigurationErrors) {
  // An endpoint that embeds the key, and a bad option next to the key.
  llvm::Expected<std::unique_ptr<LlmProvider>> badEndpoint = createProvider(
      "openai",
      {{"endpoint", std::string("ftp://") + kSecret + "@example.invalid"},
       {"model", "m"},
       {"api-key", kSecret}});
  ASSERT_FALSE(static_cast<bool>(badEndpoint));
  std::string message = llvm::toString(badEndpoint.takeError());
  EXPECT_THAT(message, HasSubstr("not an http:// or https:// URL"));
  EXPECT_THAT(message, Not(HasSubstr(kSecret)));

  llvm::Expected<std::unique_ptr<LlmProvider>> badOption = createProvider(
      "openai", {{"api-key", kSecret}, {"max-retries", kSecret}});
  ASSERT_FALSE(static_cast<bool>(badOption));
  message = llvm::toString(badOption.takeError());
  EXPECT_THAT(message, HasSubstr("max-retries"));
  EXPECT_THAT(message, Not(HasSubstr(kSecret)));
}

TEST(ProviderFactoryTest, RejectsUnknownKindsAndOptions) {
  llvm::Expected<std::unique_ptr<LlmProvider>> unknownKind =
      createProvider("oracle", {});
  ASSERT_FALSE(static_cast<bool>(unknownKind));
  EXPECT_THAT(llvm::toString(unknownKind.takeError()),
              HasSubstr("unknown LLM provider 'oracle'"));
  llvm::Expected<std::unique_ptr<LlmProvider>> unknownOption =
      createProvider("command", {{"command", "cat"}, {"colour", "blue"}});
  ASSERT_FALSE(static_cast<bool>(unknownOption));
  EXPECT_THAT(llvm::toString(unknownOption.takeError()),
              HasSubstr("unknown option 'colour'"));
  llvm::Expected<std::unique_ptr<LlmProvider>> badNumber =
      createProvider("command", {{"command", "cat"}, {"timeout-ms", "-5"}});
  ASSERT_FALSE(static_cast<bool>(badNumber));
  EXPECT_THAT(llvm::toString(badNumber.takeError()),
              HasSubstr("non-negative integer"));
  llvm::Expected<std::unique_ptr<LlmProvider>> command =
      createProvider("command", {{"command", "cat -"}});
  ASSERT_TRUE(static_cast<bool>(command))
      << llvm::toString(command.takeError());
  EXPECT_EQ((*command)->getKind(), "command");
}

TEST_F(OpenAIProviderTest, RecordsAnswersWithoutTheKey) {
  server.setScript({ok("recorded kernel")});
  llvm::SmallString<256> directory;
  ASSERT_FALSE(
      llvm::sys::fs::createUniqueDirectory("kopt-llm-record", directory));
  llvm::Expected<std::unique_ptr<LlmProvider>> recorder =
      createProvider("openai", {{"endpoint", server.getEndpoint()},
                                {"model", "mock-model"},
                                {"api-key", kSecret},
                                {"backoff-ms", "10"},
                                {"record-dir", std::string(directory)}});
  ASSERT_TRUE(static_cast<bool>(recorder))
      << llvm::toString(recorder.takeError());
  llvm::Expected<LlmResponse> response = (*recorder)->complete(makeRequest());
  ASSERT_TRUE(static_cast<bool>(response))
      << llvm::toString(response.takeError());

  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, getPromptHash(makeRequest()) + ".json");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(static_cast<bool>(file)) << file.getError().message();
  llvm::StringRef text = (*file)->getBuffer();
  EXPECT_THAT(text.str(), HasSubstr("recorded kernel"));
  EXPECT_THAT(text.str(), HasSubstr("\"provider\": \"openai\""));
  EXPECT_THAT(text.str(), HasSubstr("\"completion_tokens\": 34"));
  EXPECT_THAT(text.str(), Not(HasSubstr(kSecret)));

  llvm::Expected<std::unique_ptr<LlmProvider>> replay =
      createReplayProvider(std::string(directory));
  ASSERT_TRUE(static_cast<bool>(replay)) << llvm::toString(replay.takeError());
  llvm::Expected<LlmResponse> replayed = (*replay)->complete(makeRequest());
  ASSERT_TRUE(static_cast<bool>(replayed))
      << llvm::toString(replayed.takeError());
  EXPECT_EQ(replayed->text, "recorded kernel");
  EXPECT_EQ(replayed->model, "served-model");
  EXPECT_EQ(replayed->promptTokens, 12u);
  EXPECT_EQ(replayed->completionTokens, 34u);
  EXPECT_EQ(server.getReceived().size(), 1u);
  llvm::sys::fs::remove_directories(directory);
}

TEST(ProviderFactoryTest, RedactsTheKeyFromAnyProvider) {
  // A program that prints the key it finds in its environment: neither the
  // answer nor the recorded file holds it.
  ::setenv("KOPT_LLM_API_KEY", kSecret, 1);
  llvm::SmallString<256> directory;
  ASSERT_FALSE(
      llvm::sys::fs::createUniqueDirectory("kopt-llm-record", directory));
  llvm::Expected<std::unique_ptr<LlmProvider>> provider =
      createProvider("command", {{"command", "printenv KOPT_LLM_API_KEY"},
                                 {"record-dir", std::string(directory)}});
  ASSERT_TRUE(static_cast<bool>(provider))
      << llvm::toString(provider.takeError());
  llvm::Expected<LlmResponse> response = (*provider)->complete(makeRequest());
  ::unsetenv("KOPT_LLM_API_KEY");
  ASSERT_TRUE(static_cast<bool>(response))
      << llvm::toString(response.takeError());
  EXPECT_EQ(response->text, "[REDACTED]\n");
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, getPromptHash(makeRequest()) + ".json");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(static_cast<bool>(file)) << file.getError().message();
  EXPECT_THAT((*file)->getBuffer().str(), Not(HasSubstr(kSecret)));
  EXPECT_THAT((*file)->getBuffer().str(), HasSubstr("[REDACTED]"));
  llvm::sys::fs::remove_directories(directory);
}
