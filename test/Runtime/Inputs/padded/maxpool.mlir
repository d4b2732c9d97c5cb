// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// torch's max_pool2d(kernel 3, stride 2, padding 1) as torch-mlir writes
// it: a -inf pad and the pooling op, one group. The plans beside it run in
// test/Runtime/cuda/PaddedPoolTest.cpp.
func.func @maxpool(%x: tensor<2x8x33x31xf32>) -> tensor<2x8x17x16xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<2x8x33x31xf32> to tensor<2x8x35x33xf32>
  %e = tensor.empty() : tensor<2x8x17x16xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x8x17x16xf32>) -> tensor<2x8x17x16xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %win : tensor<2x8x35x33xf32>, tensor<3x3xf32>) outs(%f : tensor<2x8x17x16xf32>) -> tensor<2x8x17x16xf32>
  return %p : tensor<2x8x17x16xf32>
}
