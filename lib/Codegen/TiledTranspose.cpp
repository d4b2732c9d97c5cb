//===- TiledTranspose.cpp - A batched matrix transpose kernel ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "TiledTranspose.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::kopt;

llvm::Expected<GeneratedKernel> mlir::kopt::generateTiledTranspose(
    llvm::StringRef entry, llvm::StringRef comment, const std::string &input,
    const std::string &output, int64_t batch, int64_t rows, int64_t cols) {
  if (batch < 1 || batch > 65535 || rows < 1 || cols < 1)
    return llvm::createStringError(
        "a transpose of %lld batches of %lldx%lld does not fit a grid",
        (long long)batch, (long long)rows, (long long)cols);
  int64_t tileRows = (rows + 31) / 32, tileCols = (cols + 31) / 32;
  if (tileRows > 65535)
    return llvm::createStringError("%lld rows do not fit a grid's y",
                                   (long long)rows);
  GeneratedKernel kernel;
  kernel.entry = entry.str();
  kernel.args = {input, output};
  // Each block moves one 32x32 tile: 8 rows of 32 threads read it a row at
  // a time into shared memory (padded against bank conflicts) and write it
  // back a column at a time, both along contiguous addresses.
  kernel.code = llvm::formatv(R"cuda(// {0}
extern "C" __global__ void __launch_bounds__(256) {1}(const float *__restrict__ {2}, float *__restrict__ {3}) {{
  __shared__ float tile[32][33];
  const long long base = (long long)blockIdx.z * {4}LL * {5}LL;
  const long long row0 = (long long)blockIdx.y * 32, col0 = (long long)blockIdx.x * 32;
  #pragma unroll
  for (int i = threadIdx.y; i < 32; i += 8) {{
    const long long row = row0 + i, col = col0 + threadIdx.x;
    if (row < {4}LL && col < {5}LL)
      tile[i][threadIdx.x] = {2}[base + row * {5}LL + col];
  }
  __syncthreads();
  #pragma unroll
  for (int i = threadIdx.y; i < 32; i += 8) {{
    const long long col = col0 + i, row = row0 + threadIdx.x;
    if (row < {4}LL && col < {5}LL)
      {3}[base + col * {4}LL + row] = tile[threadIdx.x][i];
  }
}
)cuda",
                              comment, entry, input, output, rows, cols)
                    .str();
  kernel.grid = {std::to_string(tileCols), std::to_string(tileRows),
                 std::to_string(batch)};
  kernel.block = {"32", "8", "1"};
  return kernel;
}
