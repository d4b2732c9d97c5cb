//===- ContentHash.cpp - SHA-256 content hashes of records ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A record shared through a database server carries a content hash: SHA-256
// (FIPS 180-4) over its stored JSON and its binaries, checked whenever the
// record is loaded. The runtime has no LLVM, so SHA-256 is written out here.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/KernelDatabase.h"

#include <array>
#include <cstdint>

using namespace kopt::runtime;

namespace {

constexpr uint32_t kRoundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t rotateRight(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

/// SHA-256 over a stream of bytes.
class Sha256 {
public:
  void update(std::string_view bytes) {
    for (unsigned char c : bytes) {
      block[blockSize++] = c;
      if (blockSize == 64) {
        compress();
        blockSize = 0;
      }
    }
    length += bytes.size();
  }

  std::string finishHex() {
    uint64_t bits = length * 8;
    unsigned char pad = 0x80;
    update(std::string_view(reinterpret_cast<char *>(&pad), 1));
    unsigned char zero = 0;
    while (blockSize != 56)
      update(std::string_view(reinterpret_cast<char *>(&zero), 1));
    unsigned char size[8];
    for (int i = 0; i < 8; ++i)
      size[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    update(std::string_view(reinterpret_cast<char *>(size), 8));
    static const char digits[] = "0123456789abcdef";
    std::string text;
    for (uint32_t word : state)
      for (int shift = 28; shift >= 0; shift -= 4)
        text.push_back(digits[(word >> shift) & 15]);
    return text;
  }

private:
  void compress() {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 |
             uint32_t(block[4 * i + 2]) << 8 | uint32_t(block[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = rotateRight(w[i - 15], 7) ^ rotateRight(w[i - 15], 18) ^
                    (w[i - 15] >> 3);
      uint32_t s1 = rotateRight(w[i - 2], 17) ^ rotateRight(w[i - 2], 19) ^
                    (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3],
             e = state[4], f = state[5], g = state[6], h = state[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t s1 = rotateRight(e, 6) ^ rotateRight(e, 11) ^ rotateRight(e, 25);
      uint32_t choice = (e & f) ^ (~e & g);
      uint32_t t1 = h + s1 + choice + kRoundConstants[i] + w[i];
      uint32_t s0 = rotateRight(a, 2) ^ rotateRight(a, 13) ^ rotateRight(a, 22);
      uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
      uint32_t t2 = s0 + majority;
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
  }

  std::array<uint32_t, 8> state = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                   0xa54ff53a, 0x510e527f, 0x9b05688c,
                                   0x1f83d9ab, 0x5be0cd19};
  unsigned char block[64] = {};
  size_t blockSize = 0;
  uint64_t length = 0;
};

/// Feeds `part` with its length in front, so that no two different lists of
/// parts hash the same.
void updatePart(Sha256 &hash, const std::optional<std::string> &part) {
  std::string header = part ? std::to_string(part->size()) + ":" : "-:";
  hash.update(header);
  if (part)
    hash.update(*part);
}

} // namespace

std::string kopt::runtime::detail::sha256Hex(std::string_view bytes) {
  Sha256 hash;
  hash.update(bytes);
  return hash.finishHex();
}

Status
kopt::runtime::detail::contentHashMismatch(std::string_view taskKey,
                                           std::string_view fingerprintHash) {
  return Status::error(StatusCode::Internal,
                       "record " + std::string(taskKey) + " on " +
                           std::string(fingerprintHash) +
                           ": its content does not match its content hash; "
                           "refusing it ('kopt db verify' lists the problems)");
}

std::string
kopt::runtime::detail::contentHash(std::string_view recordJson,
                                   const std::optional<std::string> &cubin,
                                   const std::optional<std::string> &ptx) {
  Sha256 hash;
  updatePart(hash, std::string(recordJson));
  updatePart(hash, cubin);
  updatePart(hash, ptx);
  return hash.finishHex();
}
