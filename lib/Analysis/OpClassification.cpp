//===- OpClassification.cpp - What kind of op a linalg op is ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/OpClassification.h"

#include "kopt/Analysis/BodyOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Support/DebugStringHelper.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::kopt;

StringRef mlir::kopt::stringifyOpKind(OpKind kind) {
  switch (kind) {
  case OpKind::Elementwise:
    return "elementwise";
  case OpKind::Reduction:
    return "reduction";
  case OpKind::Softmax:
    return "softmax";
  case OpKind::Contraction:
    return "contraction";
  case OpKind::Convolution:
    return "convolution";
  case OpKind::Pooling:
    return "pooling";
  case OpKind::Reshape:
    return "reshape";
  case OpKind::Unsupported:
    return "unsupported";
  case OpKind::Other:
    return "other";
  }
  llvm_unreachable("unknown OpKind");
}

/// Checks the tensor operands and results of `op`: static shapes and
/// supported element types. Returns the reason for refusal, or "".
static std::string checkTensorTypes(Operation *op) {
  auto check = [&](Type type) -> std::string {
    auto shaped = dyn_cast<ShapedType>(type);
    if (!shaped)
      return isSupportedScalarType(type)
                 ? ""
                 : "unsupported scalar type " + debugString(type);
    // Buffers get their own reason, checked here because the ranked-tensor
    // test below would otherwise answer first with a vaguer one.
    if (isa<BaseMemRefType>(shaped))
      return "operates on buffers (" + debugString(type) +
             "); kopt tunes tensor programs";
    if (!isa<RankedTensorType>(shaped))
      return "operand is not a ranked tensor: " + debugString(type);
    if (!shaped.hasStaticShape())
      return "dynamic shape " + debugString(type) +
             " (only static shapes are tuned)";
    if (!isSupportedScalarType(shaped.getElementType()))
      return "unsupported element type in " + debugString(type);
    return "";
  };
  for (Type type : op->getOperandTypes())
    if (std::string why = check(type); !why.empty())
      return why;
  for (Type type : op->getResultTypes())
    if (std::string why = check(type); !why.empty())
      return why;
  return "";
}

/// Why the code generators cannot translate the body of `op`, or "".
static std::string checkBody(Operation *op) {
  std::string why;
  for (Region &region : op->getRegions())
    region.walk([&](Operation *inner) {
      if (why.empty())
        why = checkBodyOp(inner, op);
    });
  return why;
}

/// Returns true if every indexing map of `op` is a projected permutation,
/// allowing a constant 0 for an operand dimension of size 1 (the unit
/// broadcasts TOSA's lowering emits, such as `(d0, d1, d2) -> (d0, 0, d2)`).
static bool hasOnlyPermutationsAndUnitBroadcasts(linalg::LinalgOp op) {
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    auto type = dyn_cast<ShapedType>(operand.get().getType());
    llvm::SmallDenseSet<unsigned> seen;
    for (auto [index, expr] : llvm::enumerate(map.getResults())) {
      if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
        if (!seen.insert(dim.getPosition()).second)
          return false;
        continue;
      }
      auto constant = dyn_cast<AffineConstantExpr>(expr);
      if (!constant || constant.getValue() != 0 || !type ||
          type.getDimSize(index) != 1)
        return false;
    }
  }
  return true;
}

/// Linalg's pooling ops: 1-D, 2-D and 3-D windows of max, min or sum.
static bool isPooling(Operation *op) {
  return isa<linalg::PoolingNcwMaxOp, linalg::PoolingNcwSumOp,
             linalg::PoolingNwcMaxOp, linalg::PoolingNwcMaxUnsignedOp,
             linalg::PoolingNwcMinOp, linalg::PoolingNwcMinUnsignedOp,
             linalg::PoolingNwcSumOp, linalg::PoolingNchwMaxOp,
             linalg::PoolingNchwSumOp, linalg::PoolingNhwcMaxOp,
             linalg::PoolingNhwcMaxUnsignedOp, linalg::PoolingNhwcMinOp,
             linalg::PoolingNhwcMinUnsignedOp, linalg::PoolingNhwcSumOp,
             linalg::PoolingNdhwcMaxOp, linalg::PoolingNdhwcMinOp,
             linalg::PoolingNdhwcSumOp>(op);
}

