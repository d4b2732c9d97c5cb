//===- ConvForms.cpp - Convolutions a conv step computes --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each layout's letters give every loop of the op a part: the output's
// letters name the batch, group, feature and output-position loops, the
// filter's the channel and kernel loops, and the input's must then read
// `stride * position + dilation * kernel` on each spatial dimension and the
// named loop on every other one. A layout fits when every loop has exactly
// one part and the iterator types agree with the parts.
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/ConvForms.h"
#include "LinearForm.h"

#include "kopt/Analysis/OpClassification.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::kopt;
using ::kopt::runtime::ConvLayout;

/// Reads the input through a zero pad of its spatial dimensions that cuDNN
/// can apply itself: static, +0.0 (cuDNN pads with +0.0; -0.0 could change
/// the sign of a zero sum), nothing on other dimensions, and as much after
/// as before each spatial dimension (cuDNN pads symmetrically). The
/// output's size is then the same with the pad or with cuDNN's padding.
static void foldInputPad(ConvForm &form) {
  auto pad = form.input.getDefiningOp<tensor::PadOp>();
  if (!pad || !isFusiblePad(pad) ||
      !matchPattern(pad.getConstantPaddingValue(), m_PosZeroFloat()))
    return;
  const ConvLayout &layout = *form.layout;
  SmallVector<int64_t> padding(layout.spatial.size(), 0);
  for (auto [letter, low, high] :
       llvm::zip(layout.input, pad.getStaticLow(), pad.getStaticHigh())) {
    size_t spatial = layout.spatial.find(letter);
    if (low != high || (spatial == std::string::npos && low != 0))
      return;
    if (spatial != std::string::npos)
      padding[spatial] = low;
  }
  form.input = pad.getSource();
  form.foldedPad = pad;
  form.padding = std::move(padding);
}

static std::optional<ConvForm> matchLayout(linalg::LinalgOp op,
                                           const ConvLayout &layout) {
  AffineMap inputMap = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap filterMap = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (inputMap.getNumResults() != layout.input.size() ||
      filterMap.getNumResults() != layout.filter.size() ||
      outputMap.getNumResults() != layout.output.size())
    return std::nullopt;
  auto isSpatial = [&](char letter) {
    return layout.spatial.find(letter) != std::string::npos;
  };
  // The loop of each non-spatial letter, and of each spatial letter's
  // output position and kernel offset.
  llvm::SmallDenseMap<char, unsigned> loopOf, positionOf, kernelOf;
  auto assign = [](llvm::SmallDenseMap<char, unsigned> &loops, char letter,
                   AffineExpr expr) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (!dim)
      return false;
    auto [it, inserted] = loops.try_emplace(letter, dim.getPosition());
    return it->second == dim.getPosition();
  };
  for (auto [letter, expr] : llvm::zip(layout.output, outputMap.getResults()))
    if (!assign(isSpatial(letter) ? positionOf : loopOf, letter, expr))
      return std::nullopt;
  for (auto [letter, expr] : llvm::zip(layout.filter, filterMap.getResults()))
    if (!assign(isSpatial(letter) ? kernelOf : loopOf, letter, expr))
      return std::nullopt;

  // Every loop plays exactly one part; reductions are the kernel offsets
  // and the channels a filter sums over.
  unsigned numLoops = op.getNumLoops();
  SmallVector<bool> seen(numLoops, false);
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  auto claim = [&](unsigned loop, bool reduction) {
    if (seen[loop])
      return false;
    seen[loop] = true;
    return (iterators[loop] == utils::IteratorType::reduction) == reduction;
  };
  for (auto [letter, loop] : loopOf)
    if (!claim(loop, letter == 'c' && !layout.depthwise))
      return std::nullopt;
  for (auto [letter, loop] : positionOf)
    if (!claim(loop, /*reduction=*/false))
      return std::nullopt;
  for (auto [letter, loop] : kernelOf)
    if (!claim(loop, /*reduction=*/true))
      return std::nullopt;
  if (!llvm::all_of(seen, [](bool claimed) { return claimed; }))
    return std::nullopt;

  ConvForm form;
  form.layout = &layout;
  form.strides.resize(layout.spatial.size());
  form.dilations.resize(layout.spatial.size());
  for (auto [letter, expr] : llvm::zip(layout.input, inputMap.getResults())) {
    if (!isSpatial(letter)) {
      auto dim = dyn_cast<AffineDimExpr>(expr);
      auto it = loopOf.find(letter);
      if (!dim || it == loopOf.end() || it->second != dim.getPosition())
        return std::nullopt;
      continue;
    }
    SmallVector<int64_t> coeffs(numLoops, 0);
    int64_t offset = 0;
    if (!addLinearForm(expr, 1, coeffs, offset) || offset != 0)
      return std::nullopt;
    unsigned position = positionOf.lookup(letter);
    unsigned kernel = kernelOf.lookup(letter);
    for (unsigned loop = 0; loop < numLoops; ++loop)
      if (loop != position && loop != kernel && coeffs[loop] != 0)
        return std::nullopt;
    if (coeffs[position] < 1 || coeffs[kernel] < 1)
      return std::nullopt;
    size_t index = layout.spatial.find(letter);
    form.strides[index] = coeffs[position];
    form.dilations[index] = coeffs[kernel];
  }

  auto inputType = cast<ShapedType>(op.getDpsInputs()[0].getType());
  char groupLetter = layout.depthwise ? 'c' : 'g';
  size_t groupDim = layout.input.find(groupLetter);
  form.groups =
      groupDim == std::string::npos ? 1 : inputType.getDimSize(groupDim);
  form.input = op.getDpsInputs()[0];
  form.padding.assign(layout.spatial.size(), 0);
  foldInputPad(form);
  return form;
}

std::optional<ConvForm> mlir::kopt::matchConvForm(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || linalgOp.getNumDpsInputs() != 2 ||
      linalgOp.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      !linalgOp.hasPureTensorSemantics() ||
      !llvm::all_of(op->getOperandTypes(),
                    [](Type type) {
                      auto shaped = dyn_cast<ShapedType>(type);
                      return shaped && shaped.hasStaticShape();
                    }) ||
      !isMultiplyAccumulate(linalgOp))
    return std::nullopt;
  for (const ConvLayout &layout : ::kopt::runtime::getConvLayouts())
    if (std::optional<ConvForm> form = matchLayout(linalgOp, layout))
      return form;
  return std::nullopt;
}

bool mlir::kopt::isFoldedIntoConvs(Operation *op) {
  if (!isa_and_nonnull<tensor::PadOp>(op) || op->getResult(0).use_empty())
    return false;
  return llvm::all_of(op->getResult(0).getUsers(), [&](Operation *user) {
    std::optional<ConvForm> form = matchConvForm(user);
    return form && form->foldedPad == op;
  });
}
