//===- LibraryCalls.cpp - Steps that call cuBLASLt and cuDNN ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/LibraryCalls.h"

#include "kopt/Analysis/OpClassification.h"
#include "kopt/Codegen/ConvForms.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::kopt;

std::string mlir::kopt::describeOpForCode(Operation *op) {
  return describeOp(op);
}

bool mlir::kopt::isLibraryCandidate(Operation *op) {
  return isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) ||
         matchConvForm(op).has_value();
}

/// True if `value` is a tensor of zeros: a fill of 0 or a zero splat.
static bool isZeroTensor(Value value) {
  if (auto fill = value.getDefiningOp<linalg::FillOp>())
    return matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
  return matchPattern(value, m_AnyZeroFloat());
}

static bool allF32(Operation *op) {
  return llvm::all_of(
             op->getOperandTypes(),
             [](Type type) { return getElementTypeOrSelf(type).isF32(); }) &&
         llvm::all_of(op->getResultTypes(), [](Type type) {
           return getElementTypeOrSelf(type).isF32();
         });
}

static int64_t dimOf(Value value, unsigned dim) {
  return cast<ShapedType>(value.getType()).getDimSize(dim);
}

std::optional<LibraryStep> mlir::kopt::buildLibraryCall(Operation *op,
                                                        PlanBuilder &builder) {
  std::optional<ConvForm> convForm = matchConvForm(op);
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) && !convForm)
    return std::nullopt;
  auto linalgOp = cast<linalg::LinalgOp>(op);
  if (linalgOp.getNumDpsInputs() != 2 || !allF32(op) ||
      op->getNumResults() != 1 || !isZeroTensor(linalgOp.getDpsInits()[0]))
    return std::nullopt;
  Value lhs = linalgOp.getDpsInputs()[0];
  Value rhs = linalgOp.getDpsInputs()[1];
  std::string a = builder.findBuffer(lhs);
  std::string b = builder.findBuffer(rhs);
  if (a.empty() || b.empty())
    return std::nullopt;

  LibraryStep library;
  Value result = op->getResult(0);
  MLIRContext *context = op->getContext();
  if (auto matmul = dyn_cast<linalg::MatmulOp>(op)) {
    if (matmul.getIndexingMapsArray() !=
        linalg::MatmulOp::getDefaultIndexingMaps(context))
      return std::nullopt;
    GemmStep &gemm = library.step.gemm;
    gemm.a = a;
    gemm.b = b;
    gemm.m = dimOf(lhs, 0);
    gemm.k = dimOf(lhs, 1);
    gemm.n = dimOf(rhs, 1);
    library.step.kind = PlanStep::Kind::Gemm;
  } else if (auto batch = dyn_cast<linalg::BatchMatmulOp>(op)) {
    if (batch.getIndexingMapsArray() !=
        linalg::BatchMatmulOp::getDefaultIndexingMaps(context))
      return std::nullopt;
    GemmStep &gemm = library.step.gemm;
    gemm.a = a;
    gemm.b = b;
    gemm.batch = dimOf(lhs, 0);
    gemm.m = dimOf(lhs, 1);
    gemm.k = dimOf(lhs, 2);
    gemm.n = dimOf(rhs, 2);
    library.step.kind = PlanStep::Kind::Gemm;
  } else if (convForm) {
    ConvStep &conv = library.step.conv;
    conv.layout = convForm->layout->name;
    conv.strides.assign(convForm->strides.begin(), convForm->strides.end());
    conv.dilations.assign(convForm->dilations.begin(),
                          convForm->dilations.end());
    conv.groups = convForm->groups;
    library.step.kind = PlanStep::Kind::Conv;
  } else {
    return std::nullopt;
  }
  std::string c = builder.materialize(result);
  if (library.step.kind == PlanStep::Kind::Gemm) {
    library.step.gemm.c = c;
    library.step.comment = describeOp(op) + " through cuBLASLt";
  } else {
    library.step.conv.input = a;
    library.step.conv.filter = b;
    library.step.conv.output = c;
    library.step.comment = describeOp(op) + " through cuDNN";
  }
  library.writes.push_back(result);
  return library;
}
