//===- GemmKernelParts.h - What the tensor-core kernels share ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The pieces the GEMM kernels (TensorCoreGemm.cpp) and the implicit-GEMM
// convolution (WgmmaConv.cpp) build their entries from: the epilogue
// computed from an accumulator element, and the wgmma kernel around it.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_GEMMKERNELPARTS_H
#define KOPT_LIB_CODEGEN_GEMMKERNELPARTS_H

#include "kopt/Codegen/TensorCoreGemm.h"

namespace mlir::kopt {

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

/// What sets one wgmma kernel's entry apart from another's.
struct WgmmaEntry {
  std::string comment;
  /// The kopt_wg type a block runs (`Gemm<...>`, `Conv<...>`), whose
  /// `run(smem, a, b, row0, col0, acc)` computes the block's tile, and the
  /// source defining it beyond the wgmma pipeline's and the GEMM's, which
  /// every such kernel has (`loads`).
  std::string block;
  llvm::StringRef loads;
  /// The operand pointers `run` gets (of the block's batch `gb` when
  /// `batched`).
  std::string a, b;
  /// The product's rows and columns, and the batches on the grid's z.
  int64_t m = 0, n = 0, batch = 1;
  bool batched = true;
};

/// The kernel of `parts`: the entry runs `entry.block` over a tile of
/// `config`, then the epilogue for each of the 256 multiplying threads'
/// accumulators inside the m x n product, `kopt_c` the accumulator at
/// (gi, gj); one block per tile.
GeneratedKernel finishWgmmaKernel(const GemmKernelParts &parts,
                                  const WgmmaEntry &entry,
                                  const WgmmaGemmConfig &config);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_GEMMKERNELPARTS_H
