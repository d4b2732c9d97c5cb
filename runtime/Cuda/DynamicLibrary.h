//===- DynamicLibrary.h - Opening CUDA libraries at run time ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Private helpers of the execution layer: open the first library of a list of
// candidates with dlopen, and resolve an X-macro table of symbols from it.
// Every CUDA library kopt uses goes through these, so that no binary links
// one at build time.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_DYNAMICLIBRARY_H
#define KOPT_RUNTIME_CUDA_DYNAMICLIBRARY_H

#include "kopt/Runtime/Status.h"

#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime::dynlib {

/// Turns a macro's expansion into a string: `KOPT_EXPANDED_NAME(cuMemAlloc)`
/// is "cuMemAlloc_v2" with CUDA 13's cuda.h.
#define KOPT_EXPANDED_NAME(name) KOPT_EXPANDED_NAME_IMPL(name)
#define KOPT_EXPANDED_NAME_IMPL(name) #name

/// Compile-time string equality, to check symbol tables against the headers.
constexpr bool equalNames(const char *a, const char *b) {
  return *a == *b && (*a == '\0' || equalNames(a + 1, b + 1));
}

/// Opens the first of `candidates` (names for the loader's search, or paths)
/// that dlopen accepts. Fails with `missing`, followed by the candidates tried
/// and the loader's last message.
/// The error is `Unavailable`.
Result<void *> openFirstLibrary(const std::vector<std::string> &candidates,
                                std::string_view missing);

/// Resolves `name` in `library`; null when absent.
void *lookupSymbol(void *library, const char *name);

/// Environment variable `name`, or an empty string.
std::string getEnvironment(const char *name);

/// Files in directory `dir` whose names start with `prefix`, sorted with the
/// longest (most versioned) name first; empty when `dir` does not exist.
std::vector<std::string> listLibraries(const std::string &dir,
                                       std::string_view prefix);

/// True when `path` exists.
bool pathExists(const std::string &path);

/// `text` without trailing whitespace.
std::string_view trimRight(std::string_view text);

/// Prefixes of CUDA toolkit installations to search, in order: `$CUDA_HOME`,
/// `$CUDA_PATH`, then the default `/usr/local/cuda`.
std::vector<std::string> getCudaRoots();

} // namespace kopt::runtime::dynlib

#endif // KOPT_RUNTIME_CUDA_DYNAMICLIBRARY_H
