// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// LayerNorm over (16,256,256) with its affine weights, 8 rows
// (bench/suite/real/l1_layernorm.mlir's graph at a smaller size): rows of
// 4 MB, split over groups of blocks (SharedRowKernel.h). Four groups of 33
// blocks give each block 127 KB of a row, too much for two buffers and
// not for its threads' registers (`group4_rg_bs512`), and each group two
// rows, so that the second lands while the first is worked on.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, 0)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
module {
  func.func @group_layernorm_registers(%arg0: tensor<8x16x256x256xf32>, %arg1: tensor<16x256x256xf32>, %arg2: tensor<16x256x256xf32>) -> tensor<8x16x256x256xf32> {
    %cst = arith.constant 0.000000e+00 : f64
    %cst_0 = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant 1.000000e-05 : f64
    %cst_2 = arith.constant 0x4130000000000000 : f64
    %cst_3 = arith.constant 0x49800000 : f32
    %0 = tensor.empty() : tensor<8x16x256x256xf64>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : tensor<8x16x256x256xf32>) outs(%0 : tensor<8x16x256x256xf64>) {
    ^bb0(%in: f32, %out: f64):
      %22 = arith.extf %in : f32 to f64
      linalg.yield %22 : f64
    } -> tensor<8x16x256x256xf64>
    %2 = tensor.empty() : tensor<8x1x1x1xf64>
    %3 = linalg.fill ins(%cst : f64) outs(%2 : tensor<8x1x1x1xf64>) -> tensor<8x1x1x1xf64>
    %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction", "reduction", "reduction"]} ins(%1 : tensor<8x16x256x256xf64>) outs(%3 : tensor<8x1x1x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %22 = arith.addf %in, %out : f64
      linalg.yield %22 : f64
    } -> tensor<8x1x1x1xf64>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%4 : tensor<8x1x1x1xf64>) outs(%2 : tensor<8x1x1x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %22 = arith.divf %in, %cst_2 : f64
      linalg.yield %22 : f64
    } -> tensor<8x1x1x1xf64>
    %6 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%1, %5 : tensor<8x16x256x256xf64>, tensor<8x1x1x1xf64>) outs(%0 : tensor<8x16x256x256xf64>) {
    ^bb0(%in: f64, %in_4: f64, %out: f64):
      %22 = arith.subf %in, %in_4 : f64
      linalg.yield %22 : f64
    } -> tensor<8x16x256x256xf64>
    %7 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%6, %6 : tensor<8x16x256x256xf64>, tensor<8x16x256x256xf64>) outs(%0 : tensor<8x16x256x256xf64>) {
    ^bb0(%in: f64, %in_4: f64, %out: f64):
      %22 = arith.mulf %in, %in_4 : f64
      linalg.yield %22 : f64
    } -> tensor<8x16x256x256xf64>
    %8 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction", "reduction", "reduction"]} ins(%7 : tensor<8x16x256x256xf64>) outs(%3 : tensor<8x1x1x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %22 = arith.addf %in, %out : f64
      linalg.yield %22 : f64
    } -> tensor<8x1x1x1xf64>
    %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%8 : tensor<8x1x1x1xf64>) outs(%2 : tensor<8x1x1x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %22 = arith.divf %in, %cst_2 : f64
      linalg.yield %22 : f64
    } -> tensor<8x1x1x1xf64>
    %10 = tensor.empty() : tensor<8x1x1x1xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%9 : tensor<8x1x1x1xf64>) outs(%10 : tensor<8x1x1x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %22 = arith.truncf %in : f64 to f32
      linalg.yield %22 : f32
    } -> tensor<8x1x1x1xf32>
    %12 = linalg.fill ins(%cst_0 : f32) outs(%10 : tensor<8x1x1x1xf32>) -> tensor<8x1x1x1xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction", "reduction", "reduction"]} ins(%arg0 : tensor<8x16x256x256xf32>) outs(%12 : tensor<8x1x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %22 = arith.addf %in, %out : f32
      linalg.yield %22 : f32
    } -> tensor<8x1x1x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%13 : tensor<8x1x1x1xf32>) outs(%10 : tensor<8x1x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %22 = arith.divf %in, %cst_3 : f32
      linalg.yield %22 : f32
    } -> tensor<8x1x1x1xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%11 : tensor<8x1x1x1xf32>) outs(%10 : tensor<8x1x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %22 = arith.truncf %cst_1 : f64 to f32
      %23 = arith.addf %in, %22 : f32
      linalg.yield %23 : f32
    } -> tensor<8x1x1x1xf32>
    %16 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%15 : tensor<8x1x1x1xf32>) outs(%10 : tensor<8x1x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %22 = math.rsqrt %in : f32
      linalg.yield %22 : f32
    } -> tensor<8x1x1x1xf32>
    %17 = tensor.empty() : tensor<8x16x256x256xf32>
    %18 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %14 : tensor<8x16x256x256xf32>, tensor<8x1x1x1xf32>) outs(%17 : tensor<8x16x256x256xf32>) {
    ^bb0(%in: f32, %in_4: f32, %out: f32):
      %22 = arith.subf %in, %in_4 : f32
      linalg.yield %22 : f32
    } -> tensor<8x16x256x256xf32>
    %19 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%18, %16 : tensor<8x16x256x256xf32>, tensor<8x1x1x1xf32>) outs(%17 : tensor<8x16x256x256xf32>) {
    ^bb0(%in: f32, %in_4: f32, %out: f32):
      %22 = arith.mulf %in, %in_4 : f32
      linalg.yield %22 : f32
    } -> tensor<8x16x256x256xf32>
    %20 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%19, %arg1 : tensor<8x16x256x256xf32>, tensor<16x256x256xf32>) outs(%17 : tensor<8x16x256x256xf32>) {
    ^bb0(%in: f32, %in_4: f32, %out: f32):
      %22 = arith.mulf %in, %in_4 : f32
      linalg.yield %22 : f32
    } -> tensor<8x16x256x256xf32>
    %21 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%20, %arg2 : tensor<8x16x256x256xf32>, tensor<16x256x256xf32>) outs(%17 : tensor<8x16x256x256xf32>) {
    ^bb0(%in: f32, %in_4: f32, %out: f32):
      %22 = arith.addf %in, %in_4 : f32
      linalg.yield %22 : f32
    } -> tensor<8x16x256x256xf32>
    return %21 : tensor<8x16x256x256xf32>
  }
}
