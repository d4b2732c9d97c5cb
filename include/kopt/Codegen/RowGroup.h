//===- RowGroup.h - Rows shared out among a block's threads -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A row kernel may give one block several rows: a warp or a few threads per
// short row, or, for a reduction over a non-innermost dimension (a column
// reduction), one thread or a few per output element, with neighbouring
// threads on neighbouring rows so that their loads coalesce. This header
// names that layout and emits the reduction that combines the partial
// results of a row's threads.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_ROWGROUP_H
#define KOPT_CODEGEN_ROWGROUP_H

#include "kopt/Codegen/CudaEmitter.h"

#include <string>

namespace mlir::kopt {

/// How a block's threads share out its rows.
struct RowGroupLayout {
  /// Rows per block and threads per row, powers of two whose product is
  /// the block size.
  unsigned rowsPerBlock = 1;
  unsigned threadsPerRow = 1;
  /// Rows vary fastest across threads (column reductions: thread t works
  /// on row t % rowsPerBlock); otherwise positions in a row do (thread t
  /// works on row t / threadsPerRow).
  bool rowsFastest = false;
  /// C names the kernel defines: this thread's row within the block and
  /// its position among the row's threads.
  std::string rowInBlock = "kopt_rib";
  std::string lane = "kopt_lane";
  /// Whether this thread's row is one of the kernel's (the last block's
  /// threads past the end work on the last row, and store nothing).
  std::string valid = "kopt_valid";

  unsigned getBlockSize() const { return rowsPerBlock * threadsPerRow; }
  /// The C expressions defining `rowInBlock` and `lane` from threadIdx.x.
  std::string getRowInBlockExpr() const;
  std::string getLaneExpr() const;
};

/// How a reduction combines two partial results.
struct ReductionCombiner {
  /// The identity, a C expression.
  std::string identity;
  /// A C expression over %0 and %1.
  std::string pattern;

  /// `pattern` applied to `a` and `b`.
  std::string combine(llvm::StringRef a, llvm::StringRef b) const;
};

/// Emits, where every thread of the block runs it, the combination of each
/// thread's partial result `acc` (of C type `type`) over the threads of its
/// row, and returns the name of the total, which every thread of the row
/// holds. The partials are combined in one fixed order, so the total is the
/// same in every run.
std::string emitRowGroupReduction(CodeWriter &out, llvm::StringRef type,
                                  const ReductionCombiner &combiner,
                                  llvm::StringRef acc,
                                  const RowGroupLayout &layout);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_ROWGROUP_H
