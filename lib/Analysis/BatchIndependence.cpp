//===- BatchIndependence.cpp - Are a graph's samples independent? -*- C++ -*-//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One walk over the entry's top-level ops, in order. Every index or integer
// value gets a size (a constant, the batch times a constant, or unknown) and
// every tensor the size of each dimension, starting from the arguments
// (their dynamic outermost dimension is the batch). Scalars computed from
// the batch size are marked. Each op is then checked against the rules of
// BatchIndependence.h; the first that breaks one ends the proof, and the
// reason names it.
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/BatchIndependence.h"

#include "kopt/Analysis/GroupReport.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/MathExtras.h"

#include <optional>

using namespace mlir;
using namespace mlir::kopt;

namespace {
/// A size as far as the analysis knows it.
struct Size {
  enum class Kind { Unknown, Constant, Batch };
  Kind kind = Kind::Unknown;
  /// The constant, or the factor of the batch.
  int64_t value = 0;

  static Size constant(int64_t value) { return {Kind::Constant, value}; }
  static Size batch(int64_t factor) {
    return factor == 0 ? constant(0) : Size{Kind::Batch, factor};
  }
  bool isConstant() const { return kind == Kind::Constant; }
  bool isBatch() const { return kind == Kind::Batch; }
  bool operator==(const Size &other) const {
    return kind == other.kind && value == other.value;
  }
  bool operator!=(const Size &other) const { return !(*this == other); }
};

Size multiply(Size a, Size b) {
  if (a.isBatch() && b.isConstant())
    std::swap(a, b);
  if (a.isConstant() && b.isConstant())
    return Size::constant(a.value * b.value);
  if (a.isConstant() && b.isBatch())
    return Size::batch(a.value * b.value);
  return {};
}

Size divide(Size a, Size b) {
  if (!b.isConstant() || b.value <= 0)
    return {};
  if (a.isConstant())
    return Size::constant(a.value / b.value);
  if (a.isBatch() && a.value % b.value == 0)
    return Size::batch(a.value / b.value);
  return {};
}

Size add(Size a, Size b) {
  if (a.isConstant() && b.isConstant())
    return Size::constant(a.value + b.value);
  if (a.isBatch() && b.isBatch())
    return Size::batch(a.value + b.value);
  if (b == Size::constant(0))
    return a;
  if (a == Size::constant(0))
    return b;
  return {};
}

/// A failed proof: the op and why.
struct Refusal {
  std::string reason;
};

/// Walks the entry function once (see the file comment).
class BatchWalker {
public:
  /// Checks `entry`; returns the reason it could not be proved, if any.
  std::optional<std::string> run(func::FuncOp entry);

private:
  using Shape = SmallVector<Size>;

  Refusal refuse(Operation *op, const Twine &why);
  Size sizeOf(Value value) const;
  bool dependsOnBatch(Value value) const { return dependent.count(value); }
  /// The shape of tensor `value`, or nullptr when it is not one.
  const Shape *shapeOf(Value value) const;
  bool isBatched(Value value) const;
  /// The shape a tensor of `type` has where its dynamic sizes are `sizes`,
  /// in order.
  Shape shapeFromType(RankedTensorType type, ArrayRef<Size> sizes);
  Size evaluate(AffineExpr expr, ValueRange operands, unsigned numDims);

  std::optional<Refusal> visitScalar(Operation *op);
  std::optional<Refusal> visitTensorOp(Operation *op);
  std::optional<Refusal> visitReshape(Operation *op);
  std::optional<Refusal> visitSlice(Operation *op);
  std::optional<Refusal> visitLinalg(linalg::LinalgOp op);
  std::optional<Refusal> visitBody(linalg::LinalgOp op, unsigned batchLoop,
                                   Size loopSize);
  bool isSampleIndex(Value index, unsigned batchLoop, Size loopSize);
  std::optional<Refusal> setResultShape(Operation *op, Value result,
                                        Shape shape);

  llvm::DenseMap<Value, Size> scalars;
  llvm::DenseMap<Value, Shape> shapes;
  /// Scalars computed from the batch size.
  llvm::DenseSet<Value> dependent;
};
} // namespace

/// `value` in words: an argument by number, else its op and location.
static std::string describe(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return "argument #" + std::to_string(arg.getArgNumber());
  Operation *op = value.getDefiningOp();
  std::string where = formatLocation(op->getLoc());
  return "the result of '" + op->getName().getStringRef().str() + "'" +
         (where.empty() ? "" : " at " + where);
}

