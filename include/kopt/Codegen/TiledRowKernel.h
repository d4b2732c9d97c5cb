//===- TiledRowKernel.h - Row kernels with several rows a block -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A row kernel (KernelGenerator.h) gives each block one row. This one gives
// a block several rows (RowGroup.h), which serves two cases:
//
// - short rows along the innermost dimension: a warp, or a few threads, per
//   row;
// - reductions over a non-innermost dimension (sum over dim 1 of [B, C, N],
//   RMSNorm over the channels of NCHW): a "row" is one output element, its
//   elements are `inner` apart in memory, and neighbouring threads take
//   neighbouring rows, so every load of a warp reads consecutive addresses.
//   Each thread walks its row (or its share of the row), keeps it in
//   registers when it fits, and the outputs over the whole row
//   (normalisations) are written from there.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_TILEDROWKERNEL_H
#define KOPT_CODEGEN_TILEDROWKERNEL_H

#include "kopt/Codegen/KernelGenerator.h"
#include "kopt/Codegen/RowGroup.h"

namespace mlir::kopt {

/// A reduction's loop space seen as rows: the parallel loops before its
/// reduction loops (`outer` points), the reduction loops (`length`), and
/// the parallel loops after them (`inner`). Element r of row
/// `o * inner + i` is point `(o * length + r) * inner + i` of the loop
/// space in row-major order.
struct RowSpace {
  int64_t outer = 1;
  int64_t length = 1;
  int64_t inner = 1;

  int64_t getNumRows() const { return outer * inner; }
};

/// The row space of `op`, a reduction whose reduction loops are
/// consecutive, or std::nullopt.
std::optional<RowSpace> getRowSpace(linalg::GenericOp op);

/// The index of each output in terms of the row (dimension 0) and the
/// position in it (dimension 1), and whether it has one element per row
/// (otherwise one per element of `space`): outer dimensions, the row's,
/// then inner ones where the shape splits so, else through the row-major
/// linear index `(outer * length + position) * inner + inner`.
llvm::Expected<std::vector<std::pair<SmallVector<AffineExpr>, bool>>>
getRowSpaceIndices(MLIRContext *context, llvm::ArrayRef<KernelOutput> outputs,
                   const RowSpace &space);

/// Options of a tiled row kernel.
struct TiledRowOptions {
  RowGroupLayout layout;
  /// With more than 0, the row's inputs are read from memory once and kept
  /// in up to that many registers per thread.
  unsigned cacheRegisters = 0;
};

/// Generates a kernel computing `outputs` row by row over `space`, several
/// rows per block. Every output has either one element per row or one per
/// element of the space; the kernel writes each exactly once.
llvm::Expected<GeneratedKernel> generateTiledRowKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const RowSpace &space, const TiledRowOptions &options);

/// Kernels computing what generateTiledRowKernel's does with each row split
/// into `chunks` pieces, for few long rows (a sum over dim 0 of a tall,
/// narrow tensor): one kernel per level of the rows' reductions, each
/// block storing its chunk's partial results (`partialName` names the
/// buffers, returned in `partials`), then one kernel writing the outputs
/// chunk by chunk.
llvm::Expected<std::vector<GeneratedKernel>> generateSplitTiledRowKernels(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const RowSpace &space, const RowGroupLayout &layout, int64_t chunks,
    const std::function<std::string(unsigned)> &partialName,
    std::vector<PartialBuffer> &partials);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_TILEDROWKERNEL_H
