//===- AlignReductionDomains.cpp - Ops moved to reductions ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// torch-mlir writes GroupNorm's statistics over a reshaped view of the input,
// [N, G, C/G, H*W], and its normalisation over the input's own shape,
// [N, C, H, W], with the per-channel scale and shift computed over
// [N, G, C/G, 1] in between. The fusion planner joins to a reduction's group
// the ops over its rows or its whole domain only, so the normalisation ends
// up a second kernel that reads the input again. This pass re-expresses
// such ops over the reduction's domain:
//
// 1. An all-parallel linalg.generic whose input is, up to reshapes, a tensor
//    of a reduction's domain with the same number of elements (the
//    reduction's input, or the result of an op over that domain) is
//    rewritten over that domain: its operands are reshaped through the finest
//    common refinement of the two shapes, and its results reshaped back for
//    their users. The rewritten op's results count as tensors of the domain,
//    so the chain of consumers follows.
// 2. Into each op over a reduction's domain, the smaller all-parallel ops
//    that produce its operands over neither the reduction's rows nor its
//    whole domain (GroupNorm's per-channel scale and shift) are fused,
//    recomputed at every point: a few flops against a kernel and a pass over
//    memory. Left alone, they would sit between the reduction and the
//    normalisation, and keep the two in separate groups.
//
// Ops that read a contraction's or a convolution's result are left alone:
// they belong to its epilogue.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "kopt/Analysis/OpClassification.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>
#include <optional>

#define DEBUG_TYPE "kopt-align-reduction-domains"

namespace mlir::kopt {
#define GEN_PASS_DEF_ALIGNREDUCTIONDOMAINSPASS
#include "passes/Passes.h.inc"

namespace {
struct AlignReductionDomainsPass final
    : impl::AlignReductionDomainsPassBase<AlignReductionDomainsPass> {
  using Base::Base;
  void runOnOperation() override;
};

/// Two row-major shapes of as many elements seen as one: the sizes of the
/// finest dimensions both are products of, and for each dimension of either
/// the range of fine dimensions it spans (empty for a unit dimension).
struct Refinement {
  SmallVector<int64_t> fine;
  SmallVector<std::pair<unsigned, unsigned>> spansOfA, spansOfB;
};

/// The refinement of `a` and `b`, or none when a dimension of one straddles
/// a dimension of the other without dividing it (a `[6, 4]` seen as
/// `[4, 6]`).
std::optional<Refinement> refine(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  auto positive = [](int64_t size) { return size > 0; };
  if (!llvm::all_of(a, positive) || !llvm::all_of(b, positive) ||
      ShapedType::getNumElements(a) != ShapedType::getNumElements(b))
    return std::nullopt;
  // The boundaries between dimensions, as counts of elements before them.
  SmallVector<int64_t> boundaries{1};
  auto addPrefixes = [&](ArrayRef<int64_t> shape) {
    int64_t prefix = 1;
    for (int64_t size : shape)
      boundaries.push_back(prefix *= size);
  };
  addPrefixes(a);
  addPrefixes(b);
  llvm::sort(boundaries);
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()),
                   boundaries.end());
  Refinement result;
  for (size_t i = 0; i + 1 < boundaries.size(); ++i) {
    if (boundaries[i + 1] % boundaries[i] != 0)
      return std::nullopt;
    result.fine.push_back(boundaries[i + 1] / boundaries[i]);
  }
  auto spans = [&](ArrayRef<int64_t> shape,
                   SmallVectorImpl<std::pair<unsigned, unsigned>> &out) {
    int64_t prefix = 1;
    for (int64_t size : shape) {
      unsigned begin =
          llvm::lower_bound(boundaries, prefix) - boundaries.begin();
      prefix *= size;
      unsigned end = llvm::lower_bound(boundaries, prefix) - boundaries.begin();
      out.push_back({begin, end});
    }
  };
  spans(a, result.spansOfA);
  spans(b, result.spansOfB);
  return result;
}

