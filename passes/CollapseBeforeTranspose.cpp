//===- CollapseBeforeTranspose.cpp - Collapse, then transpose ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// torch-mlir writes `q @ k.transpose(-2, -1)` over heads as a transpose of
// the 4-D `k`, then a collapse of its batch and head dimensions, then a
// batch_matmul. A contraction's group takes a transpose of an operand's two
// innermost dimensions as a transpose flag (docs/FusionGroups.md), but not
// one hidden behind a reshape. When the transpose moves whole groups of the
// collapse and keeps the order inside each, the collapse can come first: the
// transpose's source is collapsed instead, and the smaller transpose of the
// collapsed tensor feeds the consumer. One walk over the function's
// top-level ops; no rewrite creates work for another.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

#include <numeric>
#include <optional>

#define DEBUG_TYPE "kopt-collapse-before-transpose"

namespace mlir::kopt {
#define GEN_PASS_DEF_COLLAPSEBEFORETRANSPOSEPASS
#include "passes/Passes.h.inc"

namespace {
struct CollapseBeforeTransposePass final
    : impl::CollapseBeforeTransposePassBase<CollapseBeforeTransposePass> {
  using Base::Base;
  void runOnOperation() override;
};

/// How to collapse the transpose's source and transpose the collapsed
/// tensor so that the result equals the collapse of the transpose.
struct Swapped {
  /// The collapse of the source, in the source's dimension order.
  SmallVector<ReassociationIndices> sourceGroups;
  /// The transpose of the collapsed source: result group i is source group
  /// permutation[i].
  SmallVector<int64_t> permutation;
};
} // namespace

/// The swap when every group of `groups` (over the transpose's result
/// dimensions) reads consecutive source dimensions in increasing order
/// through `permutation` (result dimension d is source dimension
/// permutation[d]); none otherwise.
static std::optional<Swapped>
swapCollapseAndTranspose(ArrayRef<int64_t> permutation,
                         ArrayRef<ReassociationIndices> groups) {
  // Each result group's source dimensions, and where the group starts.
  SmallVector<int64_t> firstSource;
  for (const ReassociationIndices &group : groups) {
    for (size_t k = 1; k < group.size(); ++k)
      if (permutation[group[k]] != permutation[group[k - 1]] + 1)
        return std::nullopt;
    firstSource.push_back(permutation[group.front()]);
  }
  // The source groups in the source's order.
  SmallVector<int64_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::sort(order, [&](int64_t a, int64_t b) {
    return firstSource[a] < firstSource[b];
  });
  Swapped swapped;
  swapped.permutation.resize(groups.size());
  for (auto [position, resultGroup] : llvm::enumerate(order)) {
    ReassociationIndices sourceGroup;
    for (size_t k = 0; k < groups[resultGroup].size(); ++k)
      sourceGroup.push_back(firstSource[resultGroup] + int64_t(k));
    swapped.sourceGroups.push_back(std::move(sourceGroup));
    swapped.permutation[resultGroup] = int64_t(position);
  }
  return swapped;
}

void CollapseBeforeTransposePass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  SmallVector<tensor::CollapseShapeOp> collapses(
      func.getBody().getOps<tensor::CollapseShapeOp>());
  for (tensor::CollapseShapeOp collapse : collapses) {
    auto transpose = collapse.getSrc().getDefiningOp<linalg::TransposeOp>();
    if (!transpose || !transpose->hasOneUse())
      continue;
    Value source = transpose.getInput();
    auto sourceType = dyn_cast<RankedTensorType>(source.getType());
    if (!sourceType || !sourceType.hasStaticShape())
      continue;
    std::optional<Swapped> swapped = swapCollapseAndTranspose(
        transpose.getPermutation(), collapse.getReassociationIndices());
    if (!swapped)
      continue;
    OpBuilder builder(collapse);
    Location loc = collapse.getLoc();
    Value collapsed = tensor::CollapseShapeOp::create(builder, loc, source,
                                                      swapped->sourceGroups);
    Value result = collapsed;
    auto collapsedType = cast<RankedTensorType>(collapsed.getType());
    if (!llvm::equal(swapped->permutation,
                     llvm::seq<int64_t>(0, swapped->permutation.size()))) {
      Value init = tensor::EmptyOp::create(builder, loc,
                                           collapse.getResultType().getShape(),
                                           collapsedType.getElementType());
      result = linalg::TransposeOp::create(builder, loc, collapsed, init,
                                           swapped->permutation)
                   .getResult()
                   .front();
    }
    collapse.getResult().replaceAllUsesWith(result);
    collapse.erase();
    Value init = transpose.getInit();
    transpose.erase();
    if (Operation *empty = init.getDefiningOp<tensor::EmptyOp>())
      if (empty->use_empty())
        empty->erase();
  }
}

} // namespace mlir::kopt