Refusal BatchWalker::refuse(Operation *op, const Twine &why) {
  std::string where = formatLocation(op->getLoc());
  return {"'" + op->getName().getStringRef().str() + "'" +
          (where.empty() ? "" : " at " + where) + " " + why.str()};
}

Size BatchWalker::sizeOf(Value value) const {
  auto it = scalars.find(value);
  if (it != scalars.end())
    return it->second;
  APInt constant;
  if (matchPattern(value, m_ConstantInt(&constant)))
    return Size::constant(constant.getSExtValue());
  return {};
}

const BatchWalker::Shape *BatchWalker::shapeOf(Value value) const {
  auto it = shapes.find(value);
  return it == shapes.end() ? nullptr : &it->second;
}

bool BatchWalker::isBatched(Value value) const {
  const Shape *shape = shapeOf(value);
  return shape && !shape->empty() && shape->front().isBatch();
}

BatchWalker::Shape BatchWalker::shapeFromType(RankedTensorType type,
                                              ArrayRef<Size> sizes) {
  Shape shape;
  size_t next = 0;
  for (int64_t dim : type.getShape())
    shape.push_back(ShapedType::isDynamic(dim)
                        ? (next < sizes.size() ? sizes[next++] : Size())
                        : Size::constant(dim));
  return shape;
}

Size BatchWalker::evaluate(AffineExpr expr, ValueRange operands,
                           unsigned numDims) {
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return Size::constant(constant.getValue());
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return sizeOf(operands[dim.getPosition()]);
  if (auto symbol = dyn_cast<AffineSymbolExpr>(expr))
    return sizeOf(operands[numDims + symbol.getPosition()]);
  auto binary = cast<AffineBinaryOpExpr>(expr);
  Size lhs = evaluate(binary.getLHS(), operands, numDims);
  Size rhs = evaluate(binary.getRHS(), operands, numDims);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return add(lhs, rhs);
  case AffineExprKind::Mul:
    return multiply(lhs, rhs);
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv:
    // Exact divisions only (a batch factor divisible by the constant).
    return lhs.isBatch() ? divide(lhs, rhs)
           : lhs.isConstant() && rhs.isConstant() && rhs.value > 0
               ? Size::constant(
                     expr.getKind() == AffineExprKind::FloorDiv
                         ? llvm::divideFloorSigned(lhs.value, rhs.value)
                         : llvm::divideCeilSigned(lhs.value, rhs.value))
               : Size();
  case AffineExprKind::Mod:
    if (lhs.isConstant() && rhs.isConstant() && rhs.value > 0)
      return Size::constant(llvm::mod(lhs.value, rhs.value));
    if (lhs.isBatch() && rhs.isConstant() && rhs.value > 0 &&
        lhs.value % rhs.value == 0)
      return Size::constant(0);
    return {};
  default:
    return {};
  }
}

/// Scalar ops: sizes through index arithmetic, and which depend on the
/// batch size.
std::optional<Refusal> BatchWalker::visitScalar(Operation *op) {
  bool fromBatch = llvm::any_of(op->getOperands(), [&](Value operand) {
    return dependsOnBatch(operand);
  });
  for (Value result : op->getResults()) {
    Size size;
    if (auto dim = dyn_cast<tensor::DimOp>(op)) {
      const Shape *shape = shapeOf(dim.getSource());
      Size index = sizeOf(dim.getIndex());
      if (shape && index.isConstant() && index.value >= 0 &&
          index.value < int64_t(shape->size()))
        size = (*shape)[size_t(index.value)];
    } else if (auto apply = dyn_cast<affine::AffineApplyOp>(op)) {
      AffineMap map = apply.getAffineMap();
      size =
          evaluate(map.getResult(0), apply.getMapOperands(), map.getNumDims());
    } else if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
                   arith::ExtUIOp, arith::TruncIOp>(op)) {
      size = sizeOf(op->getOperand(0));
    } else if (isa<arith::MulIOp>(op)) {
      size = multiply(sizeOf(op->getOperand(0)), sizeOf(op->getOperand(1)));
    } else if (isa<arith::DivSIOp, arith::DivUIOp, arith::FloorDivSIOp,
                   arith::CeilDivSIOp, arith::CeilDivUIOp>(op)) {
      size = divide(sizeOf(op->getOperand(0)), sizeOf(op->getOperand(1)));
    } else if (isa<arith::AddIOp>(op)) {
      size = add(sizeOf(op->getOperand(0)), sizeOf(op->getOperand(1)));
    } else {
      size = sizeOf(result);
    }
    if (size.kind != Size::Kind::Unknown)
      scalars[result] = size;
    if (size.isBatch() || (size.kind == Size::Kind::Unknown && fromBatch))
      dependent.insert(result);
  }
  return std::nullopt;
}

