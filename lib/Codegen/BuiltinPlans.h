//===- BuiltinPlans.h - Shared by the built-in families ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The built-in proposer (BuiltinProposer.cpp) makes its plans in families,
// each in its own file: the group's outputs, the comment its kernels carry,
// and the finishing of a plan into the proposal or a remark are common to
// them all. The row families (BuiltinRows.h) are declared apart.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_BUILTINPLANS_H
#define KOPT_LIB_CODEGEN_BUILTINPLANS_H

#include "kopt/Codegen/PlanBuilder.h"
#include "kopt/Codegen/Proposers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace mlir::kopt::builtins {

/// The values the task returns, in order, without repeats and arguments.
SmallVector<Value> returnedValues(func::FuncOp func);

/// The kernel outputs of returnedValues(func), in order.
std::vector<KernelOutput> returnedOutputs(PlanBuilder &builder,
                                          func::FuncOp func);

/// The comment a fused kernel of `func` carries: its ops, in order.
std::string describeGroup(func::FuncOp func);

/// Finishes, checks and adds a plan; a failure becomes a remark.
/// `arithmetic` and `arch` are set on the plan when given.
void addPlan(Proposal &proposal, PlanBuilder &builder, const KernelTask &task,
             func::FuncOp group, llvm::Error error,
             llvm::StringRef arithmetic = "", llvm::StringRef arch = "");

} // namespace mlir::kopt::builtins

#endif // KOPT_LIB_CODEGEN_BUILTINPLANS_H
