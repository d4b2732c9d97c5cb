// REQUIRES: kopt-pass-plugin
// RUN: %mlir_opt %s --load-pass-plugin=%kopt_plugin \
// RUN:   --pass-pipeline='builtin.module(func.func(kopt-form-fusion-groups))' \
// RUN:   2>&1 | FileCheck %s --check-prefix=REMARKS
// RUN: %mlir_opt %s --load-pass-plugin=%kopt_plugin \
// RUN:   --pass-pipeline='builtin.module(func.func(kopt-form-fusion-groups{emit-remarks=false}))' \
// RUN:   2>&1 | FileCheck %s --check-prefix=QUIET
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Pass options given in --pass-pipeline reach the plugin's passes: the
// remark for an op left out of fusion, and none with emit-remarks=false.

// REMARKS: remark: kopt: not fused: dynamic shape tensor<?x8xf32> (only static shapes are tuned)
// REMARKS: func.func @dynamic(
// QUIET-NOT: remark
// QUIET: func.func @dynamic(
// QUIET-NOT: kopt.group_id
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @dynamic(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<?x8xf32>) outs(%b : tensor<?x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  } -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