std::optional<Refusal> BatchWalker::setResultShape(Operation *op, Value result,
                                                   Shape shape) {
  for (auto [index, size] : llvm::enumerate(shape)) {
    if (size.kind == Size::Kind::Unknown)
      return refuse(op, "gives " + describe(result) + " a dimension (" +
                            Twine(index) +
                            ") whose size the analysis cannot follow");
    if (size.isBatch() && index != 0)
      return refuse(op, "moves the batch into dimension " + Twine(index) +
                            " of " + describe(result));
  }
  shapes[result] = std::move(shape);
  return std::nullopt;
}

/// expand_shape and collapse_shape: the batch stays the leading factor of
/// the outermost dimension.
std::optional<Refusal> BatchWalker::visitReshape(Operation *op) {
  Value source = op->getOperand(0);
  const Shape *in = shapeOf(source);
  if (!in)
    return refuse(op, "reshapes a value the analysis does not know");
  Value result = op->getResult(0);
  auto resultType = cast<RankedTensorType>(result.getType());
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    SmallVector<Size> dynamic;
    for (Value size : expand.getOutputShape())
      dynamic.push_back(sizeOf(size));
    Shape out = shapeFromType(resultType, dynamic);
    for (auto [group, dims] :
         llvm::enumerate(expand.getReassociationIndices())) {
      Size whole = (*in)[group];
      Size product = Size::constant(1);
      for (int64_t dim : dims)
        if (dim != dims.front())
          product = multiply(product, out[dim]);
      Size leading = out[dims.front()];
      if (whole.isBatch() && !(leading.isBatch() && product.isConstant() &&
                               multiply(leading, product) == whole))
        return refuse(op, "does not keep the batch as the leading factor "
                          "of " +
                              describe(source) + "'s outermost dimension");
      if (!whole.isBatch() &&
          llvm::any_of(dims, [&](int64_t dim) { return out[dim].isBatch(); }))
        return refuse(op, "splits the batch out of a dimension without it");
    }
    return setResultShape(op, result, out);
  }
  auto collapse = cast<tensor::CollapseShapeOp>(op);
  Shape out;
  for (const ReassociationIndices &dims : collapse.getReassociationIndices()) {
    Size product = Size::constant(1);
    for (int64_t dim : dims)
      product = multiply(product, (*in)[dim]);
    out.push_back(product);
  }
  return setResultShape(op, result, out);
}

