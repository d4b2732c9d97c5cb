// RUN: kopt-opt %s --kopt-fusion-planning --split-input-file | FileCheck %s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Outlining of fusion groups into keyed private functions, and the keys.

// Two matmul groups: the first one's bias result is also returned, so it is a
// result of the outlined function; cheap constants, tensor.empty and the zero
// fills are cloned into the functions, never passed; the calls replace the
// members and the parent keeps no linalg op.
// CHECK-LABEL: func.func private @mlp_kopt_g0_contraction(
//  CHECK-SAME:     %[[X:[a-zA-Z0-9]+]]: tensor<64x128xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<128x256xf32>, %[[B:[a-zA-Z0-9]+]]: tensor<256xf32>)
//  CHECK-SAME:     -> (tensor<64x256xf32>, tensor<64x256xf32>)
//  CHECK-SAME:     attributes {kopt.fusion_group = {id = 0 : i64, kind = "contraction", parent = "mlp"}, kopt.key = "[[K0:[0-9a-f]{64}]]"}
//       CHECK:   %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
//       CHECK:   %[[EMPTY:.+]] = tensor.empty() : tensor<64x256xf32>
//       CHECK:   %[[FILL:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] :
//       CHECK:   %[[MM:.+]] = linalg.matmul ins(%[[X]], %[[W]] : {{.*}}) outs(%[[FILL]] :
//       CHECK:   %[[BIAS:.+]] = linalg.generic {{.*}} ins(%[[MM]], %[[B]] :
//       CHECK:   %[[ACT:.+]] = linalg.map { math.tanh } ins(%[[BIAS]] :
//       CHECK:   return %[[BIAS]], %[[ACT]] : tensor<64x256xf32>, tensor<64x256xf32>
//
// CHECK-LABEL: func.func private @mlp_kopt_g1_contraction(
//  CHECK-SAME:     %[[H:[a-zA-Z0-9]+]]: tensor<64x256xf32>, %[[W2:[a-zA-Z0-9]+]]: tensor<256x32xf32>) -> tensor<64x32xf32>
//  CHECK-SAME:     attributes {kopt.fusion_group = {id = 1 : i64, kind = "contraction", parent = "mlp"}, kopt.key = "[[K1:[0-9a-f]{64}]]"}
//   CHECK-DAG:   %[[TWO:.+]] = arith.constant dense<2.000000e+00> : tensor<64x32xf32>
//   CHECK-DAG:   %[[FILL2:.+]] = linalg.fill
//       CHECK:   %[[Y:.+]] = linalg.matmul ins(%[[H]], %[[W2]] : {{.*}}) outs(%[[FILL2]] :
//       CHECK:   %[[YS:.+]] = linalg.map { arith.mulf } ins(%[[Y]], %[[TWO]] :
//       CHECK:   return %[[YS]] : tensor<64x32xf32>
//
// CHECK-LABEL: func.func @mlp(
//  CHECK-SAME:     %[[A0:[a-zA-Z0-9]+]]: tensor<64x128xf32>, %[[A1:[a-zA-Z0-9]+]]: tensor<128x256xf32>, %[[A2:[a-zA-Z0-9]+]]: tensor<256xf32>, %[[A3:[a-zA-Z0-9]+]]: tensor<256x32xf32>)
//   CHECK-NOT:   arith.constant
//   CHECK-NOT:   tensor.empty
//   CHECK-NOT:   linalg.
//       CHECK:   %[[R0:.+]]:2 = call @mlp_kopt_g0_contraction(%[[A0]], %[[A1]], %[[A2]]) {kopt.fusion_group = 0 : i64, kopt.key = "[[K0]]"}
//  CHECK-SAME:     : (tensor<64x128xf32>, tensor<128x256xf32>, tensor<256xf32>) -> (tensor<64x256xf32>, tensor<64x256xf32>)
//       CHECK:   %[[R1:.+]] = call @mlp_kopt_g1_contraction(%[[R0]]#1, %[[A3]]) {kopt.fusion_group = 1 : i64, kopt.key = "[[K1]]"}
//   CHECK-NOT:   linalg.
//       CHECK:   return %[[R0]]#0, %[[R1]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @mlp(%x: tensor<64x128xf32>, %w1: tensor<128x256xf32>, %b1: tensor<256xf32>, %w2: tensor<256x32xf32>) -> (tensor<64x256xf32>, tensor<64x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64x256xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x256xf32>) -> tensor<64x256xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<64x128xf32>, tensor<128x256xf32>) outs(%f1 : tensor<64x256xf32>) -> tensor<64x256xf32>
  %hb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %b1 : tensor<64x256xf32>, tensor<256xf32>) outs(%e1 : tensor<64x256xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    linalg.yield %s : f32
  } -> tensor<64x256xf32>
  %act = linalg.map { math.tanh } ins(%hb : tensor<64x256xf32>) outs(%e1 : tensor<64x256xf32>)
  %e2 = tensor.empty() : tensor<64x32xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = linalg.matmul ins(%act, %w2 : tensor<64x256xf32>, tensor<256x32xf32>) outs(%f2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %two = arith.constant dense<2.0> : tensor<64x32xf32>
  %ys = linalg.map { arith.mulf } ins(%y, %two : tensor<64x32xf32>, tensor<64x32xf32>) outs(%e2 : tensor<64x32xf32>)
  return %hb, %ys : tensor<64x256xf32>, tensor<64x32xf32>
}

