// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A batched product with A transposed, a [b, K, M], and B [b, N, K]:
// 3 x (130x50x72), batches on the grid's z.
#km = affine_map<(b, m, n, k) -> (b, k, m)>
#nk = affine_map<(b, m, n, k) -> (b, n, k)>
#mn = affine_map<(b, m, n, k) -> (b, m, n)>
func.func @batched_tn(%a: tensor<3x72x130xf32>, %bt: tensor<3x50x72xf32>) -> tensor<3x130x50xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x130x50xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<3x130x50xf32>) -> tensor<3x130x50xf32>
  %0 = linalg.generic {indexing_maps = [#km, #nk, #mn], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %bt : tensor<3x72x130xf32>, tensor<3x50x72xf32>) outs(%c : tensor<3x130x50xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x130x50xf32>
  return %0 : tensor<3x130x50xf32>
}
