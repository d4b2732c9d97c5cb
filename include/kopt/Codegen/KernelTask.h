//===- KernelTask.h - What a fused group computes ---------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The compiler's side of the task/plan vocabulary. KernelTask, KernelPlan
// and their parts are the runtime's (include/kopt/Runtime/TaskPlan.h, the
// one definition): the compiler builds them from IR here and writes them
// directly, and the evaluator, the database and the runtime read the same
// values. This header adds what needs MLIR: building a task from an
// outlined group, the element type of an MLIR type, tolerances, and the
// CUDA spelling of element types.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_KERNELTASK_H
#define KOPT_CODEGEN_KERNELTASK_H

#include "kopt/Runtime/PlanVerifier.h"
#include "kopt/Runtime/TaskPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::kopt {

// The runtime's vocabulary, used unqualified throughout the compiler.
using ::kopt::runtime::ConvStep;
using ::kopt::runtime::ElementType;
using ::kopt::runtime::GemmStep;
using ::kopt::runtime::KernelPlan;
using ::kopt::runtime::KernelSource;
using ::kopt::runtime::KernelTask;
using ::kopt::runtime::LaunchStep;
using ::kopt::runtime::PlanStep;
using ::kopt::runtime::TensorSpec;
using ::kopt::runtime::Tolerance;

using ::kopt::runtime::getElementBytes;
using ::kopt::runtime::parseElementType;
using ::kopt::runtime::stringifyElementType;

/// Converts an MLIR element type; std::nullopt when unsupported.
std::optional<ElementType> getElementType(Type type);
/// The CUDA C++ type that stores `type` (`float`, `__half`, `bool`, ...).
llvm::StringRef getCudaStorageType(ElementType type);
/// True for f16, bf16, f32 and f64.
bool isFloat(ElementType type);

/// Builds the task of an outlined group function (with `kopt.key`). Fails
/// with a message for dynamic shapes or unsupported element types.
llvm::Expected<KernelTask> buildKernelTask(func::FuncOp func);

/// The tolerance for outputs of `type` computed with reductions over at most
/// `reductionSize` elements, under precision policy `precision`.
Tolerance deriveTolerance(ElementType type, int64_t reductionSize,
                          llvm::StringRef precision);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_KERNELTASK_H
