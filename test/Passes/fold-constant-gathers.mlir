// RUN: kopt-opt %s --kopt-fold-constant-gathers --split-input-file | FileCheck %s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Gathers through constant index tables, as torch-mlir writes GroupNorm's
// per-channel scale and shift (bench/suite/real/l1_groupnorm.mlir, at 2
// samples of 2 groups of 4 channels, and at batch 1): the one whose tables
// read the source at the same row-major position becomes a reshape and its
// tables go; a gather that permutes, one whose table is not a constant and
// one that reads out of bounds stay.

#id = affine_map<(d0, d1) -> (d0, d1)>

// The group statistics read per channel: a reshape.
// CHECK-LABEL: func.func @groupnorm_scale(
//  CHECK-SAME:     %[[S:[a-zA-Z0-9]+]]: tensor<2x2x4x1xf32>
//   CHECK-NOT:   arith.constant
//       CHECK:   %[[F:.+]] = tensor.collapse_shape %[[S]] {{\[}}[0, 1, 2, 3]] : tensor<2x2x4x1xf32> into tensor<16xf32>
//       CHECK:   %[[R:.+]] = tensor.expand_shape %[[F]] {{\[}}[0, 1]] output_shape [2, 8] : tensor<16xf32> into tensor<2x8xf32>
//   CHECK-NOT:   linalg.generic
//       CHECK:   return %[[R]]
func.func @groupnorm_scale(%stats: tensor<2x2x4x1xf32>) -> tensor<2x8xf32> {
  %c0_i64 = arith.constant 0 : i64
  %c1_i64 = arith.constant 1 : i64
  %c2_i64 = arith.constant 2 : i64
  %c4_i64 = arith.constant 4 : i64
  %t0 = arith.constant dense<[[0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]]> : tensor<2x8xi64>
  %t1 = arith.constant dense<[[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1]]> : tensor<2x8xi64>
  %t2 = arith.constant dense<[[0, 1, 2, 3, 0, 1, 2, 3], [0, 1, 2, 3, 0, 1, 2, 3]]> : tensor<2x8xi64>
  %t3 = arith.constant dense<[[0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0]]> : tensor<2x8xi64>
  %e = tensor.empty() : tensor<2x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%t0, %t1, %t2, %t3 : tensor<2x8xi64>, tensor<2x8xi64>, tensor<2x8xi64>, tensor<2x8xi64>) outs(%e : tensor<2x8xf32>) {
    ^bb0(%a: i64, %b: i64, %c: i64, %d: i64, %out: f32):
      %s0 = arith.cmpi slt, %a, %c0_i64 : i64
      %a1 = arith.addi %a, %c2_i64 : i64
      %a2 = arith.select %s0, %a1, %a : i64
      %ia = arith.index_cast %a2 : i64 to index
      %s1 = arith.cmpi slt, %b, %c0_i64 : i64
      %b1 = arith.addi %b, %c2_i64 : i64
      %b2 = arith.select %s1, %b1, %b : i64
      %ib = arith.index_cast %b2 : i64 to index
      %s2 = arith.cmpi slt, %c, %c0_i64 : i64
      %cc1 = arith.addi %c, %c4_i64 : i64
      %cc2 = arith.select %s2, %cc1, %c : i64
      %ic = arith.index_cast %cc2 : i64 to index
      %s3 = arith.cmpi slt, %d, %c0_i64 : i64
      %d1 = arith.addi %d, %c1_i64 : i64
      %d2 = arith.select %s3, %d1, %d : i64
      %id = arith.index_cast %d2 : i64 to index
      %v = tensor.extract %stats[%ia, %ib, %ic, %id] : tensor<2x2x4x1xf32>
      linalg.yield %v : f32
  } -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#batch1 = affine_map<(d0, d1) -> (0, d1)>
