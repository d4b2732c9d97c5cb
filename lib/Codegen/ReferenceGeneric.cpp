//===- ReferenceGeneric.cpp - Generic ops of the fp64 reference -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The linalg.generic nodes of the reference interpreter
// (ReferenceInterpreter.cpp describes the whole): reading each operand
// through its indexing map (a linear form where the map is linear), the
// compiled body, and the two ways to evaluate a generic: one output
// element at a time, running the body over the reduction points of its
// parallel point, or the whole op at once in loop-nest order.
//
//===----------------------------------------------------------------------===//

#include "ReferenceInterpreterImpl.h"

#include "mlir/IR/AffineExpr.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::reference;

//===----------------------------------------------------------------------===//
// Indexing maps
//===----------------------------------------------------------------------===//

/// Adds `scale * expr` to a linear form over the loop dimensions; false when
/// `expr` is not linear.
static bool addLinearForm(AffineExpr expr, int64_t scale,
                          SmallVectorImpl<int64_t> &coeffs, int64_t &offset) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
    coeffs[dim.getPosition()] += scale;
    return true;
  }
  if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
    offset += scale * constant.getValue();
    return true;
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return false;
  if (binary.getKind() == AffineExprKind::Add)
    return addLinearForm(binary.getLHS(), scale, coeffs, offset) &&
           addLinearForm(binary.getRHS(), scale, coeffs, offset);
  if (binary.getKind() == AffineExprKind::Mul) {
    if (auto rhs = dyn_cast<AffineConstantExpr>(binary.getRHS()))
      return addLinearForm(binary.getLHS(), scale * rhs.getValue(), coeffs,
                           offset);
    if (auto lhs = dyn_cast<AffineConstantExpr>(binary.getLHS()))
      return addLinearForm(binary.getRHS(), scale * lhs.getValue(), coeffs,
                           offset);
  }
  return false;
}

