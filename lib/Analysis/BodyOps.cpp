//===- BodyOps.cpp - The ops kopt translates inside linalg bodies -*- C++
//-*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/BodyOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/DebugStringHelper.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::kopt;

/// Every op kopt translates, by name. ReferenceInstructions.cpp and
/// CudaEmitter.cpp handle each of them.
static const llvm::StringSet<> &getSupportedNames() {
  static const llvm::StringSet<> names = {
      // Structure.
      "linalg.yield", "linalg.index", "tensor.extract", "cf.assert",
      // arith: floating point.
      "arith.constant", "arith.addf", "arith.subf", "arith.mulf", "arith.divf",
      "arith.remf", "arith.negf", "arith.maximumf", "arith.minimumf",
      "arith.maxnumf", "arith.minnumf", "arith.cmpf", "arith.select",
      // arith: integers.
      "arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui",
      "arith.remsi", "arith.remui", "arith.ceildivsi", "arith.ceildivui",
      "arith.floordivsi", "arith.andi", "arith.ori", "arith.xori", "arith.shli",
      "arith.shrsi", "arith.shrui", "arith.maxsi", "arith.minsi", "arith.maxui",
      "arith.minui", "arith.cmpi",
      // arith: casts.
      "arith.extf", "arith.truncf", "arith.extsi", "arith.extui",
      "arith.trunci", "arith.sitofp", "arith.uitofp", "arith.fptosi",
      "arith.fptoui", "arith.index_cast", "arith.index_castui", "arith.bitcast",
      // math.
      "math.absf", "math.absi", "math.acos", "math.acosh", "math.asin",
      "math.asinh", "math.atan", "math.atan2", "math.atanh", "math.cbrt",
      "math.ceil", "math.copysign", "math.cos", "math.cosh", "math.ctlz",
      "math.ctpop", "math.cttz", "math.erf", "math.erfc", "math.exp",
      "math.exp2", "math.expm1", "math.floor", "math.fma", "math.fpowi",
      "math.ipowi", "math.isfinite", "math.isinf", "math.isnan",
      "math.isnormal", "math.log", "math.log10", "math.log1p", "math.log2",
      "math.powf", "math.round", "math.roundeven", "math.rsqrt", "math.sin",
      "math.sinh", "math.sqrt", "math.tan", "math.tanh", "math.trunc"};
  return names;
}

std::string mlir::kopt::getBodyOpRefusal(llvm::StringRef name) {
  if (getSupportedNames().contains(name))
    return "";
  if (name == "arith.addui_extended" || name == "arith.mulsi_extended" ||
      name == "arith.mului_extended" || name == "math.sincos")
    return "which has two results; kopt translates single-result ops";
  if (name == "math.clampf")
    return "whose definition (maxf(minf(value, min), max)) and lowerings "
           "(a median of three) disagree; use arith.maximumf and minimumf";
  if (name == "arith.scaling_extf" || name == "arith.scaling_truncf")
    return "whose block-scaled narrow floating-point formats kopt does not "
           "compute in";
  return "which kopt cannot generate code for";
}

bool mlir::kopt::isSupportedScalarType(Type type) {
  if (isa<Float16Type, BFloat16Type, Float32Type, Float64Type, IndexType>(type))
    return true;
  auto integer = dyn_cast<IntegerType>(type);
  return integer && integer.isSignless() &&
         llvm::is_contained({1u, 8u, 16u, 32u, 64u}, integer.getWidth());
}

std::string mlir::kopt::checkBodyOp(Operation *op, Operation *owner) {
  std::string name = op->getName().getStringRef().str();
  std::string uses = "its body uses '" + name + "'";
  if (std::string refusal = getBodyOpRefusal(name); !refusal.empty())
    return uses + ", " + refusal;
  auto badType = [&](Type type) {
    return uses + " on " + debugString(type) +
           ", a type kopt cannot generate code for";
  };
  if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
    Value tensor = extract.getTensor();
    if (owner->isAncestor(tensor.getParentRegion()->getParentOp()))
      return uses + " on a tensor defined inside the body; kopt gathers from "
                    "tensors defined outside it";
    auto type = cast<RankedTensorType>(tensor.getType());
    if (!type.hasStaticShape() || !isSupportedScalarType(type.getElementType()))
      return badType(type);
    for (Value index : extract.getIndices())
      if (!isSupportedScalarType(index.getType()))
        return badType(index.getType());
    return "";
  }
  for (Type type : op->getOperandTypes())
    if (!isSupportedScalarType(type))
      return badType(type);
  for (Type type : op->getResultTypes())
    if (!isSupportedScalarType(type))
      return badType(type);
  if (auto bitcast = dyn_cast<arith::BitcastOp>(op)) {
    Type from = bitcast.getIn().getType(), to = bitcast.getType();
    if (from.isIndex() || to.isIndex() ||
        from.getIntOrFloatBitWidth() != to.getIntOrFloatBitWidth())
      return uses + " from " + debugString(from) + " to " + debugString(to) +
             ", which kopt cannot generate code for";
  }
  return "";
}