/// The loops an indexing map reads, if every result is a loop in increasing
/// order or the constant 0 over a unit dimension of `shape`: identities and
/// broadcasts, the maps this pass can carry to another domain.
std::optional<SmallVector<unsigned>> readLoops(AffineMap map,
                                               ArrayRef<int64_t> shape) {
  SmallVector<unsigned> loops;
  for (auto [index, expr] : llvm::enumerate(map.getResults())) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      if (!loops.empty() && dim.getPosition() <= loops.back())
        return std::nullopt;
      loops.push_back(dim.getPosition());
      continue;
    }
    auto constant = dyn_cast<AffineConstantExpr>(expr);
    if (!constant || constant.getValue() != 0 || shape[index] != 1)
      return std::nullopt;
  }
  return loops;
}

/// Builds `value` (of static shape) reshaped into `shape`, with as many
/// elements: the tensor with no reshape in between when one has that shape
/// up to unit dimensions (returned with the map reading it), else a
/// collapse into one dimension and an expansion (reshapeInto).
class Reshaper {
public:
  Reshaper(OpBuilder &builder, Location loc) : builder(builder), loc(loc) {}

  /// `value` as a tensor of `shape` read through a map over `numLoops`
  /// loops whose results are `loops` (one per dimension of `shape`).
  std::pair<Value, AffineMap> reshape(Value value, ArrayRef<int64_t> shape,
                                      ArrayRef<unsigned> loops,
                                      unsigned numLoops) {
    MLIRContext *context = builder.getContext();
    SmallVector<int64_t> target = dropUnitDims(shape);
    for (Value candidate : {throughReshapes(value), value}) {
      auto type = cast<RankedTensorType>(candidate.getType());
      if (dropUnitDims(type.getShape()) != target)
        continue;
      // The candidate's non-unit dimensions are the target's in order;
      // its unit dimensions read index 0.
      SmallVector<AffineExpr> results;
      auto loop = loops.begin();
      for (int64_t size : type.getShape()) {
        while (loop != loops.end() && shape[loop - loops.begin()] == 1)
          ++loop;
        if (size == 1) {
          results.push_back(getAffineConstantExpr(0, context));
          continue;
        }
        results.push_back(getAffineDimExpr(*loop++, context));
      }
      return {candidate, AffineMap::get(numLoops, 0, results, context)};
    }
    SmallVector<AffineExpr> results;
    for (unsigned loop : loops)
      results.push_back(getAffineDimExpr(loop, context));
    return {reshapeInto(value, shape),
            AffineMap::get(numLoops, 0, results, context)};
  }

  /// `value` (of rank 1 or more) as a tensor of `shape` (as many elements,
  /// rank 1 or more): collapsed into one dimension, then expanded.
  Value reshapeInto(Value value, ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getShape() == shape)
      return value;
    if (type.getRank() != 1) {
      ReassociationIndices all(type.getRank());
      std::iota(all.begin(), all.end(), 0);
      value = tensor::CollapseShapeOp::create(
          builder, loc, value, SmallVector<ReassociationIndices>{all});
    }
    if (shape.size() == 1)
      return value;
    ReassociationIndices all(shape.size());
    std::iota(all.begin(), all.end(), 0);
    return tensor::ExpandShapeOp::create(
        builder, loc, RankedTensorType::get(shape, type.getElementType()),
        value, SmallVector<ReassociationIndices>{all});
  }

private:
  OpBuilder &builder;
  Location loc;
};

