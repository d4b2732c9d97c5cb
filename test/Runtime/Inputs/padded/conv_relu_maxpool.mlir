// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// ResNet's stem in small, as torch-mlir writes it: a zero pad, a 3x3
// convolution accumulating into its broadcast bias, ReLU, a -inf pad and a
// 3x3 max-pool of stride 2, one group. The plans beside it run in
// test/Runtime/cuda/PaddedPoolTest.cpp.
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @conv_relu_maxpool(%x: tensor<2x3x17x15xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<2x8x9x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x3x17x15xf32> to tensor<2x3x19x17xf32>
  %e = tensor.empty() : tensor<2x8x17x15xf32>
  %br = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e : tensor<2x8x17x15xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<2x3x19x17xf32>, tensor<8x3x3x3xf32>) outs(%br : tensor<2x8x17x15xf32>) -> tensor<2x8x17x15xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<2x8x17x15xf32>) outs(%e : tensor<2x8x17x15xf32>) {
  ^bb0(%in: f32, %out: f32):
    %gt = arith.cmpf ugt, %in, %zero : f32
    %m = arith.select %gt, %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x8x17x15xf32>
  %rp = tensor.pad %r low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<2x8x17x15xf32> to tensor<2x8x19x17xf32>
  %pe = tensor.empty() : tensor<2x8x9x8xf32>
  %pf = linalg.fill ins(%ninf : f32) outs(%pe : tensor<2x8x9x8xf32>) -> tensor<2x8x9x8xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%rp, %win : tensor<2x8x19x17xf32>, tensor<3x3xf32>) outs(%pf : tensor<2x8x9x8xf32>) -> tensor<2x8x9x8xf32>
  return %p : tensor<2x8x9x8xf32>
}
