//===- TensorMoves.cpp - Pads, slices and concatenations --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/TensorMoves.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::kopt;

static llvm::Error makeError(Operation *op, const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "'" + op->getName().getStringRef() +
                                     "' with " + what);
}

static bool isStatic(llvm::ArrayRef<int64_t> values) {
  return llvm::none_of(values, ShapedType::isDynamic);
}

static bool hasStaticShape(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape();
}

bool mlir::kopt::isPlacementOp(Operation *op) {
  return isa<tensor::PadOp, tensor::InsertSliceOp, tensor::ConcatOp>(op);
}

bool mlir::kopt::isTensorMoveOp(Operation *op) {
  return isPlacementOp(op) || isa<tensor::ExtractSliceOp>(op);
}

/// A piece that fills the result's dimensions one to one.
static PlacedTensor placeWhole(Value source, unsigned rank) {
  PlacedTensor piece;
  piece.source = source;
  piece.offsets.assign(rank, 0);
  piece.strides.assign(rank, 1);
  for (unsigned d = 0; d < rank; ++d)
    piece.sourceDims.push_back(d);
  return piece;
}

llvm::Expected<Placement> mlir::kopt::getPlacement(Operation *op) {
  for (Value value : op->getOperands())
    if (isa<ShapedType>(value.getType()) && !hasStaticShape(value))
      return makeError(op, "a dynamic shape");
  if (!hasStaticShape(op->getResult(0)))
    return makeError(op, "a dynamic shape");
  unsigned rank = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
  Placement placement;
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    if (!isStatic(pad.getStaticLow()))
      return makeError(op, "dynamic padding");
    placement.padding = pad.getConstantPaddingValue();
    if (!placement.padding)
      return makeError(op, "a padding value computed per element");
    PlacedTensor piece = placeWhole(pad.getSource(), rank);
    piece.offsets.assign(pad.getStaticLow().begin(), pad.getStaticLow().end());
    placement.pieces.push_back(std::move(piece));
    return placement;
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    if (!isStatic(insert.getStaticOffsets()) ||
        !isStatic(insert.getStaticStrides()))
      return makeError(op, "dynamic offsets or strides");
    PlacedTensor piece;
    piece.source = insert.getSource();
    piece.offsets.assign(insert.getStaticOffsets().begin(),
                         insert.getStaticOffsets().end());
    piece.strides.assign(insert.getStaticStrides().begin(),
                         insert.getStaticStrides().end());
    llvm::SmallBitVector dropped = insert.getDroppedDims();
    int64_t next = 0;
    for (unsigned d = 0; d < rank; ++d)
      piece.sourceDims.push_back(dropped.test(d) ? -1 : next++);
    placement.pieces.push_back(std::move(piece));
    placement.fallback = insert.getDest();
    return placement;
  }
  auto concat = cast<tensor::ConcatOp>(op);
  int64_t offset = 0;
  for (Value input : concat.getInputs()) {
    PlacedTensor piece = placeWhole(input, rank);
    piece.offsets[concat.getDim()] = offset;
    offset +=
        cast<RankedTensorType>(input.getType()).getDimSize(concat.getDim());
    placement.pieces.push_back(std::move(piece));
  }
  return placement;
}

llvm::Expected<SliceRead> mlir::kopt::getSliceRead(Operation *op) {
  auto slice = cast<tensor::ExtractSliceOp>(op);
  if (!hasStaticShape(slice.getSource()) ||
      !hasStaticShape(slice.getResult()) ||
      !isStatic(slice.getStaticOffsets()) ||
      !isStatic(slice.getStaticStrides()))
    return makeError(op, "a dynamic shape, offsets or strides");
  SliceRead read;
  read.source = slice.getSource();
  read.offsets.assign(slice.getStaticOffsets().begin(),
                      slice.getStaticOffsets().end());
  read.strides.assign(slice.getStaticStrides().begin(),
                      slice.getStaticStrides().end());
  llvm::SmallBitVector dropped = slice.getDroppedDims();
  int64_t next = 0;
  for (unsigned j = 0; j < read.offsets.size(); ++j)
    read.resultDims.push_back(dropped.test(j) ? -1 : next++);
  return read;
}
