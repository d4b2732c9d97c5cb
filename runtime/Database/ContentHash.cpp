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
// record is loaded. The runtime has no LLVM; SHA-256 comes from OpenSSL's
// libcrypto.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/KernelDatabase.h"

#include <openssl/evp.h>

#include <cstdlib>
#include <memory>

using namespace kopt::runtime;

namespace {

/// SHA-256 over a stream of bytes, through OpenSSL's libcrypto.
class Sha256 {
public:
  Sha256() : context(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!context ||
        EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1)
      context.reset();
  }
  void update(std::string_view bytes) {
    if (context &&
        EVP_DigestUpdate(context.get(), bytes.data(), bytes.size()) != 1)
      context.reset();
  }
  /// The digest in lower-case hex. libcrypto fails only when it cannot
  /// allocate, which ends the process like any other allocation failure.
  std::string finishHex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned size = 0;
    if (!context || EVP_DigestFinal_ex(context.get(), digest, &size) != 1)
      std::abort();
    static const char digits[] = "0123456789abcdef";
    std::string text;
    for (unsigned i = 0; i < size; ++i) {
      text.push_back(digits[digest[i] >> 4]);
      text.push_back(digits[digest[i] & 15]);
    }
    return text;
  }

private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX *)> context;
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