/// Pads, slices, inserts and concatenations leave the batch whole.
std::optional<Refusal> BatchWalker::visitSlice(Operation *op) {
  auto isZero = [](OpFoldResult value) {
    return getConstantIntValue(value) == std::optional<int64_t>(0);
  };
  auto isOne = [](OpFoldResult value) {
    return getConstantIntValue(value) == std::optional<int64_t>(1);
  };
  auto sizeOfFold = [&](OpFoldResult value) {
    if (std::optional<int64_t> constant = getConstantIntValue(value))
      return Size::constant(*constant);
    return sizeOf(cast<Value>(value));
  };
  Value result = op->getResult(0);
  auto resultType = cast<RankedTensorType>(result.getType());
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    const Shape *in = shapeOf(pad.getSource());
    if (!in)
      return refuse(op, "pads a value the analysis does not know");
    if (isBatched(pad.getSource()) &&
        (!isZero(pad.getMixedLowPad()[0]) || !isZero(pad.getMixedHighPad()[0])))
      return refuse(op, "pads the batch dimension");
    Shape out = shapeFromType(resultType, {});
    out[0] = resultType.isDynamicDim(0) ? (*in)[0] : out[0];
    return setResultShape(op, result, out);
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    const Shape *in = shapeOf(slice.getSource());
    if (!in)
      return refuse(op, "slices a value the analysis does not know");
    SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
    if (isBatched(slice.getSource()) && (!isZero(slice.getMixedOffsets()[0]) ||
                                         !isOne(slice.getMixedStrides()[0]) ||
                                         sizeOfFold(sizes[0]) != (*in)[0]))
      return refuse(op, "takes part of the batch");
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    Shape out;
    for (auto [dim, size] : llvm::enumerate(sizes))
      if (!dropped.test(dim))
        out.push_back(sizeOfFold(size));
    return setResultShape(op, result, out);
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    const Shape *dest = shapeOf(insert.getDest());
    if (!dest || !shapeOf(insert.getSource()))
      return refuse(op, "inserts into a value the analysis does not know");
    if (isBatched(insert.getSource()) && !isBatched(insert.getDest()))
      return refuse(op, "inserts samples into a tensor without a batch");
    if (isBatched(insert.getDest()) &&
        (!isZero(insert.getMixedOffsets()[0]) ||
         !isOne(insert.getMixedStrides()[0]) ||
         sizeOfFold(insert.getMixedSizes()[0]) != (*dest)[0] ||
         !isBatched(insert.getSource())))
      return refuse(op, "writes part of the batch");
    return setResultShape(op, result, Shape(*dest));
  }
  auto concat = cast<tensor::ConcatOp>(op);
  std::optional<Size> outer;
  bool anyBatched = false;
  for (Value input : concat.getInputs()) {
    const Shape *in = shapeOf(input);
    if (!in)
      return refuse(op, "joins a value the analysis does not know");
    anyBatched |= isBatched(input);
    if (outer && *outer != (*in)[0])
      return refuse(op, "joins tensors with different batches");
    outer = (*in)[0];
  }
  if (anyBatched && concat.getDim() == 0)
    return refuse(op, "joins along the batch dimension");
  Shape out = shapeFromType(resultType, {});
  if (resultType.isDynamicDim(0) && outer)
    out[0] = *outer;
  return setResultShape(op, result, out);
}

/// Whether `index`, in the body of a linalg op whose batch loop is
/// `batchLoop` of size `loopSize`, is that loop's index: `linalg.index`
/// of it, or torch-mlir's broadcast of it, `select(size == 1, 0, index)`
/// where `size` is the loop's size.
bool BatchWalker::isSampleIndex(Value index, unsigned batchLoop,
                                Size loopSize) {
  if (auto loop = index.getDefiningOp<linalg::IndexOp>())
    return loop.getDim() == batchLoop;
  auto select = index.getDefiningOp<arith::SelectOp>();
  if (!select || !matchPattern(select.getTrueValue(), m_Zero()) ||
      !isSampleIndex(select.getFalseValue(), batchLoop, loopSize))
    return false;
  auto compare = select.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!compare || compare.getPredicate() != arith::CmpIPredicate::eq)
    return false;
  Value lhs = compare.getLhs(), rhs = compare.getRhs();
  if (matchPattern(lhs, m_One()))
    std::swap(lhs, rhs);
  return matchPattern(rhs, m_One()) && sizeOf(lhs) == loopSize;
}

