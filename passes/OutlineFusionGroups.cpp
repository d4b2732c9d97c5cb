//===- OutlineFusionGroups.cpp - Outline fusion groups ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// For each group tagged by kopt-form-fusion-groups: collect its inputs
// (values defined outside the group) and outputs (values used outside), clone
// the members and the cheap constants they use into a new private function,
// put that function in canonical form, compute its key, and replace the
// members with a call. The block is then re-sorted topologically, since an
// outside user of an early member may sit before the group's last member.
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Analysis/GroupKey.h"
#include "kopt/Analysis/OpClassification.h"
#include "passes/Passes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "kopt-outline-fusion-groups"

namespace mlir::kopt {
#define GEN_PASS_DEF_OUTLINEFUSIONGROUPSPASS
#include "passes/Passes.h.inc"

namespace {
struct OutlineFusionGroupsPass final
    : impl::OutlineFusionGroupsPassBase<OutlineFusionGroupsPass> {
  using Base::Base;
  void runOnOperation() override;
};

/// What one group reads and writes.
struct GroupInterface {
  llvm::SetVector<Operation *> members;
  /// Cheap ops cloned into the function, in block order.
  llvm::SetVector<Operation *> clones;
  llvm::SetVector<Value> inputs;
  llvm::SetVector<Value> outputs;
};
} // namespace

/// Values `op` reads, including those its regions capture.
static SmallVector<Value> getReadValues(Operation *op) {
  SmallVector<Value> values(op->getOperands().begin(), op->getOperands().end());
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  values.append(captured.begin(), captured.end());
  return values;
}

static bool isInside(Operation *op, const llvm::SetVector<Operation *> &set) {
  for (; op; op = op->getParentOp())
    if (set.contains(op))
      return true;
  return false;
}

static GroupInterface analyzeGroup(ArrayRef<Operation *> members) {
  GroupInterface group;
  group.members.insert(members.begin(), members.end());
  // Cheap producers are cloned, with their own cheap producers.
  std::function<void(Value)> visit = [&](Value value) {
    Operation *def = value.getDefiningOp();
    if (def && group.members.contains(def))
      return;
    if (def && isCheapToClone(def)) {
      for (Value operand : getReadValues(def))
        visit(operand);
      group.clones.insert(def);
      return;
    }
    group.inputs.insert(value);
  };
  for (Operation *member : members)
    for (Value value : getReadValues(member))
      visit(value);
  for (Operation *member : members)
    for (Value result : member->getResults())
      for (Operation *user : result.getUsers())
        if (!isInside(user, group.members)) {
          group.outputs.insert(result);
          break;
        }
  return group;
}

/// Outlines one group of `parent`; returns the call that replaced it.
static void outlineGroup(func::FuncOp parent, int64_t id,
                         ArrayRef<Operation *> members, SymbolTable &symbols) {
  GroupInterface group = analyzeGroup(members);
  MLIRContext *ctx = parent.getContext();
  StringRef kind =
      cast<StringAttr>(members.front()->getAttr(kGroupKindAttrName)).getValue();
  Location loc = members.front()->getLoc();

  SmallVector<Type> inputTypes, outputTypes;
  for (Value value : group.inputs)
    inputTypes.push_back(value.getType());
  for (Value value : group.outputs)
    outputTypes.push_back(value.getType());

  OpBuilder builder(ctx);
  builder.setInsertionPoint(parent);
  std::string name =
      (parent.getSymName() + "_kopt_g" + Twine(id) + "_" + kind).str();
  auto func = func::FuncOp::create(
      builder, loc, name, builder.getFunctionType(inputTypes, outputTypes));
  func.setPrivate();
  symbols.insert(func); // Renames on a clash.

  Block *body = func.addEntryBlock();
  IRMapping mapping;
  for (auto [value, arg] : llvm::zip(group.inputs, body->getArguments()))
    mapping.map(value, arg);
  builder.setInsertionPointToEnd(body);
  // Clones and members, together in block order.
  SmallVector<Operation *> ordered(group.clones.begin(), group.clones.end());
  ordered.append(group.members.begin(), group.members.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Operation *op : ordered) {
    Operation *copy = builder.clone(*op, mapping);
    copy->removeAttr(kGroupIdAttrName);
    copy->removeAttr(kGroupKindAttrName);
  }
  SmallVector<Value> returned;
  for (Value value : group.outputs)
    returned.push_back(mapping.lookup(value));
  func::ReturnOp::create(builder, loc, returned);

  // Identical clones (two tensor.empty of one type, say) must not make
  // equal groups differ: deduplicate before taking the canonical form.
  IRRewriter rewriter(ctx);
  DominanceInfo dominance(func);
  eliminateCommonSubExpressions(rewriter, dominance, func);
  GroupPermutation permutation = canonicalizeGroupFunction(func);
  std::string key = computeGroupKey(func);
  func->setAttr(
      kFusionGroupAttrName,
      builder.getDictionaryAttr(
          {builder.getNamedAttr("id", builder.getI64IntegerAttr(id)),
           builder.getNamedAttr("kind", builder.getStringAttr(kind)),
           builder.getNamedAttr("parent",
                                builder.getStringAttr(parent.getSymName()))}));
  func->setAttr(kKeyAttrName, builder.getStringAttr(key));

  // The call goes after the last member; the block is re-sorted below.
  SmallVector<Value> operands;
  for (unsigned oldIndex : permutation.argOrder)
    operands.push_back(group.inputs[oldIndex]);
  builder.setInsertionPointAfter(group.members.back());
  auto call = func::CallOp::create(builder, loc, func, operands);
  call->setAttr(kFusionGroupAttrName, builder.getI64IntegerAttr(id));
  call->setAttr(kKeyAttrName, builder.getStringAttr(key));
  for (auto [newIndex, oldIndex] : llvm::enumerate(permutation.resultOrder))
    Value(group.outputs[oldIndex])
        .replaceUsesWithIf(call.getResult(newIndex), [&](OpOperand &use) {
          return !isInside(use.getOwner(), group.members);
        });

  for (Operation *op : llvm::reverse(group.members)) {
    op->dropAllUses();
    op->erase();
  }
  for (Operation *op : llvm::reverse(group.clones))
    if (op->use_empty())
      op->erase();
}

void OutlineFusionGroupsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  SmallVector<func::FuncOp> parents;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && !func->hasAttr(kFusionGroupAttrName))
      parents.push_back(func);

  for (func::FuncOp parent : parents) {
    if (!parent.getBody().hasOneBlock())
      continue;
    Block &block = parent.getBody().front();
    llvm::MapVector<int64_t, SmallVector<Operation *>> groups;
    for (Operation &op : block)
      if (auto id = op.getAttrOfType<IntegerAttr>(kGroupIdAttrName))
        groups[id.getInt()].push_back(&op);
    if (groups.empty())
      continue;
    for (auto &[id, members] : groups) {
      if (!members.front()->hasAttr(kGroupKindAttrName)) {
        members.front()->emitError("kopt: fusion group member without '")
            << kGroupKindAttrName << "'";
        return signalPassFailure();
      }
      outlineGroup(parent, id, members, symbols);
    }
    if (!sortTopologically(&block)) {
      parent.emitError("kopt: outlining made the function cyclic");
      return signalPassFailure();
    }
  }
}

} // namespace mlir::kopt
