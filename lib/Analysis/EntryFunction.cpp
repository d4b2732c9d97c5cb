//===- EntryFunction.cpp - A graph's entry and ungrouped ops ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/EntryFunction.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Analysis/GroupReport.h"
#include "kopt/Analysis/OpClassification.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::kopt;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<func::FuncOp> mlir::kopt::findEntryFunction(ModuleOp module) {
  SmallVector<func::FuncOp> entries;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal() &&
        !func->hasAttr(kFusionGroupAttrName))
      entries.push_back(func);
  if (entries.size() == 1)
    return entries.front();
  if (entries.empty())
    return makeError("the graph has no public function with a body");
  std::string names;
  for (func::FuncOp func : entries)
    names += " @" + func.getSymName().str();
  return makeError("the graph has several public functions (" +
                   StringRef(names).ltrim() +
                   "); a runtime module needs exactly one");
}

llvm::Expected<bool> mlir::kopt::tagSingletonGroups(func::FuncOp entry) {
  int64_t next = 1000;
  for (Operation &op : entry.getBody().front()) {
    if (op.use_empty())
      continue;
    if (isa<tensor::PadOp, tensor::ExtractSliceOp, tensor::InsertSliceOp,
            tensor::ConcatOp>(op)) {
      // Moves elements: a group of one whose baseline is a copy kernel.
      Builder builder(op.getContext());
      op.setAttr(kGroupIdAttrName, builder.getI64IntegerAttr(next++));
      op.setAttr(kGroupKindAttrName, builder.getStringAttr("elementwise"));
      continue;
    }
    if (!isa<linalg::LinalgOp>(op))
      continue;
    OpClassification classification = classifyOp(&op);
    if (classification.kind == OpKind::Unsupported) {
      std::string where = formatLocation(op.getLoc());
      return makeError("op '" + op.getName().getStringRef() + "'" +
                       (where.empty() ? "" : " at " + where) +
                       " outside the fusion groups is not supported: " +
                       classification.reason);
    }
    StringRef kind = classification.kind == OpKind::Other
                         ? StringRef("elementwise")
                         : stringifyOpKind(classification.kind);
    Builder builder(op.getContext());
    op.setAttr(kGroupIdAttrName, builder.getI64IntegerAttr(next++));
    op.setAttr(kGroupKindAttrName, builder.getStringAttr(kind));
  }
  return next != 1000;
}

void mlir::kopt::dropAssertions(func::FuncOp entry) {
  Block &body = entry.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(body))
    if (isa<cf::AssertOp>(op))
      op.erase();
  // In reverse, so that an op whose only users were just erased goes too.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
}
