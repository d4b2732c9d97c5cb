//===- Proposers.h - Baseline and built-in kernel plans ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The two proposers that need no LLM. The baseline is what a compiler emits
// without kopt: one kernel (or library call) per op, the numerical
// reference and the time to beat. The built-in generator fuses the whole
// group into as few kernels as its templates allow and offers several
// variants (block size, vector width) for the evaluator to choose from.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_PROPOSERS_H
#define KOPT_CODEGEN_PROPOSERS_H

#include "kopt/Codegen/KernelTask.h"

namespace mlir::kopt {

/// What a proposer returns: its plans, and remarks on what it could not do.
struct Proposal {
  std::vector<KernelPlan> plans;
  std::vector<std::string> remarks;
};

/// The baseline plan of the outlined group `func` (one plan). Fails only
/// when some op cannot be generated at all.
llvm::Expected<KernelPlan> proposeBaseline(func::FuncOp func,
                                           const KernelTask &task);

/// Built-in fused plans for the outlined group `func`; empty, with a remark
/// saying why, when no template fits (the baseline then stands alone).
Proposal proposeBuiltin(func::FuncOp func, const KernelTask &task);

/// Adds the built-in `plan` to `proposal` if `error` (from building it) is
/// success and the plan passes verifyPlan for `task`; otherwise a remark
/// naming the variant and the error. Returns whether the plan was added.
bool addBuiltinPlan(Proposal &proposal, KernelPlan plan, const KernelTask &task,
                    llvm::Error error);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_PROPOSERS_H
