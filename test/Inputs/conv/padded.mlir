// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Padded convolutions and pooling as torch-mlir's FX importer writes them:
// a tensor.pad of the input (0 before a convolution, -inf before a
// max-pool, 0 before a sum pool) that only the convolution or pooling op
// reads, a bias as a broadcast the convolution accumulates into. Each group
// takes its pad in (docs/FusionGroups.md): cuDNN pads with zeros itself,
// pooling kernels read the unpadded input with bounds checks. Sizes no
// block divides, so that every bound is exercised.

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// AlexNet's first layer in small: 5x5, stride 2, padding 2, a bias.
func.func @conv2d_pad_bias(%x: tensor<2x3x15x13xf32>, %w: tensor<5x3x5x5xf32>, %b: tensor<5xf32>) -> tensor<2x5x8x7xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 2, 2] high[0, 0, 2, 2] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x3x15x13xf32> to tensor<2x3x19x17xf32>
  %e = tensor.empty() : tensor<2x5x8x7xf32>
  %br = linalg.broadcast ins(%b : tensor<5xf32>) outs(%e : tensor<2x5x8x7xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %w : tensor<2x3x19x17xf32>, tensor<5x3x5x5xf32>) outs(%br : tensor<2x5x8x7xf32>) -> tensor<2x5x8x7xf32>
  return %c : tensor<2x5x8x7xf32>
}

// Channels last, dilated, padded 2 then 1, with a ReLU.
func.func @conv2d_nhwc_pad_dilated(%x: tensor<1x9x10x4xf32>, %w: tensor<3x3x4x6xf32>) -> tensor<1x9x8x6xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 2, 1, 0] high[0, 2, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x9x10x4xf32> to tensor<1x13x12x4xf32>
  %e = tensor.empty() : tensor<1x9x8x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x9x8x6xf32>) -> tensor<1x9x8x6xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<2> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x13x12x4xf32>, tensor<3x3x4x6xf32>) outs(%f : tensor<1x9x8x6xf32>) -> tensor<1x9x8x6xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x9x8x6xf32>) outs(%e : tensor<1x9x8x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x9x8x6xf32>
  return %r : tensor<1x9x8x6xf32>
}

// A padded depthwise convolution (MobileNet's 3x3, padding 1).
func.func @depthwise_pad(%x: tensor<2x8x9x9xf32>, %w: tensor<8x3x3xf32>) -> tensor<2x8x9x9xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x8x9x9xf32> to tensor<2x8x11x11xf32>
  %e = tensor.empty() : tensor<2x8x9x9xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x9x9xf32>) -> tensor<2x8x9x9xf32>
  %c = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<2x8x11x11xf32>, tensor<8x3x3xf32>) outs(%f : tensor<2x8x9x9xf32>) -> tensor<2x8x9x9xf32>
  return %c : tensor<2x8x9x9xf32>
}

// A 1-D convolution with padding 3.
func.func @conv1d_pad(%x: tensor<2x4x21xf32>, %w: tensor<6x4x7xf32>) -> tensor<2x6x21xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 3] high[0, 0, 3] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<2x4x21xf32> to tensor<2x4x27xf32>
  %e = tensor.empty() : tensor<2x6x21xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x6x21xf32>) -> tensor<2x6x21xf32>
  %c = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>} ins(%padded, %w : tensor<2x4x27xf32>, tensor<6x4x7xf32>) outs(%f : tensor<2x6x21xf32>) -> tensor<2x6x21xf32>
  return %c : tensor<2x6x21xf32>
}

// Padding cuDNN cannot take (more after than before): the pad joins the
// group, but the baseline writes the padded tensor and cuDNN reads it.
func.func @conv2d_pad_asymmetric(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x7x7xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 0, 0] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x3x8x8xf32> to tensor<1x3x9x9xf32>
  %e = tensor.empty() : tensor<1x4x7x7xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x7x7xf32>) -> tensor<1x4x7x7xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32>) outs(%f : tensor<1x4x7x7xf32>) -> tensor<1x4x7x7xf32>
  return %c : tensor<1x4x7x7xf32>
}

// torch's max_pool2d(kernel 3, stride 2, padding 1): a -inf pad.
func.func @maxpool_pad(%x: tensor<2x5x13x11xf32>) -> tensor<2x5x7x6xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<2x5x13x11xf32> to tensor<2x5x15x13xf32>
  %e = tensor.empty() : tensor<2x5x7x6xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x5x7x6xf32>) -> tensor<2x5x7x6xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %win : tensor<2x5x15x13xf32>, tensor<3x3xf32>) outs(%f : tensor<2x5x7x6xf32>) -> tensor<2x5x7x6xf32>
  return %p : tensor<2x5x7x6xf32>
}

// torch's avg_pool2d(kernel 3, stride 1, padding 1, count_include_pad):
// a sum over a zero pad, divided by the window.
func.func @avgpool_pad(%x: tensor<1x4x10x9xf32>) -> tensor<1x4x10x9xf32> {
  %zero = arith.constant 0.0 : f32
  %nine = arith.constant 9.0 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x4x10x9xf32> to tensor<1x4x12x11xf32>
  %e = tensor.empty() : tensor<1x4x10x9xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x10x9xf32>) -> tensor<1x4x10x9xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %s = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %win : tensor<1x4x12x11xf32>, tensor<3x3xf32>) outs(%f : tensor<1x4x10x9xf32>) -> tensor<1x4x10x9xf32>
  %d = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x10x9xf32>) outs(%e : tensor<1x4x10x9xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.divf %in, %nine : f32
    linalg.yield %q : f32
  } -> tensor<1x4x10x9xf32>
  return %d : tensor<1x4x10x9xf32>
}

// ResNet's stem in small: a padded convolution with a bias, ReLU, then a
// padded max-pool, all one group.
func.func @conv_relu_maxpool_pad(%x: tensor<1x3x12x12xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x3x12x12xf32> to tensor<1x3x14x14xf32>
  %e = tensor.empty() : tensor<1x4x12x12xf32>
  %br = linalg.broadcast ins(%b : tensor<4xf32>) outs(%e : tensor<1x4x12x12xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x3x14x14xf32>, tensor<4x3x3x3xf32>) outs(%br : tensor<1x4x12x12xf32>) -> tensor<1x4x12x12xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x4x12x12xf32>) outs(%e : tensor<1x4x12x12xf32>) {
  ^bb0(%in: f32, %out: f32):
    %gt = arith.cmpf ugt, %in, %zero : f32
    %m = arith.select %gt, %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x4x12x12xf32>
  %rp = tensor.pad %r low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<1x4x12x12xf32> to tensor<1x4x14x14xf32>
  %pe = tensor.empty() : tensor<1x4x6x6xf32>
  %pf = linalg.fill ins(%ninf : f32) outs(%pe : tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%rp, %win : tensor<1x4x14x14xf32>, tensor<3x3xf32>) outs(%pf : tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  return %p : tensor<1x4x6x6xf32>
}
