//===- ReferenceDense.cpp - Whole evaluation of the fp64 reference -*- C++ -*-//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `evaluateAll` (ReferenceInterpreter.cpp describes the whole): every node
// the outputs need is computed in the function's order into a dense array
// of its own (`TensorNode::data`), which its readers then index directly; a
// reshape shares its source's array, and an array is freed after its last
// reader. Elementwise generics, pads, slices and softmaxes are computed a
// block of elements at a time, the blocks spread over threads. A reduction
// that folds one result over linear operands (a convolution, a GEMM, a sum)
// is computed a tile of output elements at a time, the tiles spread over
// threads: for a block of reduction points, the operands of every point of
// every element of the tile are read at once, the instructions that do not
// depend on the accumulator run over all of them, and each element then
// folds its block in loop order. Other reductions are computed element by
// element as sampled points are (ReferenceReduction.cpp), and generics whose
// output element does not fix the loop point whole, in loop-nest order
// (ReferenceGeneric.cpp). Every element gets the operations, in the order,
// that the evaluation of sampled points gives it, so the values are the
// same bit for bit, whatever the number of threads.
//
//===----------------------------------------------------------------------===//

#include "ReferenceInterpreterImpl.h"

#include "llvm/Support/Threading.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::reference;

/// Elements per task of an elementwise node (a pad, a slice, a softmax).
static constexpr int64_t kDenseBlock = 4096;
/// Lanes of a tile of a folded reduction: output elements times a block of
/// reduction points.
static constexpr int64_t kTileLanes = 16384;
/// Reductions with more points than this fold element by element (the
/// tiles' table of reduction offsets would grow too large).
static constexpr int64_t kMaxTiledReduction = int64_t(1) << 22;

namespace {
/// The node whose array `node` reads: the end of a chain of reshapes.
TensorNode *getOwner(TensorNode *node) {
  while (node->kind == TensorNode::Kind::Alias)
    node = node->source;
  return node;
}

/// Calls `fn` on every tensor node that computing `node` reads (for a
/// generic, what any of its results reads).
template <typename Fn>
void forEachRead(TensorNode &node, Fn fn) {
  switch (node.kind) {
  case TensorNode::Kind::Input:
  case TensorNode::Kind::Constant:
  case TensorNode::Kind::Scalar:
    return;
  case TensorNode::Kind::Alias:
  case TensorNode::Kind::Softmax:
  case TensorNode::Kind::Slice:
    fn(node.source);
    return;
  case TensorNode::Kind::Place:
    if (node.source)
      fn(node.source);
    for (const PlacedNode &piece : node.pieces)
      fn(piece.source);
    return;
  case TensorNode::Kind::Generic:
    break;
  }
  const GenericNode &generic = *node.generic;
  for (const OperandAccess &access : generic.inputs)
    if (access.tensor)
      fn(access.tensor);
  for (const OperandAccess &access : generic.outputs)
    if (access.tensor)
      fn(access.tensor);
  for (const ExtractSite &site : generic.body.extracts)
    fn(site.tensor);
}

/// Reading one distinct operand over tiles: its step from one element of a
/// tile to the next, and its offset at each reduction point.
struct TileStream {
  const OperandAccess *access = nullptr;
  int64_t elementStep = 0;
  std::vector<int64_t> offsets;
};
} // namespace

