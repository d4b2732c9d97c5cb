//===- RuntimeInterop.h - Compiler structs to runtime structs ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The compiler's KernelTask/KernelPlan (this directory) and the runtime's
// (kopt/Runtime/TaskPlan.h) describe the same JSON documents with the same
// fields; the runtime's have no LLVM in them. Code that runs, verifies or
// evaluates plans lives once, in the runtime, and the compiler reaches it
// through these conversions: a field-by-field copy one way, and the runtime's
// Status turned into an llvm::Error with the same message the other.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_RUNTIMEINTEROP_H
#define KOPT_CODEGEN_RUNTIMEINTEROP_H

#include "kopt/Codegen/KernelPlan.h"
#include "kopt/Runtime/Status.h"
#include "kopt/Runtime/TaskPlan.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace mlir::kopt {

/// The runtime's spelling of `type`.
::kopt::runtime::ElementType toRuntime(ElementType type);
/// The runtime's copy of `tensor`.
::kopt::runtime::TensorSpec toRuntime(const TensorSpec &tensor);
/// The runtime's copy of `task`.
::kopt::runtime::KernelTask toRuntime(const KernelTask &task);
/// The runtime's copy of `plan`.
::kopt::runtime::KernelPlan toRuntime(const KernelPlan &plan);
/// The runtime's copy of a JSON value (object members in key order).
::kopt::runtime::json::Value toRuntime(const llvm::json::Value &value);

/// The compiler's spelling of `type`.
ElementType fromRuntime(::kopt::runtime::ElementType type);
/// The compiler's copy of `tensor`.
TensorSpec fromRuntime(const ::kopt::runtime::TensorSpec &tensor);
/// The compiler's copy of `task`.
KernelTask fromRuntime(const ::kopt::runtime::KernelTask &task);
/// The compiler's copy of `plan`.
KernelPlan fromRuntime(const ::kopt::runtime::KernelPlan &plan);
/// LLVM's copy of a runtime JSON value.
llvm::json::Value fromRuntime(const ::kopt::runtime::json::Value &value);

/// Success for an ok `status`; otherwise an error with its message (the code
/// is dropped: the compiler reports errors by message).
llvm::Error toLlvmError(const ::kopt::runtime::Status &status);

/// The value of `result`, or its status as an llvm::Error.
template <typename T>
llvm::Expected<T> toExpected(::kopt::runtime::Result<T> &&result) {
  if (!result)
    return toLlvmError(result.status());
  return std::move(result).value();
}

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_RUNTIMEINTEROP_H