/// A function's reductions' domains, and the tensors known to be laid out
/// over one of them, by the tensor they are a reshape of.
class DomainIndex {
public:
  explicit DomainIndex(func::FuncOp func) {
    for (Operation &op : func.getBody().getOps()) {
      OpClassification info = classifyOp(&op);
      if ((info.kind != OpKind::Reduction && info.kind != OpKind::Softmax) ||
          !llvm::all_of(info.domain, [](int64_t size) { return size > 0; }))
        continue;
      addDomain(info.domain, info.rowDomain);
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(&op)) {
        addOpOverDomain(linalgOp);
      } else if (auto softmax = dyn_cast<linalg::SoftmaxOp>(&op)) {
        addTensor(softmax.getInput());
        for (Value result : softmax.getResult())
          addTensor(result);
      }
    }
  }

  /// Records the tensors `op`, over a reduction's domain, reads and writes
  /// through identity maps.
  void addOpOverDomain(linalg::LinalgOp op) {
    for (OpOperand &operand : op->getOpOperands())
      if (op.getMatchingIndexingMap(&operand).isIdentity())
        addTensor(op.isDpsInit(&operand) ? op.getTiedOpResult(&operand)
                                         : operand.get());
  }

  bool empty() const { return domains.empty(); }

  /// The domain of a reduction that `shape` is, up to unit dimensions.
  std::optional<SmallVector<int64_t>>
  findDomain(ArrayRef<int64_t> shape) const {
    SmallVector<int64_t> key = dropUnitDims(shape);
    for (const Domain &domain : domains)
      if (dropUnitDims(domain.shape) == key)
        return domain.shape;
    return std::nullopt;
  }

  /// Whether an op over `shape` iterates a reduction's rows or whole domain,
  /// up to unit dimensions: it joins the reduction's group as it is.
  bool fitsAReduction(ArrayRef<int64_t> shape) const {
    SmallVector<int64_t> key = dropUnitDims(shape);
    return llvm::any_of(domains, [&](const Domain &domain) {
      return dropUnitDims(domain.shape) == key ||
             dropUnitDims(domain.rows) == key;
    });
  }

  /// Records `value`, whose shape is a reduction's domain.
  void addTensor(Value value) {
    tensorsByRoot.try_emplace(throughReshapes(value), value);
  }

  /// The tensor over a reduction's domain that `value` is a reshape of.
  Value findTensor(Value value) const {
    return tensorsByRoot.lookup(throughReshapes(value));
  }

private:
  struct Domain {
    SmallVector<int64_t> shape, rows;
  };
  void addDomain(ArrayRef<int64_t> shape, ArrayRef<int64_t> rows) {
    if (!findDomain(shape))
      domains.push_back(
          {SmallVector<int64_t>(shape), SmallVector<int64_t>(rows)});
  }

  SmallVector<Domain> domains;
  llvm::DenseMap<Value, Value> tensorsByRoot;
};

/// Whether `generic` is an op this pass may move to another domain: every
/// loop parallel, static, no loop index read, identity output maps, and no
/// operand straight from a contraction or convolution (its epilogue).
bool isMovable(linalg::GenericOp generic) {
  if (generic.getNumReductionLoops() != 0 ||
      !generic.hasPureTensorSemantics() || generic.hasDynamicShape() ||
      !generic.getBody()->getOps<linalg::IndexOp>().empty())
    return false;
  for (OpOperand &init : generic.getDpsInitsMutable())
    if (!generic.getMatchingIndexingMap(&init).isIdentity())
      return false;
  for (Value operand : generic->getOperands()) {
    if (!isa<RankedTensorType>(operand.getType()))
      return false;
    if (Operation *def = operand.getDefiningOp()) {
      OpKind kind = classifyOp(def).kind;
      if (kind == OpKind::Contraction || kind == OpKind::Convolution)
        return false;
    }
  }
  return true;
}

