//===- OpenAIProvider.cpp - Chat completions over HTTP --------------------===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The `openai` provider: one POST to `{endpoint}/chat/completions` per
// attempt, with one libcurl easy handle per call so that calls on several
// threads never share state. Transient failures (429, 408, 5xx, timeouts,
// refused or dropped connections) are retried with exponential backoff, or
// after the server's `Retry-After` when it sends one in seconds; everything
// else fails at once. Every message and answer leaving this file goes
// through `redactSecret` with the API key, which also hides the user
// information of the endpoint URL.
//
//===----------------------------------------------------------------------===//

#include "kopt/Support/SigpipeGuard.h"

#include "kopt/LLM/Provider.h"
#include "kopt/Support/InputLimits.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <thread>

using namespace mlir::kopt;
using Clock = std::chrono::steady_clock;

namespace {

/// What one attempt brought back.
struct Attempt {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
  size_t maxBodyBytes = 0;
  bool oversized = false;
  std::optional<long> retryAfterSeconds;
  char curlMessage[CURL_ERROR_SIZE] = {0};
};

size_t appendBody(char *data, size_t size, size_t count, void *user) {
  auto *attempt = static_cast<Attempt *>(user);
  size_t bytes = size * count;
  if (attempt->body.size() + bytes > attempt->maxBodyBytes) {
    // Returning less than given makes libcurl stop with CURLE_WRITE_ERROR.
    attempt->oversized = true;
    return 0;
  }
  attempt->body.append(data, bytes);
  return bytes;
}

size_t readHeader(char *data, size_t size, size_t count, void *user) {
  auto *attempt = static_cast<Attempt *>(user);
  llvm::StringRef line(data, size * count);
  // A new status line (after `100 Continue`) starts a new set of headers.
  if (line.starts_with("HTTP/"))
    attempt->retryAfterSeconds.reset();
  auto [name, value] = line.split(':');
  if (name.trim().equals_insensitive("retry-after")) {
    // Only the delay-seconds form; an HTTP date falls back to the backoff.
    long seconds = 0;
    if (!value.trim().getAsInteger(10, seconds) && seconds >= 0)
      attempt->retryAfterSeconds = seconds;
  }
  return size * count;
}

/// Returns at most `limit` characters of `body` on one line, for messages.
std::string getExcerpt(llvm::StringRef body, size_t limit = 200) {
  std::string text;
  for (char c : body.take_front(limit))
    text += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
  if (body.size() > limit)
    text += "...";
  return text.empty() ? "(empty body)" : text;
}

bool isTransientCurlError(CURLcode code) {
  switch (code) {
  case CURLE_COULDNT_CONNECT:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_SSL_CONNECT_ERROR:
    return true;
  default:
    return false;
  }
}

bool isTransientStatus(long status) {
  return status == 408 || status == 429 || (status >= 500 && status <= 599);
}

class OpenAIProvider final : public LlmProvider {
public:
  explicit OpenAIProvider(OpenAIOptions options) : options(std::move(options)) {
    llvm::StringRef base(this->options.endpoint);
    url = base.rtrim('/').str() + "/chat/completions";
  }

  llvm::Expected<LlmResponse> complete(const LlmRequest &request) override {
    llvm::Expected<LlmResponse> result = completeUnredacted(request);
    if (result) {
      // A server may echo the Authorization header into its answer.
      result->text = redactSecret(result->text, options.apiKey);
      result->model = redactSecret(result->model, options.apiKey);
      return result;
    }
    return llvm::createStringError(
        redactSecret(llvm::toString(result.takeError()), options.apiKey));
  }

  llvm::StringRef getKind() const override { return "openai"; }

private:
  llvm::Expected<LlmResponse> completeUnredacted(const LlmRequest &request);
  void perform(const std::string &payload, std::chrono::milliseconds timeout,
               Attempt &attempt) const;
  llvm::Expected<LlmResponse> parseAnswer(const Attempt &attempt) const;

  OpenAIOptions options;
  std::string url;
};

} // namespace

