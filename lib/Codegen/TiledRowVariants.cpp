//===- TiledRowVariants.cpp - Which tiled row kernels to try ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "TiledRowVariants.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kopt;

RowGroupLayout mlir::kopt::getBaselineColumnLayout(const RowSpace &space) {
  // Each thread reduces at least 64 elements; the rest of the block takes
  // neighbouring outputs, at least 128 threads in all.
  uint64_t share = uint64_t(std::max<int64_t>(space.length / 64, 1));
  unsigned threads = std::min<unsigned>(16, llvm::bit_floor(share));
  RowGroupLayout layout;
  layout.rowsFastest = true;
  layout.threadsPerRow = threads;
  layout.rowsPerBlock = std::max(32u, 128u / threads);
  return layout;
}

int64_t mlir::kopt::getColumnSplit(const RowSpace &space,
                                   const RowGroupLayout &layout) {
  constexpr int64_t kTargetBlocks = 1024;
  int64_t blocks =
      (space.getNumRows() + layout.rowsPerBlock - 1) / layout.rowsPerBlock;
  if (blocks >= kTargetBlocks / 4)
    return 1;
  int64_t chunks =
      std::clamp<int64_t>((kTargetBlocks + blocks - 1) / blocks, 2, 64);
  while (chunks > 1 && space.length / chunks < 64 * layout.threadsPerRow)
    chunks /= 2;
  return chunks;
}

static std::string variantName(llvm::StringRef prefix, unsigned blockSize,
                               unsigned threads, bool cached) {
  return prefix.str() + "_bs" + std::to_string(blockSize) + "_t" +
         std::to_string(threads) + (cached ? "_reg" : "");
}

std::vector<TiledRowVariant>
mlir::kopt::getTiledRowVariants(const RowSpace &space) {
  std::vector<TiledRowVariant> variants;
  auto add = [&](llvm::StringRef prefix, unsigned blockSize, unsigned threads,
                 bool rowsFastest) {
    TiledRowVariant variant;
    variant.options.layout.rowsFastest = rowsFastest;
    variant.options.layout.threadsPerRow = threads;
    variant.options.layout.rowsPerBlock = blockSize / threads;
    variant.name = variantName(prefix, blockSize, threads, false);
    variants.push_back(variant);
    // The row in registers when a thread's share fits the budget.
    unsigned budget = getRowCacheBudget(blockSize);
    if ((space.length + threads - 1) / threads <= budget) {
      variant.name = variantName(prefix, blockSize, threads, true);
      variant.options.cacheRegisters = budget;
      variants.push_back(variant);
    }
  };
  if (space.inner > 1) {
    // Columns: at least 32 neighbouring outputs per block, so that a
    // warp's loads are consecutive; 1, 4 or 16 threads per output, each
    // with 8 elements or more.
    for (unsigned blockSize : {128u, 256u, 512u})
      for (unsigned threads : {1u, 4u, 16u})
        if (blockSize / threads >= 32 &&
            (threads == 1 || space.length >= 8 * int64_t(threads)))
          add("cols", blockSize, threads, /*rowsFastest=*/true);
    // Few outputs with long columns: each column split over blocks too.
    for (unsigned threads : {1u, 8u}) {
      TiledRowVariant variant;
      variant.options.layout.rowsFastest = true;
      variant.options.layout.threadsPerRow = threads;
      variant.options.layout.rowsPerBlock = 256 / threads;
      variant.split = getColumnSplit(space, variant.options.layout);
      if (variant.split == 1)
        continue;
      variant.name = "cols_split" + std::to_string(variant.split) + "_bs256_t" +
                     std::to_string(threads);
      variants.push_back(variant);
    }
    return variants;
  }
  if (space.length > 4096)
    return variants;
  // Short rows: a warp per row, or 8 or 4 threads per row when rows are
  // short enough to leave a warp idle.
  for (unsigned blockSize : {128u, 256u})
    for (unsigned threads : {4u, 8u, 32u})
      if ((threads == 32 && space.length >= 16) ||
          (threads == 8 && space.length <= 256) ||
          (threads == 4 && space.length <= 64))
        add("rows", blockSize, threads, /*rowsFastest=*/false);
  return variants;
}
