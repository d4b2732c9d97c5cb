//===- OnlineSoftmax.h - A long-row softmax in two passes -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A softmax whose row does not fit on chip, as eager frameworks and
// libraries run it: one block per row, a first pass that keeps the running
// maximum m and the sum s of exp(x - m), rescaled by exp(m_old - m_new)
// whenever m grows (the online normaliser), then a pass that writes
// exp(x - m) / s. The row is read twice and written once; three separate
// passes (maximum, sum, normalise) read it three times. Loads and stores are
// 16 bytes wide when the row length is a multiple of 4.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_ONLINESOFTMAX_H
#define KOPT_LIB_CODEGEN_ONLINESOFTMAX_H

#include "kopt/Codegen/KernelGenerator.h"

#include "llvm/ADT/StringRef.h"

namespace mlir::kopt {

/// CUDA statements, for a block whose threads each hold a (maximum m, sum
/// s of exp(x - m)) pair of the online normaliser: `merge(om, os)`, folding
/// another pair into the thread's, then the block's pair merged from its
/// threads', left in thread 0's m and s (the other threads' are partial).
/// Declares `kopt_m` and `kopt_s`, 32 floats of shared memory each.
llvm::StringRef getBlockPairMerge();

/// The kernel `entry` computing the f32 softmax of `rows` contiguous rows of
/// `length` elements of plan tensor `input` into `output`, with `threads`
/// threads a block (a power of two, 64 to 1024).
GeneratedKernel
generateOnlineSoftmaxKernel(llvm::StringRef entry, llvm::StringRef comment,
                            llvm::StringRef input, llvm::StringRef output,
                            int64_t rows, int64_t length, unsigned threads);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_ONLINESOFTMAX_H
