// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Rows of 65536 f16 elements centred on their f32 mean: rows longer than a
// block's shared memory once widened, so that grids of groups of blocks take
// them, but not with two buffers, whose bulk copies cannot widen.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d0, 0)>
module {
  func.func @group_center_f16(%arg0: tensor<24x65536xf16>) -> tensor<24x65536xf16> {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_n = arith.constant 65536.0 : f32
    %0 = tensor.empty() : tensor<24xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<24xf32>) -> tensor<24xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<24x65536xf16>) outs(%1 : tensor<24xf32>) {
    ^bb0(%in: f16, %out: f32):
      %e = arith.extf %in : f16 to f32
      %s = arith.addf %e, %out : f32
      linalg.yield %s : f32
    } -> tensor<24xf32>
    %expanded = tensor.expand_shape %2 [[0, 1]] output_shape [24, 1] : tensor<24xf32> into tensor<24x1xf32>
    %3 = tensor.empty() : tensor<24x65536xf16>
    %4 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %expanded : tensor<24x65536xf16>, tensor<24x1xf32>) outs(%3 : tensor<24x65536xf16>) {
    ^bb0(%in: f16, %in_1: f32, %out: f16):
      %e = arith.extf %in : f16 to f32
      %m = arith.divf %in_1, %cst_n : f32
      %d = arith.subf %e, %m : f32
      %t = arith.truncf %d : f32 to f16
      linalg.yield %t : f16
    } -> tensor<24x65536xf16>
    return %4 : tensor<24x65536xf16>
  }
}
