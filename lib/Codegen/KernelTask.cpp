//===- KernelTask.cpp - What a fused group computes -------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/KernelTask.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/DebugStringHelper.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kopt;

std::optional<ElementType> mlir::kopt::getElementType(Type type) {
  if (type.isF16())
    return ElementType::F16;
  if (type.isBF16())
    return ElementType::BF16;
  if (type.isF32())
    return ElementType::F32;
  if (type.isF64())
    return ElementType::F64;
  if (type.isSignlessInteger(1))
    return ElementType::I1;
  if (type.isSignlessInteger(8))
    return ElementType::I8;
  if (type.isSignlessInteger(16))
    return ElementType::I16;
  if (type.isSignlessInteger(32))
    return ElementType::I32;
  if (type.isSignlessInteger(64) || type.isIndex())
    return ElementType::I64;
  return std::nullopt;
}

llvm::StringRef mlir::kopt::getCudaStorageType(ElementType type) {
  switch (type) {
  case ElementType::F16:
    return "__half";
  case ElementType::BF16:
    return "__nv_bfloat16";
  case ElementType::F32:
    return "float";
  case ElementType::F64:
    return "double";
  case ElementType::I1:
    return "bool";
  case ElementType::I8:
    return "signed char";
  case ElementType::I16:
    return "short";
  case ElementType::I32:
    return "int";
  case ElementType::I64:
    return "long long";
  }
  llvm_unreachable("unknown ElementType");
}

bool mlir::kopt::isFloat(ElementType type) {
  return type == ElementType::F16 || type == ElementType::BF16 ||
         type == ElementType::F32 || type == ElementType::F64;
}

Tolerance mlir::kopt::deriveTolerance(ElementType type, int64_t reductionSize,
                                      llvm::StringRef precision) {
  // Unit roundoff of the storage type, scaled by the error growth of a sum
  // of `reductionSize` terms (sqrt(n) for the random-walk model most
  // reductions follow), with a floor of a few ulps for elementwise math.
  double unit = 0;
  switch (type) {
  case ElementType::F16:
    unit = std::ldexp(1.0, -11);
    break;
  case ElementType::BF16:
    unit = std::ldexp(1.0, -8);
    break;
  case ElementType::F32:
    unit = std::ldexp(1.0, -24);
    break;
  case ElementType::F64:
    unit = std::ldexp(1.0, -53);
    break;
  default:
    return {0.0, 0.0}; // Integers must match exactly.
  }
  if (type == ElementType::F32 && precision == "tf32")
    unit = std::ldexp(1.0, -11);
  else if (type == ElementType::F32 && precision == "bf16")
    unit = std::ldexp(1.0, -8);
  double growth = std::max(
      8.0, 2.0 * std::sqrt(double(std::max<int64_t>(reductionSize, 1))));
  Tolerance tolerance;
  tolerance.relative =
      std::max(unit * growth, type == ElementType::F32 ? 1e-5 : unit * 8);
  tolerance.absolute = tolerance.relative * 1e-1;
  return tolerance;
}

/// The longest reduction of the group: the product of the reduction loop
/// sizes of each structured op.
static int64_t getLongestReduction(func::FuncOp func) {
  int64_t longest = 1;
  func.walk([&](linalg::LinalgOp op) {
    int64_t size = 1;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    for (auto [range, iterator] : llvm::zip(ranges, op.getIteratorTypesArray()))
      if (iterator == utils::IteratorType::reduction)
        size *= range;
    longest = std::max(longest, size);
  });
  func.walk([&](linalg::SoftmaxOp op) {
    auto type = cast<ShapedType>(op.getInput().getType());
    longest = std::max(longest, type.getDimSize(op.getDimension()));
  });
  return longest;
}

static llvm::Expected<TensorSpec> makeTensorSpec(Type type, std::string name) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return llvm::createStringError("'%s' has type %s; kopt needs statically "
                                   "shaped tensors",
                                   name.c_str(), debugString(type).c_str());
  std::optional<ElementType> element = getElementType(tensor.getElementType());
  if (!element)
    return llvm::createStringError(
        "'%s' has unsupported element type %s", name.c_str(),
        debugString(tensor.getElementType()).c_str());
  int64_t elements = tensor.getNumElements();
  if (elements >= (int64_t(1) << 40))
    return llvm::createStringError("'%s' (%s) is too large", name.c_str(),
                                   debugString(type).c_str());
  TensorSpec spec;
  spec.name = std::move(name);
  spec.elementType = *element;
  spec.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  return spec;
}

llvm::Expected<KernelTask> mlir::kopt::buildKernelTask(func::FuncOp func) {
  KernelTask task;
  task.name = func.getSymName().str();
  if (auto key = func->getAttrOfType<StringAttr>(kKeyAttrName))
    task.key = key.str();
  else
    return llvm::createStringError("@%s has no '%s' attribute: outline it "
                                   "with kopt-outline-fusion-groups first",
                                   task.name.c_str(), kKeyAttrName.data());
  if (auto group = func->getAttrOfType<DictionaryAttr>(kFusionGroupAttrName))
    if (auto kind = group.getAs<StringAttr>("kind"))
      task.kind = kind.str();

  for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto spec = makeTensorSpec(type, "in" + std::to_string(index));
    if (!spec)
      return spec.takeError();
    task.inputs.push_back(std::move(*spec));
  }
  for (auto [index, type] : llvm::enumerate(func.getResultTypes())) {
    auto spec = makeTensorSpec(type, "out" + std::to_string(index));
    if (!spec)
      return spec.takeError();
    task.outputs.push_back(std::move(*spec));
  }
  task.mlir = debugString(func);

  // The tightest tolerance over the outputs' types.
  int64_t reduction = getLongestReduction(func);
  bool first = true;
  for (const TensorSpec &output : task.outputs) {
    Tolerance tolerance =
        deriveTolerance(output.elementType, reduction, task.precision);
    if (first || tolerance.relative > task.tolerance.relative)
      task.tolerance = tolerance;
    first = false;
  }
  return task;
}
