//===- FoldTensorCasts.cpp - Static operands for tensor.concat --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// torch-mlir lowers `torch.roll` to slices cast to a dynamic size and
// concatenated into a static tensor. A concatenation accepts operands of
// any compatible type, so each operand cast from a more static type is
// replaced by the cast's source; the casts left without users are erased.
// The walk goes over the function's top-level ops once: no pattern here
// creates work for another.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "kopt-fold-tensor-casts"

namespace mlir::kopt {
#define GEN_PASS_DEF_FOLDTENSORCASTSPASS
#include "passes/Passes.h.inc"

namespace {
struct FoldTensorCastsPass final
    : impl::FoldTensorCastsPassBase<FoldTensorCastsPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void FoldTensorCastsPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  llvm::SetVector<Operation *> folded;
  for (auto concat : func.getBody().getOps<tensor::ConcatOp>())
    for (OpOperand &operand : concat->getOpOperands()) {
      auto cast = operand.get().getDefiningOp<tensor::CastOp>();
      if (!cast || !tensor::canFoldIntoConsumerOp(cast))
        continue;
      operand.set(cast.getSource());
      folded.insert(cast);
    }
  for (Operation *cast : folded)
    if (cast->use_empty())
      cast->erase();
}

} // namespace mlir::kopt
