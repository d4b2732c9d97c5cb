// RUN: kopt-opt %s --kopt-form-fusion-groups --split-input-file | FileCheck %s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The kopt.group_id / kopt.group_kind tags the fusion planner puts on each
// pattern it is meant to recognise (see the rules in passes/Passes.td).

// An elementwise chain with a bias broadcast and a transposed operand is one
// elementwise group.
// CHECK-LABEL: func.func @elementwise_chain
//       CHECK:   %[[ADD:.+]] = linalg.generic {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "elementwise"}
//       CHECK:     arith.addf
//       CHECK:   %[[MUL:.+]] = linalg.generic {{.*}} ins(%[[ADD]], {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "elementwise"}
//       CHECK:     arith.mulf
//       CHECK:   linalg.generic {{.*}} ins(%[[MUL]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "elementwise"}
//       CHECK:     math.exp
//   CHECK-NOT:   kopt.group_id = 1
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
func.func @elementwise_chain(%a: tensor<16x32xf32>, %b: tensor<32xf32>, %c: tensor<32x16xf32>) -> tensor<16x32xf32> {
  %e = tensor.empty() : tensor<16x32xf32>
  %0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<16x32xf32>, tensor<32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  %1 = linalg.generic {indexing_maps = [#id, #tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %c : tensor<16x32xf32>, tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.mulf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%1 : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.exp %x : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  return %2 : tensor<16x32xf32>
}

// -----

// matmul + bias + ReLU: the matmul anchors a contraction group that absorbs
// its epilogue; the zero fill stays outside (it is cloned when outlining).
// CHECK-LABEL: func.func @matmul_bias_relu
//       CHECK:   %[[FILL:.+]] = linalg.fill ins
//   CHECK-NOT:   kopt.group
//       CHECK:   %[[MM:.+]] = linalg.matmul {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"} ins({{.*}}) outs(%[[FILL]] :
//       CHECK:   %[[BIAS:.+]] = linalg.generic {{.*}} ins(%[[MM]], {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:     arith.addf
//       CHECK:   linalg.generic {{.*}} ins(%[[BIAS]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:     arith.maximumf
//   CHECK-NOT:   kopt.group_id = 1
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @matmul_bias_relu(%a: tensor<64x128xf32>, %b: tensor<128x256xf32>, %bias: tensor<256xf32>) -> tensor<64x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x256xf32>) -> tensor<64x256xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x256xf32>) outs(%f : tensor<64x256xf32>) -> tensor<64x256xf32>
  %bb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<64x256xf32>, tensor<256xf32>) outs(%e : tensor<64x256xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64x256xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bb : tensor<64x256xf32>) outs(%e : tensor<64x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c0 = arith.constant 0.0 : f32
    %s = arith.maximumf %x, %c0 : f32
    linalg.yield %s : f32
  } -> tensor<64x256xf32>
  return %r : tensor<64x256xf32>
}

// -----

// matmul + bias + GELU (erf form): one contraction group.
// CHECK-LABEL: func.func @matmul_bias_gelu
//       CHECK:   %[[MM:.+]] = linalg.matmul {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:   %[[BIAS:.+]] = linalg.generic {{.*}} ins(%[[MM]], {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:   linalg.generic {{.*}} ins(%[[BIAS]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:     math.erf
//   CHECK-NOT:   kopt.group_id = 1
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @matmul_bias_gelu(%a: tensor<64x128xf32>, %b: tensor<128x256xf32>, %bias: tensor<256xf32>) -> tensor<64x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x256xf32>) -> tensor<64x256xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x256xf32>) outs(%f : tensor<64x256xf32>) -> tensor<64x256xf32>
  %bb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<64x256xf32>, tensor<256xf32>) outs(%e : tensor<64x256xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64x256xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bb : tensor<64x256xf32>) outs(%e : tensor<64x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %rs2 = arith.constant 0.70710678 : f32
    %t = arith.mulf %x, %rs2 : f32
    %erf = math.erf %t : f32
    %p = arith.addf %erf, %one : f32
    %hx = arith.mulf %x, %half : f32
    %r = arith.mulf %hx, %p : f32
    linalg.yield %r : f32
  } -> tensor<64x256xf32>
  return %g : tensor<64x256xf32>
}

// -----

// batch_matmul + scale (attention scores): one contraction group.
// CHECK-LABEL: func.func @batch_matmul_scale
//       CHECK:   %[[BMM:.+]] = linalg.batch_matmul {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:   linalg.generic {{.*}} ins(%[[BMM]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:     arith.mulf
//   CHECK-NOT:   kopt.group_id = 1
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @batch_matmul_scale(%q: tensor<4x32x16xf32>, %k: tensor<4x16x32xf32>) -> tensor<4x32x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x32x32xf32>) -> tensor<4x32x32xf32>
  %s = linalg.batch_matmul ins(%q, %k : tensor<4x32x16xf32>, tensor<4x16x32xf32>) outs(%f : tensor<4x32x32xf32>) -> tensor<4x32x32xf32>
  %sc = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<4x32x32xf32>) outs(%e : tensor<4x32x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 0.25 : f32
    %m = arith.mulf %x, %c : f32
    linalg.yield %m : f32
  } -> tensor<4x32x32xf32>
  return %sc : tensor<4x32x32xf32>
}

