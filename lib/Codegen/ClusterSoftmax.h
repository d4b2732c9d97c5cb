//===- ClusterSoftmax.h - A long-row softmax read once ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A softmax whose row fits the shared memory of a thread-block cluster,
// read from DRAM once and written once. Each block of the cluster copies its
// part of the row into shared memory with cp.async, every copy in flight at
// once in a few commit groups, and folds each group into the online
// normaliser (OnlineSoftmax.h) as soon as it lands, so that the statistics
// are ready when the last bytes arrive. The blocks' (maximum, sum) pairs are
// combined through distributed shared memory, in rank order, so that every
// block divides by the same sum; each block then writes exp(x - m) / s from
// shared memory, 16 bytes a store. A cluster may take several consecutive
// rows in turn: as it writes a row it issues the copies of the next into
// the shared memory just read, so that loads and stores overlap and the
// clusters are launched fewer times. The generic shared-row kernel
// (SharedRowKernel.h) instead waits for the whole row and then goes over it
// three times (maximum, exponentials, quotients), while the SM's memory
// traffic stops.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_CLUSTERSOFTMAX_H
#define KOPT_LIB_CODEGEN_CLUSTERSOFTMAX_H

#include "kopt/Codegen/KernelGenerator.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace mlir::kopt {

/// How the rows are shared out.
struct ClusterSoftmaxOptions {
  /// Blocks a row is split over: 1, 2, 4, 8 or 16 (16 is non-portable and
  /// set at launch).
  unsigned clusterSize = 8;
  /// Threads a block: whole warps, at most 1024.
  unsigned blockSize = 1024;
  /// Consecutive rows a cluster takes in turn, each row's copies issued as
  /// the row before is written, into the shared memory its outputs were
  /// read from.
  int64_t rowsPerCluster = 1;
  /// Blocks an SM must hold at once (`__launch_bounds__`), 0 for any.
  unsigned minBlocksPerSM = 0;
  /// Each element's exponential taken once, as its stage lands, and kept
  /// in shared memory in its place; the outputs are those times a factor a
  /// stage (one expf an element, not two and a quarter: the SMs'
  /// instructions set part of the H200's pace, and the claiming kernel ran
  /// 2.6% faster there, bench/results/2026-12-05-h200-kept-exponentials.md).
  bool keepExponentials = false;
};

/// The kernel `entry` computing the f32 softmax of `rows` contiguous rows of
/// `length` elements of plan tensor `input` into `output`, a cluster per
/// row, each block taking an equal share of 16-byte vectors but the last,
/// which takes what is left. Fails unless the row is whole vectors and
/// leaves the last block some, a share fits `maxSharedBytes`, the block is
/// whole warps and the rows a whole number of clusters' turns.
llvm::Expected<GeneratedKernel> generateClusterSoftmaxKernel(
    llvm::StringRef entry, llvm::StringRef comment, llvm::StringRef input,
    llvm::StringRef output, int64_t rows, int64_t length,
    const ClusterSoftmaxOptions &options, int64_t maxSharedBytes);

/// A softmax whose clusters stay resident and claim rows one at a time from
/// a counter in global memory, rather than a cluster per row launched in
/// turn: a cluster claims its next row while it folds this one and copies
/// it into shared memory as it writes this row's outputs (asking L2 for the
/// claimed row at once, `cp.async.bulk.prefetch.L2`, took 526 us against
/// 458 on the H200, bench/results/2026-12-04-h200-claiming-softmax.md, and
/// is not done). The grid is what the device holds at once (a
/// cooperative launch with clusters set at launch, cut by the runtime); a
/// cluster that finds no row left exits.
struct ClaimingSoftmaxKernels {
  /// A one-block kernel zeroing the counter, then the softmax.
  std::vector<GeneratedKernel> kernels;
  /// The counter: one `long long` (the clusters'), or the groups' claims,
  /// arrivals and exchanges (GroupSoftmax.h).
  PartialBuffer counter;
};

/// The claiming form of generateClusterSoftmaxKernel (the same `options`
/// but `rowsPerCluster`), for clusters of 2 to 16 blocks.
llvm::Expected<ClaimingSoftmaxKernels> generateClaimingSoftmaxKernels(
    llvm::StringRef entry, llvm::StringRef comment, llvm::StringRef input,
    llvm::StringRef output, int64_t rows, int64_t length,
    const ClusterSoftmaxOptions &options, int64_t maxSharedBytes);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_CLUSTERSOFTMAX_H