void ReferenceInterpreter::Impl::computeGenericDense(
    GenericNode &node, llvm::ThreadPoolInterface *pool,
    std::vector<Frame> &frames) {
  if (!node.lazy) {
    for (TensorNode *result : node.results)
      result->cache.reset(/*dense=*/true, result->numElements);
    computeGenericWhole(frames.front(), node);
    for (TensorNode *result : node.results) {
      result->storage = std::move(result->cache.values);
      result->cache.reset(/*dense=*/false, 0);
      result->data = result->storage.data();
    }
    return;
  }
  if (node.isElementwise()) {
    for (auto [r, result] : llvm::enumerate(node.results)) {
      if (!node.liveResults[r])
        continue;
      result->storage.resize(result->numElements);
      int64_t count = (result->numElements + kDenseBlock - 1) / kDenseBlock;
      forEachItem(pool, frames, count, [&](Frame &frame, int64_t block) {
        int64_t start = block * kDenseBlock;
        std::vector<int64_t> indices(
            std::min(kDenseBlock, result->numElements - start));
        for (auto [i, index] : llvm::enumerate(indices))
          index = start + int64_t(i);
        gatherElementwise(frame, node, unsigned(r), indices,
                          result->storage.data() + start);
      });
      result->data = result->storage.data();
    }
    return;
  }
  if (foldDense(node, pool, frames))
    return;
  // Element by element, as sampled points: a point stores every live
  // result at its loop point, so a result's elements not yet present are
  // those off the constant coordinates of the other results' maps.
  for (TensorNode *result : node.results)
    result->cache.reset(/*dense=*/true, result->numElements);
  for (auto [r, result] : llvm::enumerate(node.results)) {
    if (!node.reduction.liveOutputs[r])
      continue;
    forEachItem(pool, frames, result->numElements,
                [&, r = r, result = result](Frame &frame, int64_t index) {
                  if (!result->cache.present[index])
                    computeGenericPoint(frame, node, unsigned(r), index);
                });
  }
  for (auto [r, result] : llvm::enumerate(node.results)) {
    if (node.reduction.liveOutputs[r]) {
      result->storage = std::move(result->cache.values);
      result->data = result->storage.data();
    }
    result->cache.reset(/*dense=*/false, 0);
  }
}

/// The operands of a fold of products (`acc + a * b`) or of a sum
/// (`acc + a`, `b` null) whose streams have their elements in memory: the
/// folds of convolutions, GEMMs and sums, which run without lanes.
struct ProductFold {
  const TileStream *a = nullptr, *b = nullptr;
};

/// The ProductFold of `node`, if its body is one.
static std::optional<ProductFold> getProductFold(const GenericNode &node,
                                                 ArrayRef<TileStream> streams,
                                                 ArrayRef<int> streamOf,
                                                 int32_t foldLane) {
  const ReductionPlan &plan = node.reduction;
  int32_t numInputs = int32_t(node.inputs.size());
  auto streamAt = [&](int32_t slot) -> const TileStream * {
    if (slot < 0 || slot >= numInputs || streamOf[slot] == -1)
      return nullptr;
    const TileStream &stream = streams[streamOf[slot]];
    return stream.access->tensor->data ? &stream : nullptr;
  };
  if (plan.fold->code != Opcode::AddF)
    return std::nullopt;
  ProductFold form;
  if (plan.batch.instrs.empty()) {
    form.a = streamAt(foldLane);
    return form.a ? std::optional<ProductFold>(form) : std::nullopt;
  }
  const Instr &in = plan.batch.instrs.front();
  if (plan.batch.instrs.size() != 1 || in.code != Opcode::MulF ||
      in.result != foldLane)
    return std::nullopt;
  form.a = streamAt(in.a);
  form.b = streamAt(in.b);
  if (!form.a || !form.b)
    return std::nullopt;
  return form;
}

