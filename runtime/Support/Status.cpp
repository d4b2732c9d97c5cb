//===- Status.cpp - Status and Result values for the runtime ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Status.h"

using namespace kopt::runtime;

const char *kopt::runtime::stringifyStatusCode(StatusCode code) {
  switch (code) {
  case StatusCode::Ok:
    return "ok";
  case StatusCode::InvalidArgument:
    return "invalid-argument";
  case StatusCode::OutOfRange:
    return "out-of-range";
  case StatusCode::Unsupported:
    return "unsupported";
  case StatusCode::IoError:
    return "io-error";
  case StatusCode::Closed:
    return "closed";
  case StatusCode::Unavailable:
    return "unavailable";
  case StatusCode::Internal:
    return "internal";
  }
  return "unknown";
}

std::string Status::toString() const {
  if (isOk())
    return "ok";
  return std::string(stringifyStatusCode(statusCode)) + ": " + text;
}
