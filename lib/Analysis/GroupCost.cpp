//===- GroupCost.cpp - Cost of a fusion group -------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/GroupCost.h"

#include "kopt/Analysis/OpClassification.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kopt;

DeviceRoofline DeviceRoofline::h200() {
  DeviceRoofline device;
  device.name = "NVIDIA H200 (datasheet)";
  device.memoryBandwidth = 4.8e12;
  device.fp32Flops = 67e12;
  device.tensorFlops16 = 989e12;
  return device;
}

/// The bits of one element of type `type`: index is stored as 64 bits, a
/// complex number as its two parts; 0 for a type with no fixed width.
static int64_t getElementBits(Type type) {
  // Asked first: index is not an int-or-float type, and asking its bit
  // width is an assertion failure.
  if (isa<IndexType>(type))
    return 64;
  if (type.isIntOrFloat())
    return type.getIntOrFloatBitWidth();
  if (auto complex = dyn_cast<ComplexType>(type))
    return 2 * getElementBits(complex.getElementType());
  return 0;
}

int64_t mlir::kopt::getTensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  int64_t bits = getElementBits(tensor.getElementType());
  return tensor.getNumElements() * ((bits + 7) / 8);
}

/// Arithmetic operations in one iteration of a structured op's body.
static int64_t countBodyFlops(Operation *op) {
  int64_t count = 0;
  for (Region &region : op->getRegions())
    region.walk([&](Operation *inner) {
      Dialect *dialect = inner->getDialect();
      if (!dialect ||
          isa<arith::ConstantOp, arith::IndexCastOp, arith::IndexCastUIOp>(
              inner))
        return;
      if (isa<arith::ArithDialect, math::MathDialect>(dialect))
        ++count;
    });
  return count;
}

/// The bytes the group reads of argument `arg`: all of it, unless only
/// gathers (`tensor.extract` in a body) read it, which read at most one
/// element per iteration of their op (an embedding lookup reads the rows
/// it is asked for, not the table).
static int64_t getArgumentBytes(BlockArgument arg) {
  int64_t bytes = getTensorBytes(arg.getType());
  int64_t gathered = 0;
  for (Operation *user : arg.getUsers()) {
    auto linalgOp = isa<tensor::ExtractOp>(user)
                        ? user->getParentOfType<linalg::LinalgOp>()
                        : linalg::LinalgOp();
    if (!linalgOp)
      return bytes;
    int64_t iterations = 1;
    for (int64_t size : linalgOp.getStaticLoopRanges())
      iterations *= std::max<int64_t>(size, 0);
    auto tensor = cast<RankedTensorType>(arg.getType());
    gathered +=
        iterations * ((getElementBits(tensor.getElementType()) + 7) / 8);
  }
  return std::min(bytes, gathered);
}

static bool is16BitFloat(Type type) {
  auto tensor = dyn_cast<ShapedType>(type);
  Type element = tensor ? tensor.getElementType() : type;
  return isa<Float16Type, BFloat16Type>(element);
}

GroupCost mlir::kopt::computeGroupCost(func::FuncOp func,
                                       const DeviceRoofline &device) {
  GroupCost cost;
  Block &body = func.getBody().front();
  for (BlockArgument arg : func.getArguments())
    cost.bytesFused += getArgumentBytes(arg);
  for (Type type : func.getResultTypes())
    cost.bytesFused += getTensorBytes(type);

  int64_t intermediateBytes = 0;
  Operation *terminator = body.getTerminator();
  for (Operation &op : body.without_terminator()) {
    // Cheap constants are folded into their users and reshapes are views:
    // neither runs as a kernel of its own.
    if (isCheapToClone(&op) || classifyOp(&op).kind == OpKind::Reshape)
      continue;
    double opFlops = 0;
    if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op)) {
      // max, subtract, exp, sum, divide per element.
      opFlops =
          5.0 * cast<ShapedType>(softmax.getInput().getType()).getNumElements();
    } else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      double iterations = 1;
      for (int64_t size : linalgOp.getStaticLoopRanges())
        iterations *= std::max<int64_t>(size, 0);
      opFlops = iterations * countBodyFlops(&op);
      OpKind kind = classifyOp(&op).kind;
      if ((kind == OpKind::Contraction || kind == OpKind::Convolution) &&
          is16BitFloat(linalgOp.getDpsInputOperand(0)->get().getType()))
        cost.tensorFlops += opFlops;
    }
    cost.flops += opFlops;
    // A result only used inside the group is an intermediate: unfused, it is
    // written by one kernel and read by the next.
    for (Value result : op.getResults())
      if (!llvm::is_contained(terminator->getOperands(), result))
        intermediateBytes += getTensorBytes(result.getType());
  }
  cost.bytesUnfused = cost.bytesFused + 2 * intermediateBytes;

  double scalarFlops = cost.flops - cost.tensorFlops;
  double computeSeconds =
      scalarFlops / device.fp32Flops +
      (device.tensorFlops16 > 0 ? cost.tensorFlops / device.tensorFlops16 : 0);
  cost.secondsFused =
      std::max(cost.bytesFused / device.memoryBandwidth, computeSeconds);
  cost.secondsUnfused =
      std::max(cost.bytesUnfused / device.memoryBandwidth, computeSeconds);
  cost.computeBound = computeSeconds > cost.bytesFused / device.memoryBandwidth;
  cost.speedupBound =
      cost.secondsFused > 0 ? cost.secondsUnfused / cost.secondsFused : 1.0;
  return cost;
}