/// The body of a linalg op reads other tensors only at its own sample, and
/// uses neither the sample's index nor the batch size as a value.
std::optional<Refusal>
BatchWalker::visitBody(linalg::LinalgOp op, unsigned batchLoop, Size loopSize) {
  Region &body = op->getRegion(0);
  // Values the sample index may flow into: an extract's outermost index,
  // or the broadcast select (whose comparison uses the batch size).
  llvm::DenseSet<Operation *> allowed;
  std::optional<Refusal> refusal;
  body.walk([&](tensor::ExtractOp extract) {
    if (refusal || !isBatched(extract.getTensor()))
      return;
    Value outer = extract.getIndices().front();
    if (shapeOf(extract.getTensor())->front() != loopSize ||
        !isSampleIndex(outer, batchLoop, loopSize)) {
      refusal =
          refuse(op, "reads other samples of " + describe(extract.getTensor()) +
                         " in its body (tensor.extract)");
      return;
    }
    for (auto select = outer.getDefiningOp<arith::SelectOp>(); select;
         select = select.getFalseValue().getDefiningOp<arith::SelectOp>()) {
      allowed.insert(select);
      allowed.insert(select.getCondition().getDefiningOp());
    }
  });
  if (refusal)
    return refusal;
  WalkResult walk = body.walk([&](Operation *inner) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      if (index.getDim() != batchLoop)
        return WalkResult::advance();
      for (OpOperand &use : index->getUses()) {
        Operation *user = use.getOwner();
        auto extract = dyn_cast<tensor::ExtractOp>(user);
        bool asSample = (extract && isBatched(extract.getTensor()) &&
                         use.getOperandNumber() == 1) ||
                        allowed.count(user);
        if (!asSample) {
          refusal = refuse(op, "uses the index of the batch loop as a value "
                               "in its body");
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    }
    for (Value operand : inner->getOperands()) {
      if (op->isAncestor(operand.getParentBlock()->getParentOp()))
        continue;
      if (dependsOnBatch(operand) && !allowed.count(inner)) {
        refusal = refuse(op, "uses the batch size as a value in its body");
        return WalkResult::interrupt();
      }
      if (isBatched(operand) && !isa<tensor::ExtractOp>(inner)) {
        refusal = refuse(op, "uses " + describe(operand) +
                                 " in its body other than by "
                                 "tensor.extract");
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return refusal;
  return std::nullopt;
}

/// A linalg op keeps samples apart (see BatchIndependence.h).
std::optional<Refusal> BatchWalker::visitLinalg(linalg::LinalgOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  std::optional<unsigned> batchLoop;
  Size loopSize;
  for (OpOperand &operand : op->getOpOperands()) {
    Value value = operand.get();
    if (!isa<RankedTensorType>(value.getType())) {
      if (dependsOnBatch(value))
        return refuse(op, "takes the batch size as a value");
      continue;
    }
    if (!shapeOf(value))
      return refuse(op, "reads a value the analysis does not know");
    if (!isBatched(value))
      continue;
    AffineMap map = maps[operand.getOperandNumber()];
    auto outer = dyn_cast<AffineDimExpr>(map.getResult(0));
    if (!outer)
      return refuse(op, "does not index the batch of " + describe(value) +
                            " by a loop of its own");
    if (batchLoop && *batchLoop != outer.getPosition())
      return refuse(op, "indexes batches by two loops");
    if (batchLoop && loopSize != shapeOf(value)->front())
      return refuse(op, "reads batches of different sizes");
    batchLoop = outer.getPosition();
    loopSize = shapeOf(value)->front();
  }
  if (batchLoop) {
    if (iterators[*batchLoop] != utils::IteratorType::parallel)
      return refuse(op, "reduces over the batch");
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<RankedTensorType>(operand.get().getType()))
        continue;
      AffineMap map = maps[operand.getOperandNumber()];
      bool batched = isBatched(operand.get());
      for (unsigned r = batched ? 1 : 0; r < map.getNumResults(); ++r)
        if (map.getResult(r).isFunctionOfDim(*batchLoop))
          return refuse(op, "indexes dimension " + Twine(r) + " of " +
                                describe(operand.get()) + " by the batch loop");
    }
    for (OpOperand &init : op.getDpsInitsMutable())
      if (!isBatched(init.get()))
        return refuse(op, "writes " + describe(init.get()) +
                              ", which does not carry the batch");
    if (std::optional<Refusal> refusal = visitBody(op, *batchLoop, loopSize))
      return refusal;
  } else if (std::optional<Refusal> refusal =
                 visitBody(op, ~0u, Size::constant(-1))) {
    return refusal;
  }
  // Copies first: inserting into `shapes` moves its entries.
  for (auto [result, init] :
       llvm::zip(op->getResults(), op.getDpsInitsMutable())) {
    Shape shape = *shapeOf(init.get());
    shapes[result] = std::move(shape);
  }
  return std::nullopt;
}

/// Every other op that makes tensors.
std::optional<Refusal> BatchWalker::visitTensorOp(Operation *op) {
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
    return visitReshape(op);
  if (isa<tensor::PadOp, tensor::ExtractSliceOp, tensor::InsertSliceOp,
          tensor::ConcatOp>(op))
    return visitSlice(op);
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return visitLinalg(linalgOp);
  if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op)) {
    if (isBatched(softmax.getInput()) && softmax.getDimension() == 0)
      return refuse(op, "normalises over the batch");
    if (isBatched(softmax.getInput()) != isBatched(softmax.getOutput()))
      return refuse(op, "writes a result without the batch of its input");
    Shape shape = *shapeOf(softmax.getOutput());
    shapes[softmax.getResult()[0]] = std::move(shape);
    return std::nullopt;
  }
  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    SmallVector<Size> sizes;
    for (Value size : empty.getDynamicSizes())
      sizes.push_back(sizeOf(size));
    return setResultShape(op, empty.getResult(),
                          shapeFromType(empty.getType(), sizes));
  }
  if (auto cast = dyn_cast<tensor::CastOp>(op)) {
    const Shape *in = shapeOf(cast.getSource());
    if (!in)
      return refuse(op, "casts a value the analysis does not know");
    auto type = cast.getType();
    Shape out;
    for (auto [dim, size] : llvm::enumerate(type.getShape())) {
      if (ShapedType::isDynamic(size)) {
        out.push_back((*in)[dim]);
        continue;
      }
      if ((*in)[dim].isBatch())
        return refuse(op, "fixes the batch to " + Twine(size));
      out.push_back(Size::constant(size));
    }
    return setResultShape(op, cast.getResult(), out);
  }
  // Ops the analysis knows nothing of: fine as long as they touch neither
  // samples nor the batch size.
  for (Value operand : op->getOperands())
    if (isBatched(operand) || dependsOnBatch(operand))
      return refuse(op, "is not known to keep samples apart");
  for (Value result : op->getResults())
    if (auto type = dyn_cast<RankedTensorType>(result.getType()))
      if (std::optional<Refusal> refusal =
              setResultShape(op, result, shapeFromType(type, {})))
        return refusal;
  return std::nullopt;
}

