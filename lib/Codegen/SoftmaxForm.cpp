//===- SoftmaxForm.cpp - Softmaxes written out op by op ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "SoftmaxForm.h"

#include "kopt/Analysis/OpClassification.h"
#include "kopt/Codegen/PlanBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::kopt;

/// The single user of `value` (through reshapes that have one user each),
/// or nullptr.
static Operation *getSoleUser(Value value) {
  while (value.hasOneUse()) {
    Operation *user = *value.getUsers().begin();
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user))
      return user;
    value = user->getResult(0);
  }
  return nullptr;
}

/// The yielded value of a one-result generic without reduction loops whose
/// body holds nothing but ops of the listed kinds, or null.
template <typename... Ops>
static Value getElementwiseYield(linalg::GenericOp op) {
  if (!op || op.getNumResults() != 1 || op.getNumReductionLoops() != 0)
    return nullptr;
  Block &body = op.getRegion().front();
  for (Operation &bodyOp : body.without_terminator())
    if (!isa<Ops...>(bodyOp))
      return nullptr;
  return body.getTerminator()->getOperand(0);
}

/// True if `op` writes its result at the identity map and reads `operand`,
/// if it reads it, at the identity map too.
static bool isIdentityOn(linalg::GenericOp op, Value operand) {
  if (!op.getIndexingMapMatchingResult(op->getResult(0)).isIdentity())
    return false;
  for (OpOperand *input : op.getDpsInputOperands())
    if (input->get() == operand &&
        !op.getMatchingIndexingMap(input).isIdentity())
      return false;
  return true;
}

/// True if `value` is the body argument of `op`'s operand `operand`.
static bool isArgOf(linalg::GenericOp op, Value value, Value operand) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &op.getRegion().front() ||
      arg.getArgNumber() >= op.getNumDpsInputs())
    return false;
  return throughReshapes(op.getDpsInputs()[arg.getArgNumber()]) == operand;
}

/// A reduction over the innermost loop only, reading one input at the
/// identity map, whose body is `combine(in, acc)` with a `Combine` op.
template <typename... Combine>
static bool isInnermostReduction(linalg::GenericOp op) {
  if (!op || op.getNumResults() != 1 || op.getNumDpsInputs() != 1 ||
      op.getNumReductionLoops() != 1 ||
      op.getIteratorTypesArray().back() != utils::IteratorType::reduction ||
      !op.getMatchingIndexingMap(op.getDpsInputOperand(0)).isIdentity())
    return false;
  Block &body = op.getRegion().front();
  if (body.getOperations().size() != 2)
    return false;
  Operation *combine = body.getTerminator()->getOperand(0).getDefiningOp();
  return combine && isa<Combine...>(combine) &&
         llvm::is_contained(combine->getOperands(), body.getArgument(0)) &&
         llvm::is_contained(combine->getOperands(), body.getArgument(1));
}

/// The ops of the softmax whose row maximum `max` is, in order, or an empty
/// list.
static SmallVector<Operation *> matchSoftmax(linalg::GenericOp max) {
  if (!isInnermostReduction<arith::MaximumFOp, arith::MaxNumFOp>(max))
    return {};
  Value x = throughReshapes(max.getDpsInputs()[0]);
  SmallVector<Operation *> parts = {max};

  // exp(x - m), in one generic or two.
  auto sub = dyn_cast_or_null<linalg::GenericOp>(getSoleUser(max.getResult(0)));
  Value subYield = getElementwiseYield<arith::SubFOp, math::ExpOp>(sub);
  if (!subYield)
    return {};
  parts.push_back(sub);
  Operation *exp = nullptr;
  Operation *difference = subYield.getDefiningOp();
  if (auto expOp = dyn_cast_or_null<math::ExpOp>(difference)) {
    exp = expOp;
    difference = expOp.getOperand().getDefiningOp();
  }
  auto subOp = dyn_cast_or_null<arith::SubFOp>(difference);
  if (!subOp || !isArgOf(sub, subOp.getLhs(), x) ||
      !isArgOf(sub, subOp.getRhs(), max.getResult(0)) ||
      !isIdentityOn(sub, max.getDpsInputs()[0]))
    return {};
  linalg::GenericOp expGeneric = sub;
  if (!exp) {
    expGeneric =
        dyn_cast_or_null<linalg::GenericOp>(getSoleUser(sub.getResult(0)));
    Value expYield = getElementwiseYield<math::ExpOp>(expGeneric);
    auto expOp = expYield ? expYield.getDefiningOp<math::ExpOp>() : nullptr;
    if (!expOp || !isArgOf(expGeneric, expOp.getOperand(), sub.getResult(0)) ||
        !isIdentityOn(expGeneric, sub.getResult(0)))
      return {};
    parts.push_back(expGeneric);
  }

  // The row sum of e and e / s: e has exactly these two users.
  Value e = expGeneric.getResult(0);
  linalg::GenericOp sum, div;
  for (Operation *user : e.getUsers()) {
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic)
      return {};
    (generic.getNumReductionLoops() ? sum : div) = generic;
  }
  if (!sum || !div || !isInnermostReduction<arith::AddFOp>(sum) ||
      llvm::count_if(e.getUsers(), [](Operation *) { return true; }) != 2 ||
      getSoleUser(sum.getResult(0)) != div.getOperation())
    return {};
  Value divYield = getElementwiseYield<arith::DivFOp>(div);
  auto divOp = divYield ? divYield.getDefiningOp<arith::DivFOp>() : nullptr;
  if (!divOp || !isArgOf(div, divOp.getLhs(), e) ||
      !isArgOf(div, divOp.getRhs(), sum.getResult(0)) ||
      !isIdentityOn(div, e) ||
      max.getStaticLoopRanges() != sum.getStaticLoopRanges())
    return {};
  parts.push_back(sum);
  parts.push_back(div);
  return parts;
}

