//===- Identifier.cpp - C identifiers from model text -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/Identifier.h"

#include "kopt/Runtime/Hash.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::kopt;

std::string mlir::kopt::sanitizeIdentifier(llvm::StringRef name) {
  std::string safe;
  bool changed = name.empty();
  for (char c : name) {
    bool keep = llvm::isAlnum(c) || c == '_';
    safe.push_back(keep ? c : '_');
    changed |= !keep;
  }
  if (!safe.empty() && llvm::isDigit(safe.front())) {
    safe.insert(safe.begin(), 'k');
    changed = true;
  }
  if (!changed && safe.size() <= kMaxIdentifierLength)
    return safe;
  // Room for the '_' and 8 hex digits of the hash.
  safe.resize(std::min(safe.size(), kMaxIdentifierLength - 9));
  if (safe.empty())
    safe = "k";
  uint64_t hash = ::kopt::runtime::fnv1a64(name.data(), name.size());
  llvm::raw_string_ostream os(safe);
  os << '_' << llvm::format_hex_no_prefix(hash & 0xffffffffu, 8);
  return safe;
}

std::string mlir::kopt::sanitizeCommentText(llvm::StringRef text) {
  std::string safe;
  for (char c : text) {
    if (c < ' ' || c > '~' || c == '\\')
      c = '?';
    // Neither "*/" nor "/*": the '/' of either becomes '?'.
    if (c == '/' && !safe.empty() && safe.back() == '*')
      c = '?';
    if (c == '*' && !safe.empty() && safe.back() == '/')
      safe.back() = '?';
    safe.push_back(c);
  }
  return safe;
}