void OpenAIProvider::perform(const std::string &payload,
                             std::chrono::milliseconds timeout,
                             Attempt &attempt) const {
  std::unique_ptr<CURL, void (*)(CURL *)> handle(curl_easy_init(),
                                                 curl_easy_cleanup);
  if (!handle) {
    attempt.code = CURLE_FAILED_INIT;
    return;
  }
  curl_slist *headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Accept: application/json");
  // No `Expect: 100-continue` round trip for large prompts.
  headers = curl_slist_append(headers, "Expect:");
  if (!options.apiKey.empty())
    headers = curl_slist_append(
        headers, ("Authorization: Bearer " + options.apiKey).c_str());
  std::unique_ptr<curl_slist, void (*)(curl_slist *)> headerList(
      headers, curl_slist_free_all);

  // A server on this machine is never reached through a proxy.
  std::string noProxy = "localhost,127.0.0.1,::1";
  for (const char *name : {"no_proxy", "NO_PROXY"})
    if (const char *value = std::getenv(name); value && *value) {
      noProxy = std::string(value) + "," + noProxy;
      break;
    }

  CURL *curl = handle.get();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_NOPROXY, noProxy.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headerList.get());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, payload.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                   static_cast<curl_off_t>(payload.size()));
  curl_easy_setopt(
      curl, CURLOPT_CONNECTTIMEOUT_MS,
      static_cast<long>(std::min(options.connectTimeout, timeout).count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(timeout.count()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, appendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &attempt);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, readHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &attempt);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, attempt.curlMessage);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
  {
    // libcurl leaves signals alone under CURLOPT_NOSIGNAL; a peer that
    // closes the connection must not kill the process through SIGPIPE.
    SigpipeGuard guard;
    attempt.code = curl_easy_perform(curl);
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &attempt.status);
}

llvm::Expected<LlmResponse>
OpenAIProvider::parseAnswer(const Attempt &attempt) const {
  auto fail = [&](llvm::StringRef what) {
    return llvm::createStringError(
        llvm::formatv("{0} ({1}): {2}", what, url, getExcerpt(attempt.body))
            .str());
  };
  llvm::Expected<llvm::json::Value> parsed = parseJson(attempt.body);
  if (!parsed) {
    std::string reason = llvm::toString(parsed.takeError());
    return fail("the server's answer is not valid JSON: " + reason);
  }
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return fail("the server's answer is not a JSON object");
  const llvm::json::Array *choices = root->getArray("choices");
  if (!choices || choices->empty())
    return fail("the server's answer has no choices");
  const llvm::json::Object *choice = (*choices)[0].getAsObject();
  const llvm::json::Object *message =
      choice ? choice->getObject("message") : nullptr;
  std::optional<llvm::StringRef> content =
      message ? message->getString("content") : std::nullopt;
  if (!content)
    return fail("the server's answer has no choices[0].message.content");

  LlmResponse response;
  response.text = content->str();
  response.model = root->getString("model").value_or(options.model).str();
  response.httpStatus = static_cast<int>(attempt.status);
  if (const llvm::json::Object *usage = root->getObject("usage")) {
    response.promptTokens = static_cast<uint64_t>(
        std::max<int64_t>(0, usage->getInteger("prompt_tokens").value_or(0)));
    response.completionTokens = static_cast<uint64_t>(std::max<int64_t>(
        0, usage->getInteger("completion_tokens").value_or(0)));
  }
  return response;
}

