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
// compiled body, and the ways to evaluate a generic: elementwise ones a batch
// of elements at a time, running each instruction of the body over the whole
// batch; others the whole op at once in loop-nest order; and one output
// element of a reduction at a time (ReferenceReduction.cpp).
//
//===----------------------------------------------------------------------===//

#include "LinearForm.h"
#include "ReferenceInterpreterImpl.h"

#include "mlir/IR/AffineExpr.h"

#include <algorithm>
#include <memory>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::reference;

//===----------------------------------------------------------------------===//
// Indexing maps
//===----------------------------------------------------------------------===//

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
  node.id = generics.size() - 1;
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
    node.liveResults.push_back(!result.use_empty());
  }

  // Compile the body.
  Block &block = op.getRegion().front();
  ProgramBuilder builder(node.body, scalars, &nodeOf);
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
  node.usesIndex = llvm::any_of(node.body.instrs, [](const Instr &in) {
    return in.code == Opcode::Index;
  });
  node.constantSlots = node.body.getConstantSlots(block.getNumArguments());
  addCoordForms(node);
  if (node.lazy && !node.reductionDims.empty())
    planReduction(node);
  return llvm::Error::success();
}

void ReferenceInterpreter::Impl::addCoordForms(GenericNode &node) {
  if (!node.isElementwise())
    return;
  for (auto [result, out] : llvm::enumerate(node.results)) {
    auto &forms = node.coordForms.emplace_back();
    const SmallVector<int> &dimFromCoord = node.dimFromCoord[result];
    // Whether every coordinate of the result is a loop dimension; a constant
    // coordinate of size one is always 0.
    bool plain =
        llvm::all_of(llvm::enumerate(node.constCoord[result]), [&](auto entry) {
          auto [c, constant] = entry;
          return constant == -1 || (constant == 0 && out->shape[c] == 1);
        });
    auto addForm = [&](const OperandAccess &access) {
      if (!access.tensor || !access.linear) {
        forms.push_back(std::nullopt);
        return;
      }
      CoordForm form;
      form.coeffs.assign(out->shape.size(), 0);
      form.offset = access.offset;
      for (auto [d, coeff] : llvm::enumerate(access.coeffs))
        form.coeffs[dimFromCoord[d]] += coeff;
      form.identity = plain && form.offset == 0;
      for (size_t c = 0; c < out->shape.size(); ++c)
        if (out->shape[c] > 1 && form.coeffs[c] != out->strides[c])
          form.identity = false;
      forms.push_back(std::move(form));
    };
    for (const OperandAccess &access : node.inputs)
      addForm(access);
    for (const OperandAccess &access : node.outputs)
      addForm(access);
  }
}

//===----------------------------------------------------------------------===//
// Evaluating a generic node
//===----------------------------------------------------------------------===//

int64_t ReferenceInterpreter::Impl::linearIndex(Frame &frame,
                                                const OperandAccess &access,
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
      frame.fail("an indexing map reads out of bounds");
      return 0;
    }
    index += coord * access.tensor->strides[i];
  }
  return index;
}

namespace {
/// The coordinates of a sequence of elements of one tensor: a step by one
/// of its strides moves them like an odometer, other steps divide them out.
class CoordWalker {
public:
  explicit CoordWalker(const TensorNode &tensor)
      : tensor(tensor), coords(tensor.shape.size(), 0) {}

  ArrayRef<int64_t> at(int64_t index) {
    int64_t delta = index - last;
    if (delta == 0 && last >= 0)
      return coords;
    int64_t rank = int64_t(coords.size()), c = rank - 1;
    while (c >= 0 && tensor.strides[c] != delta)
      --c;
    if (last < 0 || delta < 0 || c < 0) {
      for (int64_t d = 0; d < rank; ++d)
        coords[d] = (index / tensor.strides[d]) % tensor.shape[d];
    } else {
      for (; c >= 0; --c) {
        if (++coords[c] < tensor.shape[c])
          break;
        coords[c] = 0;
      }
    }
    last = index;
    return coords;
  }

private:
  const TensorNode &tensor;
  SmallVector<int64_t> coords;
  int64_t last = -1;
};

/// The operand index of `form` at `coords`.
int64_t formIndex(const CoordForm &form, ArrayRef<int64_t> coords) {
  int64_t index = form.offset;
  for (auto [coeff, coord] : llvm::zip_equal(form.coeffs, coords))
    index += coeff * coord;
  return index;
}
} // namespace

