//===- TiledTranspose.h - A batched matrix transpose kernel -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Hopper's wgmma reads 32-bit operands K-major only, so a GEMM whose B is
// stored [K, N] (row-major, as torch.matmul's second operand) gets its
// tensor-core plan by writing B transposed first. The transpose goes
// through a 32x32 shared-memory tile, so that both its reads and its
// writes are coalesced: at the copy bandwidth it costs a few percent of the
// GEMM it enables.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_TILEDTRANSPOSE_H
#define KOPT_LIB_CODEGEN_TILEDTRANSPOSE_H

#include "kopt/Codegen/KernelGenerator.h"

namespace mlir::kopt {

/// A kernel `entry` writing `output` [batch, cols, rows] from `input`
/// [batch, rows, cols] (f32, row-major, `batch` at most 65535).
llvm::Expected<GeneratedKernel>
generateTiledTranspose(llvm::StringRef entry, llvm::StringRef comment,
                       const std::string &input, const std::string &output,
                       int64_t batch, int64_t rows, int64_t cols);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_TILEDTRANSPOSE_H
