//===- OnePassMoments.cpp - A row's variance in one pass --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/OnePassMoments.h"

#include "ElementTerm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::kopt;

namespace {
/// A reduction of the squared deviations of g from its row's mean.
struct CenteredMoment {
  linalg::GenericOp reduction;
  /// g at the reduction's element, over its loops.
  ElementTerm element;
  /// Elements a row sums.
  int64_t count = 0;
  /// The mulf or divf applying a constant to each square, and which of its
  /// operands the square is; none when the squares are summed as they are.
  std::optional<ElementTerm> scale;
  unsigned squareOperand = 0;
};
} // namespace

template <typename OpTy>
static bool isTermOf(const ElementTerm &term) {
  return term.kind == ElementTerm::Kind::Op && isa<OpTy>(term.op);
}

static bool isZeroFilled(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

static SmallVector<unsigned> getReducedDims(linalg::GenericOp generic) {
  SmallVector<unsigned> dims;
  for (auto [dim, iterator] : llvm::enumerate(generic.getIteratorTypesArray()))
    if (iterator == utils::IteratorType::reduction)
      dims.push_back(dim);
  return dims;
}

/// What a single-result sum from zero (`acc + e` in either order) adds at
/// each element, with its loops at `loops` over `numDims` loops.
static std::optional<ElementTerm> getSummand(linalg::GenericOp generic,
                                             llvm::ArrayRef<AffineExpr> loops,
                                             unsigned numDims) {
  if (generic.getNumResults() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() == 0 ||
      !isZeroFilled(generic.getDpsInits()[0]))
    return std::nullopt;
  Block &body = generic.getRegion().front();
  BlockArgument acc = body.getArguments().back();
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != &body || !acc.hasOneUse())
    return std::nullopt;
  Value summand = add.getLhs() == acc   ? add.getRhs()
                  : add.getRhs() == acc ? add.getLhs()
                                        : Value();
  if (!summand)
    return std::nullopt;
  return resolveBodyValue(generic, summand, loops, numDims);
}

/// Whether `sum`, read where the mean is, sums `element` over the row of
/// `reduction` (its reduced loops the reduction's, in order).
static bool sumsElementOverRow(const ElementTerm &sum,
                               linalg::GenericOp reduction,
                               const ElementTerm &element) {
  auto producer = sum.tensor.getDefiningOp<linalg::GenericOp>();
  if (!producer || producer.getNumResults() != 1)
    return false;
  MLIRContext *context = reduction.getContext();
  SmallVector<AffineExpr> loops(producer.getNumLoops());
  AffineMap outMap = producer.getIndexingMapMatchingResult(
      cast<OpResult>(producer->getResult(0)));
  for (auto [position, expr] : llvm::enumerate(outMap.getResults())) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      if (loops[dim.getPosition()])
        return false;
      loops[dim.getPosition()] = sum.index[position];
    } else if (!isa<AffineConstantExpr>(expr)) {
      return false;
    }
  }
  SmallVector<unsigned> reduced = getReducedDims(reduction);
  SmallVector<unsigned> producerReduced = getReducedDims(producer);
  SmallVector<int64_t> ranges = reduction.getStaticLoopRanges();
  SmallVector<int64_t> producerRanges = producer.getStaticLoopRanges();
  if (reduced.size() != producerReduced.size())
    return false;
  for (auto [dim, producerDim] : llvm::zip(reduced, producerReduced)) {
    if (loops[producerDim] || ranges[dim] != producerRanges[producerDim] ||
        ShapedType::isDynamic(ranges[dim]))
      return false;
    loops[producerDim] = getAffineDimExpr(dim, context);
  }
  for (auto [loop, range] : llvm::zip(loops, producerRanges)) {
    if (loop)
      continue;
    if (range != 1)
      return false;
    loop = getAffineConstantExpr(0, context);
  }
  std::optional<ElementTerm> summand =
      getSummand(producer, loops, reduction.getNumLoops());
  return summand && *summand == element;
}

