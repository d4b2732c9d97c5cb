//===- FormFusionGroups.cpp - Tag fusion groups -----------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Runs the fusion planner (lib/Analysis/FusionPlanner.cpp) on each function
// and records its answer on the IR: every member of a group gets the group's
// id and kind as attributes, which kopt-outline-fusion-groups consumes. Ops
// the planner cannot take get a remark that names the reason.
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/FusionPlanner.h"
#include "kopt/Analysis/GroupAttributes.h"
#include "passes/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"

#define DEBUG_TYPE "kopt-form-fusion-groups"

namespace mlir::kopt {
#define GEN_PASS_DEF_FORMFUSIONGROUPSPASS
#include "passes/Passes.h.inc"

namespace {
struct FormFusionGroupsPass final
    : impl::FormFusionGroupsPassBase<FormFusionGroupsPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void FormFusionGroupsPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal() || func->hasAttr(kFusionGroupAttrName))
    return;
  if (!func.getBody().hasOneBlock()) {
    if (emitRemarks)
      func.emitRemark("kopt: not planned: the function has control flow "
                      "(more than one block)");
    return;
  }

  FusionPlan plan = planFusionGroups(func.getBody().front());
  Builder builder(&getContext());
  for (auto [id, group] : llvm::enumerate(plan.groups)) {
    for (Operation *op : group.ops) {
      op->setAttr(kGroupIdAttrName, builder.getI64IntegerAttr(id));
      op->setAttr(kGroupKindAttrName,
                  builder.getStringAttr(stringifyOpKind(group.kind)));
    }
  }
  if (!emitRemarks)
    return;
  for (const SkippedOp &skipped : plan.skipped)
    skipped.op->emitRemark("kopt: not fused: ") << skipped.reason;
  // torch-mlir guards gathers and divisions with assertions; kopt's kernels
  // and runtime modules do not evaluate them (an out-of-range gather index
  // is clamped instead).
  func.walk([](cf::AssertOp assertOp) {
    assertOp.emitRemark("kopt: cf.assert dropped: kopt's kernels do not "
                        "check \"")
        << assertOp.getMsg() << "\"";
  });
}

} // namespace mlir::kopt
