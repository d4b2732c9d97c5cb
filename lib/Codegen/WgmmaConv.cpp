//===- WgmmaConv.cpp - Convolutions as implicit GEMMs on wgmma --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The kernel is the wgmma pipeline (GemmKernelParts.h) with a loader of its
// own (kConvLoads): each loader thread owns one output pixel (a row of A),
// so a warp's loads of one filter position read 32 neighbouring pixels'
// inputs, and the filter positions' offsets come from a table in shared
// memory instead of divisions per element. The entry and its epilogue are
// the GEMM's, with the accumulator element (gi, gj) bound to output pixel
// gi and feature gj.
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/WgmmaConv.h"

#include "GemmKernelParts.h"

#include "kopt/Codegen/LibraryCalls.h"
#include "kopt/Codegen/PlanBuilder.h"

using namespace mlir;
using namespace mlir::kopt;

/// The loader, once per source, after the pipeline's source.
static constexpr llvm::StringLiteral kConvLoads = R"cuda(
#ifndef KOPT_WG_CONV_LOADS
#define KOPT_WG_CONV_LOADS
namespace kopt_wg {

// Convolution as the implicit GEMM C [NB*OH*OW, F] = A B^T: A's row m holds
// what output pixel m reads of the input [NB, C, H, W] at each filter
// position k = (c, kh, kw), zero in the padding; B is the filter
// [F, C*KH*KW] as stored. K is padded with zeros to whole K tiles (KP).
template <int BN, int BK, int STAGES, int PN, long long NB, int C, int H,
          int W, int F, int KH, int KW, int OH, int OW, int SH, int SW, int PH,
          int PW, int DH, int DW>
struct Conv : Pipeline<BN, BK, STAGES, PN> {
  using Base = Pipeline<BN, BK, STAGES, PN>;
  static constexpr int kAcc = Base::kAcc;
  static constexpr long long M = NB * OH * OW;
  static constexpr int K = C * KH * KW;
  static constexpr int KP = (K + BK - 1) / BK * BK;
  // Whether some reads fall outside the input (the padding, or the
  // positions past K) and are checked.
  static constexpr bool kChecked = PH > 0 || PW > 0 || K != KP;

  // Returns true on the 256 threads of warpgroups 1 and 2, whose acc[4 j +
  // h] is C's element (row0 + 64 (warpgroup - 1) + 16 warp + lane / 4 +
  // 8 (h / 2), col0 + 8 j + 2 (lane % 4) + h % 2).
  static __device__ __forceinline__ bool run(unsigned char *smemRaw,
                                             const float *x, const float *w,
                                             long long row0, long long col0,
                                             float (&acc)[kAcc]) {
    // Per filter position: its offset from the window's corner in the
    // input, and its row and column in the window (16 bits each); a
    // position past K has a row no window reaches (H + PH < 32767).
    __shared__ int2 positions[KP];
    for (int k = threadIdx.x; k < KP; k += blockDim.x) {
      const int c = k / (KH * KW), kh = k / KW % KH, kw = k % KW;
      positions[k] =
          k < K ? make_int2(c * H * W + kh * DH * W + kw * DW,
                            (kh * DH) << 16 | (kw * DW))
                : make_int2(0, 0x7FFF << 16);
    }
    // The pipeline's __syncthreads orders the table before the first load.
    // Loader thread t reads output pixel row0 + t (the last one past M).
    const int t = threadIdx.x;
    const long long m = min(row0 + t, M - 1);
    const int pixel = int(m % (OH * OW));
    const int ih0 = pixel / OW * SH - PH, iw0 = pixel % OW * SW - PW;
    const float *corner = x + m / (OH * OW) * C * H * W;
    const long long cornerOffset = (long long)ih0 * W + iw0;
    auto load = [&](unsigned char *stage, int tile) {
      constexpr int kPerB = BN / 16;
      float a[BK];
#pragma unroll
      for (int e = 0; e < BK; ++e) {
        const int2 position = positions[tile * BK + e];
        if constexpr (kChecked) {
          const int ih = ih0 + (position.y >> 16);
          const int iw = iw0 + (position.y & 0xFFFF);
          a[e] = (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W
                     ? __ldg(corner + cornerOffset + position.x)
                     : 0.0f;
        } else {
          a[e] = __ldg(corner + cornerOffset + position.x);
        }
      }
      const long long column = (long long)tile * BK + (t % 8) * 4;
      float4 v[kPerB];
#pragma unroll
      for (int j = 0; j < kPerB; ++j) {
        const long long row = min(col0 + t / 8 + j * 16, (long long)F - 1);
        const float *filter = w + row * K + column;
        if constexpr (K % 4 == 0) {
          v[j] = column < K ? __ldg(reinterpret_cast<const float4 *>(filter))
                            : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        } else {
          // Rows of K floats are not 16-byte aligned: one float at a time.
          v[j].x = column < K ? __ldg(filter) : 0.0f;
          v[j].y = column + 1 < K ? __ldg(filter + 1) : 0.0f;
          v[j].z = column + 2 < K ? __ldg(filter + 2) : 0.0f;
          v[j].w = column + 3 < K ? __ldg(filter + 3) : 0.0f;
        }
      }
#pragma unroll
      for (int q = 0; q < BK / 4; ++q)
        Base::storeSplit(stage, t * (BK / 4) + q,
                         make_float4(a[4 * q], a[4 * q + 1], a[4 * q + 2],
                                     a[4 * q + 3]));
#pragma unroll
      for (int j = 0; j < kPerB; ++j)
        Base::storeSplit(stage, Base::kABytes / 16 + t + j * 128, v[j]);
    };
    return Base::run(smemRaw, KP / BK, load, acc);
  }
};

} // namespace kopt_wg
#endif // KOPT_WG_CONV_LOADS
)cuda";