static std::optional<CenteredMoment> matchMoment(linalg::GenericOp reduction) {
  unsigned numLoops = reduction.getNumLoops();
  SmallVector<AffineExpr> identity;
  for (unsigned dim = 0; dim < numLoops; ++dim)
    identity.push_back(getAffineDimExpr(dim, reduction.getContext()));
  std::optional<ElementTerm> summand =
      getSummand(reduction, identity, numLoops);
  if (!summand)
    return std::nullopt;
  CenteredMoment moment;
  moment.reduction = reduction;
  auto isSquare = [](const ElementTerm &term) {
    return isTermOf<arith::MulFOp>(term) &&
           term.operands[0] == term.operands[1];
  };
  const ElementTerm *square = &*summand;
  // A square times a constant, or divided by one.
  if (!isSquare(*summand) && (isTermOf<arith::MulFOp>(*summand) ||
                              isTermOf<arith::DivFOp>(*summand))) {
    for (unsigned constant : {1u, 0u}) {
      if (constant == 0 && isTermOf<arith::DivFOp>(*summand))
        continue;
      const ElementTerm &other = summand->operands[1 - constant];
      if (summand->operands[constant].getConstant() && isSquare(other)) {
        moment.scale = *summand;
        moment.squareOperand = 1 - constant;
        square = &other;
        break;
      }
    }
  }
  if (!isSquare(*square))
    return std::nullopt;
  const ElementTerm &deviation = square->operands[0];
  if (!isTermOf<arith::SubFOp>(deviation))
    return std::nullopt;

  // g varies along the row, the mean does not.
  SmallVector<unsigned> reduced = getReducedDims(reduction);
  auto variesAlongRow = [&](const ElementTerm &term) {
    return llvm::any_of(reduced,
                        [&](unsigned dim) { return term.dependsOn(dim); });
  };
  const ElementTerm &lhs = deviation.operands[0];
  const ElementTerm &rhs = deviation.operands[1];
  if (variesAlongRow(lhs) == variesAlongRow(rhs))
    return std::nullopt;
  const ElementTerm &element = variesAlongRow(lhs) ? lhs : rhs;
  const ElementTerm &mean = variesAlongRow(lhs) ? rhs : lhs;
  auto type = dyn_cast<FloatType>(element.getType());
  if (!type || type.getWidth() > 64)
    return std::nullopt;

  // The mean is the sum of the same g over the same row, divided by N.
  moment.count = 1;
  SmallVector<int64_t> ranges = reduction.getStaticLoopRanges();
  for (unsigned dim : reduced) {
    if (ShapedType::isDynamic(ranges[dim]))
      return std::nullopt;
    moment.count *= ranges[dim];
  }
  if (!isTermOf<arith::DivFOp>(mean) ||
      mean.operands[1].getConstant() != double(moment.count) ||
      mean.operands[0].kind != ElementTerm::Kind::Read ||
      !sumsElementOverRow(mean.operands[0], reduction, element))
    return std::nullopt;
  moment.element = element;
  return moment;
}

/// Whether each loop of `reduction` is a plain dimension of its size in its
/// result or in one of `reads`: the new reductions, which read only those,
/// take their loop ranges from their operands.
static bool coversLoops(linalg::GenericOp reduction,
                        llvm::ArrayRef<ElementTerm> reads) {
  SmallVector<int64_t> ranges = reduction.getStaticLoopRanges();
  Value result = reduction->getResult(0);
  AffineMap outMap =
      reduction.getIndexingMapMatchingResult(cast<OpResult>(result));
  auto covers = [&](Value tensor, llvm::ArrayRef<AffineExpr> index,
                    unsigned dim) {
    auto shape = cast<ShapedType>(tensor.getType()).getShape();
    for (auto [position, at] : llvm::enumerate(index))
      if (at == getAffineDimExpr(dim, reduction.getContext()) &&
          shape[position] == ranges[dim])
        return true;
    return false;
  };
  for (unsigned dim = 0; dim < reduction.getNumLoops(); ++dim)
    if (!covers(result, outMap.getResults(), dim) &&
        llvm::none_of(reads, [&](const ElementTerm &read) {
          return covers(read.tensor, read.index, dim);
        }))
      return false;
  return true;
}

static Value toF64(OpBuilder &builder, Location loc, Value value) {
  if (value.getType().isF64())
    return value;
  return arith::ExtFOp::create(builder, loc, builder.getF64Type(), value);
}

