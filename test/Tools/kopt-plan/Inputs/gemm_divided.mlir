// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A product divided by 3, whose reciprocal is not exact: no alpha.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @thirds(%q: tensor<6x32x16xf32>, %k: tensor<6x16x48xf32>) -> tensor<2x3x32x48xf32> {
  %zero = arith.constant 0.0 : f32
  %eighth = arith.constant 3.000000e+00 : f32
  %e = tensor.empty() : tensor<6x32x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<6x32x48xf32>) -> tensor<6x32x48xf32>
  %s = linalg.batch_matmul ins(%q, %k : tensor<6x32x16xf32>, tensor<6x16x48xf32>) outs(%f : tensor<6x32x48xf32>) -> tensor<6x32x48xf32>
  %x = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [2, 3, 32, 48] : tensor<6x32x48xf32> into tensor<2x3x32x48xf32>
  %e4 = tensor.empty() : tensor<2x3x32x48xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<2x3x32x48xf32>) outs(%e4 : tensor<2x3x32x48xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.divf %in, %eighth : f32
    linalg.yield %m : f32
  } -> tensor<2x3x32x48xf32>
  return %r : tensor<2x3x32x48xf32>
}
