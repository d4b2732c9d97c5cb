// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Widening casts for the baseline (test/Tools/kopt-plan/baseline-casts.test):
// a mean in f64 of an f32 input, as torch-mlir writes a norm's statistics
// (the cast folds into the sum's kernel), and the same cast returned by the
// task too (written, since the task needs it in memory).

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

func.func @mean_f64(%x: tensor<64x1000xf32>) -> tensor<64xf64> {
  %zero = arith.constant 0.0 : f64
  %e64 = tensor.empty() : tensor<64x1000xf64>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x1000xf32>) outs(%e64 : tensor<64x1000xf64>) {
  ^bb0(%in: f32, %out: f64):
    %w = arith.extf %in : f32 to f64
    linalg.yield %w : f64
  } -> tensor<64x1000xf64>
  %er = tensor.empty() : tensor<64xf64>
  %f = linalg.fill ins(%zero : f64) outs(%er : tensor<64xf64>) -> tensor<64xf64>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%wide : tensor<64x1000xf64>) outs(%f : tensor<64xf64>) {
  ^bb0(%in: f64, %acc: f64):
    %s = arith.addf %in, %acc : f64
    linalg.yield %s : f64
  } -> tensor<64xf64>
  return %sum : tensor<64xf64>
}

func.func @mean_f64_and_cast(%x: tensor<64x1000xf32>) -> (tensor<64xf64>, tensor<64x1000xf64>) {
  %zero = arith.constant 0.0 : f64
  %e64 = tensor.empty() : tensor<64x1000xf64>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x1000xf32>) outs(%e64 : tensor<64x1000xf64>) {
  ^bb0(%in: f32, %out: f64):
    %w = arith.extf %in : f32 to f64
    linalg.yield %w : f64
  } -> tensor<64x1000xf64>
  %er = tensor.empty() : tensor<64xf64>
  %f = linalg.fill ins(%zero : f64) outs(%er : tensor<64xf64>) -> tensor<64xf64>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%wide : tensor<64x1000xf64>) outs(%f : tensor<64xf64>) {
  ^bb0(%in: f64, %acc: f64):
    %s = arith.addf %in, %acc : f64
    linalg.yield %s : f64
  } -> tensor<64xf64>
  return %sum, %wide : tensor<64xf64>, tensor<64x1000xf64>
}
