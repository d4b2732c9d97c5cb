//===- GroupKey.cpp - Canonical form and key of a fusion group --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Canonical order: ops are scheduled one at a time, always picking, among the
// ops whose operands are all available, the one with the smallest signature.
// A signature is the op printed on its own (generic form, no locations, its
// operands replaced by placeholders) followed by the canonical names of its
// operands. Canonical names are given as values appear: arguments in order
// of first use, results in order of scheduling. Since the choice depends only
// on structure and on names given earlier, any topological order of the same
// graph, with any SSA names, ends in the same schedule.
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/GroupKey.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/DebugStringHelper.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::kopt;

/// All values `op` reads: its operands and values its regions capture.
static SmallVector<Value> getReadValues(Operation *op) {
  SmallVector<Value> values(op->getOperands().begin(), op->getOperands().end());
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  values.append(captured.begin(), captured.end());
  return values;
}

/// The structure of `op` alone: generic form, no locations. It prints a
/// detached copy, so that neither operand names nor the numbering of the
/// enclosing function (which depends on the op's position) show.
static std::string printStructure(Operation *op) {
  Operation *copy = op->clone();
  std::string text;
  llvm::raw_string_ostream os(text);
  copy->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
  copy->destroy();
  return text;
}

GroupPermutation mlir::kopt::canonicalizeGroupFunction(func::FuncOp func) {
  Block &body = func.getBody().front();
  Operation *terminator = body.getTerminator();

  llvm::DenseMap<Value, std::string> names;
  llvm::SmallVector<unsigned> argOrder;
  auto nameOf = [&](Value value) -> std::string {
    auto it = names.find(value);
    if (it != names.end())
      return it->second;
    // Not named yet: an argument seen for the first time.
    return "arg?:" + debugString(value.getType());
  };

  // Ops still to schedule and their structural text, computed once.
  llvm::SmallVector<Operation *> pending;
  llvm::DenseMap<Operation *, std::string> structure;
  for (Operation &op : body.without_terminator()) {
    pending.push_back(&op);
    structure[&op] = printStructure(&op);
  }

  auto isReady = [&](Operation *op) {
    // Arguments are always available; results once their op is scheduled.
    for (Value value : getReadValues(op))
      if (isa<OpResult>(value) && value.getParentBlock() == &body &&
          !names.count(value))
        return false;
    return true;
  };

  llvm::SmallVector<Operation *> schedule;
  while (!pending.empty()) {
    Operation *best = nullptr;
    std::string bestSignature;
    for (Operation *op : pending) {
      if (!isReady(op))
        continue;
      std::string signature = structure[op];
      for (Value value : getReadValues(op))
        signature += "|" + nameOf(value);
      if (!best || signature < bestSignature) {
        best = op;
        bestSignature = std::move(signature);
      }
    }
    assert(best && "a single block in SSA form always has a ready op");
    for (Value value : getReadValues(best)) {
      auto arg = dyn_cast<BlockArgument>(value);
      if (arg && arg.getOwner() == &body && !names.count(value)) {
        names[value] = "arg" + std::to_string(argOrder.size());
        argOrder.push_back(arg.getArgNumber());
      }
    }
    for (OpResult result : best->getResults())
      names[result] = "v" + std::to_string(schedule.size()) + "." +
                      std::to_string(result.getResultNumber());
    schedule.push_back(best);
    llvm::erase(pending, best);
  }
  // Arguments only the terminator uses (or none) keep their relative order.
  for (Value value : terminator->getOperands()) {
    auto arg = dyn_cast<BlockArgument>(value);
    if (arg && arg.getOwner() == &body && !names.count(value)) {
      names[value] = "arg" + std::to_string(argOrder.size());
      argOrder.push_back(arg.getArgNumber());
    }
  }
  for (BlockArgument arg : body.getArguments())
    if (!names.count(arg)) {
      names[arg] = "arg" + std::to_string(argOrder.size());
      argOrder.push_back(arg.getArgNumber());
    }

  // Results in the order their values were named; ties (the same value
  // returned twice) keep their order.
  llvm::SmallVector<unsigned> resultOrder;
  for (unsigned i = 0, e = terminator->getNumOperands(); i < e; ++i)
    resultOrder.push_back(i);
  auto rank = [&](unsigned i) {
    Value value = terminator->getOperand(i);
    if (auto arg = dyn_cast<BlockArgument>(value))
      return std::make_pair(0u,
                            unsigned(llvm::find(argOrder, arg.getArgNumber()) -
                                     argOrder.begin()));
    auto result = cast<OpResult>(value);
    unsigned position =
        llvm::find(schedule, result.getOwner()) - schedule.begin();
    return std::make_pair(1u + position, result.getResultNumber());
  };
  llvm::stable_sort(resultOrder,
                    [&](unsigned a, unsigned b) { return rank(a) < rank(b); });

  // Apply: reorder the body, then permute arguments and results.
  for (Operation *op : schedule)
    op->moveBefore(terminator);

  unsigned numArgs = body.getNumArguments();
  SmallVector<Type> argTypes;
  for (unsigned oldIndex : argOrder) {
    BlockArgument oldArg = body.getArgument(oldIndex);
    argTypes.push_back(oldArg.getType());
    BlockArgument newArg = body.addArgument(oldArg.getType(), oldArg.getLoc());
    oldArg.replaceAllUsesWith(newArg);
  }
  body.eraseArguments(0, numArgs);

  SmallVector<Value> oldResults(terminator->getOperands());
  SmallVector<Type> resultTypes;
  for (auto [newIndex, oldIndex] : llvm::enumerate(resultOrder)) {
    terminator->setOperand(newIndex, oldResults[oldIndex]);
    resultTypes.push_back(oldResults[oldIndex].getType());
  }
  func.setFunctionType(
      FunctionType::get(func.getContext(), argTypes, resultTypes));
  return {std::move(argOrder), std::move(resultOrder)};
}

std::string mlir::kopt::printCanonicalGroup(func::FuncOp func) {
  auto copy = cast<func::FuncOp>(func->clone());
  copy.setSymName("kopt_group");
  copy.setSymVisibilityAttr(nullptr);
  for (NamedAttribute attr : llvm::to_vector(copy->getDiscardableAttrs()))
    if (attr.getName().strref().starts_with("kopt."))
      copy->removeDiscardableAttr(attr.getName());
  std::string text;
  llvm::raw_string_ostream os(text);
  copy->print(os, OpPrintingFlags().printGenericOpForm());
  copy->erase();
  return text;
}

std::string mlir::kopt::computeGroupKey(func::FuncOp func) {
  auto copy = cast<func::FuncOp>(func->clone());
  canonicalizeGroupFunction(copy);
  std::string text = printCanonicalGroup(copy);
  FunctionType type = copy.getFunctionType();
  copy->erase();

  // The shapes and element types are in the text already; they are hashed
  // again as a plain signature so that the key's inputs are explicit.
  std::string signature;
  llvm::raw_string_ostream os(signature);
  os << kGroupKeyVersion << "\n" << type << "\n";

  llvm::SHA256 hash;
  hash.update(signature);
  hash.update(text);
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}