static int64_t floorDivide(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// Evaluates an affine expression over loop indices; false on a division or
/// modulo by a non-positive value or a symbol.
static bool evaluateAffine(AffineExpr expr, const int64_t *ivs,
                           int64_t &result) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
    result = ivs[dim.getPosition()];
    return true;
  }
  if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
    result = constant.getValue();
    return true;
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  int64_t lhs, rhs;
  if (!binary || !evaluateAffine(binary.getLHS(), ivs, lhs) ||
      !evaluateAffine(binary.getRHS(), ivs, rhs))
    return false;
  switch (binary.getKind()) {
  case AffineExprKind::Add:
    result = lhs + rhs;
    return true;
  case AffineExprKind::Mul:
    result = lhs * rhs;
    return true;
  case AffineExprKind::Mod:
    if (rhs <= 0)
      return false;
    result = lhs - floorDivide(lhs, rhs) * rhs;
    return true;
  case AffineExprKind::FloorDiv:
    if (rhs <= 0)
      return false;
    result = floorDivide(lhs, rhs);
    return true;
  case AffineExprKind::CeilDiv:
    if (rhs <= 0)
      return false;
    result = -floorDivide(-lhs, rhs);
    return true;
  default:
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Building a generic node
//===----------------------------------------------------------------------===//

llvm::Error ReferenceInterpreter::Impl::addOperand(GenericNode &node,
                                                   OpOperand &operand,
                                                   OperandAccess &access) {
  Operation *op = node.op;
  BlockArgument arg = node.op.getMatchingBlockArgument(&operand);
  access.used = !arg.use_empty();
  if (!isa<ShapedType>(operand.get().getType())) {
    auto it = scalars.find(operand.get());
    if (it == scalars.end())
      return makeError("scalar operand of " + describe(op) +
                       " is not known before evaluation");
    access.tensor = nullptr;
    access.scalar = it->second;
    return llvm::Error::success();
  }
  auto tensor = getNode(operand.get(), op);
  if (!tensor)
    return tensor.takeError();
  access.tensor = *tensor;
  AffineMap map = node.op.getMatchingIndexingMap(&operand);
  if (map.getNumSymbols() != 0 ||
      map.getNumResults() != access.tensor->shape.size())
    return makeError("unsupported indexing map in " + describe(op));
  access.map = map;
  unsigned numLoops = node.ranges.size();
  access.coeffs.assign(numLoops, 0);
  access.offset = 0;
  access.linear = true;
  for (auto [i, expr] : llvm::enumerate(map.getResults())) {
    SmallVector<int64_t> coeffs(numLoops, 0);
    int64_t offset = 0;
    if (!addLinearForm(expr, 1, coeffs, offset)) {
      access.linear = false;
      continue;
    }
    // A linear coordinate is checked once against the loop ranges.
    int64_t lo = offset, hi = offset;
    bool empty = false;
    for (unsigned d = 0; d < numLoops; ++d) {
      if (node.ranges[d] == 0)
        empty = true;
      int64_t extreme = coeffs[d] * (node.ranges[d] - 1);
      lo += std::min<int64_t>(0, extreme);
      hi += std::max<int64_t>(0, extreme);
    }
    if (!empty && (lo < 0 || hi >= access.tensor->shape[i]))
      return makeError("indexing map of " + describe(op) +
                       " reads out of bounds of operand #" +
                       Twine(operand.getOperandNumber()));
    for (unsigned d = 0; d < numLoops; ++d)
      access.coeffs[d] += coeffs[d] * access.tensor->strides[i];
    access.offset += offset * access.tensor->strides[i];
  }
  return llvm::Error::success();
}

llvm::Error ReferenceInterpreter::Impl::addGeneric(linalg::GenericOp op) {
  GenericNode &node = generics.emplace_back();
  node.op = op;
  node.ranges = op.getStaticLoopRanges();
  if (llvm::any_of(node.ranges, ShapedType::isDynamic))
    return makeError("dynamic loop range in " + describe(op));
  for (auto [d, type] : llvm::enumerate(op.getIteratorTypesArray()))
    if (type == utils::IteratorType::reduction)
      node.reductionDims.push_back(d);
  for (OpOperand *operand : op.getDpsInputOperands())
    if (llvm::Error err =
            addOperand(node, *operand, node.inputs.emplace_back()))
      return err;
  for (OpOperand &operand : op.getDpsInitsMutable())
    if (llvm::Error err =
            addOperand(node, operand, node.outputs.emplace_back()))
      return err;
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    auto tensor = newTensor(result, TensorNode::Kind::Generic);
    if (!tensor)
      return tensor.takeError();
    (*tensor)->generic = &node;
    (*tensor)->resultIndex = i;
    node.results.push_back(*tensor);
  }

  // Compile the body.
  Block &block = op.getRegion().front();
  ProgramBuilder builder(node.body, scalars);
  for (BlockArgument arg : block.getArguments())
    builder.addArgument(arg);
  for (Operation &bodyOp : block) {
    llvm::Error err = isa<linalg::YieldOp>(bodyOp) ? builder.addYield(&bodyOp)
                                                   : builder.addOp(&bodyOp);
    if (err)
      return makeError(llvm::toString(std::move(err)) + " in the body of " +
                       describe(op));
  }
  if (node.body.slots.empty())
    node.body.slots.push_back(0.0);
  if (node.body.yields.size() != node.results.size())
    return makeError("malformed body of " + describe(op));

  // An output element fixes the parallel point when every output map is a
  // permutation of all parallel dimensions plus constant coordinates.
  unsigned numLoops = node.ranges.size();
  for (OpOperand &operand : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    SmallVector<int> dimFromCoord(numLoops, -1);
    SmallVector<int64_t> constCoord(map.getNumResults(), -1);
    for (auto [i, expr] : llvm::enumerate(map.getResults())) {
      if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
        unsigned d = dim.getPosition();
        if (dimFromCoord[d] != -1 || llvm::is_contained(node.reductionDims, d))
          node.lazy = false;
        else
          dimFromCoord[d] = i;
      } else if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
        constCoord[i] = constant.getValue();
      } else {
        node.lazy = false;
      }
    }
    for (unsigned d = 0; d < numLoops; ++d)
      if (dimFromCoord[d] == -1 && !llvm::is_contained(node.reductionDims, d))
        node.lazy = false;
    node.dimFromCoord.push_back(std::move(dimFromCoord));
    node.constCoord.push_back(std::move(constCoord));
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Evaluating a generic node
//===----------------------------------------------------------------------===//

int64_t ReferenceInterpreter::Impl::linearIndex(const OperandAccess &access,
                                                const int64_t *ivs) {
  if (access.linear) {
    int64_t index = access.offset;
    for (auto [d, coeff] : llvm::enumerate(access.coeffs))
      index += coeff * ivs[d];
    return index;
  }
  int64_t index = 0;
  for (auto [i, expr] : llvm::enumerate(access.map.getResults())) {
    int64_t coord;
    if (!evaluateAffine(expr, ivs, coord) || coord < 0 ||
        coord >= access.tensor->shape[i]) {
      fail("an indexing map reads out of bounds");
      return 0;
    }
    index += coord * access.tensor->strides[i];
  }
  return index;
}

double ReferenceInterpreter::Impl::operandAt(const OperandAccess &access,
                                             const int64_t *ivs) {
  if (!access.tensor)
    return access.scalar;
  return valueAt(access.tensor, linearIndex(access, ivs));
}

