//===- TiledRowVariants.h - Which tiled row kernels to try ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The layouts of tiled row kernels (TiledRowKernel.h) the proposers use:
// the baseline's one choice for a column reduction, as eager frameworks
// make it, and the built-in proposer's set for the evaluator to time.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_TILEDROWVARIANTS_H
#define KOPT_LIB_CODEGEN_TILEDROWVARIANTS_H

#include "kopt/Codegen/TiledRowKernel.h"

#include <string>
#include <vector>

namespace mlir::kopt {

/// A named tiled row kernel configuration.
struct TiledRowVariant {
  std::string name;
  TiledRowOptions options;
  int64_t split = 1;
};

/// The baseline's layout for a reduction over a non-innermost dimension
/// (`space.inner` > 1): 32 or more neighbouring output elements per block,
/// up to 16 threads splitting each one's reduction.
RowGroupLayout getBaselineColumnLayout(const RowSpace &space);

/// Chunks to split each row into so that few rows of `space` in blocks of
/// `layout` still give about 1024 blocks (1: no split): only when fewer
/// than 256 blocks would run and each chunk keeps 64 elements or more per
/// thread.
int64_t getColumnSplit(const RowSpace &space, const RowGroupLayout &layout);

/// The built-in variants for rows `space`: with `space.inner` > 1, column
/// layouts (`cols_bs<B>_t<T>`, T threads per output element); otherwise
/// several short rows per block (`rows_bs<B>_t<T>`, a warp or a few threads
/// per row), for rows of at most 4096 elements. `_reg` marks those keeping
/// the row in registers. Variants with `split` set (`cols_split<S>_...`)
/// split each row into that many chunks (generateSplitTiledRowKernels).
std::vector<TiledRowVariant> getTiledRowVariants(const RowSpace &space);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_TILEDROWVARIANTS_H
