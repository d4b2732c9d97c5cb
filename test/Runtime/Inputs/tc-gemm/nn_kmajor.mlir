// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Batched x @ y with y [batch, K, N] row-major and K a multiple of 32: the
// wgmma plans write y transposed ([batch, N, K]) first (`_tb`). N and M are
// no multiples of the transpose's 32x32 tiles nor of the GEMM's. 2x200x96
// times 2x96x300.
func.func @nn_kmajor(%x: tensor<2x200x96xf32>, %y: tensor<2x96x300xf32>) -> tensor<2x200x300xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x200x300xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<2x200x300xf32>) -> tensor<2x200x300xf32>
  %0 = linalg.batch_matmul ins(%x, %y : tensor<2x200x96xf32>, tensor<2x96x300xf32>) outs(%c : tensor<2x200x300xf32>) -> tensor<2x200x300xf32>
  return %0 : tensor<2x200x300xf32>
}
