//===- Provider.h - Ask a language model for a completion -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The providers of the LLM proposer (docs/Design.md, "Proposers"; docs/LLM.md):
// one interface, LlmProvider, that turns a system and a user prompt into an
// answer, and three implementations of it.
//
// - `openai` speaks the OpenAI-compatible chat-completions API over HTTP(S),
//   with timeouts, retries with exponential backoff that honour 429 and
//   `Retry-After`, and a cap on the answer's size.
// - `command` runs a program with the prompt on its stdin and takes its
//   stdout as the answer.
// - `replay` answers from a directory of files named by the prompt's hash;
//   its record mode wraps another provider and saves that provider's answers
//   there, so a run can be repeated without a model.
//
// Every provider is safe to call from several threads at once. No error
// message, log line or file written here contains the API key.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LLM_PROVIDER_H
#define KOPT_LLM_PROVIDER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mlir::kopt {

/// One question to a model.
struct LlmRequest {
  /// The system prompt; may be empty.
  std::string systemPrompt;
  /// The user prompt.
  std::string userPrompt;
  /// The most tokens the answer may have; 0 leaves it to the server.
  unsigned maxTokens = 4096;
  /// Sampling temperature; negative leaves it to the server.
  double temperature = 0.7;
  /// A stable name for the request, independent of its text: for the
  /// search, `TASK16-rR-ideas` or `TASK16-rR-kernelK` (docs/LLM.md). The
  /// replay provider falls back to it when no answer matches the prompt's
  /// hash, so scripted answers survive prompts that quote measured times.
  /// Empty for none; never sent to a model.
  std::string replayName;
};

/// A model's answer and what it cost.
struct LlmResponse {
  /// The answer's text.
  std::string text;
  /// The model that answered, as the server names it (or as configured).
  std::string model;
  /// Token counts as the server reports them; 0 when it reports none.
  uint64_t promptTokens = 0;
  uint64_t completionTokens = 0;
  /// Wall time of the whole call, retries and waits included.
  double latencySeconds = 0;
  /// The HTTP status of the final answer; 0 for providers without HTTP.
  int httpStatus = 0;
  /// How many times the request was sent (1 without retries); 0 when the
  /// answer came from a replay directory.
  unsigned attempts = 0;
};

/// Something that answers prompts. Implementations are thread-safe:
/// `complete` may run on several threads at once.
class LlmProvider {
public:
  virtual ~LlmProvider();

  /// Asks for an answer to `request`. Fails with a message that says what
  /// went wrong and never contains a secret.
  virtual llvm::Expected<LlmResponse> complete(const LlmRequest &request) = 0;

  /// The provider's kind: "openai", "command", "replay" or "record".
  virtual llvm::StringRef getKind() const = 0;
};

//===----------------------------------------------------------------------===//
// openai
//===----------------------------------------------------------------------===//

/// How the `openai` provider reaches its server.
struct OpenAIOptions {
  /// The API's base URL, e.g. `http://127.0.0.1:8000/v1`; requests go to
  /// `{endpoint}/chat/completions`. Empty means `KOPT_LLM_ENDPOINT`.
  std::string endpoint;
  /// The model name sent with each request. Empty means `KOPT_LLM_MODEL`.
  std::string model;
  /// The API key, sent as `Authorization: Bearer KEY`. Empty means
  /// `KOPT_LLM_API_KEY`; no key at all sends no `Authorization` header.
  std::string apiKey;
  /// How long establishing a connection may take.
  std::chrono::milliseconds connectTimeout{10000};
  /// How long one attempt may take, from connecting to the last byte.
  std::chrono::milliseconds requestTimeout{300000};
  /// How long the whole call may take, retries and waits included: what a
  /// server that stalls costs at most.
  std::chrono::milliseconds totalTimeout{600000};
  /// How many times a failed attempt is retried: after 429, 408 and 5xx
  /// answers, timeouts, refused and dropped connections.
  unsigned maxRetries = 4;
  /// The wait before the first retry; it doubles on each retry.
  std::chrono::milliseconds initialBackoff{1000};
  /// The longest wait between two attempts, `Retry-After` included.
  std::chrono::milliseconds maxBackoff{60000};
  /// The largest answer body accepted; a larger one fails.
  size_t maxResponseBytes = 4u << 20;
};

