//===- Passes.h - kopt pass declarations ------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_PASSES_PASSES_H
#define KOPT_PASSES_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::kopt {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Adds the upstream TOSA-to-linalg lowering kopt uses: tosa-to-linalg-named
/// (preferring the NHWC/HWCF convolution layout), tosa-to-linalg,
/// tosa-to-tensor, tosa-to-arith and a canonicalisation.
void addTosaLoweringPasses(OpPassManager &pm);

/// Adds fusion planning: kopt-fold-tensor-casts, kopt-fold-constant-gathers,
/// kopt-align-reduction-domains, kopt-collapse-before-transpose and
/// kopt-form-fusion-groups on each function, then
/// kopt-outline-fusion-groups (docs/FusionGroups.md).
void addFusionPlanningPasses(OpPassManager &pm);

/// Lowers TOSA when present and plans fusion groups in place: what every
/// kopt command does to a graph it has loaded (`loadModelGraph`). Errors are
/// reported through the context's diagnostics and returned as failure.
LogicalResult prepareModelGraph(ModuleOp module);

/// Readies a tuned graph for a runtime module (`emitRuntimeModule`,
/// kopt/Autotune/ModuleEmitter.h): the entry function's assertions and what
/// only they read are dropped (`dropAssertions`), and every compute op left
/// outside the fusion groups becomes an outlined group of its own. Call it
/// on a copy: the graph `kopt compile` writes keeps those ops inline.
llvm::Error prepareRuntimeModuleGraph(ModuleOp module);

/// Readies a loaded graph for the fp64 reference interpreter run over the
/// whole graph (`kopt check-module`, `kopt-reference-bench --graph`): TOSA
/// lowered, a dynamic batch specialised to `batch` when given (> 0), casts
/// that hide static sizes folded (`kopt-fold-tensor-casts`), nothing fused.
llvm::Error prepareReferenceGraph(ModuleOp module, int64_t batch = 0);

} // namespace mlir::kopt

#endif // KOPT_PASSES_PASSES_H
