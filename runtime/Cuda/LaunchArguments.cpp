//===- LaunchArguments.cpp - Scalar kernel arguments of plans ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/LaunchArguments.h"

#include <cctype>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>

using namespace kopt::runtime;

static Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

/// Parses all of `text` as a base-10 int64 (an optional '-', then digits).
static bool parseInteger(std::string_view text, int64_t &value) {
  auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value, 10);
  return error == std::errc() && end == text.data() + text.size();
}

/// Parses all of `text` as a floating-point number (decimal or hexadecimal,
/// `inf`, `nan`); out-of-range values give infinity or zero, as rounding
/// would.
static bool parseDouble(const std::string &text, double &value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front())))
    return false;
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

/// Parses a `i32:N`, `i64:N`, `f32:X` or `f64:X` literal into 8 bytes of
/// argument storage (the kernel reads only the first 4 for 32-bit types).
Result<uint64_t> kopt::runtime::encodeScalarArgument(const std::string &arg) {
  size_t colon = arg.find(':');
  std::string type = arg.substr(0, colon);
  std::string text = colon == std::string::npos ? "" : arg.substr(colon + 1);
  uint64_t storage = 0;
  if (type == "i32" || type == "i64") {
    int64_t value = 0;
    if (!parseInteger(text, value) ||
        (type == "i32" && (value < INT32_MIN || value > INT32_MAX)))
      return invalid("bad " + type + " literal '" + arg + "'");
    if (type == "i32") {
      int32_t narrow = int32_t(value);
      std::memcpy(&storage, &narrow, sizeof(narrow));
    } else {
      std::memcpy(&storage, &value, sizeof(value));
    }
    return storage;
  }
  if (type == "f32" || type == "f64") {
    double value = 0;
    if (!parseDouble(text, value))
      return invalid("bad " + type + " literal '" + arg + "'");
    if (type == "f32") {
      float narrow = float(value);
      std::memcpy(&storage, &narrow, sizeof(narrow));
    } else {
      std::memcpy(&storage, &value, sizeof(value));
    }
    return storage;
  }
  return invalid("unknown argument '" + arg + "'");
}
