//===- Nesting.cpp - Bound the nesting of MLIR and JSON ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Linear scans that measure nesting without building anything, so input
// deeper than the limit is refused before a recursive parser sees it.
//
// MLIR: every `{ ( [ <` opens a level and its partner closes it. `>` is also
// an arrow (`->`) and a comparison (`>=`, in integer sets), so a `>` closes
// only a `<` and neither of those; a closing `) ] }` first drops any `<`
// left open inside it (a stray comparison). Strings and `//` comments are
// skipped. The count can only err high for text with stray `<`, which
// real MLIR does not have.
//
//===----------------------------------------------------------------------===//

#include "kopt/Support/InputLimits.h"

#include "llvm/Support/thread.h"

#include <optional>
#include <vector>

using namespace mlir::kopt;

/// Returns the 1-based line and column of `offset` in `text`.
static std::pair<size_t, size_t> locate(llvm::StringRef text, size_t offset) {
  llvm::StringRef before = text.take_front(offset);
  size_t line = before.count('\n') + 1;
  size_t lineStart = before.rfind('\n');
  size_t column =
      lineStart == llvm::StringRef::npos ? offset + 1 : offset - lineStart;
  return {line, column};
}

/// The offset just past the string literal that opens at `text[pos]`.
static size_t skipString(llvm::StringRef text, size_t pos) {
  for (++pos; pos < text.size(); ++pos) {
    if (text[pos] == '\\')
      ++pos;
    else if (text[pos] == '"')
      return pos + 1;
  }
  return pos;
}

llvm::Error mlir::kopt::checkMlirNesting(llvm::StringRef text,
                                         llvm::StringRef name) {
  std::vector<char> open;
  size_t pos = 0;
  while (pos < text.size()) {
    char c = text[pos];
    if (c == '"') {
      pos = skipString(text, pos);
      continue;
    }
    if (c == '/' && text.substr(pos).starts_with("//")) {
      pos = text.find('\n', pos);
      if (pos == llvm::StringRef::npos)
        break;
      continue;
    }
    if (c == '{' || c == '(' || c == '[' || c == '<') {
      open.push_back(c);
      if (open.size() > kMaxMlirNesting) {
        auto [line, column] = locate(text, pos);
        return llvm::createStringError(
            "%s:%zu:%zu: nesting deeper than %u levels; kopt refuses it (it "
            "would exhaust the parser's stack)",
            name.str().c_str(), line, column, kMaxMlirNesting);
      }
    } else if (c == '>') {
      bool arrow = pos > 0 && text[pos - 1] == '-';
      bool comparison = pos + 1 < text.size() && text[pos + 1] == '=';
      if (!arrow && !comparison && !open.empty() && open.back() == '<')
        open.pop_back();
    } else if (c == '}' || c == ')' || c == ']') {
      while (!open.empty() && open.back() == '<')
        open.pop_back();
      if (!open.empty())
        open.pop_back();
    }
    ++pos;
  }
  return llvm::Error::success();
}

llvm::Error mlir::kopt::checkJsonNesting(llvm::StringRef text) {
  unsigned depth = 0;
  for (size_t pos = 0; pos < text.size();) {
    char c = text[pos];
    if (c == '"') {
      pos = skipString(text, pos);
      continue;
    }
    if (c == '{' || c == '[') {
      if (++depth > kMaxJsonNesting) {
        auto [line, column] = locate(text, pos);
        return llvm::createStringError(
            "[%zu:%zu]: nesting deeper than %u levels", line, column,
            kMaxJsonNesting);
      }
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
    ++pos;
  }
  return llvm::Error::success();
}

llvm::Expected<llvm::json::Value> mlir::kopt::parseJson(llvm::StringRef text) {
  if (llvm::Error error = checkJsonNesting(text))
    return std::move(error);
  return llvm::json::parse(text);
}

void mlir::kopt::runOnParserStack(llvm::unique_function<void()> work) {
  llvm::thread parser(std::optional<unsigned>(kParserStackBytes),
                      [&work] { work(); });
  parser.join();
}