bool ReferenceInterpreter::Impl::foldDense(GenericNode &node,
                                           llvm::ThreadPoolInterface *pool,
                                           std::vector<Frame> &frames) {
  const ReductionPlan &plan = node.reduction;
  if (!plan.fold || node.usesIndex)
    return false;
  unsigned numInputs = node.inputs.size();
  for (const OperandAccess &access : node.inputs)
    if (access.tensor && access.used && !access.linear)
      return false;
  int64_t numPoints = 1;
  for (unsigned d : node.reductionDims)
    numPoints *= node.ranges[d];
  if (numPoints == 0 || numPoints > kMaxTiledReduction)
    return false;

  unsigned o = plan.foldOutput;
  TensorNode *out = node.results[o];
  TensorNode *init = node.outputs[o].tensor;
  ArrayRef<int> dimFromCoord = node.dimFromCoord[o];
  ArrayRef<int64_t> constCoord = node.constCoord[o];
  size_t rank = out->shape.size();

  // One stream per distinct used operand, with its offset at each
  // reduction point in loop order.
  SmallVector<TileStream> streams;
  SmallVector<int> streamOf(numInputs, -1);
  // Tiles run along the output's last coordinate when a loop gives it.
  int tileLoop = -1;
  if (rank > 0 && constCoord[rank - 1] == -1)
    for (auto [d, c] : llvm::enumerate(dimFromCoord))
      if (c == int(rank - 1))
        tileLoop = int(d);
  for (unsigned k = 0; k < numInputs; ++k) {
    const OperandAccess &a = node.inputs[k];
    if (!a.tensor || !a.used)
      continue;
    for (auto [s, stream] : llvm::enumerate(streams))
      if (streamOf[k] == -1 && sameAccess(a, *stream.access))
        streamOf[k] = int(s);
    if (streamOf[k] != -1)
      continue;
    streamOf[k] = int(streams.size());
    TileStream &stream = streams.emplace_back();
    stream.access = &a;
    stream.elementStep = tileLoop >= 0 ? a.coeffs[tileLoop] : 0;
    stream.offsets.resize(numPoints);
    SmallVector<int64_t> point(node.ranges.size(), 0);
    int64_t offset = 0;
    for (int64_t p = 0; p < numPoints; ++p) {
      stream.offsets[p] = offset;
      for (unsigned d : llvm::reverse(node.reductionDims)) {
        offset += a.coeffs[d];
        if (++point[d] < node.ranges[d])
          break;
        offset -= a.coeffs[d] * node.ranges[d];
        point[d] = 0;
      }
    }
  }
  int32_t foldLane = plan.foldAccIsA ? plan.fold->b : plan.fold->a;
  std::optional<ProductFold> products =
      getProductFold(node, streams, streamOf, foldLane);

  int64_t rowLength = tileLoop >= 0 ? out->shape[rank - 1] : 1;
  int64_t block = std::min(numPoints, kBlockSize);
  int64_t tile =
      products ? std::min(rowLength, kBlockSize)
               : std::min(rowLength, std::max<int64_t>(1, kTileLanes / block));
  int64_t tilesPerRow = rowLength == 0 ? 0 : (rowLength + tile - 1) / tile;
  int64_t numRows = rowLength == 0 ? 0 : out->numElements / rowLength;
  out->storage.resize(out->numElements);
  double *result = out->storage.data();
  size_t numSlots = node.body.slots.size();
  forEachItem(
      pool, frames, numRows * tilesPerRow, [&](Frame &frame, int64_t item) {
        int64_t row = item / tilesPerRow, chunk = item % tilesPerRow;
        int64_t first = row * rowLength + chunk * tile;
        int64_t count = std::min(tile, rowLength - chunk * tile);
        SmallVector<int64_t> coords(rank);
        for (size_t c = 0; c < rank; ++c)
          coords[c] = (first / out->strides[c]) % out->shape[c];
        // The tile shares every coordinate but the last, a loop's.
        std::vector<int64_t> outIndices(count);
        for (int64_t t = 0; t < count; ++t)
          outIndices[t] = first + t;
        double *acc = result + first;
        std::fill(acc, acc + count, 0.0);
        bool on = onConstants(coords, constCoord);
        if (node.outputs[o].used || !on)
          gather(frame, init, outIndices, acc);
        if (!on)
          return; // Never written: the init's elements.
        SmallVector<int64_t> ivs(node.ranges.size(), 0);
        setParallelIvs(dimFromCoord, coords, ivs);
        SmallVector<int64_t> bases;
        for (const TileStream &stream : streams)
          bases.push_back(linearIndex(frame, *stream.access, ivs.data()));

        if (products) {
          // Point after point, every element of the tile at once.
          auto baseOf = [&](const TileStream *stream) {
            return stream->access->tensor->data +
                   bases[stream - streams.data()];
          };
          const double *a = baseOf(products->a);
          const int64_t *offsetsA = products->a->offsets.data();
          int64_t stepA = products->a->elementStep;
          if (!products->b) {
            for (int64_t p = 0; p < numPoints; ++p) {
              const double *at = a + offsetsA[p];
              for (int64_t t = 0; t < count; ++t)
                acc[t] = acc[t] + at[t * stepA];
            }
            return;
          }
          const double *b = baseOf(products->b);
          const int64_t *offsetsB = products->b->offsets.data();
          int64_t stepB = products->b->elementStep;
          for (int64_t p = 0; p < numPoints; ++p) {
            const double *atA = a + offsetsA[p], *atB = b + offsetsB[p];
            if (stepA == 0 && stepB == 1) {
              double x = *atA;
              for (int64_t t = 0; t < count; ++t)
                acc[t] = acc[t] + x * atB[t];
            } else if (stepA == 1 && stepB == 0) {
              double y = *atB;
              for (int64_t t = 0; t < count; ++t)
                acc[t] = acc[t] + atA[t] * y;
            } else {
              for (int64_t t = 0; t < count; ++t)
                acc[t] = acc[t] + atA[t * stepA] * atB[t * stepB];
            }
          }
          return;
        }

        int64_t lanesPerSlot = count * block;
        frame.scratch.resize(size_t(numSlots + streams.size()) * lanesPerSlot);
        double *scratch = frame.scratch.data();
        SmallVector<double *> lanes(numSlots);
        for (size_t s = 0; s < numSlots; ++s)
          lanes[s] = scratch + s * lanesPerSlot;
        SmallVector<double *> streamLanes;
        for (size_t s = 0; s < streams.size(); ++s)
          streamLanes.push_back(scratch + (numSlots + s) * lanesPerSlot);
        for (int32_t s : node.constantSlots)
          std::fill(lanes[s], lanes[s] + lanesPerSlot, node.body.slots[s]);
        for (unsigned k = 0; k < numInputs; ++k) {
          const OperandAccess &a = node.inputs[k];
          if (!a.tensor)
            std::fill(lanes[k], lanes[k] + lanesPerSlot, a.scalar);
          else if (streamOf[k] != -1)
            lanes[k] = streamLanes[streamOf[k]];
        }
        std::vector<int64_t> indices;
        for (int64_t start = 0; start < numPoints; start += block) {
          int64_t points = std::min(block, numPoints - start);
          int64_t lanesUsed = count * points;
          // Lane t * points + q: element t of the tile at point start + q.
          for (auto [s, stream] : llvm::enumerate(streams)) {
            const int64_t *offsets = stream.offsets.data() + start;
            int64_t base = bases[s], step = stream.elementStep;
            if (const double *data = stream.access->tensor->data) {
              for (int64_t t = 0; t < count; ++t) {
                const double *at = data + base + t * step;
                double *lane = streamLanes[s] + t * points;
                for (int64_t q = 0; q < points; ++q)
                  lane[q] = at[offsets[q]];
              }
              continue;
            }
            indices.resize(lanesUsed);
            for (int64_t t = 0; t < count; ++t)
              for (int64_t q = 0; q < points; ++q)
                indices[t * points + q] = base + t * step + offsets[q];
            gather(frame, stream.access->tensor, indices, streamLanes[s]);
          }
          runBatch(plan.batch, lanes, size_t(lanesUsed), nullptr, 0,
                   gatherIn(frame));
          for (int64_t t = 0; t < count; ++t)
            acc[t] = fold(*plan.fold, plan.foldAccIsA, acc[t],
                          lanes[foldLane] + t * points, size_t(points));
        }
      });
  out->data = out->storage.data();
  return true;
}

