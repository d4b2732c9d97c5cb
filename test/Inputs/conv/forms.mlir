// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// One function per convolution form a conv step computes, small, in the
// shapes torch-mlir's FX importer writes them (grouped convolutions between
// reshapes, a bias as a broadcast accumulator): depthwise, grouped, 1-D and
// 3-D, strided and dilated, with and without a bias and an epilogue.

#nchw_bias = affine_map<(d0, d1, d2, d3) -> (d1)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#g3in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d0, d1, d6, d3 + d7, d4 + d8, d5 + d9)>
#g3filter = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d1, d2, d6, d7, d8, d9)>
#g3out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d0, d1, d2, d3, d4, d5)>

// MobileNet's block: a strided depthwise convolution, a bias and ReLU6.
func.func @depthwise_nchw(%x: tensor<2x8x17x17xf32>, %w: tensor<8x1x3x3xf32>, %b: tensor<8xf32>) -> tensor<2x8x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %six = arith.constant 6.0 : f32
  %e = tensor.empty() : tensor<2x8x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  %wc = tensor.collapse_shape %w [[0, 1], [2], [3]] : tensor<8x1x3x3xf32> into tensor<8x3x3xf32>
  %c = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %wc : tensor<2x8x17x17xf32>, tensor<8x3x3xf32>) outs(%f : tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  %r = linalg.generic {indexing_maps = [#id4, #nchw_bias, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %b : tensor<2x8x8x8xf32>, tensor<8xf32>) outs(%e : tensor<2x8x8x8xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    %lo = arith.maximumf %s, %zero : f32
    %hi = arith.minimumf %lo, %six : f32
    linalg.yield %hi : f32
  } -> tensor<2x8x8x8xf32>
  return %r : tensor<2x8x8x8xf32>
}

func.func @depthwise_nhwc_dilated(%x: tensor<2x10x10x8xf32>, %w: tensor<3x3x8xf32>) -> tensor<2x6x6x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x6x6x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x6x6x8xf32>) -> tensor<2x6x6x8xf32>
  %c = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<2> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<2x10x10x8xf32>, tensor<3x3x8xf32>) outs(%f : tensor<2x6x6x8xf32>) -> tensor<2x6x6x8xf32>
  return %c : tensor<2x6x6x8xf32>
}

func.func @depthwise_nhwc_multiplier(%x: tensor<1x9x9x4xf32>, %w: tensor<3x3x4x2xf32>) -> tensor<1x7x7x4x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x7x7x4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x7x7x4x2xf32>) -> tensor<1x7x7x4x2xf32>
  %c = linalg.depthwise_conv_2d_nhwc_hwcm {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x9x9x4xf32>, tensor<3x3x4x2xf32>) outs(%f : tensor<1x7x7x4x2xf32>) -> tensor<1x7x7x4x2xf32>
  return %c : tensor<1x7x7x4x2xf32>
}

// groups=2 as torch-mlir writes it: the channels split by reshapes around
// linalg.conv_2d_ngchw_gfchw, then the bias.
func.func @grouped_nchw(%x: tensor<2x8x10x10xf32>, %w: tensor<12x4x3x3xf32>, %b: tensor<12xf32>) -> tensor<2x12x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %xg = tensor.expand_shape %x [[0], [1, 2], [3], [4]] output_shape [2, 2, 4, 10, 10] : tensor<2x8x10x10xf32> into tensor<2x2x4x10x10xf32>
  %wg = tensor.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [2, 6, 4, 3, 3] : tensor<12x4x3x3xf32> into tensor<2x6x4x3x3xf32>
  %e = tensor.empty() : tensor<2x2x6x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2x6x8x8xf32>) -> tensor<2x2x6x8x8xf32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%xg, %wg : tensor<2x2x4x10x10xf32>, tensor<2x6x4x3x3xf32>) outs(%f : tensor<2x2x6x8x8xf32>) -> tensor<2x2x6x8x8xf32>
  %cc = tensor.collapse_shape %c [[0], [1, 2], [3], [4]] : tensor<2x2x6x8x8xf32> into tensor<2x12x8x8xf32>
  %e2 = tensor.empty() : tensor<2x12x8x8xf32>
  %r = linalg.generic {indexing_maps = [#id4, #nchw_bias, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cc, %b : tensor<2x12x8x8xf32>, tensor<12xf32>) outs(%e2 : tensor<2x12x8x8xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<2x12x8x8xf32>
  return %r : tensor<2x12x8x8xf32>
}

func.func @grouped_fgchw(%x: tensor<1x2x3x8x8xf32>, %w: tensor<4x2x3x3x3xf32>) -> tensor<1x2x4x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x6x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x4x6x6xf32>) -> tensor<1x2x4x6x6xf32>
  %c = linalg.conv_2d_ngchw_fgchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x2x3x8x8xf32>, tensor<4x2x3x3x3xf32>) outs(%f : tensor<1x2x4x6x6xf32>) -> tensor<1x2x4x6x6xf32>
  return %c : tensor<1x2x4x6x6xf32>
}