// -----

// conv_2d_nchw_fchw + bias + ReLU + max pooling: one convolution group that
// takes the pooling op too; the pooling init fill stays outside.
// CHECK-LABEL: func.func @conv_nchw_bias_relu_pool
//       CHECK:   %[[CONV:.+]] = linalg.conv_2d_nchw_fchw {{{.*}}kopt.group_id = 0 : i64, kopt.group_kind = "convolution"
//       CHECK:   %[[ACT:.+]] = linalg.generic {{.*}} ins(%[[CONV]], {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "convolution"}
//       CHECK:   %[[PFILL:.+]] = linalg.fill
//   CHECK-NOT:   kopt.group
//       CHECK:   linalg.pooling_nchw_max {{{.*}}kopt.group_id = 0 : i64, kopt.group_kind = "convolution"{{.*}} ins(%[[ACT]], {{.*}} outs(%[[PFILL]] :
//   CHECK-NOT:   kopt.group_id = 1
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @conv_nchw_bias_relu_pool(%x: tensor<2x8x18x18xf32>, %w: tensor<16x8x3x3xf32>, %bias: tensor<16xf32>) -> tensor<2x16x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x16x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x16x16x16xf32>) -> tensor<2x16x16x16xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<2x8x18x18xf32>, tensor<16x8x3x3xf32>) outs(%f : tensor<2x16x16x16xf32>) -> tensor<2x16x16x16xf32>
  %br = linalg.generic {indexing_maps = [#id4, #ch, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c, %bias : tensor<2x16x16x16xf32>, tensor<16xf32>) outs(%e : tensor<2x16x16x16xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %z : f32
    linalg.yield %r : f32
  } -> tensor<2x16x16x16xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %pe = tensor.empty() : tensor<2x16x8x8xf32>
  %pf = linalg.fill ins(%ninf : f32) outs(%pe : tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%br, %win : tensor<2x16x16x16xf32>, tensor<2x2xf32>) outs(%pf : tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32>
  return %p : tensor<2x16x8x8xf32>
}

// -----

// conv_2d_nhwc_hwcf + ReLU: one convolution group.
// CHECK-LABEL: func.func @conv_nhwc_relu
//       CHECK:   %[[CONV:.+]] = linalg.conv_2d_nhwc_hwcf {{{.*}}kopt.group_id = 0 : i64, kopt.group_kind = "convolution"
//       CHECK:   linalg.generic {{.*}} ins(%[[CONV]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "convolution"}
//   CHECK-NOT:   kopt.group_id = 1
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @conv_nhwc_relu(%x: tensor<1x10x10x8xf32>, %w: tensor<3x3x8x16xf32>) -> tensor<1x8x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x10x10x8xf32>, tensor<3x3x8x16xf32>) outs(%f : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c : tensor<1x8x8x16xf32>) outs(%e : tensor<1x8x8x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x16xf32>
  return %r : tensor<1x8x8x16xf32>
}

// -----

