// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Attention over 2x3 heads of 224 tokens and 64 features, as torch-mlir
// writes it: k transposed before the heads are merged into the batch
// (kopt-collapse-before-transpose moves the transpose next to the first
// batch_matmul, which reads it as K-major B), then p @ v with N = 64 (the
// 128x64 wgmma tiles).
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows = affine_map<(d0, d1, d2) -> (d0, d1)>
#bcast = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @attention_heads(%q: tensor<2x3x224x64xf32>, %k: tensor<2x3x224x64xf32>, %v: tensor<2x3x224x64xf32>) -> tensor<6x224x64xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.125 : f32
  %et = tensor.empty() : tensor<2x3x64x224xf32>
  %kt = linalg.transpose ins(%k : tensor<2x3x224x64xf32>) outs(%et : tensor<2x3x64x224xf32>) permutation = [0, 1, 3, 2]
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x3x224x64xf32> into tensor<6x224x64xf32>
  %ktc = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<2x3x64x224xf32> into tensor<6x64x224xf32>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x3x224x64xf32> into tensor<6x224x64xf32>
  %es = tensor.empty() : tensor<6x224x224xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<6x224x224xf32>) -> tensor<6x224x224xf32>
  %s = linalg.batch_matmul ins(%qc, %ktc : tensor<6x224x64xf32>, tensor<6x64x224xf32>) outs(%fs : tensor<6x224x224xf32>) -> tensor<6x224x224xf32>
  %scaled = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<6x224x224xf32>) outs(%es : tensor<6x224x224xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    linalg.yield %m : f32
  } -> tensor<6x224x224xf32>
  %er = tensor.empty() : tensor<6x224xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%er : tensor<6x224xf32>) -> tensor<6x224xf32>
  %max = linalg.generic {indexing_maps = [#map, #rows], iterator_types = ["parallel", "parallel", "reduction"]} ins(%scaled : tensor<6x224x224xf32>) outs(%fm : tensor<6x224xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<6x224xf32>
  %maxe = tensor.expand_shape %max [[0], [1, 2]] output_shape [6, 224, 1] : tensor<6x224xf32> into tensor<6x224x1xf32>
  %exp = linalg.generic {indexing_maps = [#map, #bcast, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%scaled, %maxe : tensor<6x224x224xf32>, tensor<6x224x1xf32>) outs(%es : tensor<6x224x224xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<6x224x224xf32>
  %fz = linalg.fill ins(%zero : f32) outs(%er : tensor<6x224xf32>) -> tensor<6x224xf32>
  %sum = linalg.generic {indexing_maps = [#map, #rows], iterator_types = ["parallel", "parallel", "reduction"]} ins(%exp : tensor<6x224x224xf32>) outs(%fz : tensor<6x224xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<6x224xf32>
  %sume = tensor.expand_shape %sum [[0], [1, 2]] output_shape [6, 224, 1] : tensor<6x224xf32> into tensor<6x224x1xf32>
  %p = linalg.generic {indexing_maps = [#map, #bcast, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%exp, %sume : tensor<6x224x224xf32>, tensor<6x224x1xf32>) outs(%es : tensor<6x224x224xf32>) {
  ^bb0(%in: f32, %t: f32, %out: f32):
    %d = arith.divf %in, %t : f32
    linalg.yield %d : f32
  } -> tensor<6x224x224xf32>
  %eo = tensor.empty() : tensor<6x224x64xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<6x224x64xf32>) -> tensor<6x224x64xf32>
  %o = linalg.batch_matmul ins(%p, %vc : tensor<6x224x224xf32>, tensor<6x224x64xf32>) outs(%fo : tensor<6x224x64xf32>) -> tensor<6x224x64xf32>
  return %o : tensor<6x224x64xf32>
}
