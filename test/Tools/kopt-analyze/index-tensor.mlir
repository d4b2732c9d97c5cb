// RUN: kopt analyze %s | FileCheck %s
// RUN: kopt analyze %s --json | FileCheck %s --check-prefix=JSON
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Elementwise ops on index tensors form a group like any other; an index
// element counts as 8 bytes (64x64x8 = 32768 bytes per tensor).
// CHECK: 1 fusion group
// CHECK: group 0 of @index_math
// CHECK: inputs   tensor<64x64xindex>
// CHECK: bytes    unfused 131.07 KB, fused 65.54 KB
// JSON: "bytes_fused": 65536,
// JSON-NEXT: "bytes_unfused": 131072,
func.func @index_math(%a: tensor<64x64xindex>) -> tensor<64x64xindex> {
  %e = tensor.empty() : tensor<64x64xindex>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x64xindex>) outs(%e : tensor<64x64xindex>) {
  ^bb0(%v: index, %o: index):
    %s = arith.addi %v, %v : index
    linalg.yield %s : index
  } -> tensor<64x64xindex>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<64x64xindex>) outs(%e : tensor<64x64xindex>) {
  ^bb0(%v: index, %o: index):
    %m = arith.muli %v, %v : index
    linalg.yield %m : index
  } -> tensor<64x64xindex>
  return %1 : tensor<64x64xindex>
}