// A 1-D convolution anchors a group with its activation and a 1-D max
// pooling.
// CHECK-LABEL: func.func @conv1d_tanh_pool
//       CHECK:   %[[CONV:.+]] = linalg.conv_1d_nwc_wcf {{{.*}}kopt.group_id = 0 : i64, kopt.group_kind = "convolution"
//       CHECK:   %[[ACT:.+]] = linalg.map {{.*}} ins(%[[CONV]] : {{.*}} {kopt.group_id = 0 : i64, kopt.group_kind = "convolution"}
//       CHECK:   linalg.pooling_nwc_max {{{.*}}kopt.group_id = 0 : i64, kopt.group_kind = "convolution"{{.*}} ins(%[[ACT]],
//   CHECK-NOT:   kopt.group_id = 1
func.func @conv1d_tanh_pool(%x: tensor<1x18x8xf32>, %w: tensor<3x8x16xf32>, %o: tensor<1x16x16xf32>, %po: tensor<1x8x16xf32>) -> tensor<1x8x16xf32> {
  %c = linalg.conv_1d_nwc_wcf {dilations = dense<1> : tensor<1xi64>, strides = dense<1> : tensor<1xi64>}
      ins(%x, %w : tensor<1x18x8xf32>, tensor<3x8x16xf32>) outs(%o : tensor<1x16x16xf32>) -> tensor<1x16x16xf32>
  %r = linalg.map { math.tanh } ins(%c : tensor<1x16x16xf32>) outs(%o : tensor<1x16x16xf32>)
  %win = tensor.empty() : tensor<2xf32>
  %p = linalg.pooling_nwc_max {dilations = dense<1> : tensor<1xi64>, strides = dense<2> : tensor<1xi64>}
      ins(%r, %win : tensor<1x16x16xf32>, tensor<2xf32>) outs(%po : tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  return %p : tensor<1x8x16xf32>
}

// -----

// A depthwise convolution and its ReLU6: one convolution group.
// CHECK-LABEL: func.func @depthwise_relu6
//       CHECK:   %[[CONV:.+]] = linalg.depthwise_conv_2d_nhwc_hwc {{{.*}}kopt.group_id = 0 : i64, kopt.group_kind = "convolution"
//       CHECK:   linalg.generic {{.*}} ins(%[[CONV]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "convolution"}
//   CHECK-NOT:   kopt.group_id = 1
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @depthwise_relu6(%x: tensor<1x10x10x8xf32>, %w: tensor<3x3x8xf32>, %o: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %c = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x10x10x8xf32>, tensor<3x3x8xf32>) outs(%o : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c : tensor<1x8x8x8xf32>) outs(%o : tensor<1x8x8x8xf32>) {
  ^bb0(%v: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %six = arith.constant 6.0 : f32
    %lo = arith.maximumf %v, %z : f32
    %hi = arith.minimumf %lo, %six : f32
    linalg.yield %hi : f32
  } -> tensor<1x8x8x8xf32>
  return %r : tensor<1x8x8x8xf32>
}

// -----

// Softmax written as generic ops (row max, subtract, exp, row sum, divide) is
// one reduction group; the init fills stay outside.
// CHECK-LABEL: func.func @softmax_generic
//       CHECK:   %[[MAX:.+]] = linalg.generic {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:     arith.maximumf
//       CHECK:   %[[SUB:.+]] = linalg.generic {{.*}} ins(%{{.*}}, %[[MAX]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   %[[EXP:.+]] = linalg.generic {{.*}} ins(%[[SUB]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   linalg.fill
//   CHECK-NOT:   kopt.group
//       CHECK:   %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[EXP]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   linalg.generic {{.*}} ins(%[[EXP]], %[[SUM]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:     arith.divf
//   CHECK-NOT:   kopt.group_id = 1
#id = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
func.func @softmax_generic(%x: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty() : tensor<32xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%re : tensor<32xf32>) -> tensor<32xf32>
  %max = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<32x64xf32>) outs(%mi : tensor<32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.maximumf %v, %acc : f32
    linalg.yield %m : f32
  } -> tensor<32xf32>
  %e = tensor.empty() : tensor<32x64xf32>
  %sub = linalg.generic {indexing_maps = [#id, #r, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<32x64xf32>, tensor<32xf32>) outs(%e : tensor<32x64xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %s = arith.subf %v, %m : f32
    linalg.yield %s : f32
  } -> tensor<32x64xf32>
  %exp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sub : tensor<32x64xf32>) outs(%e : tensor<32x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = math.exp %v : f32
    linalg.yield %s : f32
  } -> tensor<32x64xf32>
  %si = linalg.fill ins(%zero : f32) outs(%re : tensor<32xf32>) -> tensor<32xf32>
  %sum = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%exp : tensor<32x64xf32>) outs(%si : tensor<32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  %div = linalg.generic {indexing_maps = [#id, #r, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %sum : tensor<32x64xf32>, tensor<32xf32>) outs(%e : tensor<32x64xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %d = arith.divf %v, %s : f32
    linalg.yield %d : f32
  } -> tensor<32x64xf32>
  return %div : tensor<32x64xf32>
}

// -----

// linalg.softmax alone is a group of one of kind softmax.
// CHECK-LABEL: func.func @softmax_op
//       CHECK:   linalg.softmax {kopt.group_id = 0 : i64, kopt.group_kind = "softmax"} dimension(2)
//   CHECK-NOT:   kopt.group_id = 1
func.func @softmax_op(%x: tensor<2x32x64xf32>) -> tensor<2x32x64xf32> {
  %e = tensor.empty() : tensor<2x32x64xf32>
  %s = linalg.softmax dimension(2) ins(%x : tensor<2x32x64xf32>) outs(%e : tensor<2x32x64xf32>) -> tensor<2x32x64xf32>
  return %s : tensor<2x32x64xf32>
}

// -----

// LayerNorm (mean, centre, variance, rsqrt, scale and shift): one reduction
// group, since both reductions run over the same rows.
// CHECK-LABEL: func.func @layernorm
//       CHECK:   %[[SUM:.+]] = linalg.generic {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   %[[MEAN:.+]] = linalg.generic {{.*}} ins(%[[SUM]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   %[[CENT:.+]] = linalg.generic {{.*}} ins(%{{.*}}, %[[MEAN]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   %[[SQ:.+]] = linalg.generic {{.*}} ins(%[[CENT]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   %[[RSTD:.+]] = linalg.generic {{.*}} ins(%[[SQ]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:     math.rsqrt
//       CHECK:   linalg.generic {{.*}} ins(%[[CENT]], %[[RSTD]], {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//   CHECK-NOT:   kopt.group_id = 1
#id = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
#c = affine_map<(d0, d1) -> (d1)>
#v = affine_map<(d0) -> (d0)>
func.func @layernorm(%x: tensor<16x64xf32>, %gamma: tensor<64xf32>, %beta: tensor<64xf32>) -> tensor<16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty() : tensor<16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%re : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x64xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %mean = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%sum : tensor<16xf32>) outs(%re : tensor<16xf32>) {
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant 64.0 : f32
    %m = arith.divf %s, %n : f32
    linalg.yield %m : f32
  } -> tensor<16xf32>
  %e = tensor.empty() : tensor<16x64xf32>
  %cent = linalg.generic {indexing_maps = [#id, #r, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean : tensor<16x64xf32>, tensor<16xf32>) outs(%e : tensor<16x64xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.subf %v, %m : f32
    linalg.yield %d : f32
  } -> tensor<16x64xf32>
  %sq = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%cent : tensor<16x64xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %p = arith.mulf %v, %v : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %rstd = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%sq : tensor<16xf32>) outs(%re : tensor<16xf32>) {
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant 64.0 : f32
    %eps = arith.constant 1.0e-5 : f32
    %var = arith.divf %s, %n : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %out = linalg.generic {indexing_maps = [#id, #r, #c, #c, #id], iterator_types = ["parallel", "parallel"]}
      ins(%cent, %rstd, %gamma, %beta : tensor<16x64xf32>, tensor<16xf32>, tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<16x64xf32>) {
  ^bb0(%v: f32, %r: f32, %g: f32, %b: f32, %o: f32):
    %n = arith.mulf %v, %r : f32
    %s = arith.mulf %n, %g : f32
    %t = arith.addf %s, %b : f32
    linalg.yield %t : f32
  } -> tensor<16x64xf32>
  return %out : tensor<16x64xf32>
}

// -----

// RMSNorm: one reduction group.
// CHECK-LABEL: func.func @rmsnorm
//       CHECK:   %[[SQ:.+]] = linalg.generic {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   %[[RMS:.+]] = linalg.generic {{.*}} ins(%[[SQ]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   linalg.generic {{.*}} ins(%{{.*}}, %[[RMS]], {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//   CHECK-NOT:   kopt.group_id = 1
#id = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
#c = affine_map<(d0, d1) -> (d1)>
#v = affine_map<(d0) -> (d0)>
func.func @rmsnorm(%x: tensor<16x64xf32>, %gamma: tensor<64xf32>) -> tensor<16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty() : tensor<16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%re : tensor<16xf32>) -> tensor<16xf32>
  %sq = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x64xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %p = arith.mulf %v, %v : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %rms = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%sq : tensor<16xf32>) outs(%re : tensor<16xf32>) {
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant 64.0 : f32
    %eps = arith.constant 1.0e-6 : f32
    %m = arith.divf %s, %n : f32
    %me = arith.addf %m, %eps : f32
    %r = math.rsqrt %me : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %e = tensor.empty() : tensor<16x64xf32>
  %out = linalg.generic {indexing_maps = [#id, #r, #c, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %rms, %gamma : tensor<16x64xf32>, tensor<16xf32>, tensor<64xf32>) outs(%e : tensor<16x64xf32>) {
  ^bb0(%v: f32, %r: f32, %g: f32, %o: f32):
    %n = arith.mulf %v, %r : f32
    %s = arith.mulf %n, %g : f32
    linalg.yield %s : f32
  } -> tensor<16x64xf32>
  return %out : tensor<16x64xf32>
}

// -----

// logsumexp: max, then a sum of exp(x - max), then log + max over the rows:
// one reduction group.
// CHECK-LABEL: func.func @logsumexp
//       CHECK:   %[[MAX:.+]] = linalg.generic {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   %[[SUM:.+]] = linalg.generic {{.*}} ins(%{{.*}}, %[[MAX]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   linalg.generic {{.*}} ins(%[[SUM]], %[[MAX]] : {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:     math.log
//   CHECK-NOT:   kopt.group_id = 1
#id = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
func.func @logsumexp(%x: tensor<8x128xf32>) -> tensor<8xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty() : tensor<8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%re : tensor<8xf32>) -> tensor<8xf32>
  %max = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x128xf32>) outs(%mi : tensor<8xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.maximumf %v, %acc : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %si = linalg.fill ins(%zero : f32) outs(%re : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x, %max : tensor<8x128xf32>, tensor<8xf32>) outs(%si : tensor<8xf32>) {
  ^bb0(%v: f32, %m: f32, %acc: f32):
    %d = arith.subf %v, %m : f32
    %ex = math.exp %d : f32
    %s = arith.addf %ex, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %lse = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%sum, %max : tensor<8xf32>, tensor<8xf32>) outs(%re : tensor<8xf32>) {
  ^bb0(%s: f32, %m: f32, %o: f32):
    %l = math.log %s : f32
    %a = arith.addf %l, %m : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>
  return %lse : tensor<8xf32>
}

// -----

// Mean and variance: two reductions over the same rows and the elementwise ops
// combining them are one reduction group, and a reduction result returned
// from the function stays in it.
// CHECK-LABEL: func.func @mean_variance
//       CHECK:   %[[SUM:.+]] = linalg.generic {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   %[[SUMSQ:.+]] = linalg.generic {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   %[[SUM2:.+]] = linalg.map { arith.mulf } ins(%[[SUM]], %[[SUM]] : {{.*}} {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   %[[VAR:.+]] = linalg.map { arith.subf } ins(%[[SUMSQ]], %[[SUM2]] : {{.*}} {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//       CHECK:   return %[[SUM]], %[[VAR]]
//   CHECK-NOT:   kopt.group_id = 1
#id = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
func.func @mean_variance(%x: tensor<16x64xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty() : tensor<16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%re : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x64xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %sumsq = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x64xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %p = arith.mulf %v, %v : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %sum2 = linalg.map { arith.mulf } ins(%sum, %sum : tensor<16xf32>, tensor<16xf32>) outs(%re : tensor<16xf32>)
  %var = linalg.map { arith.subf } ins(%sumsq, %sum2 : tensor<16xf32>, tensor<16xf32>) outs(%re : tensor<16xf32>)
  return %sum, %var : tensor<16xf32>, tensor<16xf32>
}

// -----

// A reduction with nothing to fuse is still a group of one.
// CHECK-LABEL: func.func @lone_reduction
//       CHECK:   linalg.fill
//   CHECK-NOT:   kopt.group
//       CHECK:   linalg.generic {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "reduction"}
//   CHECK-NOT:   kopt.group_id = 1
#id = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
func.func @lone_reduction(%x: tensor<16x64xf32>) -> tensor<16xf32> {
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty() : tensor<16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%re : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x64xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %sum : tensor<16xf32>
}

// -----

// A lone elementwise op gains nothing from tuning and is left ungrouped.
// CHECK-LABEL: func.func @lone_elementwise
//   CHECK-NOT:   kopt.group
//       CHECK:   linalg.map { math.exp }
//   CHECK-NOT:   kopt.group
//       CHECK:   return
func.func @lone_elementwise(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %e = tensor.empty() : tensor<16x64xf32>
  %r = linalg.map { math.exp } ins(%x : tensor<16x64xf32>) outs(%e : tensor<16x64xf32>)
  return %r : tensor<16x64xf32>
}

// -----

// %a feeds the matmul and %b, which also reads the matmul's result. Grouping
// %a with %b would leave the matmul between them outside, a cycle, so only
// the matmul is grouped; %b (a larger domain) cannot join the matmul either.
// CHECK-LABEL: func.func @cycle
//       CHECK:   %[[A:.+]] = linalg.map { math.exp }
//   CHECK-NOT:   kopt.group
//       CHECK:   %[[MM:.+]] = linalg.matmul {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"} ins(%[[A]],
//   CHECK-NOT:   kopt.group
//       CHECK:   linalg.generic {{.*}} ins(%[[A]], %[[MM]] :
//   CHECK-NOT:   kopt.group
//       CHECK:   return
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#m = affine_map<(d0, d1, d2) -> (d0, d1)>
#o = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @cycle(%x: tensor<64x128xf32>, %w: tensor<128x64xf32>) -> tensor<64x64x128xf32> {
  %zero = arith.constant 0.0 : f32
  %ea = tensor.empty() : tensor<64x128xf32>
  %a = linalg.map { math.exp } ins(%x : tensor<64x128xf32>) outs(%ea : tensor<64x128xf32>)
  %em = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%em : tensor<64x64xf32>) -> tensor<64x64xf32>
  %mm = linalg.matmul ins(%a, %w : tensor<64x128xf32>, tensor<128x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  %eb = tensor.empty() : tensor<64x64x128xf32>
  %b = linalg.generic {indexing_maps = [#a, #m, #o], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a, %mm : tensor<64x128xf32>, tensor<64x64xf32>) outs(%eb : tensor<64x64x128xf32>) {
  ^bb0(%p: f32, %q: f32, %o2: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<64x64x128xf32>
  return %b : tensor<64x64x128xf32>
}

// -----

// The division reads the matmul and the row sum of the matmul. Putting it in
// the matmul's group would leave the reduction between two members, a cycle;
// it joins the reduction's group instead.
// CHECK-LABEL: func.func @cycle_through_reduction
//       CHECK:   %[[MM:.+]] = linalg.matmul {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//   CHECK-NOT:   kopt.group_id = 0
//       CHECK:   %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[MM]] : {{.*}} attrs = {kopt.group_id = 1 : i64, kopt.group_kind = "reduction"}
//   CHECK-NOT:   kopt.group_id = 0
//       CHECK:   linalg.generic {{.*}} ins(%[[MM]], %[[SUM]] : {{.*}} attrs = {kopt.group_id = 1 : i64, kopt.group_kind = "reduction"}
//   CHECK-NOT:   kopt.group_id = 2
#id = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
func.func @cycle_through_reduction(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %em = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%em : tensor<64x64xf32>) -> tensor<64x64xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<64x64xf32>, tensor<64x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  %re = tensor.empty() : tensor<64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%re : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%mm : tensor<64x64xf32>) outs(%z : tensor<64xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %div = linalg.generic {indexing_maps = [#id, #r, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %sum : tensor<64x64xf32>, tensor<64xf32>) outs(%em : tensor<64x64xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %d = arith.divf %v, %s : f32
    linalg.yield %d : f32
  } -> tensor<64x64xf32>
  return %div : tensor<64x64xf32>
}

// -----

// The biased value is returned as well as fed to tanh: still one group, and
// each op appears once (nothing is duplicated).
// CHECK-LABEL: func.func @used_outside
//       CHECK:   %[[MM:.+]] = linalg.matmul {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:   %[[BIAS:.+]] = linalg.generic {{.*}} ins(%[[MM]], {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:   %[[ACT:.+]] = linalg.map { math.tanh } ins(%[[BIAS]] : {{.*}} {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//   CHECK-NOT:   linalg.generic
//   CHECK-NOT:   linalg.map
//       CHECK:   return %[[BIAS]], %[[ACT]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @used_outside(%a: tensor<64x128xf32>, %b: tensor<128x256xf32>, %bias: tensor<256xf32>) -> (tensor<64x256xf32>, tensor<64x256xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x256xf32>) -> tensor<64x256xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x256xf32>) outs(%f : tensor<64x256xf32>) -> tensor<64x256xf32>
  %bb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<64x256xf32>, tensor<256xf32>) outs(%e : tensor<64x256xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64x256xf32>
  %r = linalg.map { math.tanh } ins(%bb : tensor<64x256xf32>) outs(%e : tensor<64x256xf32>)
  return %bb, %r : tensor<64x256xf32>, tensor<64x256xf32>
}

// -----

// Reshapes between a matmul and its epilogue (expand, residual add, collapse,
// activation) are absorbed with it.
// CHECK-LABEL: func.func @reshape_epilogue
//       CHECK:   %[[MM:.+]] = linalg.matmul {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:   %[[EXP:.+]] = tensor.expand_shape %[[MM]] {{.*}} {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:   %[[ADD:.+]] = linalg.map { arith.addf } ins(%[[EXP]], {{.*}} {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:   %[[COL:.+]] = tensor.collapse_shape %[[ADD]] {{.*}} {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:   linalg.map { math.tanh } ins(%[[COL]] : {{.*}} {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//   CHECK-NOT:   kopt.group_id = 1
func.func @reshape_epilogue(%a: tensor<64x128xf32>, %b: tensor<128x256xf32>, %res: tensor<4x16x256xf32>) -> tensor<64x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x256xf32>) -> tensor<64x256xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x256xf32>) outs(%f : tensor<64x256xf32>) -> tensor<64x256xf32>
  %x = tensor.expand_shape %mm [[0, 1], [2]] output_shape [4, 16, 256] : tensor<64x256xf32> into tensor<4x16x256xf32>
  %e3 = tensor.empty() : tensor<4x16x256xf32>
  %add = linalg.map { arith.addf } ins(%x, %res : tensor<4x16x256xf32>, tensor<4x16x256xf32>) outs(%e3 : tensor<4x16x256xf32>)
  %c = tensor.collapse_shape %add [[0, 1], [2]] : tensor<4x16x256xf32> into tensor<64x256xf32>
  %act = linalg.map { math.tanh } ins(%c : tensor<64x256xf32>) outs(%e : tensor<64x256xf32>)
  return %act : tensor<64x256xf32>
}

