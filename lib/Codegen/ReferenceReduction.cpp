//===- ReferenceReduction.cpp - Reductions of the fp64 reference -*- C++
//-*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One output element of a lazy linalg.generic with reductions (the reference
// interpreter's costliest step; ReferenceInterpreter.cpp describes the
// whole): the body runs over every reduction point of the element's parallel
// point, in loop order, a block of points at a time. For each block the
// operands are gathered at once (their indices walk the block along a
// stride where the map allows), the instructions that do not depend on the
// accumulators run over the whole block, and the rest run point after point
// so that every accumulation happens in loop order; a body that only folds
// a value into its accumulator (`acc + x`, `max(acc, x)`) runs as one tight
// loop. Each point gets exactly the operations and operands the plain
// point-by-point loop gives it, so the values are the same bit for bit.
//
//===----------------------------------------------------------------------===//

#include "ReferenceInterpreterImpl.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::reference;

/// Instructions that read only their first two operands and may fold.
static bool isFoldable(Opcode code) {
  switch (code) {
  case Opcode::AddF:
  case Opcode::MulF:
  case Opcode::MaximumF:
  case Opcode::MinimumF:
  case Opcode::MaxNumF:
  case Opcode::MinNumF:
  case Opcode::AddI:
  case Opcode::MulI:
  case Opcode::MaxSI:
  case Opcode::MinSI:
    return true;
  default:
    return false;
  }
}

void reference::planReduction(GenericNode &node) {
  ReductionPlan &plan = node.reduction;
  const Program &body = node.body;
  unsigned numInputs = node.inputs.size(), numOutputs = node.outputs.size();
  // The live slots: those the used results' yields read, transitively,
  // through the accumulators too.
  plan.liveOutputs = node.liveResults;
  std::vector<bool> live(body.slots.size(), false);
  for (bool changed = true; changed;) {
    for (unsigned o = 0; o < numOutputs; ++o)
      if (plan.liveOutputs[o])
        live[body.yields[o]] = true;
    for (const Instr &in : llvm::reverse(body.instrs))
      if (live[in.result])
        body.forEachOperand(in, [&](int32_t slot) { live[slot] = true; });
    changed = false;
    for (unsigned o = 0; o < numOutputs; ++o)
      if (!plan.liveOutputs[o] && live[numInputs + o])
        changed = plan.liveOutputs[o] = true;
  }

  // The slots that depend on an accumulator or on the loop point.
  std::vector<bool> dependent(body.slots.size(), false);
  for (unsigned o = 0; o < numOutputs; ++o)
    dependent[numInputs + o] = true;
  plan.batch.slots = plan.sequential.slots = body.slots;
  plan.batch.extracts = plan.sequential.extracts = body.extracts;
  for (const Instr &in : body.instrs) {
    if (!live[in.result])
      continue;
    // An operand an instruction does not use defaults to slot 0, which may
    // make it look dependent: that only costs speed.
    bool isDependent = in.code == Opcode::Index;
    body.forEachOperand(in,
                        [&](int32_t slot) { isDependent |= dependent[slot]; });
    dependent[in.result] = isDependent;
    (isDependent ? plan.sequential : plan.batch).instrs.push_back(in);
  }
  plan.sequential.yields = plan.batch.yields = body.yields;
  std::vector<bool> needed(body.slots.size(), false);
  for (const Instr &in : plan.sequential.instrs)
    body.forEachOperand(in, [&](int32_t slot) { needed[slot] = true; });
  for (unsigned o = 0; o < numOutputs; ++o)
    if (plan.liveOutputs[o])
      needed[body.yields[o]] = true;
  for (size_t slot = 0; slot < body.slots.size(); ++slot)
    if (needed[slot] && !dependent[slot])
      plan.lanesRead.push_back(int32_t(slot));

  if (llvm::count(plan.liveOutputs, true) != 1 ||
      plan.sequential.instrs.size() != 1)
    return;
  unsigned output =
      llvm::find(plan.liveOutputs, true) - plan.liveOutputs.begin();
  int32_t accSlot = int32_t(numInputs + output);
  const Instr &in = plan.sequential.instrs.front();
  bool accIsA = in.a == accSlot && in.b != accSlot;
  bool accIsB = in.b == accSlot && in.a != accSlot;
  if (isFoldable(in.code) && (accIsA || accIsB) &&
      body.yields[output] == in.result) {
    plan.fold = in;
    plan.foldOutput = output;
    plan.foldAccIsA = accIsA;
  }
}

namespace {
/// The elements one distinct operand access reads over a block of
/// reduction points.
struct Stream {
  const OperandAccess *access;
  /// When the access walks the reduction points along one stride in loop
  /// order (a linear map whose reduction coefficients are row-major over the
  /// reduction ranges): that stride; 0 otherwise.
  int64_t flatStride = 0;
  /// The index at the first reduction point (flat streams) or at the
  /// current one (others).
  int64_t index = 0;
  std::vector<int64_t> indices;
  std::vector<double> values;
};

/// The stride of a flat stream of `access`, or 0.
int64_t getFlatStride(const GenericNode &node, const OperandAccess &access) {
  if (!access.linear)
    return 0;
  int64_t stride = access.coeffs[node.reductionDims.back()];
  int64_t expected = stride;
  for (unsigned d : llvm::reverse(node.reductionDims)) {
    if (access.coeffs[d] != expected)
      return 0;
    expected *= node.ranges[d];
  }
  return stride == 0 ? 0 : stride;
}
} // namespace

