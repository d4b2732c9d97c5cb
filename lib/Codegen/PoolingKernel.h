//===- PoolingKernel.h - Sliding-window pooling kernels ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A pooling op (a reduction over a window of its input, in the generic form
// of linalg.pooling_nchw_max and its kin) computed several neighbouring
// outputs along one dimension per thread. A thread reads the input elements
// its outputs' windows share once: for each point of the other window
// dimensions it loads the segment its outputs cover and folds it into one
// value per position along the sliding dimension; each output then folds
// its window's positions. A 4x4 stride-1 window over 8 outputs loads
// 4 x 11 elements instead of 8 x 16.
//
// The outputs a thread computes lie along the innermost dimension (a row
// segment: `pool_w` plans) or along the one before it (a column segment:
// `pool_col` plans). In the second form neighbouring threads compute
// neighbouring columns, so that each load of a warp reads consecutive
// elements: a 2-D pool's rows as NCHW stores them, or the channels of a
// channels-last pool, whose window slides along the width.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_POOLINGKERNEL_H
#define KOPT_LIB_CODEGEN_POOLINGKERNEL_H

#include "kopt/Codegen/KernelGenerator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::kopt {

/// A pooling reduction whose window slides along its output's innermost
/// dimension or the one before it.
struct PoolingWindow {
  linalg::GenericOp op;
  /// The operand the window reads (the other inputs only give the window's
  /// shape).
  OpOperand *input = nullptr;
  /// The output dimension a thread's outputs lie along: the innermost or
  /// the one before it.
  unsigned slideDim = 0;
  /// The reduction loop that moves along the input's sliding dimension.
  unsigned slideLoop = 0;
  /// Along the sliding dimension: output stride, window dilation and size.
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t size = 1;
};

/// Whether `window` slides along its output's second innermost dimension
/// (a thread's outputs down a column), not the innermost (along a row).
bool slidesDownColumns(const PoolingWindow &window);

/// The reduction `group` pools with: its generic op whose body reads one
/// input, through a window (an index that adds a parallel and a reduction
/// loop). Null when there is none, or more than one.
linalg::GenericOp findPoolingOp(func::FuncOp group);

/// The window of `op` when the sliding kernel can compute it: the output
/// indexed by the parallel loops in order, the reduction loops after them,
/// a body that folds the window's element into the accumulator with one
/// associative op (max, min, sum), and a window that slides along the
/// output's dimension `slideDim` (the innermost or the one before it). An
/// error saying what does not fit otherwise.
llvm::Expected<PoolingWindow> matchPoolingWindow(linalg::GenericOp op,
                                                 unsigned slideDim);

/// Options of a sliding-window pooling kernel.
struct PoolingOptions {
  unsigned blockSize = 256;
  /// Neighbouring outputs along the window's sliding dimension per thread.
  unsigned outputsPerThread = 4;
  /// Upper bound on the grid; the kernel loops over the rest.
  int64_t maxBlocks = 65535;
};

/// Loads one thread makes, at most, for its outputs' windows: larger
/// windows are left to the pointwise kernels.
constexpr int64_t kMaxPoolingLoads = 256;

/// Options of a pooling kernel whose warps slide a 2-D window down columns.
struct WarpPoolingOptions {
  unsigned blockSize = 128;
  /// Output rows a warp computes, down its 32 neighbouring columns.
  unsigned rowsPerWarp = 16;
  int64_t maxBlocks = 65535;
};

/// Generates a pooling kernel for a 2-D window of stride 1 and dilation 1
/// along both innermost dimensions (`rows` slides down columns, `columns`
/// along rows, both windows of one op): each warp takes 32 neighbouring
/// output columns and `rowsPerWarp` rows down them; its lanes read each
/// input row once (and the window's extra columns past the warp's 32),
/// fold the row's window with warp shuffles, and each output folds the
/// window's rows from registers. Reads stay in bounds without checks: the
/// last warps of a row or column overlap the ones before them.
llvm::Expected<GeneratedKernel> generateWarpPoolingKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const PoolingWindow &rows, const PoolingWindow &columns,
    const WarpPoolingOptions &options);

