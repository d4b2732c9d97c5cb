//===- FileName.h - Safe file names from untrusted names --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Names that come from a model or a language model (function names, task
// names, plan variants, source ids) become file and directory names under
// `--emit-dir`. They are made into one safe path component first, so that no
// name can reach outside the directory it is written into.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_FILENAME_H
#define KOPT_RUNTIME_FILENAME_H

#include <set>
#include <string>
#include <string_view>

namespace kopt::runtime {

/// The longest name `sanitizeFileName` returns, in bytes.
inline constexpr size_t kMaxSafeFileNameLength = 120;

/// Returns `name` as one safe path component: only ASCII letters, digits,
/// '_', '-' and '.', no leading '.', not empty, at most
/// kMaxSafeFileNameLength bytes. Every other byte (a '/', a control or
/// non-ASCII byte, a space) becomes '_'. A name that had to change gets "-"
/// and 8 hex digits of its hash appended, so distinct names stay distinct; a
/// name that was already safe is returned as it is.
std::string sanitizeFileName(std::string_view name);

/// Hands out distinct safe file names for the entries of one directory.
class FileNameSet {
public:
  /// Returns `sanitizeFileName(name)`, or, when that was handed out before
  /// (compared without case, for case-insensitive file systems), the first
  /// free of its "-2", "-3", ... variants. Each call is a new entry, so the
  /// same sequence of names always gives the same file names.
  std::string add(std::string_view name);

private:
  std::set<std::string> used;
};

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_FILENAME_H