void ReferenceInterpreter::Impl::gatherElementwise(Frame &frame,
                                                   GenericNode &node,
                                                   unsigned result,
                                                   ArrayRef<int64_t> indices,
                                                   double *values) {
  size_t count = indices.size();
  // Repeated neighbours (a broadcast read) are computed once.
  size_t distinct = count == 0 ? 0 : 1;
  for (size_t i = 1; i < count; ++i)
    distinct += indices[i] != indices[i - 1];
  if (distinct < count) {
    std::vector<int64_t> unique;
    unique.reserve(distinct);
    for (size_t i = 0; i < count; ++i)
      if (i == 0 || indices[i] != indices[i - 1])
        unique.push_back(indices[i]);
    std::vector<double> uniqueValues(distinct);
    gatherElementwise(frame, node, result, unique, uniqueValues.data());
    for (size_t i = 0, j = 0; i < count; ++i) {
      if (i > 0 && indices[i] != indices[i - 1])
        ++j;
      values[i] = uniqueValues[j];
    }
    return;
  }

  TensorNode *out = node.results[result];
  unsigned numInputs = node.inputs.size(), numOutputs = node.outputs.size();
  unsigned numArgs = numInputs + numOutputs;
  ArrayRef<std::optional<CoordForm>> forms = node.coordForms[result];
  auto access = [&](unsigned k) -> const OperandAccess & {
    return k < numInputs ? node.inputs[k] : node.outputs[k - numInputs];
  };

  // The distinct accesses the body reads (a repeated one shares the lane of
  // the first), and which of them need their own indices.
  SmallVector<int> sameAs(numArgs, -1);
  SmallVector<unsigned> indexed;
  bool needIvs = node.usesIndex;
  for (unsigned k = 0; k < numArgs; ++k) {
    const OperandAccess &a = access(k);
    if (!a.used || !a.tensor)
      continue;
    for (unsigned j = 0; j < k && sameAs[k] == -1; ++j)
      if (access(j).used && sameAccess(a, access(j)))
        sameAs[k] = int(j);
    if (sameAs[k] != -1 || (forms[k] && forms[k]->identity))
      continue;
    indexed.push_back(k);
    needIvs |= !forms[k];
  }
  bool needCoords =
      !indexed.empty() || needIvs ||
      llvm::any_of(node.constCoord[result], [](int64_t c) { return c != -1; });

  // Walking the elements' coordinates: whether each lies on the output
  // map's constants, its loop point (when the body or a non-linear map
  // needs it) and the indices of the operands.
  unsigned numLoops = node.ranges.size();
  std::vector<int64_t> ivs(needIvs ? count * numLoops : 0, 0);
  std::vector<std::vector<int64_t>> operandIndices(numArgs);
  for (unsigned k : indexed)
    operandIndices[k].resize(count);
  std::vector<uint8_t> on(count, 1);
  bool allOn = true;
  if (needCoords) {
    // The next element of the innermost coordinate, away from its end, moves
    // each operand index by the form's innermost coefficient.
    unsigned rank = out->shape.size();
    bool innerSteps =
        rank > 0 && !needIvs && node.constCoord[result][rank - 1] == -1;
    int64_t innerCoord = 0, innerSize = rank > 0 ? out->shape[rank - 1] : 0;
    CoordWalker walker(*out);
    for (size_t i = 0; i < count; ++i) {
      if (innerSteps && i > 0 && indices[i] == indices[i - 1] + 1 &&
          innerCoord + 1 < innerSize) {
        ++innerCoord;
        on[i] = on[i - 1];
        for (unsigned k : indexed)
          operandIndices[k][i] =
              !on[i] ? 0
                     : operandIndices[k][i - 1] + forms[k]->coeffs[rank - 1];
        continue;
      }
      ArrayRef<int64_t> at = walker.at(indices[i]);
      if (rank > 0)
        innerCoord = at[rank - 1];
      on[i] = onConstants(at, node.constCoord[result]);
      allOn &= bool(on[i]);
      int64_t *point = needIvs ? &ivs[i * numLoops] : nullptr;
      if (needIvs)
        setParallelIvs(node.dimFromCoord[result], at,
                       MutableArrayRef<int64_t>(point, numLoops));
      for (unsigned k : indexed)
        operandIndices[k][i] = !on[i] ? 0
                               : forms[k]
                                   ? formIndex(*forms[k], at)
                                   : linearIndex(frame, access(k), point);
    }
    if (!frame.error.empty())
      return;
  }

  // One lane per slot of the body: the arguments' lanes hold the operands,
  // the constants' lanes their values; the yielded lane is `values` itself
  // when an instruction computes it.
  size_t numSlots = node.body.slots.size();
  std::unique_ptr<double[]> scratch(new double[numSlots * count]);
  SmallVector<double *> lanes(numSlots);
  for (size_t s = 0; s < numSlots; ++s)
    lanes[s] = scratch.get() + s * count;
  for (int32_t s : node.constantSlots)
    std::fill(lanes[s], lanes[s] + count, node.body.slots[s]);
  int32_t yield = node.body.yields[result];
  if (yield >= int32_t(numArgs) &&
      !llvm::is_contained(node.constantSlots, yield))
    lanes[yield] = values;
  for (unsigned k = 0; k < numArgs; ++k) {
    const OperandAccess &a = access(k);
    if (!a.tensor || !a.used) {
      // An unused output reads as zero, as in `computeGenericPoint`.
      std::fill(lanes[k], lanes[k] + count, a.tensor ? 0.0 : a.scalar);
      continue;
    }
    if (sameAs[k] != -1)
      lanes[k] = lanes[sameAs[k]];
    else
      gather(frame, a.tensor,
             forms[k] && forms[k]->identity
                 ? indices
                 : ArrayRef<int64_t>(operandIndices[k]),
             lanes[k]);
  }

  runBatch(node.body, lanes, count, needIvs ? ivs.data() : nullptr, numLoops,
           gatherIn(frame));
  if (lanes[yield] != values)
    std::copy(lanes[yield], lanes[yield] + count, values);
  if (allOn)
    return;
  // An element off the constant coordinates of the map is never written.
  std::vector<int64_t> offIndices;
  for (size_t i = 0; i < count; ++i)
    if (!on[i])
      offIndices.push_back(indices[i]);
  std::vector<double> offValues(offIndices.size());
  gather(frame, node.outputs[result].tensor, offIndices, offValues.data());
  for (size_t i = 0, j = 0; i < count; ++i)
    if (!on[i])
      values[i] = offValues[j++];
}

