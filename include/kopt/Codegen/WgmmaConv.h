//===- WgmmaConv.h - Convolutions as implicit GEMMs on wgmma ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A 2-d convolution (NCHW input, FCHW filter) computed as the implicit GEMM
// C [N*OH*OW, F] = A B^T on the 3xTF32 wgmma pipeline of TensorCoreGemm.h:
// B is the filter as stored ([F, C*KH*KW], K-major), and A's row for an
// output pixel is gathered from the input as the loader warpgroup fills
// each K tile, zeros where the window reaches into the padding. No im2col
// buffer is written; the group's elementwise epilogue is computed from the
// accumulators, as for the GEMMs (docs/Codegen.md, "Convolutions on tensor
// cores").
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_WGMMACONV_H
#define KOPT_CODEGEN_WGMMACONV_H

#include "kopt/Codegen/ConvForms.h"
#include "kopt/Codegen/TensorCoreGemm.h"

namespace mlir::kopt {

/// The sizes of a convolution the wgmma kernel takes.
struct WgmmaConvShape {
  int64_t batch = 0, channels = 0, height = 0, width = 0;
  int64_t features = 0, kernelH = 0, kernelW = 0;
  int64_t outputH = 0, outputW = 0;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padH = 0, padW = 0;

  /// The implicit GEMM's reduction length, C * KH * KW.
  int64_t getK() const { return channels * kernelH * kernelW; }
};

/// The shape of `op` when the kernel takes it: an f32 `nchw_fchw`
/// convolution (matchConvForm) of one group, accumulating into zeros, with
/// C * KH * KW at most 4096 (the filter positions' table fits beside the
/// pipeline's stages in shared memory; K is padded with zeros to whole
/// tiles of 32). std::nullopt otherwise, with the reason in `why` when
/// given.
std::optional<WgmmaConvShape> matchWgmmaConv(Operation *op,
                                             std::string *why = nullptr);

/// The shape of the convolution `anchor` when the built-in proposer offers
/// it the kernel: matchWgmmaConv takes it, the task's precision policy
/// allows 3xTF32 (not `fp32-ieee`), and it has at least half a wave of
/// 128 x 128 tiles for a GPU of 132 SMs (an H100's or H200's). With fewer,
/// most SMs idle while cuDNN's smaller tiles fill them (a network's
/// convolutions at batch 1), and the candidates would only cost compilation
/// and evaluation time.
std::optional<WgmmaConvShape> offersWgmmaConv(Operation *anchor,
                                              const KernelTask &task);

/// The variant name of the kernel in `config`, such as
/// `wgmma3xtf32conv_128x128x32_s3`.
std::string getWgmmaConvName(const WgmmaGemmConfig &config);

/// Generates the kernel computing `conv` (taken by matchWgmmaConv), with
/// the input read from `operands.a` (the form's input: a folded pad's
/// source, padded as read) and the filter from `operands.b`, writing
/// `outputs`, each with the convolution's number of elements and computed
/// elementwise from it (the group's epilogue). Compiles for sm_90a only.
llvm::Expected<GeneratedKernel> generateWgmmaConv(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    Operation *conv, const GemmOperands &operands,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const WgmmaGemmConfig &config);

class PlanBuilder;

/// The plan tensors the kernel reads `conv`'s operands from: the form's
/// input (a folded pad's source) as `a` and the filter as `b`. Fails when
/// either is not in a plan tensor.
llvm::Expected<GemmOperands> getConvOperands(PlanBuilder &builder,
                                             Operation *conv);

/// Adds to `proposal` one built-in plan per wgmma configuration for a group
/// whose convolution is `anchor` and whose every output has the
/// convolution's elements: the kernel with the whole group as its
/// epilogue. The plans declare `3xtf32` arithmetic; nothing under the
/// `fp32-ieee` policy.
void proposeTensorCoreConvs(Proposal &proposal, func::FuncOp group,
                            const KernelTask &task, Operation *anchor);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_WGMMACONV_H
