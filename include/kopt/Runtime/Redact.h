//===- Redact.h - Keep secrets out of what kopt writes ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The one redaction routine of kopt. Text that may hold an endpoint URL, a
// connection string or a server's answer passes through `redactSecrets`
// before it is printed or written: passwords in URLs and in libpq keyword
// strings become `***`, and the API key, wherever it appears, becomes
// `[REDACTED]`. The runtime (no LLVM) and the compiler's LLM providers both
// call it.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_REDACT_H
#define KOPT_RUNTIME_REDACT_H

#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime {

/// Returns `text` with every credential it holds in a recognised spelling
/// replaced by `***`:
/// - the password of a URL's user information (`postgresql://u:PW@host`);
///   for schemes other than `postgresql` and `postgres`, the whole user
///   information (`http://***@host/v1`), which services use for keys;
/// - the value of a `password` or `sslpassword` parameter, in a URL's query
///   (`?password=PW`) or a libpq keyword string (`host=h password=PW`,
///   `password = 'P W'`), whatever its case and however percent-encoded its
///   name (`PASSWORD=`, `pass%77ord=`).
std::string redactCredentials(std::string_view text);

/// Whether `text` holds a non-empty credential that `redactCredentials`
/// would replace.
bool hasCredentials(std::string_view text);

/// Returns `text` with every occurrence of `secret` replaced by
/// `[REDACTED]`. An empty `secret` changes nothing.
std::string replaceSecret(std::string_view text, std::string_view secret);

/// `redactCredentials(text)`, with every occurrence of each of `secrets`
/// and of the API key in `KOPT_LLM_API_KEY` replaced by `[REDACTED]`. A key
/// from the environment shorter than 8 characters is not searched for (it
/// would match ordinary words); one given in `secrets` always is.
std::string redactSecrets(std::string_view text,
                          const std::vector<std::string> &secrets = {});

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_REDACT_H