func.func @grouped_nhwgc(%x: tensor<1x8x8x2x3xf32>, %w: tensor<2x4x3x3x3xf32>) -> tensor<1x6x6x2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x6x2x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x6x2x4xf32>) -> tensor<1x6x6x2x4xf32>
  %c = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x8x8x2x3xf32>, tensor<2x4x3x3x3xf32>) outs(%f : tensor<1x6x6x2x4xf32>) -> tensor<1x6x6x2x4xf32>
  return %c : tensor<1x6x6x2x4xf32>
}

// A 1-D convolution with its bias as the accumulator, as torch-mlir writes
// nn.Conv1d.
func.func @conv1d_bias(%x: tensor<2x4x33xf32>, %w: tensor<6x4x3xf32>, %b: tensor<6xf32>) -> tensor<2x6x15xf32> {
  %e = tensor.empty() : tensor<2x6x15xf32>
  %bb = linalg.broadcast ins(%b : tensor<6xf32>) outs(%e : tensor<2x6x15xf32>) dimensions = [0, 2]
  %c = linalg.conv_1d_ncw_fcw {dilations = dense<2> : vector<1xi64>, strides = dense<2> : vector<1xi64>} ins(%x, %w : tensor<2x4x33xf32>, tensor<6x4x3xf32>) outs(%bb : tensor<2x6x15xf32>) -> tensor<2x6x15xf32>
  return %c : tensor<2x6x15xf32>
}

func.func @conv1d_nwc(%x: tensor<2x16x4xf32>, %w: tensor<3x4x6xf32>) -> tensor<2x14x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x14x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x14x6xf32>) -> tensor<2x14x6xf32>
  %c = linalg.conv_1d_nwc_wcf {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>} ins(%x, %w : tensor<2x16x4xf32>, tensor<3x4x6xf32>) outs(%f : tensor<2x14x6xf32>) -> tensor<2x14x6xf32>
  return %c : tensor<2x14x6xf32>
}

func.func @depthwise1d(%x: tensor<2x4x16xf32>, %w: tensor<4x3xf32>) -> tensor<2x4x14xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x14xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x14xf32>) -> tensor<2x4x14xf32>
  %c = linalg.depthwise_conv_1d_ncw_cw {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>} ins(%x, %w : tensor<2x4x16xf32>, tensor<4x3xf32>) outs(%f : tensor<2x4x14xf32>) -> tensor<2x4x14xf32>
  return %c : tensor<2x4x14xf32>
}

// A strided 3-D convolution with a bias accumulator and a ReLU.
func.func @conv3d_bias_relu(%x: tensor<1x4x6x9x9xf32>, %w: tensor<6x4x3x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x4x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x4x4x4xf32>
  %bb = linalg.broadcast ins(%b : tensor<6xf32>) outs(%e : tensor<1x6x4x4x4xf32>) dimensions = [0, 2, 3, 4]
  %c = linalg.conv_3d_ncdhw_fcdhw {dilations = dense<1> : vector<3xi64>, strides = dense<[1, 2, 2]> : vector<3xi64>} ins(%x, %w : tensor<1x4x6x9x9xf32>, tensor<6x4x3x3x3xf32>) outs(%bb : tensor<1x6x4x4x4xf32>) -> tensor<1x6x4x4x4xf32>
  %r = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x6x4x4x4xf32>) outs(%e : tensor<1x6x4x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x6x4x4x4xf32>
  return %r : tensor<1x6x4x4x4xf32>
}

