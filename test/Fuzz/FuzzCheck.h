//===- FuzzCheck.h - Invariants the fuzz targets check ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A failed invariant in a fuzz target prints what broke and aborts, so
// libFuzzer keeps the input as a crash (docs/Fuzzing.md).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_FUZZ_FUZZCHECK_H
#define KOPT_TEST_FUZZ_FUZZCHECK_H

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kopt::fuzz {

/// Aborts with `what` and `detail` on stderr unless `condition` holds.
inline void check(bool condition, const char *what,
                  const std::string &detail = {}) {
  if (condition)
    return;
  std::fprintf(stderr, "kopt fuzz invariant broken: %s%s%s\n", what,
               detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

} // namespace kopt::fuzz

#endif // KOPT_TEST_FUZZ_FUZZCHECK_H