void ReferenceInterpreter::Impl::computeGenericPoint(Frame &frame,
                                                     GenericNode &node,
                                                     unsigned result,
                                                     int64_t index) {
  TensorNode *out = node.results[result];
  SmallVector<int64_t> coords(out->shape.size());
  for (size_t i = 0; i < coords.size(); ++i)
    coords[i] = (index / out->strides[i]) % out->shape[i];
  // An element off the constant coordinates of the map is never written.
  if (!onConstants(coords, node.constCoord[result])) {
    out->cache.store(index, valueAt(frame, node.outputs[result].tensor, index));
    return;
  }
  unsigned numLoops = node.ranges.size();
  SmallVector<int64_t> ivs(numLoops, 0);
  setParallelIvs(node.dimFromCoord[result], coords, ivs);

  unsigned numInputs = node.inputs.size(), numOutputs = node.outputs.size();
  SmallVector<int64_t> outIndex(numOutputs);
  SmallVector<double> acc(numOutputs, 0.0);
  for (unsigned o = 0; o < numOutputs; ++o)
    outIndex[o] =
        o == result ? index : linearIndex(frame, node.outputs[o], ivs.data());
  int64_t numReductionPoints = 1;
  for (unsigned d : node.reductionDims)
    numReductionPoints *= node.ranges[d];
  for (unsigned o = 0; o < numOutputs; ++o)
    if (node.outputs[o].used || numReductionPoints == 0)
      acc[o] = valueAt(frame, node.outputs[o].tensor, outIndex[o]);

  // One lane per slot of the body over a block; the used inputs' lanes are
  // the values of their streams, one per distinct access.
  const ReductionPlan &plan = node.reduction;
  size_t numSlots = node.body.slots.size();
  std::vector<double> scratch(numSlots * kBlockSize, 0.0);
  SmallVector<double *> lanes(numSlots);
  for (size_t s = 0; s < numSlots; ++s)
    lanes[s] = scratch.data() + s * kBlockSize;
  for (int32_t s : node.constantSlots)
    std::fill(lanes[s], lanes[s] + kBlockSize, node.body.slots[s]);
  SmallVector<Stream> streams;
  SmallVector<std::pair<unsigned, unsigned>> streamOfInput;
  bool walkIvs = node.usesIndex;
  for (unsigned k = 0; k < numInputs; ++k) {
    const OperandAccess &a = node.inputs[k];
    if (!a.tensor) {
      std::fill(lanes[k], lanes[k] + kBlockSize, a.scalar);
      continue;
    }
    if (!a.used)
      continue;
    auto same = llvm::find_if(
        streams, [&](const Stream &s) { return sameAccess(a, *s.access); });
    if (same == streams.end()) {
      Stream &stream = streams.emplace_back();
      stream.access = &a;
      stream.flatStride = getFlatStride(node, a);
      stream.index = linearIndex(frame, a, ivs.data());
      stream.values.resize(kBlockSize);
      walkIvs |= stream.flatStride == 0;
      same = std::prev(streams.end());
    }
    lanes[k] = same->values.data();
  }

  // Advances the reduction odometer, innermost dimension fastest.
  auto step = [&](MutableArrayRef<int64_t> point) {
    for (unsigned d : llvm::reverse(node.reductionDims)) {
      if (++point[d] < node.ranges[d])
        return;
      point[d] = 0;
    }
  };

  std::vector<double> &slots = frame.slots[node.id];
  SmallVector<int64_t> blockStart;
  for (int64_t start = 0; start < numReductionPoints; start += kBlockSize) {
    int64_t count = std::min(kBlockSize, numReductionPoints - start);
    blockStart = ivs;
    for (Stream &stream : streams) {
      stream.indices.resize(count);
      if (stream.flatStride != 0)
        for (int64_t p = 0; p < count; ++p)
          stream.indices[p] = stream.index + (start + p) * stream.flatStride;
    }
    if (walkIvs) {
      for (int64_t p = 0; p < count; ++p) {
        for (Stream &stream : streams)
          if (stream.flatStride == 0)
            stream.indices[p] = linearIndex(frame, *stream.access, ivs.data());
        step(ivs);
      }
      if (!frame.error.empty())
        return;
    }
    for (Stream &stream : streams)
      gather(frame, stream.access->tensor, stream.indices,
             stream.values.data());

    runBatch(plan.batch, lanes, size_t(count), nullptr, 0, gatherIn(frame));
    if (plan.fold) {
      unsigned o = plan.foldOutput;
      acc[o] = fold(*plan.fold, plan.foldAccIsA, acc[o],
                    lanes[plan.foldAccIsA ? plan.fold->b : plan.fold->a],
                    size_t(count));
      continue;
    }
    if (node.usesIndex)
      ivs = blockStart;
    for (int64_t p = 0; p < count; ++p) {
      for (int32_t slot : plan.lanesRead)
        slots[slot] = lanes[slot][p];
      for (unsigned o = 0; o < numOutputs; ++o)
        slots[numInputs + o] = acc[o];
      run(plan.sequential, slots.data(), ivs.data(), gatherIn(frame));
      for (unsigned o = 0; o < numOutputs; ++o)
        if (plan.liveOutputs[o])
          acc[o] = slots[plan.sequential.yields[o]];
      if (node.usesIndex)
        step(ivs);
    }
    if (!frame.error.empty())
      return;
  }
  for (unsigned o = 0; o < numOutputs; ++o)
    if (plan.liveOutputs[o])
      node.results[o]->cache.store(outIndex[o], acc[o]);
}