func.func @conv3d_ndhwc(%x: tensor<1x6x8x8x4xf32>, %w: tensor<3x3x3x4x6xf32>) -> tensor<1x4x6x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x6x6x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x6x6x6xf32>) -> tensor<1x4x6x6x6xf32>
  %c = linalg.conv_3d_ndhwc_dhwcf {dilations = dense<1> : vector<3xi64>, strides = dense<1> : vector<3xi64>} ins(%x, %w : tensor<1x6x8x8x4xf32>, tensor<3x3x3x4x6xf32>) outs(%f : tensor<1x4x6x6x6xf32>) -> tensor<1x4x6x6x6xf32>
  return %c : tensor<1x4x6x6x6xf32>
}

func.func @depthwise3d(%x: tensor<1x4x5x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x3x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x3x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x3x4x4xf32>) -> tensor<1x4x3x4x4xf32>
  %c = linalg.depthwise_conv_3d_ncdhw_cdhw {dilations = dense<1> : vector<3xi64>, strides = dense<1> : vector<3xi64>} ins(%x, %w : tensor<1x4x5x6x6xf32>, tensor<4x3x3x3xf32>) outs(%f : tensor<1x4x3x4x4xf32>) -> tensor<1x4x3x4x4xf32>
  return %c : tensor<1x4x3x4x4xf32>
}

// groups=2 in 3-D: torch-mlir writes a linalg.generic (linalg has no named
// grouped 3-D convolution).
func.func @grouped3d_generic(%x: tensor<1x4x6x8x8xf32>, %w: tensor<6x2x3x3x3xf32>) -> tensor<1x6x4x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %xg = tensor.expand_shape %x [[0], [1, 2], [3], [4], [5]] output_shape [1, 2, 2, 6, 8, 8] : tensor<1x4x6x8x8xf32> into tensor<1x2x2x6x8x8xf32>
  %wg = tensor.expand_shape %w [[0, 1], [2], [3], [4], [5]] output_shape [2, 3, 2, 3, 3, 3] : tensor<6x2x3x3x3xf32> into tensor<2x3x2x3x3x3xf32>
  %e = tensor.empty() : tensor<1x2x3x4x6x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x3x4x6x6xf32>) -> tensor<1x2x3x4x6x6xf32>
  %c = linalg.generic {indexing_maps = [#g3in, #g3filter, #g3out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%xg, %wg : tensor<1x2x2x6x8x8xf32>, tensor<2x3x2x3x3x3xf32>) outs(%f : tensor<1x2x3x4x6x6xf32>) {
  ^bb0(%in: f32, %filter: f32, %out: f32):
    %p = arith.mulf %in, %filter : f32
    %s = arith.addf %p, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x2x3x4x6x6xf32>
  %r = tensor.collapse_shape %c [[0], [1, 2], [3], [4], [5]] : tensor<1x2x3x4x6x6xf32> into tensor<1x6x4x6x6xf32>
  return %r : tensor<1x6x4x6x6xf32>
}

func.func @conv2d_nhwc_fhwc(%x: tensor<1x8x8x4xf32>, %w: tensor<6x3x3x4xf32>) -> tensor<1x6x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x6x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x6x6xf32>) -> tensor<1x6x6x6xf32>
  %c = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x8x8x4xf32>, tensor<6x3x3x4xf32>) outs(%f : tensor<1x6x6x6xf32>) -> tensor<1x6x6x6xf32>
  return %c : tensor<1x6x6x6xf32>
}

func.func @conv2d_strided_dilated(%x: tensor<2x3x13x11xf32>, %w: tensor<4x3x3x2xf32>) -> tensor<2x4x6x9xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x6x9xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x6x9xf32>) -> tensor<2x4x6x9xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<[1, 2]> : vector<2xi64>, strides = dense<[2, 1]> : vector<2xi64>} ins(%x, %w : tensor<2x3x13x11xf32>, tensor<4x3x3x2xf32>) outs(%f : tensor<2x4x6x9xf32>) -> tensor<2x4x6x9xf32>
  return %c : tensor<2x4x6x9xf32>
}
