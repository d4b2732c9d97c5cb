//===- TensorCoreGemm.h - fp32-accurate GEMMs on tensor cores ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A generated CUDA GEMM that computes fp32 products on tensor cores with
// 3xTF32 (docs/Codegen.md, "Tensor-core GEMMs"): each operand element x is
// split into big = tf32(x) and small = tf32(x - big), and the product
// accumulates small*big + big*small + big*big in fp32 through
// `mma.sync.m16n8k8` TF32 instructions, which any sm_80 or newer GPU runs.
// Operands are staged in shared memory in the layout they have in memory
// (K-contiguous, or M-/N-contiguous), so neither nn.Linear's transposed
// weight nor a row-major B needs a transpose kernel; the group's
// elementwise epilogue (bias, activations, scaling, residuals, clamps) is
// computed from the accumulators before the one store of each output.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_TENSORCOREGEMM_H
#define KOPT_CODEGEN_TENSORCOREGEMM_H

#include "kopt/Codegen/GemmForms.h"
#include "kopt/Codegen/KernelGenerator.h"
#include "kopt/Codegen/Proposers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::kopt {

/// The arithmetic a plan of these kernels declares (KernelPlan::arithmetic).
inline constexpr llvm::StringLiteral kTensorCoreArithmetic = "3xtf32";

/// A tile configuration of the kernel: a block computes `blockM` x
/// `blockN` of C, `warpsM` x `warpsN` warps each a `blockM / warpsM` x
/// `blockN / warpsN` part of it, through K in steps of `blockK` with
/// `stages` shared-memory buffers in flight (cp.async); `minBlocks` blocks
/// should fit an SM (`__launch_bounds__`, which bounds the registers).
struct TensorCoreGemmConfig {
  unsigned blockM = 128, blockN = 128, blockK = 32;
  unsigned warpsM = 2, warpsN = 4;
  unsigned stages = 3;
  unsigned minBlocks = 1;

  /// The variant name, such as `tc3xtf32_128x128x32_w8_s3`.
  std::string getName() const;
  unsigned getThreads() const { return 32 * warpsM * warpsN; }
  /// Dynamic shared memory a block needs, in bytes, for operands stored as
  /// `form` says.
  int64_t getSharedBytes(const GemmForm &form) const;
};

/// The configurations offered for every GEMM, for the evaluator to choose
/// from: 128x128 tiles with 8 warps of 64x32 (3 stages) or 16 warps of
/// 32x32 (3 and 4 stages), and 128x64 and 64x128 tiles with 8 warps of
/// 32x32 and 4 stages, two blocks per SM.
llvm::ArrayRef<TensorCoreGemmConfig> getTensorCoreGemmConfigs();

/// The architecture-specific target the wgmma kernels need
/// (KernelPlan::arch): wgmma exists on sm_90a only.
inline constexpr llvm::StringLiteral kWgmmaArch = "sm_90a";

/// A configuration of the Hopper kernel (`wgmma3xtf32_*`): a block of 3
/// warpgroups computes 128 x `blockN` of C through K in steps of `blockK`
/// (32: rows of 128 bytes, the 128-byte swizzle) with `stages` buffers,
/// each K step summed from zero in `partialN`-column chunks (64 or 128).
struct WgmmaGemmConfig {
  unsigned blockN = 256, blockK = 32, stages = 2, partialN = 64;

  /// The variant name, such as `wgmma3xtf32_128x256x32_s2`.
  std::string getName() const;
  /// Dynamic shared memory a block needs, in bytes.
  int64_t getSharedBytes() const;
};

/// The wgmma configurations worth trying for a product of `n` columns:
/// 128x256 tiles, 2 stages, 64-column partials (over 128 columns), 128x128
/// tiles, 3 stages, 128-column partials, and 128x64 tiles, 4 stages (64
/// columns or fewer, where a wider tile computes mostly padding).
llvm::SmallVector<WgmmaGemmConfig> getWgmmaGemmConfigs(int64_t n);

/// Whether the wgmma kernel takes `form`: A stored [M, K] and B [N, K] (both
/// K-major, as nn.Linear computes; TF32 wgmma reads only K-major operands
/// from shared memory), K a multiple of 32.
bool isWgmmaGemmForm(const GemmForm &form);

/// The plan tensors the kernel reads A and B from.
struct GemmOperands {
  std::string a, b;
};

/// Generates the kernel for `form` with A and B read from `operands`,
/// writing `outputs`, each of C's shape (or a reshape of such a value,
/// written at the same row-major position) and computed elementwise from C
/// (`form.result`) and the leaves `leafOf` gives. Fails when an output
/// reads C at another element than its own (a transpose or a reduction of
/// it), when it cannot be generated, or for more batches than a grid has
/// blocks in z (65535).
llvm::Expected<GeneratedKernel> generateTensorCoreGemm(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    const GemmForm &form, const GemmOperands &operands,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const TensorCoreGemmConfig &config);

/// Generates the Hopper kernel (docs/Codegen.md, "Tensor-core GEMMs"): the
/// same product and epilogue as generateTensorCoreGemm, on
/// `wgmma.mma_async.m64nNk8.f32.tf32.tf32`; compiles for sm_90a only
/// (kWgmmaArch). Fails when the form is not one isWgmmaGemmForm takes.
llvm::Expected<GeneratedKernel> generateWgmmaGemm(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    const GemmForm &form, const GemmOperands &operands,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const WgmmaGemmConfig &config);

/// Adds to `proposal` one built-in plan per configuration for a group whose
/// matrix product is `anchor` and whose every output has the product's
/// elements: the kernel with the whole group fused (operands the group
/// computes are written by a pointwise kernel first). The plans declare
/// `3xtf32` arithmetic. Nothing under the `fp32-ieee` precision policy,
/// which allows IEEE fp32 arithmetic only.
void proposeTensorCoreGemms(Proposal &proposal, func::FuncOp group,
                            const KernelTask &task, Operation *anchor);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_TENSORCOREGEMM_H