// -----

// A non-splat constant is passed as an argument; the scalar constant and the
// fill of it are cloned.
// CHECK-LABEL: func.func private @consts_kopt_g0_elementwise(
//  CHECK-SAME:     %[[SCALE:[a-zA-Z0-9]+]]: tensor<4xf32>, %[[X:[a-zA-Z0-9]+]]: tensor<8x4xf32>) -> tensor<8x4xf32>
//   CHECK-NOT:   dense<[1.0
//       CHECK:   %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
//       CHECK:   %[[BCAST:.+]] = linalg.broadcast ins(%[[SCALE]] :
//       CHECK:   %[[ONES:.+]] = linalg.fill ins(%[[ONE]] : f32)
//       CHECK:   %[[MUL:.+]] = linalg.map { arith.mulf } ins(%[[X]], %[[BCAST]] :
//       CHECK:   linalg.map { arith.addf } ins(%[[MUL]], %[[ONES]] :
// CHECK-LABEL: func.func @consts(
//  CHECK-SAME:     %[[ARG:[a-zA-Z0-9]+]]: tensor<8x4xf32>)
//       CHECK:   %[[CST:.+]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
//   CHECK-NOT:   linalg.fill
//       CHECK:   call @consts_kopt_g0_elementwise(%[[CST]], %[[ARG]])
func.func @consts(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %scale = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %one = arith.constant 1.0 : f32
  %ones = linalg.fill ins(%one : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %b = linalg.broadcast ins(%scale : tensor<4xf32>) outs(%e : tensor<8x4xf32>) dimensions = [0]
  %m = linalg.map { arith.mulf } ins(%x, %b : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>)
  %a = linalg.map { arith.addf } ins(%m, %ones : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>)
  return %a : tensor<8x4xf32>
}

// -----

// Structurally identical groups in @first and @second (other SSA names, the
// two independent ops in the other order, arguments swapped) get the same
// key, and the call passes the arguments in the canonical order. @third
// differs only in shape and gets another key.
// CHECK-LABEL: func.func private @first_kopt_g0_elementwise(
//  CHECK-SAME:     kopt.key = "[[KEY:[0-9a-f]{64}]]"
// CHECK-LABEL: func.func @first(
//  CHECK-SAME:     %[[X:[a-zA-Z0-9]+]]: tensor<16x32xf32>, %[[Y:[a-zA-Z0-9]+]]: tensor<16x32xf32>)
//       CHECK:   call @first_kopt_g0_elementwise(%[[X]], %[[Y]]) {kopt.fusion_group = 0 : i64, kopt.key = "[[KEY]]"}
// CHECK-LABEL: func.func private @second_kopt_g0_elementwise(
//  CHECK-SAME:     kopt.key = "[[KEY]]"
// CHECK-LABEL: func.func @second(
//  CHECK-SAME:     %[[L:[a-zA-Z0-9]+]]: tensor<16x32xf32>, %[[R:[a-zA-Z0-9]+]]: tensor<16x32xf32>)
//       CHECK:   call @second_kopt_g0_elementwise(%[[R]], %[[L]]) {kopt.fusion_group = 0 : i64, kopt.key = "[[KEY]]"}
// CHECK-LABEL: func.func private @third_kopt_g0_elementwise(
//   CHECK-NOT:   [[KEY]]
//       CHECK:   return
// CHECK-LABEL: func.func @third(
//       CHECK:   call @third_kopt_g0_elementwise(
//  CHECK-SAME:     kopt.key = "{{([0-9a-f]{64})}}"
//   CHECK-NOT:   [[KEY]]
//       CHECK:   return
func.func @first(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %e = tensor.empty() : tensor<16x32xf32>
  %a = linalg.map { math.exp } ins(%x : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>)
  %b = linalg.map { math.tanh } ins(%y : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>)
  %c = linalg.map { arith.addf } ins(%a, %b : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e : tensor<16x32xf32>)
  return %c : tensor<16x32xf32>
}
func.func @second(%lhs: tensor<16x32xf32>, %rhs: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %init = tensor.empty() : tensor<16x32xf32>
  %t = linalg.map { math.tanh } ins(%lhs : tensor<16x32xf32>) outs(%init : tensor<16x32xf32>)
  %ex = linalg.map { math.exp } ins(%rhs : tensor<16x32xf32>) outs(%init : tensor<16x32xf32>)
  %sum = linalg.map { arith.addf } ins(%ex, %t : tensor<16x32xf32>, tensor<16x32xf32>) outs(%init : tensor<16x32xf32>)
  return %sum : tensor<16x32xf32>
}
func.func @third(%x: tensor<16x64xf32>, %y: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %e = tensor.empty() : tensor<16x64xf32>
  %a = linalg.map { math.exp } ins(%x : tensor<16x64xf32>) outs(%e : tensor<16x64xf32>)
  %b = linalg.map { math.tanh } ins(%y : tensor<16x64xf32>) outs(%e : tensor<16x64xf32>)
  %c = linalg.map { arith.addf } ins(%a, %b : tensor<16x64xf32>, tensor<16x64xf32>) outs(%e : tensor<16x64xf32>)
  return %c : tensor<16x64xf32>
}

// -----

// Equal groups get one key even when one source shares a tensor.empty between
// its ops and the other makes one per op: identical clones are deduplicated
// before the canonical form is taken.
// CHECK-LABEL: func.func private @shared_empty_kopt_g0_elementwise(
//  CHECK-SAME:     kopt.key = "[[KE:[0-9a-f]{64}]]"
//       CHECK:   tensor.empty
//   CHECK-NOT:   tensor.empty
//       CHECK:   return
// CHECK-LABEL: func.func @shared_empty(
// CHECK-LABEL: func.func private @separate_empties_kopt_g0_elementwise(
//  CHECK-SAME:     kopt.key = "[[KE]]"
func.func @shared_empty(%x: tensor<32xf32>) -> tensor<32xf32> {
  %e = tensor.empty() : tensor<32xf32>
  %a = linalg.exp ins(%x : tensor<32xf32>) outs(%e : tensor<32xf32>) -> tensor<32xf32>
  %b = linalg.negf ins(%a : tensor<32xf32>) outs(%e : tensor<32xf32>) -> tensor<32xf32>
  return %b : tensor<32xf32>
}
func.func @separate_empties(%y: tensor<32xf32>) -> tensor<32xf32> {
  %e1 = tensor.empty() : tensor<32xf32>
  %a = linalg.exp ins(%y : tensor<32xf32>) outs(%e1 : tensor<32xf32>) -> tensor<32xf32>
  %e2 = tensor.empty() : tensor<32xf32>
  %b = linalg.negf ins(%a : tensor<32xf32>) outs(%e2 : tensor<32xf32>) -> tensor<32xf32>
  return %b : tensor<32xf32>
}

// -----

// torch-mlir's grouped convolution (RegNet, ResNeXt) fills an empty tensor
// reshaped to [N, G, C/G, H, W]: the reshape of the empty tensor is cloned
// with the fill into the convolution's group, never passed to it, and the
// parent keeps only the reshapes of real values.
// CHECK-LABEL: func.func private @grouped_conv_kopt_g0_convolution(
//  CHECK-SAME:     %[[X:[a-zA-Z0-9]+]]: tensor<1x2x4x10x10xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<2x4x4x3x3xf32>) -> tensor<1x2x4x8x8xf32>
//       CHECK:   %[[EMPTY:.+]] = tensor.empty() : tensor<1x8x8x8xf32>
//       CHECK:   %[[SPLIT:.+]] = tensor.expand_shape %[[EMPTY]]
//       CHECK:   %[[FILL:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[SPLIT]] :
//       CHECK:   linalg.conv_2d_ngchw_gfchw {{.*}} ins(%[[X]], %[[W]] : {{.*}}) outs(%[[FILL]] :
// CHECK-LABEL: func.func @grouped_conv(
//   CHECK-NOT:   tensor.empty
//   CHECK-NOT:   linalg.
//       CHECK:   call @grouped_conv_kopt_g0_convolution(
func.func @grouped_conv(%x: tensor<1x8x10x10xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %xs = tensor.expand_shape %x [[0], [1, 2], [3], [4]] output_shape [1, 2, 4, 10, 10] : tensor<1x8x10x10xf32> into tensor<1x2x4x10x10xf32>
  %ws = tensor.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [2, 4, 4, 3, 3] : tensor<8x4x3x3xf32> into tensor<2x4x4x3x3xf32>
  %e = tensor.empty() : tensor<1x8x8x8xf32>
  %es = tensor.expand_shape %e [[0], [1, 2], [3], [4]] output_shape [1, 2, 4, 8, 8] : tensor<1x8x8x8xf32> into tensor<1x2x4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%es : tensor<1x2x4x8x8xf32>) -> tensor<1x2x4x8x8xf32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%xs, %ws : tensor<1x2x4x10x10xf32>, tensor<2x4x4x3x3xf32>) outs(%f : tensor<1x2x4x8x8xf32>) -> tensor<1x2x4x8x8xf32>
  %r = tensor.collapse_shape %c [[0], [1, 2], [3], [4]] : tensor<1x2x4x8x8xf32> into tensor<1x8x8x8xf32>
  return %r : tensor<1x8x8x8xf32>
}