void ReferenceInterpreter::Impl::computeGenericPoint(GenericNode &node,
                                                     unsigned result,
                                                     int64_t index) {
  if (!node.lazy || wholeOps) {
    computeGenericWhole(node);
    return;
  }
  TensorNode *out = node.results[result];
  SmallVector<int64_t> coords(out->shape.size());
  for (size_t i = 0; i < coords.size(); ++i)
    coords[i] = (index / out->strides[i]) % out->shape[i];
  // An element off the constant coordinates of the map is never written.
  for (auto [i, constant] : llvm::enumerate(node.constCoord[result])) {
    if (constant != -1 && coords[i] != constant) {
      out->cache.store(index, valueAt(node.outputs[result].tensor, index));
      return;
    }
  }
  unsigned numLoops = node.ranges.size();
  SmallVector<int64_t> ivs(numLoops, 0);
  for (unsigned d = 0; d < numLoops; ++d)
    if (node.dimFromCoord[result][d] != -1)
      ivs[d] = coords[node.dimFromCoord[result][d]];

  unsigned numInputs = node.inputs.size(), numOutputs = node.outputs.size();
  SmallVector<int64_t> outIndex(numOutputs);
  SmallVector<double> acc(numOutputs, 0.0);
  for (unsigned o = 0; o < numOutputs; ++o)
    outIndex[o] =
        o == result ? index : linearIndex(node.outputs[o], ivs.data());
  int64_t numReductionPoints = 1;
  for (unsigned d : node.reductionDims)
    numReductionPoints *= node.ranges[d];
  for (unsigned o = 0; o < numOutputs; ++o)
    if (node.outputs[o].used || numReductionPoints == 0)
      acc[o] = valueAt(node.outputs[o].tensor, outIndex[o]);

  Program &body = node.body;
  for (int64_t point = 0; point < numReductionPoints; ++point) {
    for (unsigned i = 0; i < numInputs; ++i)
      if (node.inputs[i].used)
        body.slots[i] = operandAt(node.inputs[i], ivs.data());
    for (unsigned o = 0; o < numOutputs; ++o)
      body.slots[numInputs + o] = acc[o];
    run(body, ivs.data());
    for (unsigned o = 0; o < numOutputs; ++o)
      acc[o] = body.slots[body.yields[o]];
    if (!error.empty())
      return;
    // Advance the reduction odometer, innermost dimension fastest.
    for (int64_t r = static_cast<int64_t>(node.reductionDims.size()) - 1;
         r >= 0; --r) {
      unsigned d = node.reductionDims[r];
      if (++ivs[d] < node.ranges[d])
        break;
      ivs[d] = 0;
    }
  }
  for (unsigned o = 0; o < numOutputs; ++o)
    node.results[o]->cache.store(outIndex[o], acc[o]);
}

void ReferenceInterpreter::Impl::computeGenericWhole(GenericNode &node) {
  if (node.evaluated) {
    fail("internal error: an element of a whole evaluation is missing");
    return;
  }
  node.evaluated = true;
  unsigned numInputs = node.inputs.size(), numOutputs = node.outputs.size();
  std::vector<std::vector<double>> acc(numOutputs);
  for (unsigned o = 0; o < numOutputs; ++o) {
    TensorNode *init = node.outputs[o].tensor;
    acc[o].resize(init->numElements);
    for (int64_t i = 0; i < init->numElements; ++i)
      acc[o][i] = valueAt(init, i);
  }
  unsigned numLoops = node.ranges.size();
  int64_t numPoints = 1;
  for (int64_t range : node.ranges)
    numPoints *= range;
  SmallVector<int64_t> ivs(numLoops, 0), outIndex(numOutputs);
  Program &body = node.body;
  for (int64_t point = 0; point < numPoints; ++point) {
    for (unsigned i = 0; i < numInputs; ++i)
      if (node.inputs[i].used)
        body.slots[i] = operandAt(node.inputs[i], ivs.data());
    for (unsigned o = 0; o < numOutputs; ++o) {
      outIndex[o] = linearIndex(node.outputs[o], ivs.data());
      body.slots[numInputs + o] = acc[o][outIndex[o]];
    }
    if (!error.empty())
      return;
    run(body, ivs.data());
    for (unsigned o = 0; o < numOutputs; ++o)
      acc[o][outIndex[o]] = body.slots[body.yields[o]];
    for (int64_t d = static_cast<int64_t>(numLoops) - 1; d >= 0; --d) {
      if (++ivs[d] < node.ranges[d])
        break;
      ivs[d] = 0;
    }
  }
  for (unsigned o = 0; o < numOutputs; ++o)
    for (int64_t i = 0, e = acc[o].size(); i < e; ++i)
      node.results[o]->cache.store(i, acc[o][i]);
}
