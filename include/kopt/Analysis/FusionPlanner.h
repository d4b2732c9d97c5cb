//===- FusionPlanner.h - Form fusion groups ---------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_ANALYSIS_FUSIONPLANNER_H
#define KOPT_ANALYSIS_FUSIONPLANNER_H

#include "kopt/Analysis/OpClassification.h"
#include "mlir/IR/Block.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::kopt {

/// A set of ops of one block that kopt fuses into one kernel plan.
struct FusionGroup {
  /// The kind of the group, named after its anchor: `contraction`,
  /// `convolution`, `reduction`, `softmax`, `pooling` or `elementwise`.
  OpKind kind = OpKind::Elementwise;
  /// The members in block order.
  llvm::SmallVector<Operation *> ops;
};

/// An op left out of every group, with the reason to report.
struct SkippedOp {
  Operation *op = nullptr;
  std::string reason;
};

/// The result of planning one block.
struct FusionPlan {
  llvm::SmallVector<FusionGroup> groups;
  /// Linalg ops that could not be fused (dynamic shapes, unsupported forms).
  llvm::SmallVector<SkippedOp> skipped;
};

/// Partitions the linalg ops of `block` into fusion groups, following the
/// rules documented in docs/FusionGroups.md. Groups never overlap, never
/// form a cycle through outside ops, and are returned in the block order of
/// their first member.
FusionPlan planFusionGroups(Block &block);

} // namespace mlir::kopt

#endif // KOPT_ANALYSIS_FUSIONPLANNER_H
