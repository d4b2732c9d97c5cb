//===- AutotunePass.h - The kopt-autotune pass ------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_AUTOTUNE_AUTOTUNEPASS_H
#define KOPT_AUTOTUNE_AUTOTUNEPASS_H

#include "kopt/Autotune/Autotuner.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <functional>

namespace mlir::kopt {

#define GEN_PASS_DECL_AUTOTUNEPASS
#include "lib/Autotune/AutotunePass.h.inc"

#define GEN_PASS_REGISTRATION
#include "lib/Autotune/AutotunePass.h.inc"

/// Runs the autotuner over every outlined group of `module` in order,
/// tagging groups and calls; calls `onGroup` after each group (for progress
/// and reports). Returns the outcomes, or the first error.
llvm::Expected<std::vector<GroupOutcome>>
autotuneModule(ModuleOp module, Autotuner &tuner,
               const std::function<void(const GroupOutcome &)> &onGroup = {});

} // namespace mlir::kopt

#endif // KOPT_AUTOTUNE_AUTOTUNEPASS_H
