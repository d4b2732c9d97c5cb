// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// relu(x @ w^T + bias), the weight [N, K] transposed in linalg.matmul's
// indexing_maps: the GEMM reads B K-contiguous. 512x384x1000.
#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @nt_bias_relu(%x: tensor<512x1000xf32>, %w: tensor<384x1000xf32>, %bias: tensor<384xf32>) -> tensor<512x384xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x384xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<512x384xf32>) -> tensor<512x384xf32>
  %0 = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %w : tensor<512x1000xf32>, tensor<384x1000xf32>) outs(%c : tensor<512x384xf32>) -> tensor<512x384xf32>
  %1 = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%0, %bias : tensor<512x384xf32>, tensor<384xf32>) outs(%e : tensor<512x384xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<512x384xf32>
  return %1 : tensor<512x384xf32>
}
