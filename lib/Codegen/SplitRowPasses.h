//===- SplitRowPasses.h - The passes of split rows --------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Rows split into chunks, each chunk a block's, are computed in passes over
// the row: one per level of row-wide reductions (each block reduces its
// chunk and stores a partial result), then one writing the outputs, each
// pass combining the partials of the reductions it needs. The split-row
// kernels run a pass per kernel (generateSplitRowKernels); the pipelined
// form runs them all in one (generatePipelinedSplitRowKernels).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_SPLITROWPASSES_H
#define KOPT_LIB_CODEGEN_SPLITROWPASSES_H

#include "kopt/Codegen/KernelGenerator.h"
#include "kopt/Codegen/TensorEmitter.h"

namespace mlir::kopt {

/// Each output's index in terms of the row (dimension 0) and the position
/// in the row (dimension 1), and whether it holds one value per row; an
/// error when an output fits neither.
llvm::Expected<std::vector<std::pair<SmallVector<AffineExpr>, bool>>>
getRowIndices(MLIRContext *context, llvm::ArrayRef<KernelOutput> outputs,
              int64_t numRows, int64_t rowLength);

/// What the passes of a split row compute.
struct SplitRowPlan {
  std::vector<std::pair<SmallVector<AffineExpr>, bool>> indices;
  /// The row-wide reductions by level: a pass each.
  std::vector<std::vector<CooperativeReduction>> levels;
  /// The same, in order, and the partial buffer of each.
  std::vector<CooperativeReduction> reductions;
  std::vector<PartialBuffer> partials;
};

/// The passes of `outputs` over rows split into `chunks`, their partial
/// buffers named by `partialName`; an error where a reduction does not run
/// over the whole row or there is none.
llvm::Expected<SplitRowPlan>
planSplitRows(MLIRContext *context, llvm::ArrayRef<KernelOutput> outputs,
              const TensorEmitter::LeafFn &leafOf, int64_t numRows,
              int64_t rowLength, unsigned blockSize, int64_t chunks,
              const std::function<std::string(unsigned)> &partialName);

/// What defines `kopt_load_keep(p)`: an f32 load whose line L2 keeps
/// before others (evict_last), guarded so that several kernels of one
/// source may each include it.
llvm::StringRef getLoadKeepHelper();

/// What defines `KoptCoherentRead<T>` (reads past L1, which holds no other
/// block's stores) and `kopt_wait_count(counter, target)` (an acquire
/// spin on a `long long` count, trapping after 2 s), guarded so that
/// several kernels of one source may each include it.
llvm::StringRef getPipelineHelpers();

/// A one-block kernel `entry` zeroing the `count` 64-bit counts of plan
/// tensor `param`, which a kernel after it counts in; `comment` heads it.
GeneratedKernel generateCountsReset(llvm::StringRef entry,
                                    llvm::StringRef comment,
                                    llvm::StringRef param, int64_t count);

/// How a pass reads and writes.
struct SplitPassOptions {
  /// The load function of the leaves (TensorEmitter::setLoadFunction);
  /// empty for plain loads.
  std::string loadFunction;
  /// The same for the leaves every row reads again (LayerNorm's weights);
  /// `loadFunction` when empty.
  std::string broadcastLoadFunction;
  /// Partials combined by the block's threads together, not by each alone.
  bool combineTogether = false;
  /// f32 outputs stored as streaming (`__stcs`).
  bool streamStores = false;
  /// The times the loops over a chunk are unrolled (loads in flight a
  /// thread).
  unsigned unroll = 4;
  /// Chunks start and end on multiples of 4 elements: loop over 16-byte
  /// groups, f32 leaves read as 16-byte vectors through these functions
  /// (TensorEmitter::setWideRowLoops) and f32 outputs stored as 16-byte
  /// vectors, where the row's length is a multiple of 4.
  bool wide = false;
  std::string vectorLoadFunction, broadcastVectorLoadFunction;
  /// Wide loops' row-dependent vectors held in shared memory
  /// (TensorEmitter::setRowHold).
  std::optional<TensorEmitter::RowHold> rowHold;
  /// The C name a pass reads partial buffer `name` through; `name` itself
  /// when unset.
  std::function<std::string(llvm::StringRef name)> partialReader;
};

/// One pass's code, in terms of `row`, `chunk`, `chunkStart` and
/// `chunkEnd`, which the kernel defines.
struct SplitPass {
  std::string body;
  /// The leaves it reads (the partial buffers among them, under their
  /// reader names), the outputs it writes and the partials it stores.
  std::vector<LeafTensor> leaves;
  std::vector<KernelOutput> written;
  std::vector<size_t> stored;
  /// With a row hold: the row-dependent vector loads held, and whether
  /// any was made unheld (TensorEmitter::getHeldRowLoads).
  std::vector<std::string> heldRowLoads;
  bool unheldRowLoads = false;
};

/// Pass `pass` of `plan` (the outputs' pass where it is
/// `plan.levels.size()`), for chunks of `chunks` a row.
llvm::Expected<SplitPass> emitSplitPass(MLIRContext *context,
                                        const SplitRowPlan &plan, size_t pass,
                                        llvm::ArrayRef<KernelOutput> outputs,
                                        const TensorEmitter::LeafFn &leafOf,
                                        int64_t numRows, int64_t rowLength,
                                        unsigned blockSize, int64_t chunks,
                                        const SplitPassOptions &options);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_SPLITROWPASSES_H
