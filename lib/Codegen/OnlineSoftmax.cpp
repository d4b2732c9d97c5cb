//===- OnlineSoftmax.cpp - A long-row softmax in two passes -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "OnlineSoftmax.h"

#include "kopt/Codegen/CudaEmitter.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::kopt;

/// Two (m, s) pairs merged as the rescaled sum at the larger maximum
/// (`merge`), and the block's pair from its threads': by shuffles within
/// each warp, then by the first warp over the warps' pairs, thread 0 left
/// holding it.
static constexpr llvm::StringLiteral kBlockPairMerge =
    R"cuda(// Two (m, s) pairs combine as the rescaled sum at the larger maximum.
auto merge = [&](float om, float os) {
  const float grown = kopt_maximumf(m, om);
  const float mine = grown == m ? 1.0f : expf(m - grown);
  const float theirs = grown == om ? 1.0f : expf(om - grown);
  s = s * mine + os * theirs;
  m = grown;
};
for (int o = 16; o > 0; o >>= 1) {
  const float om = __shfl_xor_sync(0xffffffffu, m, o);
  const float os = __shfl_xor_sync(0xffffffffu, s, o);
  merge(om, os);
}
__shared__ float kopt_m[32], kopt_s[32];
if ((threadIdx.x & 31) == 0) {
  kopt_m[threadIdx.x >> 5] = m;
  kopt_s[threadIdx.x >> 5] = s;
}
__syncthreads();
if (threadIdx.x < 32) {
  const bool live = threadIdx.x < (blockDim.x >> 5);
  m = live ? kopt_m[threadIdx.x] : -KOPT_INF_F;
  s = live ? kopt_s[threadIdx.x] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, m, o);
    const float os = __shfl_xor_sync(0xffffffffu, s, o);
    merge(om, os);
  }
}
)cuda";

llvm::StringRef mlir::kopt::getBlockPairMerge() { return kBlockPairMerge; }

/// The kernel's body after its signature, with @IN@ the input, @OUT@ the
/// output, @LENGTH@ the row length, @WIDTH@ the elements a load reads (1 or
/// 4) and @VECTOR@ the type it reads them as. The maximum propagates NaN as
/// arith.maximumf does (kopt_maximumf); a factor exp(m_old - m_new) with both
/// infinite of one sign is taken as 1, so that a row of -inf gives what the
/// three passes give (NaN from -inf - -inf in the last pass).
static constexpr llvm::StringLiteral kBody = R"cuda(
  const long long row = blockIdx.x;
  const float *__restrict__ x = @IN@ + row * @LENGTH@LL;
  float *__restrict__ y = @OUT@ + row * @LENGTH@LL;
  float m = -KOPT_INF_F, s = 0.0f;
  auto absorb = [&](float v) {
    const float grown = kopt_maximumf(m, v);
    const float rescale = grown == m ? 1.0f : expf(m - grown);
    s = s * rescale + expf(v - grown);
    m = grown;
  };
  for (long long c = threadIdx.x; c < @LENGTH@LL / @WIDTH@; c += blockDim.x) {
    const @VECTOR@ v = reinterpret_cast<const @VECTOR@ *>(x)[c];
    const float *e = reinterpret_cast<const float *>(&v);
#pragma unroll
    for (int j = 0; j < @WIDTH@; ++j)
      absorb(e[j]);
  }
@MERGE@  if (threadIdx.x == 0) {
    kopt_m[0] = m;
    kopt_s[0] = s;
  }
  __syncthreads();
  const float max = kopt_m[0], sum = kopt_s[0];
  for (long long c = threadIdx.x; c < @LENGTH@LL / @WIDTH@; c += blockDim.x) {
    @VECTOR@ v = reinterpret_cast<const @VECTOR@ *>(x)[c];
    float *e = reinterpret_cast<float *>(&v);
#pragma unroll
    for (int j = 0; j < @WIDTH@; ++j)
      e[j] = expf(e[j] - max) / sum;
    reinterpret_cast<@VECTOR@ *>(y)[c] = v;
  }
}
)cuda";

GeneratedKernel mlir::kopt::generateOnlineSoftmaxKernel(
    llvm::StringRef entry, llvm::StringRef comment, llvm::StringRef input,
    llvm::StringRef output, int64_t rows, int64_t length, unsigned threads) {
  bool vector = length % 4 == 0;
  std::string body = kBody.str();
  auto replace = [&](llvm::StringRef from, const std::string &to) {
    for (size_t at = body.find(from); at != std::string::npos;
         at = body.find(from, at + to.size()))
      body.replace(at, from.size(), to);
  };
  CodeWriter merge;
  merge.indent();
  merge.lines(kBlockPairMerge);
  replace("@MERGE@", merge.str());
  replace("@IN@", input.str());
  replace("@OUT@", output.str());
  replace("@LENGTH@", std::to_string(length));
  replace("@WIDTH@", vector ? "4" : "1");
  replace("@VECTOR@", vector ? "float4" : "float");
  GeneratedKernel kernel;
  kernel.entry = entry.str();
  kernel.code = "// " + comment.str() + "\n" +
                llvm::formatv("extern \"C\" __global__ void "
                              "__launch_bounds__({0}) {1}(const float "
                              "*__restrict__ {2}, float *__restrict__ {3}) {{",
                              threads, entry, input, output)
                    .str() +
                body;
  kernel.grid = {std::to_string(rows), "1", "1"};
  kernel.block = {std::to_string(threads), "1", "1"};
  kernel.args = {input.str(), output.str()};
  return kernel;
}
