//===- SharedRowKernel.h - Rows kept in shared memory -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A row kernel that reads its row from DRAM once: each block loads its
// range of the row's inputs into shared memory (16-byte loads where the
// range allows), computes the row's reductions from there and writes the
// outputs from there. A row too long for one block's shared memory (a
// softmax over 393,216 elements is 1.5 MB) is split over the blocks of a
// thread-block cluster (sm_90): each reduction combines the blocks' totals
// through distributed shared memory, so the row still goes through DRAM
// once for reading and once for writing, in one kernel.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_SHAREDROWKERNEL_H
#define KOPT_CODEGEN_SHAREDROWKERNEL_H

#include "kopt/Codegen/KernelGenerator.h"

namespace mlir::kopt {

/// Options of a row kernel keeping its row in shared memory.
struct SharedRowOptions {
  unsigned blockSize = 1024;
  /// Blocks per row, one thread-block cluster: 1 (no cluster), 2, 4, 8
  /// (the largest portable cluster, declared with `__cluster_dims__`) or
  /// 16 (non-portable, set at launch: GeneratedKernel::cluster).
  unsigned clusterSize = 1;
  /// Dynamic shared memory a block may use for the row.
  int64_t sharedBytes = 200 * 1024;
  /// Fills the row's 16-byte parts with `cp.async` copies, all issued
  /// before the first is waited for, instead of loads through registers.
  bool asyncCopies = false;
  /// Stores f32 outputs four elements (16 bytes) at a time where the row
  /// length is a multiple of 4.
  bool vectorStores = false;
  /// Blocks an SM must be able to hold at once (`__launch_bounds__`), 0 to
  /// leave the registers to the compiler.
  unsigned minBlocksPerSM = 0;
  /// Where the last reduction sums a value computed from the row's one
  /// cached input (softmax's exponentials), its loop writes the value over
  /// the input in shared memory and the outputs read it from there instead
  /// of computing it again; kept only when the outputs read the input no
  /// other way.
  bool keepReducedValue = true;
  /// With G > 0, a row too long for a cluster's shared memory (a LayerNorm
  /// over 4M elements is 16 MB) is split over a group of blocks instead:
  /// the grid is what the device holds at once (a cooperative launch),
  /// made of G groups that take the rows in turn, and each reduction
  /// combines the group's block totals through global memory after a
  /// barrier of the group's blocks (generateGroupRowKernels).
  unsigned gridGroups = 0;
  /// Groups: ask L2 for the block's range of the next row once this row's
  /// is copied, unless the kernel reads operands every row reads again
  /// (LayerNorm's weights), which the prefetched rows would push out of L2.
  bool prefetchNextRow = true;
  /// Groups: two buffers of `sharedBytes / 2`, the block's range of the
  /// group's next row copied into one by the copy engine (bulk copies
  /// completing on an mbarrier, sm_90) while the block works on this row
  /// from the other, so that DRAM has the next row to read while a row's
  /// barriers settle and its outputs are written. f32 rows only.
  bool doubleBuffer = false;
  /// Groups, without doubleBuffer: with N > 0, one buffer, which each
  /// thread copies its N 16-byte groups of into registers once the block's
  /// range of the row has landed; the copy engine then brings the next
  /// row's range into the buffer while the block works on this row from
  /// registers (TensorEmitter::setSharedCacheRegisters), for ranges too
  /// large for two buffers (a LayerNorm over 4M elements: 127 KB a block).
  /// The range must fit N * 4 * blockSize elements. f32 rows only.
  unsigned registerVectors = 0;
};

/// The most groups a grid of groups holds.
constexpr unsigned kMaxGridGroups = 32;
/// The blocks a grid of groups asks for: a cooperative launch gets at most
/// what the device holds at once, so this bounds the grid.
constexpr int64_t kGroupGridBlocks = 1024;
/// The plan tensor holding a grid of groups' barrier counters and the
/// slots of its blocks' totals.
constexpr const char *kGroupSlotsParam = "groupslots";

/// A grid of groups' kernels: one resetting the barrier counters, then the
/// rows, and the `long long` tensor both take as their last argument.
struct GroupRowKernels {
  std::vector<GeneratedKernel> kernels;
  PartialBuffer slots;
};

/// Elements of a row of `rowLength` each block of a cluster of
/// `clusterSize` holds: a multiple of 4, so that every block's range
/// starts 16-byte aligned.
int64_t getSharedRowRange(int64_t rowLength, unsigned clusterSize);

/// The device helpers cluster kernels call (a cluster-wide barrier, a read
/// of another block's shared memory), guarded so that several kernels of
/// one source may each include them.
llvm::StringRef getClusterHelpers();

/// Generates a row kernel of `numRows * clusterSize` blocks keeping the
/// row's inputs in shared memory (GeneratedKernel::sharedBytes says how
/// much). Outputs as for generateRowKernel.
llvm::Expected<GeneratedKernel> generateSharedRowKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    int64_t numRows, int64_t rowLength, const SharedRowOptions &options);

/// Generates the kernels of a row kernel keeping the row's inputs in
/// shared memory over groups of blocks (`options.gridGroups` > 0). Each
/// block's range of a row is fixed at launch from the blocks a group gets;
/// on a device holding too few blocks at once for the ranges to fit
/// `options.sharedBytes`, the kernel stops (`__trap`). Outputs as for
/// generateRowKernel.
llvm::Expected<GroupRowKernels> generateGroupRowKernels(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    int64_t numRows, int64_t rowLength, const SharedRowOptions &options);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_SHAREDROWKERNEL_H
