// RUN: kopt-opt %s --split-input-file --verify-diagnostics --kopt-specialize-batch=batch=4 | FileCheck %s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A dynamic batch given the static size 4, as torch-mlir writes such graphs:
// sizes from tensor.dim, index arithmetic, shape checks, reshapes of the
// flattened batch, broadcast gathers; and the graphs refused.

// The shape check folds away with the size; empty and generic are static.
// CHECK-LABEL: func.func @elementwise(
//  CHECK-SAME:     %[[X:[a-zA-Z0-9]+]]: tensor<4x768xf32>, %[[B:[a-zA-Z0-9]+]]: tensor<768xf32>) -> tensor<4x768xf32>
//   CHECK-NOT:   tensor.dim
//   CHECK-NOT:   cf.assert
//       CHECK:   %[[E:.+]] = tensor.empty() : tensor<4x768xf32>
//       CHECK:   %[[R:.+]] = linalg.generic {{.*}} ins(%[[X]], %[[B]] : tensor<4x768xf32>, tensor<768xf32>) outs(%[[E]] : tensor<4x768xf32>)
//       CHECK:   return %[[R]] : tensor<4x768xf32>
#m = affine_map<(d0, d1) -> (d0, d1)>
#w = affine_map<(d0, d1) -> (d1)>
func.func @elementwise(%x: tensor<?x768xf32>, %b: tensor<768xf32>) -> tensor<?x768xf32> {
  %c0 = arith.constant 0 : index
  %c0_i64 = arith.constant 0 : i64
  %d = tensor.dim %x, %c0 : tensor<?x768xf32>
  %n = arith.index_cast %d : index to i64
  %ok = arith.cmpi sge, %n, %c0_i64 : i64
  cf.assert %ok, "negative values not allowed in new dimensions"
  %e = tensor.empty(%d) : tensor<?x768xf32>
  %r = linalg.generic {indexing_maps = [#m, #w, #m], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<?x768xf32>, tensor<768xf32>) outs(%e : tensor<?x768xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<?x768xf32>
  return %r : tensor<?x768xf32>
}

// -----

// A linear layer on the flattened batch: affine.apply and divsi fold to
// the sizes at batch 4, the reshapes become static.
// CHECK-LABEL: func.func @linear(
//  CHECK-SAME:     %[[X:[a-zA-Z0-9]+]]: tensor<4x128x768xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<768x64xf32>) -> tensor<4x128x64xf32>
//       CHECK:   %[[FLAT:.+]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<4x128x768xf32> into tensor<512x768xf32>
//       CHECK:   %[[E:.+]] = tensor.empty() : tensor<512x64xf32>
//       CHECK:   %[[F:.+]] = linalg.fill {{.*}} outs(%[[E]] : tensor<512x64xf32>)
//       CHECK:   %[[M:.+]] = linalg.matmul ins(%[[FLAT]], %[[W]] : tensor<512x768xf32>, tensor<768x64xf32>) outs(%[[F]] : tensor<512x64xf32>)
//       CHECK:   %[[R:.+]] = tensor.expand_shape %[[M]] {{\[}}[0, 1], [2]] output_shape [4, 128, 64] : tensor<512x64xf32> into tensor<4x128x64xf32>
//       CHECK:   return %[[R]]
#times128 = affine_map<()[s0] -> (s0 * 128)>
func.func @linear(%x: tensor<?x128x768xf32>, %w: tensor<768x64xf32>) -> tensor<?x128x64xf32> {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %d = tensor.dim %x, %c0 : tensor<?x128x768xf32>
  %flat = tensor.collapse_shape %x [[0, 1], [2]] : tensor<?x128x768xf32> into tensor<?x768xf32>
  %rows = affine.apply #times128()[%d]
  %e = tensor.empty(%rows) : tensor<?x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %m = linalg.matmul ins(%flat, %w : tensor<?x768xf32>, tensor<768x64xf32>) outs(%f : tensor<?x64xf32>) -> tensor<?x64xf32>
  %same = arith.cmpi eq, %rows, %rows : index
  cf.assert %same, "mismatched size for broadcast"
  %b = arith.divsi %rows, %c128 : index
  %r = tensor.expand_shape %m [[0, 1], [2]] output_shape [%b, 128, 64] : tensor<?x64xf32> into tensor<?x128x64xf32>
  return %r : tensor<?x128x64xf32>
}

// -----

// torch-mlir's broadcast of a batch as a gather from a captured tensor: the
// gather reads the static tensor, not a cast of it; the body stays as
// written (its select still compares the size with 1).
// CHECK-LABEL: func.func @gather(
//  CHECK-SAME:     %[[X:[a-zA-Z0-9]+]]: tensor<4x12x64xf32>) -> tensor<4x12x64xf32>
//   CHECK-NOT:   tensor.cast
//       CHECK:   linalg.generic
//       CHECK:     arith.cmpi eq
//       CHECK:     tensor.extract %[[X]][{{.*}}] : tensor<4x12x64xf32>
#g = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @gather(%x: tensor<?x12x64xf32>) -> tensor<?x12x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d = tensor.dim %x, %c0 : tensor<?x12x64xf32>
  %e = tensor.empty(%d) : tensor<?x12x64xf32>
  %r = linalg.generic {indexing_maps = [#g], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<?x12x64xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = linalg.index 2 : index
    %one = arith.cmpi eq, %d, %c1 : index
    %s = arith.select %one, %c0, %i : index
    %v = tensor.extract %x[%s, %j, %k] : tensor<?x12x64xf32>
    linalg.yield %v : f32
  } -> tensor<?x12x64xf32>
  return %r : tensor<?x12x64xf32>
}

// -----

// A padded convolution (ResNet's stem): pad and convolution become static.
// CHECK-LABEL: func.func @conv(
//  CHECK-SAME:     %[[X:[a-zA-Z0-9]+]]: tensor<4x3x8x8xf32>
//       CHECK:   %[[P:.+]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 1, 1]
//       CHECK:   } : tensor<4x3x8x8xf32> to tensor<4x3x10x10xf32>
//       CHECK:   linalg.conv_2d_nchw_fchw {{.*}} ins(%[[P]], %{{.*}} : tensor<4x3x10x10xf32>, tensor<16x3x3x3xf32>) outs(%{{.*}} : tensor<4x16x8x8xf32>)
func.func @conv(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) -> tensor<?x16x8x8xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %d = tensor.dim %x, %c0 : tensor<?x3x8x8xf32>
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %e: index):
    tensor.yield %zero : f32
  } : tensor<?x3x8x8xf32> to tensor<?x3x10x10xf32>
  %empty = tensor.empty(%d) : tensor<?x16x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%empty : tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%p, %w : tensor<?x3x10x10xf32>, tensor<16x3x3x3xf32>) outs(%f : tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32>
  return %r : tensor<?x16x8x8xf32>
}

// -----

// A static graph is left alone.
// CHECK-LABEL: func.func @static(
//  CHECK-SAME:     %{{.*}}: tensor<2x8xf32>) -> tensor<2x8xf32>
//  CHECK-NEXT:   return
func.func @static(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  return %x : tensor<2x8xf32>
}

// -----

// expected-error @+1 {{argument #0 ('tensor<4x?xf32>') has a dynamic dimension 1; kopt specialises only a dynamic batch (the outermost dimension)}}
func.func @inner(%x: tensor<4x?xf32>) -> tensor<4x?xf32> {
  return %x : tensor<4x?xf32>
}

// -----

// A shape check that fails at this batch size.
func.func @check(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %d = tensor.dim %x, %c0 : tensor<?x8xf32>
  %two = arith.cmpi eq, %d, %c2 : index
  // expected-error @+1 {{the graph's shape check "the batch must be 2" fails at batch 4}}
  cf.assert %two, "the batch must be 2"
  return %x : tensor<?x8xf32>
}
