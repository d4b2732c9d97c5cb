//===- GroupWalk.h - Visit every fusion group of model graphs ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The loop `kopt plan` and `kopt propose` share: load each graph, plan and
// outline its fusion groups, build each group's KernelTask, and hand the
// group to the command.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TOOLS_KOPT_GROUPWALK_H
#define KOPT_TOOLS_KOPT_GROUPWALK_H

#include "kopt/Codegen/KernelTask.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>
#include <vector>

namespace mlir::kopt {

/// Called per group with its outlined function and task; returns false when
/// the command failed for that group.
using GroupVisitor = std::function<bool(func::FuncOp, const KernelTask &)>;

/// Loads and prepares each of `paths` (errors go to stderr), prints each
/// path and each group's `@name  (kind, key ...)` line to `os`, and calls
/// `visit` on every group whose task can be built (a remark says why when
/// it cannot). Returns false when a graph could not be read or prepared, or
/// when `visit` returned false for any group.
bool walkGroups(const DialectRegistry &registry,
                const std::vector<std::string> &paths, llvm::raw_ostream &os,
                const GroupVisitor &visit);

} // namespace mlir::kopt

#endif // KOPT_TOOLS_KOPT_GROUPWALK_H