llvm::Expected<LlmResponse>
OpenAIProvider::completeUnredacted(const LlmRequest &request) {
  Clock::time_point start = Clock::now();
  if (!llvm::json::isUTF8(request.systemPrompt) ||
      !llvm::json::isUTF8(request.userPrompt))
    return llvm::createStringError("the prompt is not valid UTF-8");

  llvm::json::Array messages;
  if (!request.systemPrompt.empty())
    messages.push_back(llvm::json::Object{{"role", "system"},
                                          {"content", request.systemPrompt}});
  messages.push_back(
      llvm::json::Object{{"role", "user"}, {"content", request.userPrompt}});
  llvm::json::Object body{{"model", options.model},
                          {"messages", std::move(messages)}};
  if (request.maxTokens > 0)
    body["max_tokens"] = static_cast<int64_t>(request.maxTokens);
  if (request.temperature >= 0)
    body["temperature"] = request.temperature;
  std::string payload =
      llvm::formatv("{0}", llvm::json::Value(std::move(body))).str();

  // The whole call, retries and waits included, ends by the deadline: a
  // server that stalls costs at most `totalTimeout`.
  Clock::time_point deadline = start + options.totalTimeout;
  auto remaining = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 Clock::now());
  };
  std::string lastFailure;
  std::chrono::milliseconds backoff = options.initialBackoff;
  for (unsigned attemptIndex = 0;; ++attemptIndex) {
    Attempt attempt;
    attempt.maxBodyBytes = options.maxResponseBytes;
    // At least 1 ms: libcurl reads 0 as no limit.
    perform(payload,
            std::max(std::chrono::milliseconds(1),
                     std::min(options.requestTimeout, remaining())),
            attempt);

    if (attempt.oversized)
      return llvm::createStringError(
          llvm::formatv(
              "the answer from {0} is larger than the limit of {1} bytes", url,
              options.maxResponseBytes)
              .str());
    bool transient = false;
    if (attempt.code != CURLE_OK) {
      transient = isTransientCurlError(attempt.code);
      lastFailure = curl_easy_strerror(attempt.code);
      if (attempt.curlMessage[0])
        lastFailure += std::string(" (") + attempt.curlMessage + ")";
      if (!transient)
        return llvm::createStringError("request to " + url +
                                       " failed: " + lastFailure);
    } else if (attempt.status < 200 || attempt.status > 299) {
      transient = isTransientStatus(attempt.status);
      lastFailure = llvm::formatv("HTTP {0}: {1}", attempt.status,
                                  getExcerpt(attempt.body))
                        .str();
      if (!transient)
        return llvm::createStringError("request to " + url + " failed with " +
                                       lastFailure);
    } else {
      llvm::Expected<LlmResponse> response = parseAnswer(attempt);
      if (response) {
        response->attempts = attemptIndex + 1;
        response->latencySeconds =
            std::chrono::duration<double>(Clock::now() - start).count();
      }
      return response;
    }

    if (attemptIndex >= options.maxRetries)
      return llvm::createStringError(
          llvm::formatv("request to {0} failed after {1} attempt{2}; the "
                        "last one: {3}",
                        url, attemptIndex + 1, attemptIndex == 0 ? "" : "s",
                        lastFailure)
              .str());
    std::chrono::milliseconds wait = backoff;
    if (attempt.retryAfterSeconds)
      wait = std::chrono::seconds(*attempt.retryAfterSeconds);
    wait = std::min(wait, options.maxBackoff);
    if (wait >= remaining())
      return llvm::createStringError(
          llvm::formatv("request to {0} failed after {1} attempt{2}, with no "
                        "time left of the {3} s the call may take "
                        "(total-timeout-ms); the last one: {4}",
                        url, attemptIndex + 1, attemptIndex == 0 ? "" : "s",
                        options.totalTimeout.count() / 1000.0, lastFailure)
              .str());
    std::this_thread::sleep_for(wait);
    backoff = std::min(backoff * 2, options.maxBackoff);
  }
}

llvm::Expected<std::unique_ptr<LlmProvider>>
mlir::kopt::createOpenAIProvider(OpenAIOptions options) {
  auto fromEnvironment = [](std::string &field, const char *name) {
    if (field.empty())
      if (const char *value = std::getenv(name))
        field = value;
  };
  fromEnvironment(options.endpoint, "KOPT_LLM_ENDPOINT");
  fromEnvironment(options.model, "KOPT_LLM_MODEL");
  fromEnvironment(options.apiKey, "KOPT_LLM_API_KEY");
  if (options.endpoint.empty())
    return llvm::createStringError(
        "the openai provider needs an endpoint (option 'endpoint' or "
        "KOPT_LLM_ENDPOINT), e.g. http://127.0.0.1:8000/v1");
  llvm::StringRef endpoint(options.endpoint);
  if (!endpoint.starts_with("http://") && !endpoint.starts_with("https://"))
    return llvm::createStringError(
        redactSecret("the openai provider's endpoint '" + options.endpoint +
                         "' is not an http:// or https:// URL",
                     options.apiKey));
  if (options.model.empty())
    return llvm::createStringError(
        "the openai provider needs a model name (option 'model' or "
        "KOPT_LLM_MODEL)");
  if (options.apiKey.find_first_of("\r\n") != std::string::npos)
    return llvm::createStringError(
        "the openai provider's API key contains a line break");

  // libcurl's global state is set up once per process, before any handle.
  static CURLcode initResult = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (initResult != CURLE_OK)
    return llvm::createStringError(std::string("cannot initialise libcurl: ") +
                                   curl_easy_strerror(initResult));
  return std::make_unique<OpenAIProvider>(std::move(options));
}
