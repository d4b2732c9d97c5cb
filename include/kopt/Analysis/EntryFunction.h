//===- EntryFunction.h - A graph's entry and its ungrouped ops --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A runtime module runs a graph's entry function, and every compute op in
// it must belong to an outlined group. These find the entry and tag the ops
// left outside the fusion groups as groups of one, for the outline pass.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_ANALYSIS_ENTRYFUNCTION_H
#define KOPT_ANALYSIS_ENTRYFUNCTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

namespace mlir::kopt {

/// The graph's entry: its only public function with a body that is not a
/// fusion group. Fails naming the candidates when there are several.
llvm::Expected<func::FuncOp> findEntryFunction(ModuleOp module);

/// Tags every compute op of `entry` left outside the fusion groups as a
/// group of its own (kind from its classification; pads, slices, inserts
/// and concatenations are elementwise), for the outline pass to
/// make a function of. Returns whether it tagged any; fails on an op kopt
/// cannot compute. `prepareRuntimeModuleGraph` (passes/Passes.h) does this
/// and the outlining.
llvm::Expected<bool> tagSingletonGroups(func::FuncOp entry);

/// Erases the `cf.assert` ops of `entry`'s body (kopt-form-fusion-groups
/// has said in a remark that they are not checked) and then the ops left
/// computing nothing but their conditions (shape checks on `tensor.dim`,
/// say), so that a runtime module need not run them.
/// `prepareRuntimeModuleGraph` does this before tagging.
void dropAssertions(func::FuncOp entry);

} // namespace mlir::kopt

#endif // KOPT_ANALYSIS_ENTRYFUNCTION_H
