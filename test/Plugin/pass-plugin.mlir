// REQUIRES: kopt-pass-plugin
// RUN: %mlir_opt %s --load-pass-plugin=%kopt_plugin \
// RUN:   --pass-pipeline='builtin.module(func.func(kopt-form-fusion-groups))' \
// RUN:   | FileCheck %s --check-prefix=FORM
// RUN: %mlir_opt %s --load-pass-plugin=%kopt_plugin \
// RUN:   --pass-pipeline='builtin.module(kopt-fusion-planning)' | FileCheck %s
// RUN: %mlir_opt %s --load-pass-plugin=%kopt_plugin \
// RUN:   --pass-pipeline='builtin.module(func.func(kopt-form-fusion-groups),kopt-outline-fusion-groups)' \
// RUN:   | FileCheck %s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// kopt's passes and pipelines in MLIR's own mlir-opt, loaded from the pass
// plugin: the groups and the outlined functions come out as with kopt-opt
// (test/Passes/outline-fusion-groups.mlir).

// The fills stay out of the groups; the groups are those of
// test/Passes/form-fusion-groups.mlir.
// FORM-LABEL: func.func @mlp(
//       FORM:   linalg.fill ins({{.*}}) -> tensor<64x256xf32>{{$}}
//       FORM:   linalg.matmul {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       FORM:   linalg.generic {{.*}} attrs = {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       FORM:   linalg.map { math.tanh } ins({{.*}}) {kopt.group_id = 0 : i64, kopt.group_kind = "contraction"}
//       FORM:   linalg.fill ins({{.*}}) -> tensor<64x32xf32>{{$}}
//       FORM:   linalg.matmul {kopt.group_id = 1 : i64, kopt.group_kind = "contraction"}
//       FORM:   linalg.map { arith.mulf } ins({{.*}}) {kopt.group_id = 1 : i64, kopt.group_kind = "contraction"}

// Cheap constants, tensor.empty and the zero fills are cloned into the
// outlined functions, never passed: the plugin shares MLIR's op trait
// TypeIDs with mlir-opt.
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
//   CHECK-NOT:   linalg.
//       CHECK:   %[[R0:.+]]:2 = call @mlp_kopt_g0_contraction(%[[A0]], %[[A1]], %[[A2]]) {kopt.fusion_group = 0 : i64, kopt.key = "[[K0]]"}
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