std::string
ReferenceInterpreter::Impl::evaluateDense(ArrayRef<const double *> arguments,
                                          unsigned numThreads) {
  unsigned hardware = llvm::hardware_concurrency().compute_thread_count();
  if (numThreads == 0 || numThreads > hardware)
    numThreads = hardware;
  std::unique_ptr<llvm::DefaultThreadPool> pool;
  if (numThreads > 1)
    pool = std::make_unique<llvm::DefaultThreadPool>(
        llvm::hardware_concurrency(numThreads));
  std::vector<Frame> frames;
  for (unsigned t = 0; t < std::max(1u, numThreads); ++t)
    frames.push_back(makeFrame());

  // The nodes the outputs need, and the last node that reads each array
  // (a generic reads when its first result is computed).
  size_t numNodes = tensors.size();
  std::vector<bool> needed(numNodes, false);
  std::vector<size_t> lastRead(numNodes, 0);
  constexpr size_t kKept = std::numeric_limits<size_t>::max();
  for (TensorNode *node : outputNodes) {
    needed[node->id] = true;
    lastRead[getOwner(node)->id] = kKept;
  }
  auto readerId = [](TensorNode &node) -> size_t {
    return node.kind == TensorNode::Kind::Generic
               ? node.generic->results.front()->id
               : node.id;
  };
  for (TensorNode &node : llvm::reverse(tensors)) {
    if (node.kind == TensorNode::Kind::Generic)
      for (TensorNode *result : node.generic->results)
        if (needed[result->id])
          needed[node.id] = true;
    if (!needed[node.id])
      continue;
    size_t reader = readerId(node);
    forEachRead(node, [&](TensorNode *read) {
      needed[read->id] = true;
      size_t &last = lastRead[getOwner(read)->id];
      if (last != kKept)
        last = std::max(last, reader);
    });
  }
  std::vector<std::vector<TensorNode *>> freedAfter(numNodes);
  for (TensorNode &node : tensors)
    if (needed[node.id] && lastRead[node.id] != kKept &&
        lastRead[node.id] > node.id)
      freedAfter[lastRead[node.id]].push_back(&node);

  for (TensorNode &node : tensors) {
    if (!needed[node.id])
      continue;
    switch (node.kind) {
    case TensorNode::Kind::Input:
      node.data = arguments[node.inputIndex];
      break;
    case TensorNode::Kind::Constant:
      node.data = node.constant.data();
      break;
    case TensorNode::Kind::Scalar:
      break;
    case TensorNode::Kind::Alias:
      node.data = node.source->data;
      break;
    case TensorNode::Kind::Place:
    case TensorNode::Kind::Slice:
    case TensorNode::Kind::Softmax: {
      node.storage.resize(node.numElements);
      int64_t count = (node.numElements + kDenseBlock - 1) / kDenseBlock;
      forEachItem(pool.get(), frames, count, [&](Frame &frame, int64_t block) {
        int64_t start = block * kDenseBlock;
        std::vector<int64_t> indices(
            std::min(kDenseBlock, node.numElements - start));
        for (auto [i, index] : llvm::enumerate(indices))
          index = start + int64_t(i);
        gather(frame, &node, indices, node.storage.data() + start);
      });
      node.data = node.storage.data();
      break;
    }
    case TensorNode::Kind::Generic:
      if (node.resultIndex == 0)
        computeGenericDense(*node.generic, pool.get(), frames);
      break;
    }
    for (const Frame &frame : frames)
      if (!frame.error.empty())
        return frame.error;
    for (TensorNode *freed : freedAfter[node.id]) {
      freed->storage = std::vector<double>();
      freed->data = nullptr;
    }
  }
  return "";
}