// -----

// A reshape of the group's result that feeds no member is left outside: the
// group's output keeps the matmul's shape.
// CHECK-LABEL: func.func @dangling_reshape
//       CHECK:   %[[MM:.+]] = linalg.matmul {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:   %[[ACT:.+]] = linalg.map { math.tanh } ins(%[[MM]] : {{.*}} {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//   CHECK-NOT:   kopt.group
//       CHECK:   tensor.expand_shape %[[ACT]]
//   CHECK-NOT:   kopt.group
//       CHECK:   return
func.func @dangling_reshape(%a: tensor<64x128xf32>, %b: tensor<128x256xf32>) -> tensor<4x16x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x256xf32>) -> tensor<64x256xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x256xf32>) outs(%f : tensor<64x256xf32>) -> tensor<64x256xf32>
  %act = linalg.map { math.tanh } ins(%mm : tensor<64x256xf32>) outs(%e : tensor<64x256xf32>)
  %x = tensor.expand_shape %act [[0, 1], [2]] output_shape [4, 16, 256] : tensor<64x256xf32> into tensor<4x16x256xf32>
  return %x : tensor<4x16x256xf32>
}

// -----

// A convolution with padding and a bias, as torch-mlir writes it: a zero
// pad of the input and a broadcast of the bias that the convolution
// accumulates into. Both join the convolution's group (cuDNN pads as it
// reads; the epilogue reads the bias vector).
// CHECK-LABEL: func.func @padded_conv_bias
//       CHECK:   %[[PAD:.+]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
//       CHECK:   } {kopt.group_id = 0 : i64, kopt.group_kind = "convolution"}
//       CHECK:   %[[BR:.+]] = linalg.broadcast {{.*}} {kopt.group_id = 0 : i64, kopt.group_kind = "convolution"}
//       CHECK:   linalg.conv_2d_nchw_fchw {{{.*}}kopt.group_id = 0 : i64, kopt.group_kind = "convolution"{{.*}} ins(%[[PAD]], {{.*}} outs(%[[BR]] :
//   CHECK-NOT:   kopt.group_id = 1
func.func @padded_conv_bias(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %bias: tensor<4xf32>) -> tensor<2x4x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x3x8x8xf32> to tensor<2x3x10x10xf32>
  %e = tensor.empty() : tensor<2x4x8x8xf32>
  %br = linalg.broadcast ins(%bias : tensor<4xf32>) outs(%e : tensor<2x4x8x8xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%padded, %w : tensor<2x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%br : tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %c : tensor<2x4x8x8xf32>
}