/// The largest C * KH * KW: the positions' table (8 bytes each, K rounded
/// up to whole tiles of 32) and the pipeline's 197,632 bytes of stages fit
/// the 232,448 a block may have.
static constexpr int64_t kMaxReduction = 4096;

std::optional<WgmmaConvShape> mlir::kopt::matchWgmmaConv(Operation *op,
                                                         std::string *why) {
  auto fail = [&](const std::string &reason) -> std::optional<WgmmaConvShape> {
    if (why)
      *why = reason;
    return std::nullopt;
  };
  std::optional<ConvForm> form = matchConvForm(op);
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!form || !linalgOp)
    return fail("not a convolution");
  if (form->layout->name != "nchw_fchw" || form->groups != 1)
    return fail("the kernel takes nchw_fchw convolutions of one group");
  if (!isZeroTensor(linalgOp.getDpsInits()[0]))
    return fail("the convolution does not accumulate into zeros");
  auto input = cast<RankedTensorType>(form->input.getType());
  auto filter = cast<RankedTensorType>(linalgOp.getDpsInputs()[1].getType());
  auto output = cast<RankedTensorType>(op->getResult(0).getType());
  for (RankedTensorType type : {input, filter, output})
    if (!type.hasStaticShape() || !type.getElementType().isF32() ||
        type.getRank() != 4)
      return fail("the kernel takes static 4-d f32 tensors");
  WgmmaConvShape shape;
  shape.batch = input.getDimSize(0);
  shape.channels = input.getDimSize(1);
  shape.height = input.getDimSize(2);
  shape.width = input.getDimSize(3);
  shape.features = filter.getDimSize(0);
  shape.kernelH = filter.getDimSize(2);
  shape.kernelW = filter.getDimSize(3);
  shape.outputH = output.getDimSize(2);
  shape.outputW = output.getDimSize(3);
  shape.strideH = form->strides[0];
  shape.strideW = form->strides[1];
  shape.dilationH = form->dilations[0];
  shape.dilationW = form->dilations[1];
  shape.padH = form->padding[0];
  shape.padW = form->padding[1];
  int64_t k = shape.getK();
  if (k > kMaxReduction)
    return fail("C * KH * KW = " + std::to_string(k) + " is over " +
                std::to_string(kMaxReduction));
  // The kernel's offsets within one image, and the window's corner and
  // extent, are 32-bit; a window position is 16 bits.
  int64_t image = shape.channels * shape.height * shape.width;
  if (image >= (int64_t(1) << 31) || shape.height + shape.padH >= 32768 ||
      shape.width + shape.padW >= 32768 ||
      (shape.kernelH - 1) * shape.dilationH >= 32768 ||
      (shape.kernelW - 1) * shape.dilationW >= 32768 ||
      shape.batch * shape.outputH * shape.outputW >= (int64_t(1) << 40))
    return fail("the convolution is too large for the kernel's indices");
  return shape;
}