/// Step 1: `generic` rewritten over `target` (a reduction's domain of as
/// many points), reading the tensors `index` knows over `target` where its
/// operands are reshapes of them. Returns the new op, or null (nothing
/// changed) when an operand's map or shape does not carry over.
linalg::GenericOp moveToDomain(linalg::GenericOp generic,
                               ArrayRef<int64_t> target,
                               const DomainIndex &index) {
  SmallVector<int64_t> domain = generic.getStaticLoopRanges();
  std::optional<Refinement> refinement = refine(domain, target);
  if (!refinement)
    return {};
  // For each operand, the target loops it reads: every fine dimension of
  // each, or none.
  SmallVector<SmallVector<unsigned>> targetLoops;
  for (OpOperand &operand : generic->getOpOperands()) {
    auto type = cast<RankedTensorType>(operand.get().getType());
    std::optional<SmallVector<unsigned>> loops =
        readLoops(generic.getMatchingIndexingMap(&operand), type.getShape());
    if (!loops)
      return {};
    SmallVector<bool> fineRead(refinement->fine.size(), false);
    for (unsigned loop : *loops) {
      auto [begin, end] = refinement->spansOfA[loop];
      for (unsigned fine = begin; fine < end; ++fine)
        fineRead[fine] = true;
    }
    SmallVector<unsigned> read;
    for (auto [loop, span] : llvm::enumerate(refinement->spansOfB)) {
      unsigned count = llvm::count(
          ArrayRef<bool>(fineRead).slice(span.first, span.second - span.first),
          true);
      if (count == span.second - span.first)
        read.push_back(loop);
      else if (count != 0)
        return {};
    }
    targetLoops.push_back(std::move(read));
  }

  OpBuilder builder(generic);
  Location loc = generic.getLoc();
  Reshaper reshaper(builder, loc);
  unsigned numLoops = target.size();
  SmallVector<Value> inputs, inits;
  SmallVector<AffineMap> maps;
  for (auto [operand, loops] :
       llvm::zip(generic->getOpOperands(), targetLoops)) {
    SmallVector<int64_t> shape;
    for (unsigned loop : loops)
      shape.push_back(target[loop]);
    bool isInit = generic.isDpsInit(&operand);
    if (Value aligned = index.findTensor(operand.get());
        !isInit && aligned &&
        cast<RankedTensorType>(aligned.getType()).getShape() ==
            ArrayRef<int64_t>(target) &&
        ArrayRef<int64_t>(shape) == target) {
      // The very tensor the reduction reads: one input of its group, not
      // two views of the same memory.
      inputs.push_back(aligned);
      maps.push_back(builder.getMultiDimIdentityMap(numLoops));
      continue;
    }
    if (isInit && operand.get().getDefiningOp<tensor::EmptyOp>()) {
      auto type = cast<RankedTensorType>(operand.get().getType());
      inits.push_back(
          tensor::EmptyOp::create(builder, loc, shape, type.getElementType()));
      maps.push_back(builder.getMultiDimIdentityMap(numLoops));
      continue;
    }
    auto [value, map] = reshaper.reshape(operand.get(), shape, loops, numLoops);
    if (isInit && !map.isIdentity()) {
      // An init read through a broadcast cannot be written: reshape it
      // for real.
      value = reshaper.reshapeInto(operand.get(), shape);
      map = builder.getMultiDimIdentityMap(numLoops);
    }
    (isInit ? inits : inputs).push_back(value);
    maps.push_back(map);
  }
  SmallVector<utils::IteratorType> iterators(numLoops,
                                             utils::IteratorType::parallel);
  auto moved =
      linalg::GenericOp::create(builder, loc, ValueRange(inits).getTypes(),
                                inputs, inits, maps, iterators);
  moved.getRegion().takeBody(generic.getRegion());
  SmallVector<Value> results;
  for (auto [old, result] :
       llvm::zip(generic->getResults(), moved->getResults()))
    results.push_back(reshaper.reshapeInto(
        result, cast<RankedTensorType>(old.getType()).getShape()));
  generic->replaceAllUsesWith(results);
  generic->erase();
  return moved;
}