/// Generates a kernel writing `outputs`, each of the pooling op's shape and
/// computed from its result elementwise (the pool's consumers inlined per
/// output, its input's producers per loaded element). A thread's outputs
/// start at `min(group * outputsPerThread, extent - outputsPerThread)`
/// along the sliding dimension: the last group overlaps the one before
/// instead of running past the end, and writes the same values again.
llvm::Expected<GeneratedKernel> generatePoolingKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const PoolingWindow &window, const PoolingOptions &options);

/// Shared memory a tiled pooling kernel's block holds, at most: two blocks
/// fit on an SM.
constexpr int64_t kMaxTiledPoolingBytes = 112 * 1024;

/// Options of a pooling kernel whose blocks stage an input tile in shared
/// memory.
struct TiledPoolingOptions {
  unsigned blockSize = 128;
  /// Output rows a block computes per tile.
  unsigned tileRows = 8;
  /// Output columns per tile: the whole row up to this many, else tiles of
  /// this many.
  int64_t maxTileColumns = 128;
  int64_t maxBlocks = 65535;
};

/// Generates a pooling kernel for a 2-D window of stride 1 and dilation 1
/// along both innermost dimensions (`rows` slides down columns, `columns`
/// along rows, both windows of one op): each block takes a tile of
/// `tileRows` output rows and up to `maxTileColumns` columns, reads the
/// input tile its windows cover into shared memory once (coalesced, many
/// loads in flight per thread, the input's producers and padding computed
/// per element), then each thread walks down an output column folding each
/// input row's window from shared memory and each output's window rows from
/// registers. The last tile of a row or column overlaps the one before.
llvm::Expected<GeneratedKernel> generateTiledPoolingKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const PoolingWindow &rows, const PoolingWindow &columns,
    const TiledPoolingOptions &options);

/// The pool's body folding `element` into `acc`, emitted into `body`.
llvm::Expected<std::string> combineInto(CodeWriter &body,
                                        const PoolingWindow &window,
                                        llvm::StringRef element,
                                        llvm::StringRef acc);

/// An error unless every one of `outputs` exists and has the pool's shape.
llvm::Error checkPoolOutputs(llvm::ArrayRef<KernelOutput> outputs,
                             llvm::ArrayRef<int64_t> shape);

/// An error unless `rows` (sliding down columns) and `columns` (along rows)
/// are one op's 2-D window over its two innermost dimensions, of stride 1
/// and dilation 1: what the warp and tile kernels take. `kernels` says
/// which ("warps slide", "tiles hold").
llvm::Error checkStrideOneWindows(const PoolingWindow &rows,
                                  const PoolingWindow &columns,
                                  llvm::StringRef kernels);

/// Emits output row `out` (past the kernel's `h0`) of a 2-D stride-1 pool
/// whose input rows are folded along the window's columns in `folded`
/// (`folded[r]` for the r-th input row): the pool's initial value folded
/// with its window's rows, bound in `emitter`, and each of `outputs`
/// stored at `base` plus the row's offset (`width` elements a row).
llvm::Error emitPoolOutputRow(CodeWriter &body, TensorEmitter &emitter,
                              const PoolingWindow &rows,
                              llvm::ArrayRef<std::string> folded, int64_t out,
                              int64_t width,
                              llvm::ArrayRef<KernelOutput> outputs,
                              llvm::StringRef computeType);

/// Declares the kernel's indices of dimensions 0 to `count` - 1 that the
/// code reads, `names[d]`, from `rest`, their linear index (dimension 0
/// outermost), which it divides down as it goes.
void declareOuterIndices(CodeWriter &code, const TensorEmitter &emitter,
                         llvm::ArrayRef<std::string> names,
                         llvm::ArrayRef<int64_t> shape, unsigned count);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_POOLINGKERNEL_H