static bool rewriteMoment(const CenteredMoment &moment) {
  linalg::GenericOp reduction = moment.reduction;
  std::vector<ElementTerm> reads;
  moment.element.collectReads(reads);
  if (!coversLoops(reduction, reads))
    return false;
  MLIRContext *context = reduction.getContext();
  Location loc = reduction.getLoc();
  OpBuilder builder(reduction);
  unsigned numLoops = reduction.getNumLoops();
  auto resultType = cast<RankedTensorType>(reduction->getResult(0).getType());

  // Each read at the element, then at the row's first element.
  SmallVector<AffineExpr> rowStart;
  SmallVector<unsigned> reduced = getReducedDims(reduction);
  for (unsigned dim = 0; dim < numLoops; ++dim)
    rowStart.push_back(llvm::is_contained(reduced, dim)
                           ? getAffineConstantExpr(0, context)
                           : getAffineDimExpr(dim, context));
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (bool atRowStart : {false, true})
    for (const ElementTerm &read : reads) {
      SmallVector<AffineExpr> index;
      for (AffineExpr expr : read.index)
        index.push_back(simplifyAffineExpr(
            atRowStart ? expr.replaceDims(rowStart) : expr, numLoops, 0));
      inputs.push_back(read.tensor);
      maps.push_back(AffineMap::get(numLoops, 0, index, context));
    }
  maps.push_back(reduction.getIndexingMapMatchingResult(
      cast<OpResult>(reduction->getResult(0))));
  SmallVector<utils::IteratorType> iterators =
      reduction.getIteratorTypesArray();

  Value empty64 = tensor::EmptyOp::create(builder, loc, resultType.getShape(),
                                          builder.getF64Type());
  Value zero64 =
      arith::ConstantOp::create(builder, loc, builder.getF64FloatAttr(0.0));
  Value zeros =
      linalg::FillOp::create(builder, loc, zero64, empty64).getResult(0);
  // sum(g - g0), or sum((g - g0)^2).
  auto shiftedSum = [&](bool squares) {
    return linalg::GenericOp::create(
               builder, loc, TypeRange{zeros.getType()}, inputs,
               ValueRange{zeros}, maps, iterators,
               [&](OpBuilder &b, Location bodyLoc, ValueRange args) {
                 auto readAt = [&](size_t first) {
                   return [&, first](const ElementTerm &read) {
                     return args[first +
                                 (llvm::find(reads, read) - reads.begin())];
                   };
                 };
                 Value g = toF64(b, bodyLoc,
                                 buildElement(b, moment.element, readAt(0)));
                 Value g0 = toF64(
                     b, bodyLoc,
                     buildElement(b, moment.element, readAt(reads.size())));
                 Value term = arith::SubFOp::create(b, bodyLoc, g, g0);
                 if (squares)
                   term = arith::MulFOp::create(b, bodyLoc, term, term);
                 Value sum =
                     arith::AddFOp::create(b, bodyLoc, term, args.back());
                 linalg::YieldOp::create(b, bodyLoc, sum);
               })
        .getResult(0);
  };
  Value sums = shiftedSum(false);
  Value squares = shiftedSum(true);

  // max(S2 - S1^2 / N, 0) in f64, in the reduction's type, times the
  // constant each square was.
  unsigned rank = resultType.getRank();
  AffineMap identity = builder.getMultiDimIdentityMap(rank);
  Value empty = tensor::EmptyOp::create(builder, loc, resultType.getShape(),
                                        resultType.getElementType());
  auto moment2 = linalg::GenericOp::create(
      builder, loc, TypeRange{resultType}, ValueRange{sums, squares},
      ValueRange{empty}, ArrayRef<AffineMap>{identity, identity, identity},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &b, Location bodyLoc, ValueRange args) {
        Value count = arith::ConstantOp::create(
            b, bodyLoc, b.getF64FloatAttr(double(moment.count)));
        Value zero =
            arith::ConstantOp::create(b, bodyLoc, b.getF64FloatAttr(0.0));
        Value meanPart = arith::DivFOp::create(
            b, bodyLoc, arith::MulFOp::create(b, bodyLoc, args[0], args[0]),
            count);
        Value value = arith::MaximumFOp::create(
            b, bodyLoc, arith::SubFOp::create(b, bodyLoc, args[1], meanPart),
            zero);
        if (!resultType.getElementType().isF64())
          value = arith::TruncFOp::create(b, bodyLoc,
                                          resultType.getElementType(), value);
        if (moment.scale) {
          const ElementTerm &scale = *moment.scale;
          unsigned constant = 1 - moment.squareOperand;
          IRMapping mapping;
          mapping.map(scale.op->getOperand(moment.squareOperand), value);
          mapping.map(
              scale.op->getOperand(constant),
              buildElement(b, scale.operands[constant],
                           [](const ElementTerm &) { return Value(); }));
          value = b.clone(*scale.op, mapping)->getResult(0);
        }
        linalg::YieldOp::create(b, bodyLoc, value);
      });
  reduction->getResult(0).replaceAllUsesWith(moment2.getResult(0));
  return true;
}

/// Erases the ops of `func` nothing uses, last first.
static void eraseUnused(func::FuncOp func) {
  Operation *op = func.getBody().front().getTerminator()->getPrevNode();
  while (op) {
    Operation *previous = op->getPrevNode();
    if (op->use_empty() &&
        isa<linalg::LinalgOp, tensor::EmptyOp, arith::ConstantOp,
            tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
      op->erase();
    op = previous;
  }
}

unsigned mlir::kopt::rewriteOnePassMoments(func::FuncOp func) {
  SmallVector<linalg::GenericOp> reductions;
  for (auto generic : func.getBody().front().getOps<linalg::GenericOp>())
    if (generic.getNumReductionLoops() > 0)
      reductions.push_back(generic);
  unsigned rewritten = 0;
  for (linalg::GenericOp reduction : reductions)
    if (std::optional<CenteredMoment> moment = matchMoment(reduction))
      rewritten += rewriteMoment(*moment);
  if (rewritten)
    eraseUnused(func);
  return rewritten;
}
