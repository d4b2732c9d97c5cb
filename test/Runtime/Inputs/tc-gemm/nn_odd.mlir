// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// x @ y with odd sizes, 511x383x999: no operand row is a multiple of 16
// bytes, so the GEMM copies 4 bytes at a time, and every tile edge is
// partial.
func.func @nn_odd(%x: tensor<511x999xf32>, %y: tensor<999x383xf32>) -> tensor<511x383xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<511x383xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<511x383xf32>) -> tensor<511x383xf32>
  %0 = linalg.matmul ins(%x, %y : tensor<511x999xf32>, tensor<999x383xf32>) outs(%c : tensor<511x383xf32>) -> tensor<511x383xf32>
  return %0 : tensor<511x383xf32>
}
