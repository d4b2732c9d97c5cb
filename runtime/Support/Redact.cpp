//===- Redact.cpp - Keep secrets out of what kopt writes --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One scan finds every credential in a text: the user information of each
// `scheme://` URL, and each `password=` parameter in a URL query or a libpq
// keyword string. Names are compared after percent-decoding and lowercasing,
// so the spellings libpq or a server might accept cannot slip past. When in
// doubt a value is cut generously: more of a message is hidden, never less.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Redact.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

using namespace kopt::runtime;

namespace {

/// A range [begin, end) of text to replace.
using Range = std::pair<size_t, size_t>;

bool isSpace(char c) { return std::isspace(static_cast<unsigned char>(c)); }

int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

/// `name` percent-decoded and lowercased.
std::string normalizeName(std::string_view name) {
  std::string text;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '%' && i + 2 < name.size() && hexValue(name[i + 1]) >= 0 &&
        hexValue(name[i + 2]) >= 0) {
      c = static_cast<char>(hexValue(name[i + 1]) * 16 + hexValue(name[i + 2]));
      i += 2;
    }
    text.push_back(
        static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return text;
}

bool isSchemeChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' ||
         c == '.';
}

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '%' ||
         c == '-' || c == '.';
}

/// The user information of every URL in `text`: the password for
/// PostgreSQL URLs, all of it for other schemes.
void findUserInfo(std::string_view text, std::vector<Range> &found) {
  for (size_t at = text.find("://"); at != std::string_view::npos;
       at = text.find("://", at + 3)) {
    size_t schemeBegin = at;
    while (schemeBegin > 0 && isSchemeChar(text[schemeBegin - 1]))
      --schemeBegin;
    std::string scheme =
        normalizeName(text.substr(schemeBegin, at - schemeBegin));
    size_t begin = at + 3;
    size_t end = begin;
    while (end < text.size() && !isSpace(text[end]) && text[end] != '/' &&
           text[end] != '?' && text[end] != '#')
      ++end;
    // The last '@' ends the user information.
    size_t sign = text.substr(begin, end - begin).rfind('@');
    if (sign == std::string_view::npos || sign == 0)
      continue;
    sign += begin;
    if (scheme == "postgresql" || scheme == "postgres") {
      size_t colon = text.substr(begin, sign - begin).find(':');
      if (colon != std::string_view::npos)
        found.push_back({begin + colon + 1, sign});
    } else {
      found.push_back({begin, sign});
    }
  }
}

/// Where the value of a parameter starting at `begin` ends, and whether it
/// is quoted (libpq: `'...'` with backslash escapes).
Range findValue(std::string_view text, size_t begin) {
  if (begin < text.size() && text[begin] == '\'') {
    size_t end = begin + 1;
    while (end < text.size() && text[end] != '\'')
      end += text[end] == '\\' ? 2 : 1;
    return {begin + 1, std::min(end, text.size())};
  }
  size_t end = begin;
  while (end < text.size() && !isSpace(text[end]) && text[end] != '&') {
    if (text[end] == '\\') {
      end += 2;
      continue;
    }
    // A quote that closes the text around the value (`'...password=x': `)
    // ends it; a quote inside the value does not.
    if ((text[end] == '\'' || text[end] == '"') &&
        (end + 1 == text.size() || isSpace(text[end + 1]) ||
         std::string_view(":,;)").find(text[end + 1]) !=
             std::string_view::npos))
      break;
    ++end;
  }
  return {begin, std::min(end, text.size())};
}

/// The value of every `password` and `sslpassword` parameter in `text`.
void findPasswordParameters(std::string_view text, std::vector<Range> &found) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (!isNameChar(text[i]) || (i > 0 && isNameChar(text[i - 1])))
      continue;
    size_t nameEnd = i;
    while (nameEnd < text.size() && isNameChar(text[nameEnd]))
      ++nameEnd;
    std::string name = normalizeName(text.substr(i, nameEnd - i));
    if (name != "password" && name != "sslpassword") {
      i = nameEnd - 1;
      continue;
    }
    size_t equals = nameEnd;
    while (equals < text.size() && isSpace(text[equals]))
      ++equals;
    if (equals >= text.size() || text[equals] != '=') {
      i = nameEnd - 1;
      continue;
    }
    size_t valueBegin = equals + 1;
    while (valueBegin < text.size() && isSpace(text[valueBegin]))
      ++valueBegin;
    Range value = findValue(text, valueBegin);
    found.push_back(value);
    i = std::max(value.second, nameEnd) - 1;
  }
}

/// Every credential in `text`, sorted and without overlaps.
std::vector<Range> findCredentials(std::string_view text) {
  std::vector<Range> found;
  findUserInfo(text, found);
  findPasswordParameters(text, found);
  std::sort(found.begin(), found.end());
  std::vector<Range> merged;
  for (const Range &range : found) {
    if (!merged.empty() && range.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, range.second);
    else
      merged.push_back(range);
  }
  return merged;
}

} // namespace

std::string kopt::runtime::redactCredentials(std::string_view text) {
  std::string result(text);
  std::vector<Range> found = findCredentials(text);
  // From the back, so that earlier positions stay right.
  for (auto it = found.rbegin(); it != found.rend(); ++it)
    if (it->second > it->first)
      result.replace(it->first, it->second - it->first, "***");
  return result;
}

bool kopt::runtime::hasCredentials(std::string_view text) {
  for (const Range &range : findCredentials(text))
    if (range.second > range.first)
      return true;
  return false;
}

std::string kopt::runtime::replaceSecret(std::string_view text,
                                         std::string_view secret) {
  if (secret.empty())
    return std::string(text);
  std::string result;
  result.reserve(text.size());
  for (size_t at = text.find(secret); at != std::string_view::npos;
       at = text.find(secret)) {
    result.append(text.substr(0, at));
    result.append("[REDACTED]");
    text.remove_prefix(at + secret.size());
  }
  result.append(text);
  return result;
}

std::string
kopt::runtime::redactSecrets(std::string_view text,
                             const std::vector<std::string> &secrets) {
  // The key first: a key inside a URL must not be cut in two by the URL's
  // redaction and survive in pieces.
  std::string result(text);
  for (const std::string &secret : secrets)
    result = replaceSecret(result, secret);
  if (const char *key = std::getenv("KOPT_LLM_API_KEY"))
    if (std::string_view(key).size() >= 8)
      result = replaceSecret(result, key);
  return redactCredentials(result);
}
