// RUN: rm -rf %t && kopt plan --compile %s --emit-dir %t > %t.out 2> %t.err
// RUN: FileCheck %s --input-file=%t.out
// RUN: not grep -i "warning\|error" %t.err
// RUN: FileCheck %s --check-prefix=UNIT --input-file=%t/unit_reduction_kopt_g0_reduction/baseline-per-op.main.cu
// RUN: FileCheck %s --check-prefix=BCAST --input-file=%t/broadcast_kopt_g0_elementwise/baseline-per-op.main.cu
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A pointwise kernel declares only the loop indices its code reads: NVRTC
// warns about the others ("declared but never referenced"), and
// `kopt plan --compile` treats warnings as errors.

// A reduction into a unit trailing dimension (the all-masked-row guard of
// scaled dot-product attention): the output's unit index is never read.
// CHECK-LABEL: @unit_reduction_kopt_g0_reduction
// CHECK: compiled baseline per-op for sm_90: ok
// CHECK: compiled builtin bs128_v1 for sm_90: ok
// UNIT: const long long i1 = rest % 197LL;
// UNIT-NOT: i2 =
// UNIT: const long long i0 = rest;
#in = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @unit_reduction(%x: tensor<12x197x197xi1>) -> tensor<12x197x1xi1> {
  %true = arith.constant true
  %e = tensor.empty() : tensor<12x197x1xi1>
  %f = linalg.fill ins(%true : i1) outs(%e : tensor<12x197x1xi1>) -> tensor<12x197x1xi1>
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<12x197x197xi1>) outs(%f : tensor<12x197x1xi1>) {
  ^bb0(%in: i1, %out: i1):
    %a = arith.andi %in, %out : i1
    linalg.yield %a : i1
  } -> tensor<12x197x1xi1>
  return %r : tensor<12x197x1xi1>
}

// A broadcast whose input skips a loop dimension (grouped-query attention's
// repeat_interleave), then an op so that the two form a group: the
// broadcast dimension's index is never read, the ones outside it are.
// CHECK-LABEL: @broadcast_kopt_g0_elementwise
// CHECK: compiled baseline per-op for sm_90: ok
// CHECK: compiled builtin bs128_v4 for sm_90: ok
// CHECK: compiled builtin bs128_v1 for sm_90: ok
// BCAST-LABEL: broadcast_kopt_g0_elementwise_op_0
// BCAST: const long long i3 = rest % 128LL;
// BCAST-NEXT: rest /= 128LL;
// BCAST-NEXT: rest /= 8LL;
// BCAST-NEXT: const long long i1 = rest % 4LL;
#bin = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @broadcast(%x: tensor<1x4x128x64xf32>) -> tensor<1x32x128x64xf32> {
  %e = tensor.empty() : tensor<1x4x8x128x64xf32>
  %b = linalg.generic {indexing_maps = [#bin, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x128x64xf32>) outs(%e : tensor<1x4x8x128x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x4x8x128x64xf32>
  %c = tensor.collapse_shape %b [[0], [1, 2], [3], [4]] : tensor<1x4x8x128x64xf32> into tensor<1x32x128x64xf32>
  %e2 = tensor.empty() : tensor<1x32x128x64xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x32x128x64xf32>) outs(%e2 : tensor<1x32x128x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<1x32x128x64xf32>
  return %r : tensor<1x32x128x64xf32>
}
