//===- RuntimeStatus.cpp - Runtime results in LLVM's terms ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/RuntimeStatus.h"

#include "llvm/Support/ErrorHandling.h"

namespace rt = ::kopt::runtime;

llvm::Error mlir::kopt::toLlvmError(const rt::Status &status) {
  if (status.isOk())
    return llvm::Error::success();
  return llvm::createStringError(status.message());
}

llvm::json::Value mlir::kopt::toLlvmJson(const rt::json::Value &value) {
  switch (value.kind()) {
  case rt::json::Value::Kind::Null:
    return nullptr;
  case rt::json::Value::Kind::Bool:
    return *value.getBool();
  case rt::json::Value::Kind::Number:
    if (std::optional<int64_t> integer = value.getInteger())
      return *integer;
    return *value.getNumber();
  case rt::json::Value::Kind::String:
    return *value.getString();
  case rt::json::Value::Kind::Array: {
    llvm::json::Array array;
    for (size_t i = 0, e = value.size(); i < e; ++i)
      array.push_back(toLlvmJson(value.at(i)));
    return array;
  }
  case rt::json::Value::Kind::Object: {
    llvm::json::Object object;
    for (size_t i = 0, e = value.size(); i < e; ++i)
      object[value.keyAt(i)] = toLlvmJson(value.at(i));
    return object;
  }
  }
  llvm_unreachable("unknown JSON kind");
}