// At batch 1 torch-mlir reads its tables through (0, d1): each point still
// reads its own position, and the gather is a reshape.
// CHECK-LABEL: func.func @groupnorm_scale_batch1(
//  CHECK-SAME:     %[[S:[a-zA-Z0-9]+]]: tensor<1x2x4x1xf32>
//   CHECK-NOT:   arith.constant
//       CHECK:   %[[F:.+]] = tensor.collapse_shape %[[S]] {{\[}}[0, 1, 2, 3]] : tensor<1x2x4x1xf32> into tensor<8xf32>
//       CHECK:   %[[R:.+]] = tensor.expand_shape %[[F]] {{\[}}[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
//   CHECK-NOT:   linalg.generic
//       CHECK:   return %[[R]]
func.func @groupnorm_scale_batch1(%stats: tensor<1x2x4x1xf32>) -> tensor<1x8xf32> {
  %c0_i64 = arith.constant 0 : i64
  %c1_i64 = arith.constant 1 : i64
  %c2_i64 = arith.constant 2 : i64
  %c4_i64 = arith.constant 4 : i64
  %t0 = arith.constant dense<[[0, 0, 0, 0, 0, 0, 0, 0]]> : tensor<1x8xi64>
  %t1 = arith.constant dense<[[0, 0, 0, 0, 1, 1, 1, 1]]> : tensor<1x8xi64>
  %t2 = arith.constant dense<[[0, 1, 2, 3, 0, 1, 2, 3]]> : tensor<1x8xi64>
  %t3 = arith.constant dense<[[0, 0, 0, 0, 0, 0, 0, 0]]> : tensor<1x8xi64>
  %e = tensor.empty() : tensor<1x8xf32>
  %g = linalg.generic {indexing_maps = [#batch1, #batch1, #batch1, #batch1, #id], iterator_types = ["parallel", "parallel"]} ins(%t0, %t1, %t2, %t3 : tensor<1x8xi64>, tensor<1x8xi64>, tensor<1x8xi64>, tensor<1x8xi64>) outs(%e : tensor<1x8xf32>) {
    ^bb0(%a: i64, %b: i64, %c: i64, %d: i64, %out: f32):
      %s0 = arith.cmpi slt, %a, %c0_i64 : i64
      %a1 = arith.addi %a, %c1_i64 : i64
      %a2 = arith.select %s0, %a1, %a : i64
      %ia = arith.index_cast %a2 : i64 to index
      %s1 = arith.cmpi slt, %b, %c0_i64 : i64
      %b1 = arith.addi %b, %c2_i64 : i64
      %b2 = arith.select %s1, %b1, %b : i64
      %ib = arith.index_cast %b2 : i64 to index
      %s2 = arith.cmpi slt, %c, %c0_i64 : i64
      %cc1 = arith.addi %c, %c4_i64 : i64
      %cc2 = arith.select %s2, %cc1, %c : i64
      %ic = arith.index_cast %cc2 : i64 to index
      %s3 = arith.cmpi slt, %d, %c0_i64 : i64
      %d1 = arith.addi %d, %c1_i64 : i64
      %d2 = arith.select %s3, %d1, %d : i64
      %id = arith.index_cast %d2 : i64 to index
      %v = tensor.extract %stats[%ia, %ib, %ic, %id] : tensor<1x2x4x1xf32>
      linalg.yield %v : f32
  } -> tensor<1x8xf32>
  return %g : tensor<1x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// Channels read out of order: a gather still.
// CHECK-LABEL: func.func @permuted(
//       CHECK:   arith.constant dense
//       CHECK:   linalg.generic
//       CHECK:     tensor.extract
//   CHECK-NOT:   tensor.collapse_shape
func.func @permuted(%stats: tensor<2x2x4x1xf32>) -> tensor<2x8xf32> {
  %c0_i64 = arith.constant 0 : i64
  %c1_i64 = arith.constant 1 : i64
  %c2_i64 = arith.constant 2 : i64
  %c4_i64 = arith.constant 4 : i64
  %t0 = arith.constant dense<[[0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]]> : tensor<2x8xi64>
  %t1 = arith.constant dense<[[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1]]> : tensor<2x8xi64>
  %t2 = arith.constant dense<[[0, 3, 2, 1, 0, 3, 2, 1], [0, 3, 2, 1, 0, 3, 2, 1]]> : tensor<2x8xi64>
  %t3 = arith.constant dense<[[0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0]]> : tensor<2x8xi64>
  %e = tensor.empty() : tensor<2x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%t0, %t1, %t2, %t3 : tensor<2x8xi64>, tensor<2x8xi64>, tensor<2x8xi64>, tensor<2x8xi64>) outs(%e : tensor<2x8xf32>) {
    ^bb0(%a: i64, %b: i64, %c: i64, %d: i64, %out: f32):
      %s0 = arith.cmpi slt, %a, %c0_i64 : i64
      %a1 = arith.addi %a, %c2_i64 : i64
      %a2 = arith.select %s0, %a1, %a : i64
      %ia = arith.index_cast %a2 : i64 to index
      %s1 = arith.cmpi slt, %b, %c0_i64 : i64
      %b1 = arith.addi %b, %c2_i64 : i64
      %b2 = arith.select %s1, %b1, %b : i64
      %ib = arith.index_cast %b2 : i64 to index
      %s2 = arith.cmpi slt, %c, %c0_i64 : i64
      %cc1 = arith.addi %c, %c4_i64 : i64
      %cc2 = arith.select %s2, %cc1, %c : i64
      %ic = arith.index_cast %cc2 : i64 to index
      %s3 = arith.cmpi slt, %d, %c0_i64 : i64
      %d1 = arith.addi %d, %c1_i64 : i64
      %d2 = arith.select %s3, %d1, %d : i64
      %id = arith.index_cast %d2 : i64 to index
      %v = tensor.extract %stats[%ia, %ib, %ic, %id] : tensor<2x2x4x1xf32>
      linalg.yield %v : f32
  } -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// A table that is an argument: nothing to evaluate.
// CHECK-LABEL: func.func @table_argument(
//       CHECK:   linalg.generic
//       CHECK:     tensor.extract
func.func @table_argument(%stats: tensor<2x2x4x1xf32>, %table: tensor<2x8xi64>) -> tensor<2x8xf32> {
  %c0_i64 = arith.constant 0 : i64
  %c1_i64 = arith.constant 1 : i64
  %c2_i64 = arith.constant 2 : i64
  %c4_i64 = arith.constant 4 : i64
  %t0 = arith.constant dense<[[0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]]> : tensor<2x8xi64>
  %t1 = arith.constant dense<[[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1]]> : tensor<2x8xi64>
  %t3 = arith.constant dense<[[0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0]]> : tensor<2x8xi64>
  %e = tensor.empty() : tensor<2x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%t0, %t1, %table, %t3 : tensor<2x8xi64>, tensor<2x8xi64>, tensor<2x8xi64>, tensor<2x8xi64>) outs(%e : tensor<2x8xf32>) {
    ^bb0(%a: i64, %b: i64, %c: i64, %d: i64, %out: f32):
      %s0 = arith.cmpi slt, %a, %c0_i64 : i64
      %a1 = arith.addi %a, %c2_i64 : i64
      %a2 = arith.select %s0, %a1, %a : i64
      %ia = arith.index_cast %a2 : i64 to index
      %s1 = arith.cmpi slt, %b, %c0_i64 : i64
      %b1 = arith.addi %b, %c2_i64 : i64
      %b2 = arith.select %s1, %b1, %b : i64
      %ib = arith.index_cast %b2 : i64 to index
      %s2 = arith.cmpi slt, %c, %c0_i64 : i64
      %cc1 = arith.addi %c, %c4_i64 : i64
      %cc2 = arith.select %s2, %cc1, %c : i64
      %ic = arith.index_cast %cc2 : i64 to index
      %s3 = arith.cmpi slt, %d, %c0_i64 : i64
      %d1 = arith.addi %d, %c1_i64 : i64
      %d2 = arith.select %s3, %d1, %d : i64
      %id = arith.index_cast %d2 : i64 to index
      %v = tensor.extract %stats[%ia, %ib, %ic, %id] : tensor<2x2x4x1xf32>
      linalg.yield %v : f32
  } -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// A sample index past the end (torch would fail): left for the kernel.
// CHECK-LABEL: func.func @out_of_bounds(
//       CHECK:   linalg.generic
//       CHECK:     tensor.extract
func.func @out_of_bounds(%stats: tensor<2x2x4x1xf32>) -> tensor<2x8xf32> {
  %c0_i64 = arith.constant 0 : i64
  %c1_i64 = arith.constant 1 : i64
  %c2_i64 = arith.constant 2 : i64
  %c4_i64 = arith.constant 4 : i64
  %t0 = arith.constant dense<[[2, 2, 2, 2, 2, 2, 2, 2], [3, 3, 3, 3, 3, 3, 3, 3]]> : tensor<2x8xi64>
  %t1 = arith.constant dense<[[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1]]> : tensor<2x8xi64>
  %t2 = arith.constant dense<[[0, 1, 2, 3, 0, 1, 2, 3], [0, 1, 2, 3, 0, 1, 2, 3]]> : tensor<2x8xi64>
  %t3 = arith.constant dense<[[0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0]]> : tensor<2x8xi64>
  %e = tensor.empty() : tensor<2x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%t0, %t1, %t2, %t3 : tensor<2x8xi64>, tensor<2x8xi64>, tensor<2x8xi64>, tensor<2x8xi64>) outs(%e : tensor<2x8xf32>) {
    ^bb0(%a: i64, %b: i64, %c: i64, %d: i64, %out: f32):
      %s0 = arith.cmpi slt, %a, %c0_i64 : i64
      %a1 = arith.addi %a, %c2_i64 : i64
      %a2 = arith.select %s0, %a1, %a : i64
      %ia = arith.index_cast %a2 : i64 to index
      %s1 = arith.cmpi slt, %b, %c0_i64 : i64
      %b1 = arith.addi %b, %c2_i64 : i64
      %b2 = arith.select %s1, %b1, %b : i64
      %ib = arith.index_cast %b2 : i64 to index
      %s2 = arith.cmpi slt, %c, %c0_i64 : i64
      %cc1 = arith.addi %c, %c4_i64 : i64
      %cc2 = arith.select %s2, %cc1, %c : i64
      %ic = arith.index_cast %cc2 : i64 to index
      %s3 = arith.cmpi slt, %d, %c0_i64 : i64
      %d1 = arith.addi %d, %c1_i64 : i64
      %d2 = arith.select %s3, %d1, %d : i64
      %id = arith.index_cast %d2 : i64 to index
      %v = tensor.extract %stats[%ia, %ib, %ic, %id] : tensor<2x2x4x1xf32>
      linalg.yield %v : f32
  } -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}
