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
// The ready ops are kept sorted by signature (then block position, which
// breaks ties), so each step takes the first instead of scanning every
// waiting op; a ready op is re-sorted only when an argument it reads gets
// its name. A group of N ops costs about N log N, not N^2.
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

#include <set>

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

  // Every op's structural text and read values, computed once, and the ops
  // reading each value.
  llvm::SmallVector<Operation *> ops;
  llvm::SmallVector<std::string> structure;
  llvm::SmallVector<SmallVector<Value>> reads;
  llvm::DenseMap<Value, SmallVector<unsigned>> readers;
  // Per op: how many distinct results of the body it reads are not named
  // yet. An op is ready when none are.
  llvm::SmallVector<unsigned> waiting;
  for (Operation &op : body.without_terminator()) {
    unsigned index = ops.size();
    ops.push_back(&op);
    structure.push_back(printStructure(&op));
    reads.push_back(getReadValues(&op));
    waiting.push_back(0);
    for (Value value : reads.back()) {
      SmallVector<unsigned> &list = readers[value];
      if (!list.empty() && list.back() == index)
        continue;
      list.push_back(index);
      if (isa<OpResult>(value) && value.getParentBlock() == &body)
        ++waiting[index];
    }
  }

  // The ready ops, ordered by signature and then by block position: the
  // first is the one a scan of the ready ops in block order would pick. A
  // ready op's signature changes only when an argument it reads is named,
  // so only those readers are re-keyed: each op once per argument it reads.
  auto signatureOf = [&](unsigned index) {
    std::string signature = structure[index];
    for (Value value : reads[index])
      signature += "|" + nameOf(value);
    return signature;
  };
  auto readersOf = [&](Value value) -> ArrayRef<unsigned> {
    auto it = readers.find(value);
    return it == readers.end() ? ArrayRef<unsigned>() : it->second;
  };
  std::set<std::pair<std::string, unsigned>> ready;
  llvm::SmallVector<std::string> readyKey(ops.size());
  llvm::SmallVector<bool> isReady(ops.size(), false);
  auto makeReady = [&](unsigned index) {
    readyKey[index] = signatureOf(index);
    ready.insert({readyKey[index], index});
    isReady[index] = true;
  };
  for (unsigned index = 0, e = ops.size(); index < e; ++index)
    if (waiting[index] == 0)
      makeReady(index);

  llvm::SmallVector<Operation *> schedule;
  llvm::DenseMap<Operation *, unsigned> position;
  while (!ready.empty()) {
    unsigned index = ready.begin()->second;
    ready.erase(ready.begin());
    isReady[index] = false;
    Operation *best = ops[index];
    SmallVector<Value> namedArgs;
    for (Value value : reads[index]) {
      auto arg = dyn_cast<BlockArgument>(value);
      if (arg && arg.getOwner() == &body && !names.count(value)) {
        names[value] = "arg" + std::to_string(argOrder.size());
        argOrder.push_back(arg.getArgNumber());
        namedArgs.push_back(value);
      }
    }
    for (OpResult result : best->getResults())
      names[result] = "v" + std::to_string(schedule.size()) + "." +
                      std::to_string(result.getResultNumber());
    position[best] = schedule.size();
    schedule.push_back(best);

    for (Value arg : namedArgs)
      for (unsigned reader : readersOf(arg))
        if (isReady[reader]) {
          ready.erase({readyKey[reader], reader});
          makeReady(reader);
        }
    for (OpResult result : best->getResults())
      for (unsigned reader : readersOf(result))
        if (--waiting[reader] == 0)
          makeReady(reader);
  }
  assert(schedule.size() == ops.size() &&
         "a single block in SSA form always has a ready op");
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
  llvm::DenseMap<unsigned, unsigned> argPosition;
  for (auto [newIndex, oldIndex] : llvm::enumerate(argOrder))
    argPosition[oldIndex] = newIndex;
  llvm::SmallVector<unsigned> resultOrder;
  for (unsigned i = 0, e = terminator->getNumOperands(); i < e; ++i)
    resultOrder.push_back(i);
  auto rank = [&](unsigned i) {
    Value value = terminator->getOperand(i);
    if (auto arg = dyn_cast<BlockArgument>(value))
      return std::make_pair(0u, argPosition.lookup(arg.getArgNumber()));
    auto result = cast<OpResult>(value);
    return std::make_pair(1u + position.lookup(result.getOwner()),
                          result.getResultNumber());
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