unsigned mlir::kopt::tagWrittenOutSoftmaxes(func::FuncOp func,
                                            int64_t firstId) {
  SmallVector<linalg::GenericOp> candidates;
  func.walk([&](linalg::GenericOp op) {
    if (!op->hasAttr(kSoftmaxPartAttrName))
      candidates.push_back(op);
  });
  Builder builder(func.getContext());
  unsigned tagged = 0;
  for (linalg::GenericOp op : candidates) {
    SmallVector<Operation *> parts = matchSoftmax(op);
    if (parts.empty() || llvm::any_of(parts, [](Operation *part) {
          return part->hasAttr(kSoftmaxPartAttrName);
        }))
      continue;
    for (Operation *part : parts)
      part->setAttr(kSoftmaxPartAttrName,
                    builder.getI64IntegerAttr(firstId + tagged));
    ++tagged;
  }
  return tagged;
}

std::optional<SoftmaxParts>
mlir::kopt::findSoftmaxParts(Operation *part, llvm::ArrayRef<Operation *> ops) {
  SoftmaxParts softmax;
  Attribute id = part->getAttr(kSoftmaxPartAttrName);
  for (Operation *op : ops)
    if (op->getAttr(kSoftmaxPartAttrName) == id)
      softmax.ops.push_back(op);
  auto isPart = [&](Operation *user) {
    return llvm::is_contained(softmax.ops, user);
  };
  for (Operation *op : softmax.ops) {
    for (Value value : op->getResults())
      if (llvm::any_of(value.getUsers(),
                       [&](Operation *user) { return !isPart(user); }))
        softmax.result = value;
    auto generic = dyn_cast<linalg::GenericOp>(op);
    if (!softmax.reduction && generic && generic.getNumReductionLoops() > 0)
      softmax.reduction = generic;
  }
  if (!softmax.result || !softmax.reduction)
    return std::nullopt;
  linalg::GenericOp reduction = softmax.reduction;
  for (auto [range, iterator] : llvm::zip(reduction.getStaticLoopRanges(),
                                          reduction.getIteratorTypesArray()))
    (iterator == utils::IteratorType::reduction ? softmax.length
                                                : softmax.rows) *= range;
  Value input = reduction.getNumDpsInputs() == 1
                    ? reduction.getDpsInputOperand(0)->get()
                    : Value();
  bool lastLoopOnly = llvm::all_of(
      llvm::enumerate(reduction.getIteratorTypesArray()), [&](auto iterator) {
        return (iterator.value() == utils::IteratorType::reduction) ==
               (iterator.index() + 1 == reduction.getNumLoops());
      });
  auto isF32 = [](Value value) {
    return cast<ShapedType>(value.getType()).getElementType().isF32();
  };
  if (input && lastLoopOnly && isF32(input) && isF32(softmax.result) &&
      input.getType() == softmax.result.getType() &&
      reduction.getMatchingIndexingMap(reduction.getDpsInputOperand(0))
          .isIdentity())
    softmax.contiguousInput = input;
  return softmax;
}
