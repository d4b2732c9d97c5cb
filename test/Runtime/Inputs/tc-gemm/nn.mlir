// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// x @ y with y [K, N] row-major: the GEMM reads B N-contiguous.
// 512x384x1000.
func.func @nn(%x: tensor<512x1000xf32>, %y: tensor<1000x384xf32>) -> tensor<512x384xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x384xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<512x384xf32>) -> tensor<512x384xf32>
  %0 = linalg.matmul ins(%x, %y : tensor<512x1000xf32>, tensor<1000x384xf32>) outs(%c : tensor<512x384xf32>) -> tensor<512x384xf32>
  return %0 : tensor<512x384xf32>
}
