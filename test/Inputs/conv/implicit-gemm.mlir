// Convolutions the 3xTF32 implicit-GEMM kernel on wgmma takes
// (lib/Codegen/WgmmaConv.cpp): NCHW input, FCHW filter, at least 132 tiles
// of 128 x 128 (offersWgmmaConv); C * KH * KW a multiple of 32 or not.
// Output pixels and features that do not fill a tile, padding read as
// zeros by the loader, strides and dilations, a bias and ReLU fused, and a
// max-pool after the convolution.
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// 3x3, padding 1, bias and ReLU: K = 32 * 9 = 288, 4 * 65 * 67 = 17420
// output pixels, 96 features (a partial tile each way).
func.func @conv3x3_pad_bias_relu(%x: tensor<4x32x65x67xf32>, %w: tensor<96x32x3x3xf32>, %b: tensor<96xf32>) -> tensor<4x96x65x67xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<4x32x65x67xf32> to tensor<4x32x67x69xf32>
  %e = tensor.empty() : tensor<4x96x65x67xf32>
  %br = linalg.broadcast ins(%b : tensor<96xf32>) outs(%e : tensor<4x96x65x67xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<4x32x67x69xf32>, tensor<96x32x3x3xf32>) outs(%br : tensor<4x96x65x67xf32>) -> tensor<4x96x65x67xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<4x96x65x67xf32>) outs(%e : tensor<4x96x65x67xf32>) {
  ^bb0(%in: f32, %out: f32):
    %gt = arith.cmpf ugt, %in, %zero : f32
    %m = arith.select %gt, %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x96x65x67xf32>
  return %r : tensor<4x96x65x67xf32>
}

// 1x1, stride 2, no padding: K = 64 channels; 3 * 56 * 56 = 9408 pixels
// and 160 features (two tiles along N, the second partial).
func.func @conv1x1_stride2(%x: tensor<3x64x111x111xf32>, %w: tensor<160x64x1x1xf32>) -> tensor<3x160x56x56xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x160x56x56xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x160x56x56xf32>) -> tensor<3x160x56x56xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<3x64x111x111xf32>, tensor<160x64x1x1xf32>) outs(%f : tensor<3x160x56x56xf32>) -> tensor<3x160x56x56xf32>
  return %c : tensor<3x160x56x56xf32>
}

// 3x3, dilation 2, padding 2, strides 2 and 1: K = 64 * 9 = 576, 129 * 131
// pixels; the window's rows and columns reach into the padding unevenly.
func.func @conv3x3_dilated_pad(%x: tensor<1x64x257x131xf32>, %w: tensor<32x64x3x3xf32>) -> tensor<1x32x129x131xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 2, 2] high[0, 0, 2, 2] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x64x257x131xf32> to tensor<1x64x261x135xf32>
  %e = tensor.empty() : tensor<1x32x129x131xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x32x129x131xf32>) -> tensor<1x32x129x131xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<2> : vector<2xi64>, strides = dense<[2, 1]> : vector<2xi64>} ins(%padded, %w : tensor<1x64x261x135xf32>, tensor<32x64x3x3xf32>) outs(%f : tensor<1x32x129x131xf32>) -> tensor<1x32x129x131xf32>
  return %c : tensor<1x32x129x131xf32>
}

// 3x3, padding 1, bias, ReLU, then a 2x2 max-pool of stride 2: the
// convolution's kernel writes its result, the pooling kernels read it.
func.func @conv_relu_maxpool(%x: tensor<2x32x96x96xf32>, %w: tensor<64x32x3x3xf32>, %b: tensor<64xf32>) -> tensor<2x64x48x48xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x32x96x96xf32> to tensor<2x32x98x98xf32>
  %e = tensor.empty() : tensor<2x64x96x96xf32>
  %br = linalg.broadcast ins(%b : tensor<64xf32>) outs(%e : tensor<2x64x96x96xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<2x32x98x98xf32>, tensor<64x32x3x3xf32>) outs(%br : tensor<2x64x96x96xf32>) -> tensor<2x64x96x96xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<2x64x96x96xf32>) outs(%e : tensor<2x64x96x96xf32>) {
  ^bb0(%in: f32, %out: f32):
    %gt = arith.cmpf ugt, %in, %zero : f32
    %m = arith.select %gt, %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x64x96x96xf32>
  %pe = tensor.empty() : tensor<2x64x48x48xf32>
  %pf = linalg.fill ins(%ninf : f32) outs(%pe : tensor<2x64x48x48xf32>) -> tensor<2x64x48x48xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%r, %win : tensor<2x64x96x96xf32>, tensor<2x2xf32>) outs(%pf : tensor<2x64x48x48xf32>) -> tensor<2x64x48x48xf32>
  return %p : tensor<2x64x48x48xf32>
}

// AlexNet's first layer: 11x11, 3 channels, stride 4, padding 2, bias:
// K = 363 is padded to 384 with zeros, and rows of 363 floats are read one
// float at a time; 6 * 56 * 56 = 18816 output pixels.
func.func @conv11x11_stride4_k363(%x: tensor<6x3x227x227xf32>, %w: tensor<96x3x11x11xf32>, %b: tensor<96xf32>) -> tensor<6x96x56x56xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 2, 2] high[0, 0, 2, 2] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<6x3x227x227xf32> to tensor<6x3x231x231xf32>
  %e = tensor.empty() : tensor<6x96x56x56xf32>
  %br = linalg.broadcast ins(%b : tensor<96xf32>) outs(%e : tensor<6x96x56x56xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<4> : vector<2xi64>} ins(%padded, %w : tensor<6x3x231x231xf32>, tensor<96x3x11x11xf32>) outs(%br : tensor<6x96x56x56xf32>) -> tensor<6x96x56x56xf32>
  return %c : tensor<6x96x56x56xf32>
}
