//===- PlanVerifier.h - Launch expressions and plan checks ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The checks a KernelPlan must pass against its KernelTask before anything of
// it runs, and the evaluator of its grid/block expressions. This is the one
// implementation: the plan runner and the evaluator worker call it directly,
// and the compiler (lib/Codegen) calls it through its conversion to the
// runtime's structs.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_PLANVERIFIER_H
#define KOPT_RUNTIME_PLANVERIFIER_H

#include "kopt/Runtime/Status.h"
#include "kopt/Runtime/TaskPlan.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace kopt::runtime {

/// Evaluates a grid/block expression: integer literals, `+ - * / %`,
/// parentheses, `cdiv(a, b)`, `min(a, b)`, `max(a, b)`, and `numel(t)` /
/// `dim(t, i)` over the tensors in `tensors`. Errors read
/// `in expression '<expression>': <why>`.
Result<int64_t>
evaluatePlanExpression(std::string_view expression,
                       const std::map<std::string, TensorSpec> &tensors);

/// True when launch argument `arg` is a typed scalar literal (`i32:`, `i64:`,
/// `f32:` or `f64:` prefix) rather than a tensor name.
bool isScalarLiteral(std::string_view arg);

/// Checks `plan` against `task`: its arithmetic is one the task's
/// precision policy allows (isArithmeticAllowed), unique tensor names,
/// every step refers to known tensors and sources, expressions evaluate to
/// positive sizes within CUDA's limits, GEMM/conv shapes agree with their
/// tensors. Fails with
/// `InvalidArgument` and a message naming the step.
Status verifyPlan(const KernelPlan &plan, const KernelTask &task);

/// `verifyPlan`, and the plan is one for `task` at all: its task key is
/// `task.key` and every output of the task is written by some step (a
/// launch's argument, a GEMM's C, a convolution's output). What a stored
/// plan must pass before a build uses it.
Status verifyStoredPlan(const KernelPlan &plan, const KernelTask &task);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_PLANVERIFIER_H
