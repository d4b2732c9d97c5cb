// RUN: kopt-opt %s --kopt-fold-tensor-casts --split-input-file | FileCheck %s
// RUN: kopt-opt %s --kopt-fusion-planning --split-input-file | FileCheck %s --check-prefix=PLAN
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Casts that hide a static size from tensor.concat, as torch-mlir writes
// torch.roll (Swin's shifted windows): the concatenation takes the static
// slices directly and the casts go; fusion planning starts with this.

// CHECK-LABEL: func.func @roll(
//  CHECK-SAME:     %[[X:[a-zA-Z0-9]+]]: tensor<1x56x56x96xf32>
//       CHECK:   %[[A:.+]] = tensor.extract_slice %[[X]][0, 3, 0, 0] [1, 53, 56, 96] [1, 1, 1, 1] : tensor<1x56x56x96xf32> to tensor<1x53x56x96xf32>
//       CHECK:   %[[B:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 3, 56, 96] [1, 1, 1, 1] : tensor<1x56x56x96xf32> to tensor<1x3x56x96xf32>
//   CHECK-NOT:   tensor.cast
//       CHECK:   %[[R:.+]] = tensor.concat dim(1) %[[A]], %[[B]] : (tensor<1x53x56x96xf32>, tensor<1x3x56x96xf32>) -> tensor<1x56x56x96xf32>
//       CHECK:   return %[[R]]
// PLAN-LABEL: func.func @roll(
//   PLAN-NOT:   tensor.cast
//       PLAN:   tensor.concat dim(1) %{{.+}}, %{{.+}} : (tensor<1x53x56x96xf32>, tensor<1x3x56x96xf32>)
func.func @roll(%x: tensor<1x56x56x96xf32>) -> tensor<1x56x56x96xf32> {
  %a = tensor.extract_slice %x[0, 3, 0, 0] [1, 53, 56, 96] [1, 1, 1, 1] : tensor<1x56x56x96xf32> to tensor<1x53x56x96xf32>
  %ac = tensor.cast %a : tensor<1x53x56x96xf32> to tensor<1x?x56x96xf32>
  %b = tensor.extract_slice %x[0, 0, 0, 0] [1, 3, 56, 96] [1, 1, 1, 1] : tensor<1x56x56x96xf32> to tensor<1x3x56x96xf32>
  %bc = tensor.cast %b : tensor<1x3x56x96xf32> to tensor<1x?x56x96xf32>
  %r = tensor.concat dim(1) %ac, %bc : (tensor<1x?x56x96xf32>, tensor<1x?x56x96xf32>) -> tensor<1x56x56x96xf32>
  return %r : tensor<1x56x56x96xf32>
}

// -----

// A cast with another user stays for it; a cast to a more static type, or
// from a dynamic one, is no cast to fold.
// CHECK-LABEL: func.func @kept(
//  CHECK-SAME:     %[[X:[a-zA-Z0-9]+]]: tensor<4x8xf32>, %[[Y:[a-zA-Z0-9]+]]: tensor<?x8xf32>
//       CHECK:   %[[C:.+]] = tensor.cast %[[X]] : tensor<4x8xf32> to tensor<?x8xf32>
//       CHECK:   %[[D:.+]] = tensor.cast %[[Y]] : tensor<?x8xf32> to tensor<4x8xf32>
//       CHECK:   %[[R:.+]] = tensor.concat dim(0) %[[X]], %[[D]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
//       CHECK:   return %[[R]], %[[C]]
func.func @kept(%x: tensor<4x8xf32>, %y: tensor<?x8xf32>) -> (tensor<8x8xf32>, tensor<?x8xf32>) {
  %c = tensor.cast %x : tensor<4x8xf32> to tensor<?x8xf32>
  %d = tensor.cast %y : tensor<?x8xf32> to tensor<4x8xf32>
  %r = tensor.concat dim(0) %c, %d : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return %r, %c : tensor<8x8xf32>, tensor<?x8xf32>
}
