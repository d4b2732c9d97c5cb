//===- KernelPlan.cpp - How to compute a task on a GPU ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/KernelPlan.h"

#include "kopt/Codegen/RuntimeInterop.h"
#include "kopt/Runtime/PlanVerifier.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::kopt;

unsigned KernelPlan::countLaunches() const {
  return llvm::count_if(steps, [](const PlanStep &step) {
    return step.kind == PlanStep::Kind::Launch;
  });
}

//===----------------------------------------------------------------------===//
// Launch expressions and verification
//===----------------------------------------------------------------------===//

// Both live in the runtime (kopt/Runtime/PlanVerifier.h), which the plan
// runner and the evaluator worker call without LLVM; these convert.

llvm::Expected<int64_t> mlir::kopt::evaluatePlanExpression(
    llvm::StringRef expression,
    const std::map<std::string, TensorSpec> &tensors) {
  std::map<std::string, ::kopt::runtime::TensorSpec> converted;
  for (const auto &[name, tensor] : tensors)
    converted.emplace(name, toRuntime(tensor));
  return toExpected(::kopt::runtime::evaluatePlanExpression(
      std::string_view(expression.data(), expression.size()), converted));
}

llvm::Error mlir::kopt::verifyPlan(const KernelPlan &plan,
                                   const KernelTask &task) {
  return toLlvmError(
      ::kopt::runtime::verifyPlan(toRuntime(plan), toRuntime(task)));
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

// The runtime reads and writes the documents (kopt/Runtime/TaskPlan.h);
// these convert.

llvm::json::Value mlir::kopt::toJson(const KernelPlan &plan) {
  return fromRuntime(::kopt::runtime::toJson(toRuntime(plan)));
}

llvm::Expected<KernelPlan>
mlir::kopt::kernelPlanFromJson(const llvm::json::Value &value) {
  auto plan = toExpected(::kopt::runtime::kernelPlanFromJson(toRuntime(value)));
  if (!plan)
    return plan.takeError();
  return fromRuntime(*plan);
}
