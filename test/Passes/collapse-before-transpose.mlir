// RUN: kopt-opt %s --kopt-collapse-before-transpose --split-input-file | FileCheck %s

// Attention's k^T: the heads are merged into the batch before the two
// innermost dimensions are swapped, and the batch_matmul reads the swap.
// CHECK-LABEL: func.func @attention_scores
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<2x4x16x8xf32>, %[[K:[a-z0-9]+]]: tensor<2x4x16x8xf32>
// CHECK: %[[KC:.+]] = tensor.collapse_shape %[[K]] {{\[}}[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
// CHECK: %[[KT:.+]] = linalg.transpose ins(%[[KC]] : tensor<8x16x8xf32>) outs(%{{.+}} : tensor<8x8x16xf32>) permutation = [0, 2, 1]
// CHECK: linalg.batch_matmul ins(%{{.+}}, %[[KT]] : tensor<8x16x8xf32>, tensor<8x8x16xf32>)
// CHECK-NOT: permutation = [0, 1, 3, 2]
func.func @attention_scores(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>) -> tensor<8x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x8x16xf32>
  %t = linalg.transpose ins(%k : tensor<2x4x16x8xf32>) outs(%e : tensor<2x4x8x16xf32>) permutation = [0, 1, 3, 2]
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %kc = tensor.collapse_shape %t [[0, 1], [2], [3]] : tensor<2x4x8x16xf32> into tensor<8x8x16xf32>
  %o = tensor.empty() : tensor<8x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %r = linalg.batch_matmul ins(%qc, %kc : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%f : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  return %r : tensor<8x16x16xf32>
}

// -----

// Whole groups swapped, each in order: the source is collapsed into the
// groups it holds and the collapsed tensor transposed.
// CHECK-LABEL: func.func @groups_in_order
// CHECK: %[[C:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2]] : tensor<4x2x3xf32> into tensor<4x6xf32>
// CHECK: %[[T:.+]] = linalg.transpose ins(%[[C]] : tensor<4x6xf32>) outs(%{{.+}} : tensor<6x4xf32>) permutation = [1, 0]
// CHECK: return %[[T]]
func.func @groups_in_order(%x: tensor<4x2x3xf32>) -> tensor<6x4xf32> {
  %e = tensor.empty() : tensor<2x3x4xf32>
  %t = linalg.transpose ins(%x : tensor<4x2x3xf32>) outs(%e : tensor<2x3x4xf32>) permutation = [1, 2, 0]
  %c = tensor.collapse_shape %t [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
  return %c : tensor<6x4xf32>
}

// -----

// A collapse that merges dimensions the transpose swapped (their order
// inside the group is reversed): left alone.
// CHECK-LABEL: func.func @mixed_group
// CHECK: linalg.transpose ins(%{{.+}} : tensor<2x3x4xf32>) {{.*}} permutation = [0, 2, 1]
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2]] : tensor<2x4x3xf32> into tensor<2x12xf32>
func.func @mixed_group(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %e = tensor.empty() : tensor<2x4x3xf32>
  %t = linalg.transpose ins(%x : tensor<2x3x4xf32>) outs(%e : tensor<2x4x3xf32>) permutation = [0, 2, 1]
  %c = tensor.collapse_shape %t [[0], [1, 2]] : tensor<2x4x3xf32> into tensor<2x12xf32>
  return %c : tensor<2x12xf32>
}

// -----

// A transpose read by more than the collapse: left alone.
// CHECK-LABEL: func.func @other_users
// CHECK: %[[T:.+]] = linalg.transpose
// CHECK: tensor.collapse_shape %[[T]]
func.func @other_users(%x: tensor<2x3x4x5xf32>) -> (tensor<6x5x4xf32>, tensor<2x3x5x4xf32>) {
  %e = tensor.empty() : tensor<2x3x5x4xf32>
  %t = linalg.transpose ins(%x : tensor<2x3x4x5xf32>) outs(%e : tensor<2x3x5x4xf32>) permutation = [0, 1, 3, 2]
  %c = tensor.collapse_shape %t [[0, 1], [2], [3]] : tensor<2x3x5x4xf32> into tensor<6x5x4xf32>
  return %c, %t : tensor<6x5x4xf32>, tensor<2x3x5x4xf32>
}
