//===- FileName.cpp - Safe file names from untrusted names ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/FileName.h"

#include "kopt/Runtime/Hash.h"

#include <algorithm>
#include <cstdio>

using namespace kopt::runtime;

static bool isSafeByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

std::string kopt::runtime::sanitizeFileName(std::string_view name) {
  std::string safe;
  bool changed = name.empty();
  for (char c : name) {
    bool keep = isSafeByte(c) && !(safe.empty() && c == '.');
    safe.push_back(keep ? c : '_');
    changed |= !keep;
  }
  if (!changed && safe.size() <= kMaxSafeFileNameLength)
    return safe;
  // Room for the "-" and 8 hex digits of the hash.
  safe.resize(std::min(safe.size(), kMaxSafeFileNameLength - 9));
  if (safe.empty())
    safe = "_";
  char hash[9];
  std::snprintf(hash, sizeof(hash), "%08x",
                unsigned(fnv1a64(name.data(), name.size()) & 0xffffffffu));
  return safe + "-" + hash;
}

std::string FileNameSet::add(std::string_view name) {
  std::string base = sanitizeFileName(name);
  auto key = [](std::string text) {
    for (char &c : text)
      if (c >= 'A' && c <= 'Z')
        c = char(c - 'A' + 'a');
    return text;
  };
  std::string candidate = base;
  for (unsigned n = 2; !used.insert(key(candidate)).second; ++n)
    candidate = base + "-" + std::to_string(n);
  return candidate;
}
