//===- BuiltinRows.h - The built-in proposer's row kernels ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The built-in proposer's plans for reduction and softmax groups: rows in
// registers, several rows a block, rows in shared memory over a block or a
// cluster, rows over groups of blocks, split rows (in L2-sized batches,
// pipelined), a softmax per cluster, and the one-pass twins of groups that
// sum squared deviations from their rows' means (docs/Codegen.md says
// which form is proposed where).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_BUILTINROWS_H
#define KOPT_LIB_CODEGEN_BUILTINROWS_H

#include "kopt/Codegen/Proposers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::kopt::builtins {

/// The reduction a row kernel's layout follows: the group's first that
/// threads can split and no library call takes; null when there is none.
linalg::GenericOp findRowAnchor(func::FuncOp group);

/// Every row family's plans for `group`, laid out after `anchor`, in turn
/// (the first of each family, then the second, ...); variant names carry
/// `tag` after their first part when it is not empty.
void proposeRows(Proposal &proposal, func::FuncOp group, const KernelTask &task,
                 linalg::GenericOp anchor, llvm::StringRef tag);

/// A group that is one softmax over long contiguous f32 rows as a cluster
/// per row, the row read once (ClusterSoftmax.h).
void proposeClusterSoftmax(Proposal &proposal, func::FuncOp group,
                           const KernelTask &task);

/// The one-pass twins of the row plans already in `proposal`
/// (OnePassMoments.h), each placed right before its plan.
void proposeOnePassTwins(Proposal &proposal, func::FuncOp group,
                         const KernelTask &task);

} // namespace mlir::kopt::builtins

#endif // KOPT_LIB_CODEGEN_BUILTINROWS_H
