//===- Hash.cpp - 64-bit FNV-1a hash ----------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Hash.h"

uint64_t kopt::runtime::fnv1a64(const void *data, size_t size) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  uint64_t hash = 0xcbf29ce484222325ull; // FNV-1a 64-bit offset basis.
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull; // FNV 64-bit prime.
  }
  return hash;
}
