//===- ReplayProvider.cpp - Answers from files, and recording them --------===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The `replay` provider and the record mode. A recorded answer is one JSON
// file per prompt, `HASH.json` (docs/LLM.md gives its fields), written to a
// unique temporary name in the same directory and renamed into place, so a
// reader never sees half a file and concurrent recorders of the same prompt
// leave one whole answer. Hand-written answers may be plain `HASH.txt`.
//
//===----------------------------------------------------------------------===//

#include "kopt/LLM/Provider.h"
#include "kopt/Runtime/FileName.h"
#include "kopt/Runtime/OutputFile.h"
#include "kopt/Support/InputLimits.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir::kopt;
using Clock = std::chrono::steady_clock;

/// The format tag of a recorded answer.
static constexpr llvm::StringLiteral kAnswerFormat = "kopt.llm.answer/1";

/// Returns `directory/name`.
static std::string joinPath(llvm::StringRef directory, llvm::StringRef name) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

/// Reads a recorded answer from `path`.
static llvm::Expected<LlmResponse> readRecordedAnswer(const std::string &path,
                                                      llvm::StringRef text) {
  auto fail = [&](llvm::StringRef why) {
    return llvm::createStringError("recorded answer " + path + " " + why);
  };
  llvm::Expected<llvm::json::Value> parsed = parseJson(text);
  if (!parsed)
    return fail("is not valid JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return fail("is not a JSON object");
  if (root->getString("format") != kAnswerFormat)
    return fail(("has no \"format\": \"" + kAnswerFormat + "\"").str());
  std::optional<llvm::StringRef> answer = root->getString("text");
  if (!answer)
    return fail("has no \"text\"");
  LlmResponse response;
  response.text = answer->str();
  response.model = root->getString("model").value_or("").str();
  response.promptTokens = static_cast<uint64_t>(
      std::max<int64_t>(0, root->getInteger("prompt_tokens").value_or(0)));
  response.completionTokens = static_cast<uint64_t>(
      std::max<int64_t>(0, root->getInteger("completion_tokens").value_or(0)));
  return response;
}

namespace {

class ReplayProvider final : public LlmProvider {
public:
  explicit ReplayProvider(std::string directory)
      : directory(std::move(directory)) {}

  llvm::Expected<LlmResponse> complete(const LlmRequest &request) override {
    Clock::time_point start = Clock::now();
    std::string hash = getPromptHash(request);
    llvm::Expected<LlmResponse> response = lookUp(hash, request.replayName);
    if (response)
      response->latencySeconds =
          std::chrono::duration<double>(Clock::now() - start).count();
    return response;
  }

  llvm::StringRef getKind() const override { return "replay"; }

private:
  llvm::Expected<LlmResponse> lookUp(const std::string &hash,
                                     const std::string &name) const {
    for (const std::string &stem : {hash, name}) {
      if (stem.empty())
        continue;
      // A recording that exists is read within kopt's input bounds.
      std::string jsonPath = joinPath(directory, stem + ".json");
      if (llvm::sys::fs::exists(jsonPath)) {
        auto buffer = readInputFile(jsonPath);
        if (!buffer)
          return buffer.takeError();
        return readRecordedAnswer(jsonPath, (*buffer)->getBuffer());
      }
      std::string textPath = joinPath(directory, stem + ".txt");
      if (llvm::sys::fs::exists(textPath)) {
        auto buffer = readInputFile(textPath);
        if (!buffer)
          return buffer.takeError();
        LlmResponse response;
        response.text = (*buffer)->getBuffer().str();
        return response;
      }
    }
    std::string expected = hash + ".json or " + hash + ".txt";
    if (!name.empty())
      expected += ", or " + name + ".json or " + name + ".txt";
    return llvm::createStringError("no recorded answer for prompt hash " +
                                   hash + " in " + directory + " (expected " +
                                   expected + ")");
  }

  std::string directory;
};

class RecordingProvider final : public LlmProvider {
public:
  RecordingProvider(std::unique_ptr<LlmProvider> inner, std::string directory)
      : inner(std::move(inner)), directory(std::move(directory)) {}

  llvm::Expected<LlmResponse> complete(const LlmRequest &request) override {
    llvm::Expected<LlmResponse> response = inner->complete(request);
    if (!response)
      return response;
    if (llvm::Error error = save(request, *response))
      return std::move(error);
    return response;
  }

  llvm::StringRef getKind() const override { return "record"; }

private:
  llvm::Error save(const LlmRequest &request,
                   const LlmResponse &response) const;
  /// Writes the answer as `STEM.json`.
  llvm::Error saveAs(const std::string &stem, const std::string &hash,
                     const LlmRequest &request,
                     const LlmResponse &response) const;

  std::unique_ptr<LlmProvider> inner;
  std::string directory;
};

} // namespace

/// Returns `text` as JSON can hold it: invalid UTF-8 becomes U+FFFD.
static std::string toJsonText(const std::string &text) {
  return llvm::json::isUTF8(text) ? text : llvm::json::fixUTF8(text);
}

llvm::Error RecordingProvider::save(const LlmRequest &request,
                                    const LlmResponse &response) const {
  std::string hash = getPromptHash(request);
  if (llvm::Error error = saveAs(hash, hash, request, response))
    return error;
  if (request.replayName.empty())
    return llvm::Error::success();
  return saveAs(request.replayName, hash, request, response);
}

llvm::Error RecordingProvider::saveAs(const std::string &stem,
                                      const std::string &hash,
                                      const LlmRequest &request,
                                      const LlmResponse &response) const {
  llvm::json::Object answer{
      {"format", kAnswerFormat},
      {"prompt_hash", hash},
      {"provider", inner->getKind()},
      {"model", toJsonText(response.model)},
      {"prompt_tokens", static_cast<int64_t>(response.promptTokens)},
      {"completion_tokens", static_cast<int64_t>(response.completionTokens)},
      {"latency_seconds", response.latencySeconds},
      {"system_prompt", toJsonText(request.systemPrompt)},
      {"user_prompt", toJsonText(request.userPrompt)},
      {"text", toJsonText(response.text)},
  };
  // A replay name is the caller's; keep it one file inside the directory.
  std::string finalPath =
      joinPath(directory, ::kopt::runtime::sanitizeFileName(stem) + ".json");
  auto fail = [&](llvm::StringRef what, std::error_code code) {
    return llvm::createStringError("cannot record the answer to " + finalPath +
                                   ": " + what + ": " + code.message());
  };
  if (std::error_code code = llvm::sys::fs::create_directories(directory))
    return fail("cannot create the directory", code);
  std::string text =
      llvm::formatv("{0:2}\n", llvm::json::Value(std::move(answer))).str();
  ::kopt::runtime::Status status =
      ::kopt::runtime::writeOutputFile(finalPath, text);
  if (!status.isOk())
    return llvm::createStringError("cannot record the answer: " +
                                   status.message());
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<LlmProvider>>
mlir::kopt::createReplayProvider(const std::string &directory) {
  if (!llvm::sys::fs::is_directory(directory))
    return llvm::createStringError("the replay directory " + directory +
                                   " does not exist or is not a directory");
  return std::make_unique<ReplayProvider>(directory);
}

llvm::Expected<std::unique_ptr<LlmProvider>>
mlir::kopt::createRecordingProvider(std::unique_ptr<LlmProvider> inner,
                                    const std::string &directory) {
  if (!inner)
    return llvm::createStringError("the record mode needs a provider to wrap");
  if (directory.empty())
    return llvm::createStringError("the record mode needs a directory");
  return std::make_unique<RecordingProvider>(std::move(inner), directory);
}