// -----

// A max-pool with padding: the -inf pad joins the pooling op's group.
// CHECK-LABEL: func.func @padded_max_pool
//       CHECK:   %[[PAD:.+]] = tensor.pad
//       CHECK:   } {kopt.group_id = 0 : i64, kopt.group_kind = "pooling"}
//       CHECK:   linalg.pooling_nchw_max {{{.*}}kopt.group_id = 0 : i64, kopt.group_kind = "pooling"{{.*}} ins(%[[PAD]],
//   CHECK-NOT:   kopt.group_id = 1
func.func @padded_max_pool(%x: tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<2x3x8x8xf32> to tensor<2x3x10x10xf32>
  %e = tensor.empty() : tensor<2x3x4x4xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%padded, %win : tensor<2x3x10x10xf32>, tensor<3x3xf32>) outs(%f : tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  return %p : tensor<2x3x4x4xf32>
}

// -----

// Convolution, ReLU, then a padded max-pool: the pad between the ReLU and
// the pooling op no longer stops the convolution group from taking the
// pooling op; both join it.
// CHECK-LABEL: func.func @conv_relu_padded_pool
//       CHECK:   linalg.conv_2d_nchw_fchw {{{.*}}kopt.group_id = 0 : i64, kopt.group_kind = "convolution"
//       CHECK:   %[[ACT:.+]] = linalg.map {{.*}} {kopt.group_id = 0 : i64, kopt.group_kind = "convolution"}
//       CHECK:   %[[PAD:.+]] = tensor.pad %[[ACT]]
//       CHECK:   } {kopt.group_id = 0 : i64, kopt.group_kind = "convolution"}
//       CHECK:   linalg.pooling_nchw_max {{{.*}}kopt.group_id = 0 : i64, kopt.group_kind = "convolution"{{.*}} ins(%[[PAD]],
//   CHECK-NOT:   kopt.group_id = 1
func.func @conv_relu_padded_pool(%x: tensor<2x3x10x10xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<2x4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<2x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%f : tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %r = linalg.map { math.tanh } ins(%c : tensor<2x4x8x8xf32>) outs(%e : tensor<2x4x8x8xf32>)
  %padded = tensor.pad %r low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<2x4x8x8xf32> to tensor<2x4x10x10xf32>
  %pe = tensor.empty() : tensor<2x4x4x4xf32>
  %pf = linalg.fill ins(%ninf : f32) outs(%pe : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%padded, %win : tensor<2x4x10x10xf32>, tensor<3x3xf32>) outs(%pf : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  return %p : tensor<2x4x4x4xf32>
}

// -----

// Pads that stay outside: one read by two convolutions (it can join only
// one group, and nothing is duplicated), one the function also returns, and
// one whose padding value is not a constant.
// CHECK-LABEL: func.func @pads_left_alone
//       CHECK:   tensor.pad
//   CHECK-NOT:     kopt.group
//       CHECK:   } : tensor<1x3x8x8xf32> to tensor<1x3x10x10xf32>
//       CHECK:   linalg.conv_2d_nchw_fchw {{{.*}}kopt.group_id = 0 : i64
//       CHECK:   linalg.conv_2d_nchw_fchw {{{.*}}kopt.group_id = 1 : i64
//       CHECK:   tensor.pad
//   CHECK-NOT:     kopt.group
//       CHECK:   } : tensor<1x3x8x8xf32> to tensor<1x3x10x10xf32>
//       CHECK:   linalg.pooling_nchw_max {{{.*}}kopt.group_id = 2 : i64
//       CHECK:   tensor.pad
//   CHECK-NOT:     kopt.group
//       CHECK:   } : tensor<1x3x8x8xf32> to tensor<1x3x10x10xf32>
//       CHECK:   linalg.pooling_nchw_max {{{.*}}kopt.group_id = 3 : i64
func.func @pads_left_alone(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %v: f32)
    -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x3x10x10xf32>, tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %shared = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x3x8x8xf32> to tensor<1x3x10x10xf32>
  %e = tensor.empty() : tensor<1x4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %c0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%shared, %w : tensor<1x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%f : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%shared, %w : tensor<1x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%f : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %returned = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<1x3x8x8xf32> to tensor<1x3x10x10xf32>
  %pe = tensor.empty() : tensor<1x3x8x8xf32>
  %pf = linalg.fill ins(%ninf : f32) outs(%pe : tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %p0 = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%returned, %win : tensor<1x3x10x10xf32>, tensor<3x3xf32>) outs(%pf : tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  %computed = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %v : f32
  } : tensor<1x3x8x8xf32> to tensor<1x3x10x10xf32>
  %p1 = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%computed, %win : tensor<1x3x10x10xf32>, tensor<3x3xf32>) outs(%pf : tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  return %c0, %c1, %returned, %p0, %p1 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x3x10x10xf32>, tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>
}

