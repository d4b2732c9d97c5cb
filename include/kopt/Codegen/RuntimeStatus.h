//===- RuntimeStatus.h - Runtime results in LLVM's terms --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The runtime reports with Status and Result<T> and writes JSON with its own
// value type; the compiler reports with llvm::Error and prints JSON with
// llvm::json. These adapt the first to the second at the edge, with no copy
// of the task/plan vocabulary in between.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_RUNTIMESTATUS_H
#define KOPT_CODEGEN_RUNTIMESTATUS_H

#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/Status.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace mlir::kopt {

/// Success, or an error carrying the status's message.
llvm::Error toLlvmError(const ::kopt::runtime::Status &status);

/// The value, or an error carrying the status's message.
template <typename T>
llvm::Expected<T> toExpected(::kopt::runtime::Result<T> &&result) {
  if (!result)
    return toLlvmError(result.status());
  return std::move(result).value();
}

/// `value` as llvm::json, to print it as the compiler's documents are
/// printed (members sorted, `{0:2}` indentation).
llvm::json::Value toLlvmJson(const ::kopt::runtime::json::Value &value);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_RUNTIMESTATUS_H
