//===- Provider.cpp - Provider factory, prompt hash, redaction ------------===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/LLM/Provider.h"

#include "kopt/Runtime/Redact.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

#include <array>
#include <limits>
#include <set>

using namespace mlir::kopt;

LlmProvider::~LlmProvider() = default;

std::string mlir::kopt::redactSecret(llvm::StringRef text,
                                     llvm::StringRef secret) {
  std::vector<std::string> secrets;
  if (!secret.empty())
    secrets.push_back(secret.str());
  return ::kopt::runtime::redactSecrets(text.str(), secrets);
}

namespace {
/// Passes every answer, model name and error of `inner` through
/// `redactSecret`, whatever the provider: a server or program that echoes
/// the key, or an old recorded answer that holds one, cannot carry it into
/// answer files, records or the terminal.
class RedactingProvider final : public LlmProvider {
public:
  explicit RedactingProvider(std::unique_ptr<LlmProvider> inner)
      : inner(std::move(inner)) {}

  llvm::Expected<LlmResponse> complete(const LlmRequest &request) override {
    llvm::Expected<LlmResponse> response = inner->complete(request);
    if (!response)
      return llvm::createStringError(
          redactSecret(llvm::toString(response.takeError()), ""));
    response->text = redactSecret(response->text, "");
    response->model = redactSecret(response->model, "");
    return response;
  }

  llvm::StringRef getKind() const override { return inner->getKind(); }

private:
  std::unique_ptr<LlmProvider> inner;
};
} // namespace

std::string mlir::kopt::getPromptHash(const LlmRequest &request) {
  llvm::SHA256 hasher;
  hasher.update(request.systemPrompt);
  const uint8_t separator = 0;
  hasher.update(llvm::ArrayRef<uint8_t>(&separator, 1));
  hasher.update(request.userPrompt);
  std::array<uint8_t, 32> digest = hasher.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

std::string mlir::kopt::formatCommandInput(const LlmRequest &request) {
  if (request.systemPrompt.empty())
    return request.userPrompt;
  return request.systemPrompt + "\n\n" + request.userPrompt;
}

namespace {

/// Reads the options of one provider and reports the first bad one.
class OptionReader {
public:
  OptionReader(llvm::StringRef kind, const ProviderOptions &options)
      : kind(kind), options(options) {}

  /// Returns the option `name`, or `fallback` when it is absent.
  std::string getString(llvm::StringRef name, std::string fallback = "") {
    used.insert(name.str());
    auto it = options.find(name.str());
    return it == options.end() ? fallback : it->second;
  }

  /// Reads the non-negative integer option `name` into `value` when given.
  template <typename T>
  void getUnsigned(llvm::StringRef name, T &value) {
    used.insert(name.str());
    auto it = options.find(name.str());
    if (it == options.end())
      return;
    unsigned long long parsed = 0;
    if (llvm::StringRef(it->second).getAsInteger(10, parsed) ||
        parsed > static_cast<unsigned long long>(std::numeric_limits<T>::max()))
      fail("option '" + name.str() + "' of the " + kind.str() +
           " provider needs a non-negative integer, not '" + it->second + "'");
    else
      value = static_cast<T>(parsed);
  }

  /// Reads a duration in milliseconds.
  void getMilliseconds(llvm::StringRef name, std::chrono::milliseconds &value) {
    uint64_t count = static_cast<uint64_t>(value.count());
    getUnsigned(name, count);
    value = std::chrono::milliseconds(count);
  }

  /// Fails on the first error seen, or on an option nobody read.
  llvm::Error finish() {
    if (!error.empty())
      return llvm::createStringError(error);
    for (const auto &[name, value] : options)
      if (!used.count(name))
        return llvm::createStringError("unknown option '" + name +
                                       "' for the " + kind.str() + " provider");
    return llvm::Error::success();
  }

private:
  void fail(std::string message) {
    if (error.empty())
      error = std::move(message);
  }

  llvm::StringRef kind;
  const ProviderOptions &options;
  std::set<std::string> used;
  std::string error;
};

} // namespace

/// Creates the provider `kind` from the options `reader` holds, without the
/// record mode.
static llvm::Expected<std::unique_ptr<LlmProvider>>
createBareProvider(llvm::StringRef kind, OptionReader &reader) {
  if (kind == "openai") {
    OpenAIOptions openai;
    openai.endpoint = reader.getString("endpoint");
    openai.model = reader.getString("model");
    openai.apiKey = reader.getString("api-key");
    reader.getMilliseconds("connect-timeout-ms", openai.connectTimeout);
    reader.getMilliseconds("timeout-ms", openai.requestTimeout);
    reader.getMilliseconds("total-timeout-ms", openai.totalTimeout);
    reader.getUnsigned("max-retries", openai.maxRetries);
    reader.getMilliseconds("backoff-ms", openai.initialBackoff);
    reader.getMilliseconds("max-backoff-ms", openai.maxBackoff);
    reader.getUnsigned("max-response-bytes", openai.maxResponseBytes);
    if (llvm::Error error = reader.finish())
      return llvm::createStringError(
          redactSecret(llvm::toString(std::move(error)), openai.apiKey));
    return createOpenAIProvider(std::move(openai));
  }
  if (kind == "command") {
    CommandOptions command;
    llvm::SmallVector<llvm::StringRef> words;
    std::string line = reader.getString("command");
    llvm::StringRef(line).split(words, ' ', /*MaxSplit=*/-1,
                                /*KeepEmpty=*/false);
    for (llvm::StringRef word : words)
      command.argv.push_back(word.str());
    reader.getMilliseconds("timeout-ms", command.timeout);
    reader.getUnsigned("max-output-bytes", command.maxOutputBytes);
    if (llvm::Error error = reader.finish())
      return std::move(error);
    return createCommandProvider(std::move(command));
  }
  if (kind == "replay") {
    std::string dir = reader.getString("dir");
    if (llvm::Error error = reader.finish())
      return std::move(error);
    if (dir.empty())
      return llvm::createStringError(
          "the replay provider needs its directory (option 'dir')");
    return createReplayProvider(dir);
  }
  return llvm::createStringError("unknown LLM provider '" + kind.str() +
                                 "' (expected openai, command or replay)");
}

llvm::Expected<std::unique_ptr<LlmProvider>>
mlir::kopt::createProvider(llvm::StringRef kind,
                           const ProviderOptions &options) {
  OptionReader reader(kind, options);
  std::string recordDir = reader.getString("record-dir");
  llvm::Expected<std::unique_ptr<LlmProvider>> bare =
      createBareProvider(kind, reader);
  if (!bare)
    return bare.takeError();
  // Redacted before the record mode, so recorded answers hold no key.
  std::unique_ptr<LlmProvider> provider =
      std::make_unique<RedactingProvider>(std::move(*bare));
  if (recordDir.empty())
    return provider;
  return createRecordingProvider(std::move(provider), recordDir);
}