OpClassification mlir::kopt::classifyOp(Operation *op) {
  OpClassification result;
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op)) {
    // A reshape of an empty tensor is an empty tensor: cloned, not fused.
    if (checkTensorTypes(op).empty() && !isCheapToClone(op))
      result.kind = OpKind::Reshape;
    return result;
  }
  if (!op->getDialect() || !isa<linalg::LinalgDialect>(op->getDialect()))
    return result;

  auto refuse = [&](std::string reason) {
    result.kind = OpKind::Unsupported;
    result.reason = std::move(reason);
    return result;
  };
  if (std::string why = checkTensorTypes(op); !why.empty())
    return refuse(why);

  if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op)) {
    auto type = cast<RankedTensorType>(softmax.getInput().getType());
    result.kind = OpKind::Softmax;
    result.domain.assign(type.getShape().begin(), type.getShape().end());
    for (auto [dim, size] : llvm::enumerate(type.getShape())) {
      bool reduced = dim == softmax.getDimension();
      result.reducedLoops.push_back(reduced);
      if (!reduced)
        result.rowDomain.push_back(size);
    }
    return result;
  }

  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp)
    return refuse("'" + op->getName().getStringRef().str() +
                  "' is not a structured linalg op kopt can fuse");
  if (std::string why = checkBody(op); !why.empty())
    return refuse(why);

  result.domain = linalgOp.getStaticLoopRanges();

  if (isPooling(op)) {
    result.kind = OpKind::Pooling;
    return result;
  }
  // Every convolution, named (1-D, 2-D, 3-D, grouped, depthwise) or a
  // convolution-shaped generic: the code generators read any affine map,
  // and library calls take the forms a cuDNN step computes.
  if (linalg::isaConvolutionOpInterface(linalgOp)) {
    result.kind = OpKind::Convolution;
    return result;
  }
  if (!hasOnlyPermutationsAndUnitBroadcasts(linalgOp))
    return refuse("an indexing map is neither a projected permutation nor a "
                  "unit broadcast");
  if (isa<linalg::FillOp>(op) && isCheapToClone(op))
    return result; // Rematerialised in each group that uses it.
  if (linalg::isaContractionOpInterface(linalgOp)) {
    result.kind = OpKind::Contraction;
    return result;
  }
  if (linalgOp.getNumReductionLoops() == 0) {
    result.kind = OpKind::Elementwise;
    return result;
  }
  result.kind = OpKind::Reduction;
  for (auto [size, iterator] :
       llvm::zip(result.domain, linalgOp.getIteratorTypesArray())) {
    bool reduced = iterator == utils::IteratorType::reduction;
    result.reducedLoops.push_back(reduced);
    if (!reduced)
      result.rowDomain.push_back(size);
  }
  return result;
}

/// Returns true if `value` is a scalar constant or a splat tensor constant.
static bool isCheapConstant(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || !def->hasTrait<OpTrait::ConstantLike>())
    return false;
  if (!isa<ShapedType>(value.getType()))
    return true;
  Attribute attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return false;
  auto elements = dyn_cast<DenseElementsAttr>(attr);
  return elements && elements.isSplat();
}

Value mlir::kopt::getInnermostTransposeSource(Operation *op) {
  if (!op || op->getNumResults() != 1)
    return Value();
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || type.getRank() < 2)
    return Value();
  int64_t rank = type.getRank();
  SmallVector<int64_t> swapped = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(swapped[rank - 1], swapped[rank - 2]);
  if (auto named = dyn_cast<linalg::TransposeOp>(op))
    return llvm::to_vector(named.getPermutation()) == swapped ? named.getInput()
                                                              : Value();
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() != 0)
    return Value();
  Block &body = generic.getRegion().front();
  if (body.getOperations().size() != 1 ||
      body.getTerminator()->getOperand(0) != body.getArgument(0))
    return Value();
  AffineMap in = generic.getMatchingIndexingMap(generic.getDpsInputOperand(0));
  AffineMap out = generic.getMatchingIndexingMap(generic.getDpsInitOperand(0));
  if (!out.isIdentity() || !in.isPermutation() || in.getNumResults() != rank)
    return Value();
  for (auto [expr, dim] : llvm::zip(in.getResults(), swapped))
    if (cast<AffineDimExpr>(expr).getPosition() != unsigned(dim))
      return Value();
  Value source = generic.getDpsInputOperand(0)->get();
  return getElementTypeOrSelf(source.getType()) == type.getElementType()
             ? source
             : Value();
}