/// Creates the `openai` provider. Fills empty fields of `options` from the
/// environment; fails when no endpoint or no model is known or when the
/// endpoint is not an http:// or https:// URL.
llvm::Expected<std::unique_ptr<LlmProvider>>
createOpenAIProvider(OpenAIOptions options);

//===----------------------------------------------------------------------===//
// command
//===----------------------------------------------------------------------===//

/// How the `command` provider runs its program.
struct CommandOptions {
  /// The program and its arguments; the program is looked up in `PATH`
  /// when it has no slash.
  std::vector<std::string> argv;
  /// How long the program may run before it is killed.
  std::chrono::milliseconds timeout{300000};
  /// The largest answer accepted on stdout; more fails.
  size_t maxOutputBytes = 4u << 20;
};

/// Creates the `command` provider. The program reads the prompt on stdin:
/// the system prompt, an empty line, then the user prompt (the user prompt
/// alone when the system prompt is empty). Its whole stdout is the answer.
/// It fails when the program exits with a non-zero status or a signal, or
/// runs past the timeout; the error quotes the end of its stderr.
llvm::Expected<std::unique_ptr<LlmProvider>>
createCommandProvider(CommandOptions options);

/// Returns what the `command` provider writes to the program's stdin for
/// `request`.
std::string formatCommandInput(const LlmRequest &request);

//===----------------------------------------------------------------------===//
// replay and record
//===----------------------------------------------------------------------===//

/// Returns the key of a prompt in a replay directory: the lowercase hex
/// SHA-256 of the system prompt, one NUL byte, and the user prompt. The
/// token limit and the temperature are not part of it.
std::string getPromptHash(const LlmRequest &request);

/// Creates the `replay` provider, which answers from `directory`: the
/// answer to a request is `HASH.json` (as the record mode writes it) or,
/// failing that, the whole of `HASH.txt`, where HASH is `getPromptHash`;
/// failing both, `NAME.json` or `NAME.txt` where NAME is the request's
/// `replayName` (when it has one). A request without any fails with a
/// message naming the hash, the name and the directory. Fails when
/// `directory` is not a directory.
llvm::Expected<std::unique_ptr<LlmProvider>>
createReplayProvider(const std::string &directory);

/// Creates the record mode: answers come from `inner`, and each successful
/// answer is also written to `directory` (created if missing) as
/// `HASH.json`, atomically, so `createReplayProvider(directory)` answers
/// the same request the same way later. A request with a `replayName` is
/// also written as `NAME.json`, so a run whose prompts quote measured times
/// replays too.
llvm::Expected<std::unique_ptr<LlmProvider>>
createRecordingProvider(std::unique_ptr<LlmProvider> inner,
                        const std::string &directory);

//===----------------------------------------------------------------------===//
// Factory and secrets
//===----------------------------------------------------------------------===//

/// Provider options by name, as a command line gives them (`key=value`).
using ProviderOptions = std::map<std::string, std::string>;

/// Creates a provider by kind, from string options (docs/LLM.md lists
/// them):
/// - `openai`: `endpoint`, `model`, `api-key`, `connect-timeout-ms`,
///   `timeout-ms`, `total-timeout-ms`, `max-retries`, `backoff-ms`,
///   `max-backoff-ms`, `max-response-bytes`;
/// - `command`: `command` (split at spaces, no quoting), `timeout-ms`,
///   `max-output-bytes`;
/// - `replay`: `dir`.
/// Any kind also takes `record-dir`, which wraps it in the record mode.
/// Every answer, model name and error of the provider returned passes
/// through `redactSecret`, before the record mode writes it.
/// Fails on an unknown kind, an unknown option or an unreadable value.
llvm::Expected<std::unique_ptr<LlmProvider>>
createProvider(llvm::StringRef kind, const ProviderOptions &options);

/// Returns `text` with every occurrence of `secret` (when not empty) and of
/// the key in `KOPT_LLM_API_KEY` replaced by `[REDACTED]`, and with the
/// passwords and user information of URLs and connection strings replaced
/// by `***`: the runtime's `redactSecrets` (kopt/Runtime/Redact.h).
std::string redactSecret(llvm::StringRef text, llvm::StringRef secret);

} // namespace mlir::kopt

#endif // KOPT_LLM_PROVIDER_H
