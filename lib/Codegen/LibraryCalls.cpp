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
#include "kopt/Codegen/GemmForms.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::kopt;

std::string mlir::kopt::describeOpForCode(Operation *op) {
  return describeOp(op);
}

bool mlir::kopt::isLibraryCandidate(Operation *op) {
  return isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) ||
         (isa<linalg::GenericOp>(op) && matchGemmForm(op).has_value()) ||
         matchConvForm(op).has_value();
}

bool mlir::kopt::isZeroTensor(Value value) {
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

std::optional<LibraryStep> mlir::kopt::buildLibraryCall(Operation *op,
                                                        PlanBuilder &builder) {
  std::optional<GemmForm> gemmForm = matchGemmForm(op);
  std::optional<ConvForm> convForm =
      gemmForm ? std::nullopt : matchConvForm(op);
  if (!gemmForm && !convForm)
    return std::nullopt;
  auto linalgOp = cast<linalg::LinalgOp>(op);
  if (linalgOp.getNumDpsInputs() != 2 || !allF32(op) ||
      op->getNumResults() != 1 || !isZeroTensor(linalgOp.getDpsInits()[0]))
    return std::nullopt;

  LibraryStep library;
  Value result = op->getResult(0);
  if (gemmForm) {
    // cuBLASLt takes one batch stride per operand: both operands batched,
    // or no batch at all.
    if (gemmForm->getBatch() > 1 &&
        (!gemmForm->batchedA || !gemmForm->batchedB))
      return std::nullopt;
    std::string a = builder.findBuffer(gemmForm->a);
    std::string b = builder.findBuffer(gemmForm->b);
    if (a.empty() || b.empty())
      return std::nullopt;
    GemmStep &gemm = library.step.gemm;
    gemm.a = a;
    gemm.b = b;
    gemm.batch = gemmForm->getBatch();
    gemm.m = gemmForm->m;
    gemm.n = gemmForm->n;
    gemm.k = gemmForm->k;
    gemm.transposeA = gemmForm->transposeA;
    gemm.transposeB = gemmForm->transposeB;
    library.step.kind = PlanStep::Kind::Gemm;
    gemm.c = builder.materialize(result);
    library.step.comment = describeOp(op) + " through cuBLASLt";
    if (gemm.transposeA || gemm.transposeB)
      library.step.comment +=
          std::string(" (") + (gemm.transposeA ? "A" : "") +
          (gemm.transposeA && gemm.transposeB ? " and " : "") +
          (gemm.transposeB ? "B" : "") + " transposed)";
    library.writes.push_back(result);
    return library;
  }

  // A folded zero pad: cuDNN reads its source with its own padding. Where
  // the source is not in a plan tensor but the padded value is, the step
  // reads that instead, unpadded.
  std::string input = builder.findBuffer(convForm->input);
  SmallVector<int64_t> padding = convForm->padding;
  if (input.empty() && convForm->foldedPad) {
    input = builder.findBuffer(linalgOp.getDpsInputs()[0]);
    padding.assign(padding.size(), 0);
  }
  std::string filter = builder.findBuffer(linalgOp.getDpsInputs()[1]);
  if (input.empty() || filter.empty())
    return std::nullopt;
  ConvStep &conv = library.step.conv;
  conv.layout = convForm->layout->name;
  conv.strides.assign(convForm->strides.begin(), convForm->strides.end());
  conv.dilations.assign(convForm->dilations.begin(), convForm->dilations.end());
  if (llvm::any_of(padding, [](int64_t size) { return size != 0; }))
    conv.padding.assign(padding.begin(), padding.end());
  conv.groups = convForm->groups;
  library.step.kind = PlanStep::Kind::Conv;
  conv.input = input;
  conv.filter = filter;
  conv.output = builder.materialize(result);
  library.step.comment = describeOp(op) + " through cuDNN";
  if (!conv.padding.empty())
    library.step.comment += " (zero padding in cuDNN)";
  library.writes.push_back(result);
  return library;
}