/// Step 1 over the whole function; returns whether anything moved.
bool alignElementwiseOps(func::FuncOp func, DomainIndex &index) {
  bool changed = false;
  for (auto generic :
       llvm::make_early_inc_range(func.getBody().getOps<linalg::GenericOp>())) {
    if (generic.getNumReductionLoops() != 0 || generic.hasDynamicShape())
      continue;
    SmallVector<int64_t> domain = generic.getStaticLoopRanges();
    if (index.findDomain(domain)) {
      index.addOpOverDomain(generic);
      continue;
    }
    if (classifyOp(generic).kind != OpKind::Elementwise || !isMovable(generic))
      continue;
    for (OpOperand *input : generic.getDpsInputOperands()) {
      if (!generic.getMatchingIndexingMap(input).isIdentity())
        continue;
      Value aligned = index.findTensor(input->get());
      if (!aligned)
        continue;
      auto type = cast<RankedTensorType>(aligned.getType());
      if (ShapedType::getNumElements(type.getShape()) !=
          ShapedType::getNumElements(domain))
        continue;
      linalg::GenericOp moved = moveToDomain(generic, type.getShape(), index);
      if (!moved)
        continue;
      index.addOpOverDomain(moved);
      changed = true;
      break;
    }
  }
  return changed;
}

/// Step 2: fuses into one op over a reduction's domain one small producer
/// over neither its rows nor its domain; returns whether it did.
bool fuseOneSmallProducer(func::FuncOp func, const DomainIndex &index) {
  IRRewriter rewriter(func.getContext());
  for (auto consumer : func.getBody().getOps<linalg::GenericOp>()) {
    if (consumer.getNumReductionLoops() != 0 || consumer.hasDynamicShape())
      continue;
    SmallVector<int64_t> domain = consumer.getStaticLoopRanges();
    if (!index.findDomain(domain))
      continue;
    for (OpOperand *input : consumer.getDpsInputOperands()) {
      auto producer = input->get().getDefiningOp<linalg::GenericOp>();
      if (!producer || producer->getNumResults() != 1 ||
          classifyOp(producer).kind != OpKind::Elementwise ||
          !isMovable(producer))
        continue;
      SmallVector<int64_t> producerDomain = producer.getStaticLoopRanges();
      if (index.fitsAReduction(producerDomain) ||
          ShapedType::getNumElements(producerDomain) >=
              ShapedType::getNumElements(domain))
        continue;
      // A copy for this consumer alone, so that the fusion keeps no result
      // of the producer for its other users.
      rewriter.setInsertionPoint(producer);
      Operation *copy = rewriter.clone(*producer);
      input->set(copy->getResult(0));
      if (!linalg::areElementwiseOpsFusable(input)) {
        input->set(producer->getResult(0));
        rewriter.eraseOp(copy);
        continue;
      }
      rewriter.setInsertionPoint(consumer);
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, input);
      if (failed(fused)) {
        input->set(producer->getResult(0));
        rewriter.eraseOp(copy);
        continue;
      }
      for (auto [original, replacement] : fused->replacements)
        if (original.getDefiningOp() == consumer)
          rewriter.replaceAllUsesWith(original, replacement);
      rewriter.eraseOp(consumer);
      if (copy->use_empty())
        rewriter.eraseOp(copy);
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      return true;
    }
  }
  return false;
}

/// Erases what the rewrites left unread: the ops moved or fused away from,
/// reshapes, empty tensors and constants (none of them has side effects).
void eraseDeadOps(func::FuncOp func) {
  bool erased = true;
  while (erased) {
    erased = false;
    for (Operation &op : llvm::make_early_inc_range(
             llvm::reverse(func.getBody().front().getOperations())))
      if (isOpTriviallyDead(&op)) {
        op.erase();
        erased = true;
      }
  }
}
} // namespace

void AlignReductionDomainsPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  DomainIndex index(func);
  if (index.empty())
    return;
  // Each rewrite moves or fuses an op for good, so both loops end.
  while (alignElementwiseOps(func, index)) {
  }
  while (fuseOneSmallProducer(func, index)) {
  }
  eraseDeadOps(func);
}

} // namespace mlir::kopt
