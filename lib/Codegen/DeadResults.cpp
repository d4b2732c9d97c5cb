//===- DeadResults.cpp - Drop the results nothing reads ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "DeadResults.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::kopt;

/// Rewrites `op` without its unused results; false when it keeps them all
/// or a kept result reads a dropped one's accumulator.
static bool dropUnusedResults(IRRewriter &rewriter, linalg::GenericOp op) {
  unsigned numResults = op.getNumResults();
  if (numResults < 2 || op.getNumDpsInits() != numResults)
    return false;
  SmallVector<unsigned> kept;
  for (unsigned i = 0; i < numResults; ++i)
    if (!op->getResult(i).use_empty())
      kept.push_back(i);
  if (kept.empty() || kept.size() == numResults)
    return false;

  // The body ops the kept results need, and the block arguments they read.
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  llvm::SetVector<Operation *> needed;
  llvm::DenseSet<Value> readArgs;
  SmallVector<Value> worklist;
  for (unsigned i : kept)
    worklist.push_back(yield.getValues()[i]);
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      if (arg.getOwner() == &body)
        readArgs.insert(arg);
      continue;
    }
    Operation *def = value.getDefiningOp();
    if (!def || def->getBlock() != &body || !needed.insert(def))
      continue;
    for (Value operand : def->getOperands())
      worklist.push_back(operand);
  }
  unsigned numInputs = op.getNumDpsInputs();
  for (unsigned i = 0; i < numResults; ++i)
    if (!llvm::is_contained(kept, i) &&
        readArgs.contains(body.getArgument(numInputs + i)))
      return false;

  SmallVector<Value> inits;
  SmallVector<Type> types;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands())
    maps.push_back(op.getMatchingIndexingMap(input));
  for (unsigned i : kept) {
    OpOperand &init = op.getDpsInitsMutable()[i];
    inits.push_back(init.get());
    types.push_back(op->getResult(i).getType());
    maps.push_back(op.getMatchingIndexingMap(&init));
  }
  rewriter.setInsertionPoint(op);
  auto replacement = linalg::GenericOp::create(
      rewriter, op.getLoc(), types, op.getDpsInputs(), inits, maps,
      op.getIteratorTypesArray(),
      [&](OpBuilder &builder, Location loc, ValueRange args) {
        IRMapping mapping;
        for (unsigned i = 0; i < numInputs; ++i)
          mapping.map(body.getArgument(i), args[i]);
        for (auto [position, i] : llvm::enumerate(kept))
          mapping.map(body.getArgument(numInputs + i),
                      args[numInputs + position]);
        for (Operation &bodyOp : body.without_terminator())
          if (needed.contains(&bodyOp))
            builder.clone(bodyOp, mapping);
        SmallVector<Value> values;
        for (unsigned i : kept)
          values.push_back(mapping.lookupOrDefault(yield.getValues()[i]));
        linalg::YieldOp::create(builder, loc, values);
      });
  for (NamedAttribute attr : op->getDiscardableAttrs())
    replacement->setAttr(attr.getName(), attr.getValue());
  for (auto [position, i] : llvm::enumerate(kept))
    rewriter.replaceAllUsesWith(op->getResult(i),
                                replacement->getResult(position));
  rewriter.eraseOp(op);
  return true;
}

unsigned mlir::kopt::removeUnusedResults(func::FuncOp func) {
  SmallVector<linalg::GenericOp> generics;
  func.walk([&](linalg::GenericOp op) { generics.push_back(op); });
  IRRewriter rewriter(func.getContext());
  unsigned rewritten = 0;
  for (linalg::GenericOp op : generics)
    rewritten += dropUnusedResults(rewriter, op);
  return rewritten;
}
