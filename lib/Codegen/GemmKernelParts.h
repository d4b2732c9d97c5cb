//===- GemmKernelParts.h - What the tensor-core kernels share ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The pieces the GEMM kernels (TensorCoreGemm.cpp) and the implicit-GEMM
// convolution (WgmmaConv.cpp) build their entries from: the wgmma main
// loop's source, the tile order, and the epilogue computed from an
// accumulator element.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_GEMMKERNELPARTS_H
#define KOPT_LIB_CODEGEN_GEMMKERNELPARTS_H

#include "kopt/Codegen/TensorCoreGemm.h"

namespace mlir::kopt {

/// The CUDA source of the wgmma pipeline (`kopt_wg::Pipeline`) and of the
/// GEMM on it (`kopt_wg::Gemm`), guarded to appear once per source.
llvm::StringRef getWgmmaMainLoopSource();

/// Declares `tileM` and `tileN`, the block's output tile, from blockIdx.x
/// over a grid of `tilesM` x `tilesN` tiles, and `gb`, its batch: tiles go
/// in groups of 8 along M, so that the blocks running together share their
/// B panels in L2. `gb` (blockIdx.z) only when `batched`.
void emitTileOrder(CodeWriter &code, int64_t tilesM, int64_t tilesN,
                   bool batched = true);

/// Where an accumulator element sits in the product the epilogue reads:
/// `result` (of `shape`) at `index`, affine in the kernel's variables
/// `dims`, and at the row-major position the code `linear` computes.
struct ProductBinding {
  Value result;
  std::vector<int64_t> shape;
  std::vector<std::string> dims;
  llvm::SmallVector<AffineExpr> index;
  std::string linear;
};

/// What the kernels share: the parameter list (A, B, the epilogue's other
/// leaves, the outputs) and the epilogue's lines for the element whose
/// accumulator is `kopt_c`.
struct GemmKernelParts {
  GeneratedKernel kernel;
  std::string parameters;
  llvm::SmallVector<std::string> epilogue;
};

/// Builds the parts of a kernel named `entry` reading A and B from
/// `operands` and writing `outputs`, each with the product's number of
/// elements and written at the product element's row-major position. Fails
/// when an output reads the product at another element than its own.
llvm::Expected<GemmKernelParts> buildGemmKernelParts(
    MLIRContext *context, llvm::StringRef entry, const ProductBinding &product,
    const GemmOperands &operands, llvm::ArrayRef<KernelOutput> outputs,
    const TensorEmitter::LeafFn &leafOf);

/// Emits the wgmma kernels' epilogue: for each accumulator element of the
/// 256 multiplying threads (tile `tileM` x `tileN` of 128 x `blockN`), the
/// `epilogue` lines with `kopt_c` the accumulator at (gi, gj), for the
/// elements inside the m x n product.
void emitWgmmaEpilogue(CodeWriter &code, unsigned blockN, int64_t m, int64_t n,
                       llvm::ArrayRef<std::string> epilogue);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_GEMMKERNELPARTS_H