std::optional<WgmmaConvShape>
mlir::kopt::offersWgmmaConv(Operation *anchor, const KernelTask &task) {
  if (task.precision == "fp32-ieee")
    return std::nullopt;
  std::optional<WgmmaConvShape> shape = matchWgmmaConv(anchor);
  if (!shape)
    return std::nullopt;
  // Half a wave of 128 x 128 tiles on 132 SMs: a diffusion UNet's 3x3
  // convolution over 320x64x64 (96 tiles) took cuDNN 400 us in fp32.
  int64_t pixels = shape->batch * shape->outputH * shape->outputW;
  if ((pixels + 127) / 128 * ((shape->features + 127) / 128) < 132 / 2)
    return std::nullopt;
  return shape;
}

std::string mlir::kopt::getWgmmaConvName(const WgmmaGemmConfig &config) {
  return "wgmma3xtf32conv_128x" + std::to_string(config.blockN) + "x" +
         std::to_string(config.blockK) + "_s" + std::to_string(config.stages);
}

llvm::Expected<GemmOperands> mlir::kopt::getConvOperands(PlanBuilder &builder,
                                                         Operation *conv) {
  std::optional<ConvForm> form = matchConvForm(conv);
  if (!form)
    return llvm::createStringError("not a convolution");
  GemmOperands operands;
  operands.a = builder.findBuffer(form->input);
  operands.b =
      builder.findBuffer(cast<linalg::LinalgOp>(conv).getDpsInputs()[1]);
  if (operands.a.empty() || operands.b.empty())
    return llvm::createStringError(
        "the convolution's input or filter is not in a plan tensor");
  return operands;
}

static std::string ll(int64_t value) { return std::to_string(value) + "LL"; }

llvm::Expected<GeneratedKernel> mlir::kopt::generateWgmmaConv(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    Operation *conv, const GemmOperands &operands,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const WgmmaGemmConfig &config) {
  std::string why;
  std::optional<WgmmaConvShape> shape = matchWgmmaConv(conv, &why);
  if (!shape)
    return llvm::createStringError("the wgmma convolution: " + why);
  const WgmmaConvShape &s = *shape;
  int64_t pixels = s.outputH * s.outputW;
  int64_t m = s.batch * pixels;

  // Accumulator element (gi, gj) is the output [n, f, oh, ow] at pixel gi
  // (n = gi / pixels) and feature gj.
  ProductBinding product;
  product.result = conv->getResult(0);
  product.shape = {s.batch, s.features, s.outputH, s.outputW};
  product.dims = {"gi", "gj"};
  AffineExpr gi = getAffineDimExpr(0, context);
  AffineExpr pixel = gi % pixels;
  product.index = {gi.floorDiv(pixels), getAffineDimExpr(1, context),
                   pixel.floorDiv(s.outputW), pixel % s.outputW};
  product.linear = "(gi / " + ll(pixels) + " * " + ll(s.features) +
                   " + gj) * " + ll(pixels) + " + gi % " + ll(pixels);
  auto parts =
      buildGemmKernelParts(context, entry, product, operands, outputs, leafOf);
  if (!parts)
    return parts.takeError();
  if ((m + 127) / 128 * ((s.features + config.blockN - 1) / config.blockN) >=
      (int64_t(1) << 31))
    return llvm::createStringError("the convolution has too many tiles");
  WgmmaEntry wgmma;
  wgmma.comment = comment.str();
  wgmma.block = "kopt_wg::Conv<" + std::to_string(config.blockN) + ", " +
                std::to_string(config.blockK) + ", " +
                std::to_string(config.stages) + ", " +
                std::to_string(config.partialN) + ", " + ll(s.batch);
  for (int64_t value : {s.channels, s.height, s.width, s.features, s.kernelH,
                        s.kernelW, s.outputH, s.outputW, s.strideH, s.strideW,
                        s.padH, s.padW, s.dilationH, s.dilationW})
    wgmma.block += ", " + std::to_string(value);
  wgmma.block += ">";
  wgmma.loads = kConvLoads;
  wgmma.a = operands.a;
  wgmma.b = operands.b;
  wgmma.m = m;
  wgmma.n = s.features;
  wgmma.batched = false;
  return finishWgmmaKernel(*parts, wgmma, config);
}