std::optional<std::string> BatchWalker::run(func::FuncOp entry) {
  Block &body = entry.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      continue;
    Shape shape = shapeFromType(type, {});
    if (type.getRank() > 0 && type.isDynamicDim(0))
      shape[0] = Size::batch(1);
    shapes[arg] = std::move(shape);
  }
  for (Operation &op : body) {
    std::optional<Refusal> refusal;
    bool makesTensors = llvm::any_of(
        op.getResultTypes(), [](Type type) { return isa<TensorType>(type); });
    if (isa<cf::AssertOp, func::ReturnOp>(op))
      continue;
    if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
      if (isBatched(extract.getTensor()))
        refusal = refuse(&op, "reads an element of a sample as a value");
      else
        refusal = visitScalar(&op);
    } else if (makesTensors || isa<linalg::LinalgOp>(op)) {
      refusal = visitTensorOp(&op);
    } else {
      refusal = visitScalar(&op);
    }
    if (refusal)
      return refusal->reason;
  }
  return std::nullopt;
}

bool mlir::kopt::hasDynamicShape(func::FuncOp entry) {
  return llvm::any_of(entry.getArgumentTypes(), [](Type type) {
    auto shaped = dyn_cast<ShapedType>(type);
    return shaped && !shaped.hasStaticShape();
  });
}

llvm::Expected<BatchAnalysis> mlir::kopt::analyzeBatch(func::FuncOp entry) {
  BatchAnalysis analysis;
  for (auto [index, type] : llvm::enumerate(entry.getArgumentTypes())) {
    auto ranked = dyn_cast<RankedTensorType>(type);
    if (!ranked && isa<TensorType>(type))
      return llvm::createStringError(
          "argument #" + std::to_string(index) +
          " is an unranked tensor; kopt takes only a dynamic batch (the "
          "outermost dimension)");
    for (int64_t dim = 1; ranked && dim < ranked.getRank(); ++dim)
      if (ranked.isDynamicDim(dim))
        return llvm::createStringError(
            "argument #" + std::to_string(index) + " has a dynamic dimension " +
            std::to_string(dim) +
            "; kopt takes only a dynamic batch (the outermost dimension)");
    analysis.arguments.push_back(ranked && ranked.getRank() > 0 &&
                                 ranked.isDynamicDim(0));
  }
  for (Type type : entry.getResultTypes()) {
    auto ranked = dyn_cast<RankedTensorType>(type);
    analysis.results.push_back(ranked && ranked.getRank() > 0 &&
                               ranked.isDynamicDim(0));
  }
  BatchWalker walker;
  std::optional<std::string> reason = walker.run(entry);
  analysis.independent = !reason;
  analysis.reason = reason.value_or("");
  return analysis;
}
