// RUN: kopt-opt %s --split-input-file --kopt-tosa-to-linalg --kopt-fusion-planning | FileCheck %s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// TOSA graphs lowered by kopt's TOSA-to-linalg pipeline, then planned: the
// groups come out as for hand-written linalg, and no TOSA op is left.

// tosa.matmul + tosa.add (broadcast bias) + tosa.sigmoid: one contraction
// group around the batch_matmul the lowering emits.
// CHECK-LABEL: func.func private @tosa_matmul_bias_sigmoid_kopt_g0_contraction(
//  CHECK-SAME:     %[[X:[a-zA-Z0-9]+]]: tensor<1x16x32xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<1x32x64xf32>, %[[B:[a-zA-Z0-9]+]]: tensor<1x1x64xf32>) -> tensor<1x16x64xf32>
//  CHECK-SAME:     kopt.fusion_group = {id = 0 : i64, kind = "contraction", parent = "tosa_matmul_bias_sigmoid"}
//       CHECK:   %[[MM:.+]] = linalg.batch_matmul ins(%[[X]], %[[W]] :
//       CHECK:   %[[ADD:.+]] = linalg.generic {{.*}} ins(%[[MM]], %[[B]] :
//       CHECK:     arith.addf
//       CHECK:   %[[SIG:.+]] = linalg.generic {{.*}} ins(%[[ADD]] :
//       CHECK:     math.exp
//       CHECK:     arith.divf
//       CHECK:   return %[[SIG]]
// CHECK-LABEL: func.func @tosa_matmul_bias_sigmoid(
//   CHECK-NOT:   tosa.
//   CHECK-NOT:   linalg.
//       CHECK:   call @tosa_matmul_bias_sigmoid_kopt_g0_contraction(
//   CHECK-NOT:   kopt_g1
func.func @tosa_matmul_bias_sigmoid(%x: tensor<1x16x32xf32>, %w: tensor<1x32x64xf32>, %b: tensor<1x1x64xf32>) -> tensor<1x16x64xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm = tosa.matmul %x, %w, %zp, %zp : (tensor<1x16x32xf32>, tensor<1x32x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x16x64xf32>
  %biased = tosa.add %mm, %b : (tensor<1x16x64xf32>, tensor<1x1x64xf32>) -> tensor<1x16x64xf32>
  %act = tosa.sigmoid %biased : (tensor<1x16x64xf32>) -> tensor<1x16x64xf32>
  return %act : tensor<1x16x64xf32>
}

// -----

// exp, tosa.reduce_sum over the last axis (keepdim), reciprocal and mul: one
// reduction group with the linalg.reduce, its expand_shape back to the keepdim
// shape, and the elementwise ops on both shapes.
// CHECK-LABEL: func.func private @tosa_reduce_sum_kopt_g0_reduction(
//  CHECK-SAME:     %[[X:[a-zA-Z0-9]+]]: tensor<1x16x64xf32>) -> tensor<1x16x64xf32>
//  CHECK-SAME:     kopt.fusion_group = {id = 0 : i64, kind = "reduction", parent = "tosa_reduce_sum"}
//       CHECK:   %[[EXP:.+]] = linalg.generic {{.*}} ins(%[[X]] :
//       CHECK:     math.exp
//       CHECK:   %[[SUM:.+]] = linalg.reduce ins(%[[EXP]] : tensor<1x16x64xf32>) {{.*}} dimensions = [2]
//       CHECK:   %[[KEEP:.+]] = tensor.expand_shape %[[SUM]] {{.*}} into tensor<1x16x1xf32>
//       CHECK:   %[[INV:.+]] = linalg.generic {{.*}} ins(%[[KEEP]] :
//       CHECK:     arith.divf
//       CHECK:   %[[OUT:.+]] = linalg.generic {{.*}} ins(%[[EXP]], %[[INV]] :
//       CHECK:     arith.mulf
//       CHECK:   return %[[OUT]]
// CHECK-LABEL: func.func @tosa_reduce_sum(
//   CHECK-NOT:   tosa.
//   CHECK-NOT:   linalg.
//       CHECK:   call @tosa_reduce_sum_kopt_g0_reduction(
//   CHECK-NOT:   kopt_g1
func.func @tosa_reduce_sum(%x: tensor<1x16x64xf32>) -> tensor<1x16x64xf32> {
  %ex = tosa.exp %x : (tensor<1x16x64xf32>) -> tensor<1x16x64xf32>
  %sum = tosa.reduce_sum %ex {axis = 2 : i32} : (tensor<1x16x64xf32>) -> tensor<1x16x1xf32>
  %inv = tosa.reciprocal %sum : (tensor<1x16x1xf32>) -> tensor<1x16x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %out = tosa.mul %ex, %inv, %shift : (tensor<1x16x64xf32>, tensor<1x16x1xf32>, tensor<1xi8>) -> tensor<1x16x64xf32>
  return %out : tensor<1x16x64xf32>
}