void ReferenceInterpreter::Impl::computeGenericWhole(Frame &frame,
                                                     GenericNode &node) {
  std::lock_guard<std::mutex> lock(node.wholeMutex);
  if (node.evaluated)
    return;
  node.evaluated = true;
  unsigned numInputs = node.inputs.size(), numOutputs = node.outputs.size();
  std::vector<std::vector<double>> acc(numOutputs);
  for (unsigned o = 0; o < numOutputs; ++o) {
    TensorNode *init = node.outputs[o].tensor;
    acc[o].resize(init->numElements);
    for (int64_t i = 0; i < init->numElements; ++i)
      acc[o][i] = valueAt(frame, init, i);
  }
  unsigned numLoops = node.ranges.size();
  int64_t numPoints = 1;
  for (int64_t range : node.ranges)
    numPoints *= range;
  SmallVector<int64_t> ivs(numLoops, 0), outIndex(numOutputs);
  std::vector<double> &slots = frame.slots[node.id];
  const Program &body = node.body;
  for (int64_t point = 0; point < numPoints; ++point) {
    for (unsigned i = 0; i < numInputs; ++i) {
      const OperandAccess &a = node.inputs[i];
      if (!a.tensor)
        slots[i] = a.scalar;
      else if (a.used)
        slots[i] = valueAt(frame, a.tensor, linearIndex(frame, a, ivs.data()));
    }
    for (unsigned o = 0; o < numOutputs; ++o) {
      outIndex[o] = linearIndex(frame, node.outputs[o], ivs.data());
      slots[numInputs + o] = acc[o][outIndex[o]];
    }
    if (!frame.error.empty())
      return;
    run(body, slots.data(), ivs.data(), gatherIn(frame));
    for (unsigned o = 0; o < numOutputs; ++o)
      acc[o][outIndex[o]] = slots[body.yields[o]];
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

void ReferenceInterpreter::Impl::collectDemand(
    TensorNode *node, int64_t index,
    DenseSet<std::pair<TensorNode *, int64_t>> &seen,
    std::vector<std::pair<TensorNode *, int64_t>> &demand) {
  switch (node->kind) {
  case TensorNode::Kind::Input:
  case TensorNode::Kind::Constant:
  case TensorNode::Kind::Scalar:
    return;
  case TensorNode::Kind::Alias:
    return collectDemand(node->source, index, seen, demand);
  case TensorNode::Kind::Place:
  case TensorNode::Kind::Slice: {
    auto located = locateMoved(node, index);
    if (!located)
      return;
    return collectDemand(located->first, located->second, seen, demand);
  }
  case TensorNode::Kind::Softmax:
    index = softmaxRowBase(node, index);
    break;
  case TensorNode::Kind::Generic:
    if (!node->generic->lazy)
      index = 0; // Evaluated whole.
    break;
  }
  if (!seen.insert({node, index}).second)
    return;
  if (node->isMemoised()) {
    demand.push_back({node, index});
    return;
  }
  // An elementwise element: what its operands read there.
  GenericNode &generic = *node->generic;
  unsigned result = node->resultIndex;
  SmallVector<int64_t> coords(node->shape.size());
  for (size_t c = 0; c < coords.size(); ++c)
    coords[c] = (index / node->strides[c]) % node->shape[c];
  if (!onConstants(coords, generic.constCoord[result]))
    return collectDemand(generic.outputs[result].tensor, index, seen, demand);
  SmallVector<int64_t> ivs(generic.ranges.size(), 0);
  setParallelIvs(generic.dimFromCoord[result], coords, ivs);
  Frame scratch;
  unsigned numInputs = generic.inputs.size();
  for (unsigned k = 0; k < numInputs + generic.outputs.size(); ++k) {
    const OperandAccess &a =
        k < numInputs ? generic.inputs[k] : generic.outputs[k - numInputs];
    if (!a.used || !a.tensor)
      continue;
    int64_t operandIndex = linearIndex(scratch, a, ivs.data());
    // An out-of-bounds read is reported by the evaluation itself.
    if (scratch.error.empty())
      collectDemand(a.tensor, operandIndex, seen, demand);
  }
}
