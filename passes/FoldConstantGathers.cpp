//===- FoldConstantGathers.cpp - Gathers that are reshapes ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// torch-mlir writes GroupNorm's per-channel scale and shift as gathers: a
// linalg.generic whose body reads the per-group values with tensor.extract
// at indices computed, with a few integer ops, from constant index tables
// (the decomposition's aten.index). When the tables make every element of
// the result read the element of the source at the same row-major position,
// the gather is a reshape, and is replaced by one (a collapse of the source
// into one dimension, then an expansion into the result's shape), which
// fusion and the code generators see through; the tables and the scalar
// constants the indices read are erased when nothing else reads them. Indices
// are evaluated element by element, so only tables of at most
// kMaxGatherElements elements are looked at. One walk over the function's
// top-level ops; no rewrite creates work for another.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <numeric>
#include <optional>

#define DEBUG_TYPE "kopt-fold-constant-gathers"

namespace mlir::kopt {
#define GEN_PASS_DEF_FOLDCONSTANTGATHERSPASS
#include "passes/Passes.h.inc"

namespace {
struct FoldConstantGathersPass final
    : impl::FoldConstantGathersPassBase<FoldConstantGathersPass> {
  using Base::Base;
  void runOnOperation() override;
};

/// Gathers larger than this are left alone: each element's indices are
/// evaluated one by one at compile time.
constexpr int64_t kMaxGatherElements = 1 << 16;

/// The integer values of a gather's index computation at one point of its
/// iteration space: the body's ops evaluated over the tables' elements.
class IndexEvaluator {
public:
  IndexEvaluator(linalg::GenericOp gather,
                 ArrayRef<DenseIntElementsAttr> tables)
      : gather(gather), tables(tables) {}

  /// The value of `value` at the point of row-major position `position`
  /// and coordinates `coordinates`; none if an op is not an integer op
  /// this evaluator knows, or reads something other than the tables.
  std::optional<int64_t> evaluate(Value value, int64_t position,
                                  ArrayRef<int64_t> coordinates) {
    this->position = position;
    this->coordinates = coordinates;
    known.clear();
    return get(value);
  }

private:
  std::optional<int64_t> get(Value value) {
    auto found = known.find(value);
    if (found != known.end())
      return found->second;
    std::optional<int64_t> result = compute(value);
    if (result)
      known[value] = *result;
    return result;
  }

  std::optional<int64_t> compute(Value value) {
    Type type = value.getType();
    if (!type.isIndex() && !type.isInteger(64) && !type.isInteger(1))
      return std::nullopt;
    if (auto argument = dyn_cast<BlockArgument>(value)) {
      if (argument.getOwner() != gather.getBody() ||
          argument.getArgNumber() >= tables.size())
        return std::nullopt;
      return tables[argument.getArgNumber()]
          .getValues<APInt>()[position]
          .getSExtValue();
    }
    Operation *op = value.getDefiningOp();
    if (!op || op->getNumResults() != 1)
      return std::nullopt;
    if (auto index = dyn_cast<linalg::IndexOp>(op))
      return coordinates[index.getDim()];
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      if (auto integer = dyn_cast<IntegerAttr>(constant.getValue()))
        return type.isInteger(1) ? int64_t(integer.getValue().getBoolValue())
                                 : integer.getValue().getSExtValue();
      return std::nullopt;
    }
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(op))
      return get(op->getOperand(0));
    if (auto select = dyn_cast<arith::SelectOp>(op)) {
      std::optional<int64_t> condition = get(select.getCondition());
      if (!condition)
        return std::nullopt;
      return get(*condition ? select.getTrueValue() : select.getFalseValue());
    }
    if (auto compare = dyn_cast<arith::CmpIOp>(op)) {
      std::optional<int64_t> a = get(compare.getLhs()),
                             b = get(compare.getRhs());
      if (!a || !b)
        return std::nullopt;
      // Values are held sign-extended, but i1's as 0 or 1.
      Type operands = compare.getLhs().getType();
      unsigned width =
          operands.isIndex() ? 64 : operands.getIntOrFloatBitWidth();
      return arith::applyCmpPredicate(compare.getPredicate(),
                                      APInt(width, uint64_t(*a), width > 1),
                                      APInt(width, uint64_t(*b), width > 1));
    }
    if (!isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op))
      return std::nullopt;
    std::optional<int64_t> a = get(op->getOperand(0)),
                           b = get(op->getOperand(1));
    if (!a || !b)
      return std::nullopt;
    int64_t result = 0;
    bool overflow =
        isa<arith::AddIOp>(op)   ? __builtin_add_overflow(*a, *b, &result)
        : isa<arith::SubIOp>(op) ? __builtin_sub_overflow(*a, *b, &result)
                                 : __builtin_mul_overflow(*a, *b, &result);
    if (overflow)
      return std::nullopt;
    return result;
  }

  linalg::GenericOp gather;
  ArrayRef<DenseIntElementsAttr> tables;
  int64_t position = 0;
  ArrayRef<int64_t> coordinates;
  llvm::DenseMap<Value, int64_t> known;
};
} // namespace

