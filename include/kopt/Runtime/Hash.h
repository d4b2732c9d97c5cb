//===- Hash.h - 64-bit FNV-1a hash ------------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One non-cryptographic hash for the runtime: input checksums in the
// evaluator, binary hashes in the kernel database. It detects corruption,
// not deliberate tampering.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_HASH_H
#define KOPT_RUNTIME_HASH_H

#include <cstddef>
#include <cstdint>

namespace kopt::runtime {

/// The 64-bit FNV-1a hash of `size` bytes at `data`.
uint64_t fnv1a64(const void *data, size_t size);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_HASH_H
