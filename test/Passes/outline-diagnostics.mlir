// RUN: kopt-opt %s --kopt-outline-fusion-groups --split-input-file --verify-diagnostics | FileCheck %s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// kopt-outline-fusion-groups on hand-tagged IR: a group member without its
// kind is an error on that op; a tagged op is outlined; untagged IR is left
// alone.

func.func @missing_kind(%x: tensor<8xf32>) -> tensor<8xf32> {
  %init = tensor.empty() : tensor<8xf32>
  // expected-error @below {{kopt: fusion group member without 'kopt.group_kind'}}
  %0 = linalg.map { math.exp } ins(%x : tensor<8xf32>) outs(%init : tensor<8xf32>) {kopt.group_id = 0 : i64}
  return %0 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func private @tagged_kopt_g0_elementwise(
//  CHECK-SAME:   kopt.fusion_group = {id = 0 : i64, kind = "elementwise", parent = "tagged"}
//       CHECK:   linalg.map { math.exp }
// CHECK-LABEL: func.func @tagged(
//       CHECK:   call @tagged_kopt_g0_elementwise(
func.func @tagged(%x: tensor<8xf32>) -> tensor<8xf32> {
  %init = tensor.empty() : tensor<8xf32>
  %0 = linalg.map { math.exp } ins(%x : tensor<8xf32>) outs(%init : tensor<8xf32>) {kopt.group_id = 0 : i64, kopt.group_kind = "elementwise"}
  return %0 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @untagged(
//   CHECK-NOT:   call
//       CHECK:   linalg.map
func.func @untagged(%x: tensor<8xf32>) -> tensor<8xf32> {
  %init = tensor.empty() : tensor<8xf32>
  %0 = linalg.map { math.exp } ins(%x : tensor<8xf32>) outs(%init : tensor<8xf32>)
  return %0 : tensor<8xf32>
}