/// Whether `map` reads every point of `gather`'s iteration space at the
/// point's own row-major position: the identity, but for the constant 0 on
/// a dimension of one element (torch-mlir's tables at batch 1,
/// `(d0, d1) -> (0, d1)`).
static bool readsSamePosition(linalg::GenericOp gather, AffineMap map) {
  SmallVector<int64_t> ranges = gather.getStaticLoopRanges();
  if (map.getNumResults() != ranges.size())
    return false;
  for (auto [position, expr] : llvm::enumerate(map.getResults())) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      if (dim.getPosition() != position)
        return false;
      continue;
    }
    auto constant = dyn_cast<AffineConstantExpr>(expr);
    if (!constant || constant.getValue() != 0 || ranges[position] != 1)
      return false;
  }
  return true;
}

/// The source `gather` reads at the same row-major position as it writes,
/// if it is such a gather: every iterator parallel, maps that read each
/// point at its own position (readsSamePosition), every input a constant
/// integer table, and a body that yields a tensor.extract of a value from
/// outside at indices computed from the tables.
static Value findReshapedSource(linalg::GenericOp gather) {
  if (gather.getNumDpsInits() != 1 || gather->getNumResults() != 1 ||
      gather.getNumReductionLoops() != 0 ||
      !llvm::all_of(gather.getIndexingMapsArray(), [&](AffineMap map) {
        return readsSamePosition(gather, map);
      }))
    return {};
  auto resultType = dyn_cast<RankedTensorType>(gather->getResult(0).getType());
  if (!resultType || !resultType.hasStaticShape() ||
      resultType.getRank() == 0 ||
      resultType.getNumElements() > kMaxGatherElements)
    return {};
  SmallVector<DenseIntElementsAttr> tables;
  for (Value input : gather.getDpsInputs()) {
    DenseIntElementsAttr table;
    auto constant = input.getDefiningOp<arith::ConstantOp>();
    if (!constant ||
        !(table = dyn_cast<DenseIntElementsAttr>(constant.getValue())))
      return {};
    tables.push_back(table);
  }
  auto yield = cast<linalg::YieldOp>(gather.getBody()->getTerminator());
  auto extract = yield.getValues().front().getDefiningOp<tensor::ExtractOp>();
  if (!extract || extract->getBlock() != gather.getBody())
    return {};
  Value source = extract.getTensor();
  auto sourceType = cast<RankedTensorType>(source.getType());
  if (source.getParentBlock() == gather.getBody() ||
      !sourceType.hasStaticShape() ||
      sourceType.getNumElements() != resultType.getNumElements() ||
      sourceType.getElementType() != resultType.getElementType())
    return {};

  IndexEvaluator evaluator(gather, tables);
  ArrayRef<int64_t> shape = resultType.getShape();
  ArrayRef<int64_t> sourceShape = sourceType.getShape();
  SmallVector<int64_t> coordinates(shape.size(), 0);
  for (int64_t position = 0; position < resultType.getNumElements();
       ++position) {
    int64_t flat = 0;
    for (auto [index, size] : llvm::zip(extract.getIndices(), sourceShape)) {
      std::optional<int64_t> value =
          evaluator.evaluate(index, position, coordinates);
      if (!value || *value < 0 || *value >= size)
        return {};
      flat = flat * size + *value;
    }
    if (flat != position)
      return {};
    // The next point's coordinates, row-major.
    for (int64_t dim = int64_t(shape.size()) - 1; dim >= 0; --dim) {
      if (++coordinates[dim] < shape[dim])
        break;
      coordinates[dim] = 0;
    }
  }
  return source;
}

void FoldConstantGathersPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  // The tables and scalar constants the folded gathers read, erased at
  // the end where nothing else reads them.
  llvm::SetVector<Operation *> tables;
  for (auto gather :
       llvm::make_early_inc_range(func.getBody().getOps<linalg::GenericOp>())) {
    Value source = findReshapedSource(gather);
    if (!source)
      continue;
    auto sourceType = cast<RankedTensorType>(source.getType());
    auto resultType = cast<RankedTensorType>(gather->getResult(0).getType());
    OpBuilder builder(gather);
    Location loc = gather.getLoc();
    Value reshaped = source;
    if (sourceType.getShape() != resultType.getShape()) {
      if (sourceType.getRank() > 1) {
        ReassociationIndices all(sourceType.getRank());
        std::iota(all.begin(), all.end(), 0);
        reshaped = tensor::CollapseShapeOp::create(
            builder, loc, source, SmallVector<ReassociationIndices>{all});
      }
      if (resultType.getRank() > 1) {
        ReassociationIndices all(resultType.getRank());
        std::iota(all.begin(), all.end(), 0);
        reshaped = tensor::ExpandShapeOp::create(
            builder, loc, resultType, reshaped,
            SmallVector<ReassociationIndices>{all});
      }
    }
    for (Value input : gather.getDpsInputs())
      tables.insert(input.getDefiningOp());
    // The scalar constants the index computation read from outside.
    gather.getBody()->walk([&](Operation *op) {
      for (Value operand : op->getOperands())
        if (auto constant = operand.getDefiningOp<arith::ConstantOp>())
          if (constant->getBlock() != gather.getBody())
            tables.insert(constant);
    });
    gather->getResult(0).replaceAllUsesWith(reshaped);
    gather->erase();
  }
  for (Operation *table : tables)
    if (table->use_empty())
      table->erase();
}

} // namespace mlir::kopt
