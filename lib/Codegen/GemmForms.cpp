//===- GemmForms.cpp - Matrix products a GEMM step computes -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// C's map names the parts of the loops: its last two are M and N, the ones
// before them batch loops, and the one loop it lacks is K, the reduction.
// Each operand must then read the batch loops first (or none: an operand
// shared by every batch) and its two other loops in either order, which
// gives its layout.
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/GemmForms.h"

#include "kopt/Analysis/OpClassification.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::kopt;

int64_t GemmForm::getBatch() const {
  int64_t batch = 1;
  for (int64_t size : batchShape)
    batch *= size;
  return batch;
}

static bool isStaticF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() && tensor.getElementType().isF32();
}

/// The source of `value` when a transpose of its two innermost dimensions
/// produced it, with that op in `transpose`; a null value otherwise.
static Value getTransposedSource(Value value, Operation **transpose) {
  Operation *op = value.getDefiningOp();
  Value source = getInnermostTransposeSource(op);
  if (!source || !isStaticF32Tensor(source.getType()))
    return Value();
  *transpose = op;
  return source;
}

/// Reads an operand's dimensions `dims`: the batch loops `batch` first (or
/// none of them), then `outer` and `inner` in either order. Sets `batched`,
/// and `swapped` when `inner` comes first.
static bool readLayout(llvm::ArrayRef<unsigned> dims,
                       llvm::ArrayRef<unsigned> batch, unsigned outer,
                       unsigned inner, bool &batched, bool &swapped) {
  if (dims.size() == batch.size() + 2) {
    if (dims.take_front(batch.size()) != batch)
      return false;
    batched = true;
  } else if (dims.size() == 2) {
    batched = false;
  } else {
    return false;
  }
  llvm::ArrayRef<unsigned> last = dims.take_back(2);
  if (last[0] == outer && last[1] == inner)
    swapped = false;
  else if (last[0] == inner && last[1] == outer)
    swapped = true;
  else
    return false;
  return true;
}

std::optional<GemmForm> mlir::kopt::matchGemmForm(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  if (!linalgOp || linalgOp.getNumDpsInputs() != 2 ||
      linalgOp.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      !llvm::all_of(op->getOperandTypes(), isStaticF32Tensor) ||
      !isStaticF32Tensor(op->getResult(0).getType()) ||
      !isMultiplyAccumulate(linalgOp))
    return std::nullopt;

  // Each map names loops only, each at most once.
  unsigned numLoops = linalgOp.getNumLoops();
  SmallVector<SmallVector<unsigned>> dims(3);
  SmallVector<AffineMap> maps = linalgOp.getIndexingMapsArray();
  for (unsigned tensor = 0; tensor < 3; ++tensor) {
    for (AffineExpr expr : maps[tensor].getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(expr);
      if (!dim || llvm::is_contained(dims[tensor], dim.getPosition()))
        return std::nullopt;
      dims[tensor].push_back(dim.getPosition());
    }
  }
  // C is (batch..., m, n) and names every loop but K, the one reduction.
  llvm::ArrayRef<unsigned> c = dims[2];
  if (c.size() < 2 || numLoops != c.size() + 1)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = linalgOp.getIteratorTypesArray();
  unsigned kLoop = 0;
  while (llvm::is_contained(c, kLoop))
    ++kLoop;
  if (iterators[kLoop] != utils::IteratorType::reduction ||
      llvm::any_of(c, [&](unsigned loop) {
        return iterators[loop] != utils::IteratorType::parallel;
      }))
    return std::nullopt;
  unsigned numBatch = c.size() - 2;
  unsigned mLoop = c[numBatch], nLoop = c[numBatch + 1];
  llvm::ArrayRef<unsigned> batch = c.take_front(numBatch);

  // Each operand reads the batch loops first (or none of them), then its
  // two loops in either order; a batch loop neither reads would be a
  // broadcast of the product.
  GemmForm form;
  if (!readLayout(dims[0], batch, mLoop, kLoop, form.batchedA,
                  form.transposeA) ||
      !readLayout(dims[1], batch, kLoop, nLoop, form.batchedB,
                  form.transposeB) ||
      (numBatch > 0 && !form.batchedA && !form.batchedB))
    return std::nullopt;
  SmallVector<int64_t> ranges = linalgOp.getStaticLoopRanges();
  for (unsigned loop : batch)
    form.batchShape.push_back(ranges[loop]);
  form.m = ranges[mLoop];
  form.n = ranges[nLoop];
  form.k = ranges[kLoop];
  form.result = op->getResult(0);
  form.a = linalgOp.getDpsInputs()[0];
  form.b = linalgOp.getDpsInputs()[1];
  Operation *transpose = nullptr;
  while (Value source = getTransposedSource(form.a, &transpose)) {
    form.foldedTransposes.push_back(transpose);
    form.a = source;
    form.transposeA = !form.transposeA;
  }
  while (Value source = getTransposedSource(form.b, &transpose)) {
    form.foldedTransposes.push_back(transpose);
    form.b = source;
    form.transposeB = !form.transposeB;
  }
  return form;
}

bool mlir::kopt::isFoldedIntoGemms(Operation *op) {
  if (!op || op->getNumResults() != 1)
    return false;
  Value result = op->getResult(0);
  Operation *transpose = nullptr;
  if (!getTransposedSource(result, &transpose) || result.use_empty())
    return false;
  return llvm::all_of(result.getUsers(), [&](Operation *user) {
    std::optional<GemmForm> form = matchGemmForm(user);
    return form && llvm::is_contained(form->foldedTransposes, op);
  });
}