// -----

// A matmul whose product a GroupNorm reduces in f64 (torch's cast before
// the statistics): the cast leaves the matmul's epilogue for the
// reduction's group, so the matmul writes its f32 product once and the
// reduction widens it as it reads it, rather than the epilogue writing an
// f64 copy twice the product's size. A cast the epilogue itself reads
// stays in it.
// CHECK-LABEL: func.func @matmul_cast_for_reduction
//       CHECK:   %[[MM:.+]] = linalg.matmul {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:   %[[V:.+]] = tensor.expand_shape %[[MM]]
//   CHECK-NOT:   kopt.group_id = 0
//       CHECK:   %[[W:.+]] = linalg.generic {{.*}} ins(%[[V]] : {{.*}} attrs = {kopt.group_id = 1 : i64, kopt.group_kind = "reduction"}
//       CHECK:     arith.extf
//       CHECK:   linalg.generic {{.*}} ins(%[[W]] : {{.*}} attrs = {kopt.group_id = 1 : i64, kopt.group_kind = "reduction"}
// CHECK-LABEL: func.func @matmul_cast_in_epilogue
//       CHECK:   linalg.matmul {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:   linalg.generic {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:     arith.extf
//       CHECK:   linalg.generic {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       CHECK:     arith.mulf
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @matmul_cast_for_reduction(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x2x1xf64> {
  %zero = arith.constant 0.0 : f32
  %dzero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %v = tensor.expand_shape %mm [[0], [1, 2]] output_shape [4, 2, 8] : tensor<4x16xf32> into tensor<4x2x8xf32>
  %ew = tensor.empty() : tensor<4x2x8xf64>
  %w = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : tensor<4x2x8xf32>) outs(%ew : tensor<4x2x8xf64>) {
  ^bb0(%x: f32, %o: f64):
    %c = arith.extf %x : f32 to f64
    linalg.yield %c : f64
  } -> tensor<4x2x8xf64>
  %es = tensor.empty() : tensor<4x2x1xf64>
  %fs = linalg.fill ins(%dzero : f64) outs(%es : tensor<4x2x1xf64>) -> tensor<4x2x1xf64>
  %s = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w : tensor<4x2x8xf64>) outs(%fs : tensor<4x2x1xf64>) {
  ^bb0(%x: f64, %o: f64):
    %r = arith.addf %x, %o : f64
    linalg.yield %r : f64
  } -> tensor<4x2x1xf64>
  return %s : tensor<4x2x1xf64>
}

func.func @matmul_cast_in_epilogue(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf64> {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f64
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %ew = tensor.empty() : tensor<4x16xf64>
  %w = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<4x16xf32>) outs(%ew : tensor<4x16xf64>) {
  ^bb0(%x: f32, %o: f64):
    %c = arith.extf %x : f32 to f64
    linalg.yield %c : f64
  } -> tensor<4x16xf64>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<4x16xf64>) outs(%ew : tensor<4x16xf64>) {
  ^bb0(%x: f64, %o: f64):
    %r = arith.mulf %x, %two : f64
    linalg.yield %r : f64
  } -> tensor<4x16xf64>
  return %y : tensor<4x16xf64>
}
