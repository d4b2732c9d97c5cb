//===- ReductionLevels.h - Row reductions in dependency levels --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The cooperative reductions a row kernel needs, grouped in levels: a
// layernorm written out in torch's form sums x twice (in f32 and f64) and
// then sums the squared deviations from one of those means. The two sums
// form level 0, and one pass over the row computes both; the deviations
// form level 1. Split rows need one kernel per level, not one per
// reduction.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_REDUCTIONLEVELS_H
#define KOPT_LIB_CODEGEN_REDUCTIONLEVELS_H

#include "kopt/Codegen/KernelGenerator.h"
#include "kopt/Codegen/TensorEmitter.h"

namespace mlir::kopt {

/// The cooperative reductions computing `values[i]` at `indices[i]` needs,
/// each once, in levels: a reduction of a level needs only reductions of
/// earlier levels. `emitter` runs dry and emits nothing.
llvm::Expected<std::vector<std::vector<CooperativeReduction>>>
collectReductionLevels(TensorEmitter &emitter, llvm::ArrayRef<Value> values,
                       llvm::ArrayRef<SmallVector<AffineExpr>> indices);

/// Emits the reductions of `levels` in order, those of a level that run
/// over the same number of elements with one loop.
llvm::Error
emitReductionLevels(TensorEmitter &emitter,
                    llvm::ArrayRef<std::vector<CooperativeReduction>> levels);

/// The number of elements `reduction` combines.
int64_t getReductionLength(const CooperativeReduction &reduction);

/// Emits the store of a per-row output (one value per row, at `[row]`) by
/// the one thread for which `condition` holds.
llvm::Error emitPerRowStore(TensorEmitter &emitter, CodeWriter &body,
                            const KernelOutput &output,
                            llvm::ArrayRef<AffineExpr> index,
                            llvm::StringRef condition);

/// Emits the stores of f32 output `output` over the row, a 16-byte group a
/// thread at a time (TensorEmitter::openWideRowLoop): the four values
/// computed by the lane loop, then one 16-byte store at `rowStart` (a C
/// expression) plus the group's first element, as a streaming store
/// (`__stcs`) where `stream` holds. The row's range starts and ends on
/// multiples of 4 elements.
llvm::Error emitWideRowStore(TensorEmitter &emitter, CodeWriter &body,
                             const KernelOutput &output,
                             llvm::ArrayRef<AffineExpr> index,
                             int64_t rowLength, llvm::StringRef rowStart,
                             bool stream);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_REDUCTIONLEVELS_H