bool mlir::kopt::isFusiblePad(Operation *op) {
  auto pad = dyn_cast_or_null<tensor::PadOp>(op);
  if (!pad || pad.getNofold() || !pad.getSourceType().hasStaticShape() ||
      !pad.getResultType().hasStaticShape() ||
      llvm::any_of(pad.getStaticLow(), ShapedType::isDynamic) ||
      llvm::any_of(pad.getStaticHigh(), ShapedType::isDynamic) ||
      llvm::any_of(pad.getStaticLow(), [](int64_t size) { return size < 0; }) ||
      llvm::any_of(pad.getStaticHigh(), [](int64_t size) { return size < 0; }))
    return false;
  Value padding = pad.getConstantPaddingValue();
  Attribute value;
  return padding && matchPattern(padding, m_Constant(&value)) &&
         isa<FloatAttr, IntegerAttr>(value);
}

bool mlir::kopt::isMultiplyAccumulate(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  if (!linalgOp)
    return false;
  Block *body = linalgOp.getBlock();
  if (body->getNumArguments() != 3 || body->getOperations().size() != 3)
    return false;
  auto add =
      body->getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value acc = body->getArgument(2);
  Value product = add.getLhs() == acc   ? add.getRhs()
                  : add.getRhs() == acc ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul)
    return false;
  Value a = body->getArgument(0), b = body->getArgument(1);
  return (mul.getLhs() == a && mul.getRhs() == b) ||
         (mul.getLhs() == b && mul.getRhs() == a);
}

llvm::SmallVector<int64_t>
mlir::kopt::dropUnitDims(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> result;
  for (int64_t size : shape)
    if (size != 1)
      result.push_back(size);
  return result;
}

Value mlir::kopt::throughReshapes(Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
      break;
    value = op->getOperand(0);
  }
  return value;
}

bool mlir::kopt::isWideningCast(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumResults() != 1 || generic.getNumReductionLoops() != 0 ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return false;
  Block &body = generic.getRegion().front();
  return body.getOperations().size() == 2 && isa<arith::ExtFOp>(body.front()) &&
         body.front().getOperand(0) == body.getArgument(0) &&
         body.getTerminator()->getOperand(0) == body.front().getResult(0);
}

bool mlir::kopt::isCheapToClone(Operation *op) {
  if (isa<tensor::EmptyOp>(op))
    return true;
  // torch-mlir's grouped convolutions fill an empty tensor reshaped to
  // [N, G, C/G, H, W]; the reshape is as empty as its source.
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op)) {
    Operation *source = op->getOperand(0).getDefiningOp();
    return source &&
           isa<tensor::EmptyOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp>(
               source) &&
           isCheapToClone(source);
  }
  if (op->hasTrait<OpTrait::ConstantLike>() && op->getNumResults() == 1)
    return isCheapConstant(op->getResult(0));
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    if (!fill.hasPureTensorSemantics())
      return false;
    Operation *init = fill.getOutputs()[0].getDefiningOp();
    return isCheapConstant(fill.getInputs()[0]) && init && isCheapToClone(init);
  }
  return false;
}

std::string mlir::kopt::describeOp(Operation *op) {
  std::string text = op->getName().getStringRef().str();
  if (!isa<linalg::GenericOp, linalg::MapOp, linalg::ReduceOp>(op))
    return text;
  llvm::SmallVector<std::string> bodyOps;
  op->getRegion(0).walk([&](Operation *inner) {
    if (isa<linalg::YieldOp, linalg::IndexOp, arith::ConstantOp>(inner))
      return;
    std::string name = inner->getName().getStringRef().str();
    if (!llvm::is_contained(bodyOps, name))
      bodyOps.push_back(name);
  });
  if (bodyOps.empty())
    return text;
  text += "{";
  llvm::raw_string_ostream os(text);
  llvm::interleave(bodyOps, os, ",");
  os << "}";
  return text;
}
