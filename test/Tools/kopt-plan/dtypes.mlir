// RUN: kopt plan --compile %s 2> %t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.err
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Plans for 16-bit floats, integers and i1 compile with NVRTC; 16-bit floats
// get 8-wide (16-byte) vectors; a matmul no library call takes (f16) is
// generated as a kernel in the baseline and the built-in says why it
// cannot help.

// CHECK-LABEL: @half_chain_kopt_g0_elementwise
// CHECK: builtin   bs128_v8
// CHECK: compiled baseline per-op for sm_90: ok
// CHECK: compiled builtin bs128_v8 for sm_90: ok
func.func @half_chain(%x: tensor<64x256xf16>, %y: tensor<64x256xbf16>) -> tensor<64x256xf16> {
  %e = tensor.empty() : tensor<64x256xf16>
  %a = linalg.exp ins(%x : tensor<64x256xf16>) outs(%e : tensor<64x256xf16>) -> tensor<64x256xf16>
  %f = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a, %y : tensor<64x256xf16>, tensor<64x256xbf16>) outs(%e : tensor<64x256xf16>) {
  ^bb0(%p: f16, %q: bf16, %o: f16):
    %qf = arith.extf %q : bf16 to f32
    %pf = arith.extf %p : f16 to f32
    %s = arith.addf %pf, %qf : f32
    %r = arith.truncf %s : f32 to f16
    linalg.yield %r : f16
  } -> tensor<64x256xf16>
  return %f : tensor<64x256xf16>
}

// CHECK-LABEL: @int_chain_kopt_g0_elementwise
// CHECK: compiled baseline per-op for sm_90: ok
// CHECK: compiled builtin bs128_v4 for sm_90: ok
func.func @int_chain(%x: tensor<1024xi32>, %y: tensor<1024xi32>) -> tensor<1024xi32> {
  %e = tensor.empty() : tensor<1024xi32>
  %b = tensor.empty() : tensor<1024xi1>
  %c = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x, %y : tensor<1024xi32>, tensor<1024xi32>) outs(%b : tensor<1024xi1>) {
  ^bb0(%p: i32, %q: i32, %o: i1):
    %lt = arith.cmpi ult, %p, %q : i32
    linalg.yield %lt : i1
  } -> tensor<1024xi1>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%c, %x, %y : tensor<1024xi1>, tensor<1024xi32>, tensor<1024xi32>) outs(%e : tensor<1024xi32>) {
  ^bb0(%s: i1, %p: i32, %q: i32, %o: i32):
    %d = arith.divsi %p, %q : i32
    %r = arith.select %s, %d, %q : i32
    linalg.yield %r : i32
  } -> tensor<1024xi32>
  return %m : tensor<1024xi32>
}

// CHECK-LABEL: @half_matmul_kopt_g0_contraction
// REMARK: dtypes.mlir:[[@LINE+7]]:8: remark: kopt: builtin: linalg.matmul does not fit a library call (needs f32 operands in the default layout and a zero accumulator); baseline only
// CHECK: baseline  per-op               2 kernels
// CHECK: compiled baseline per-op for sm_90: ok
func.func @half_matmul(%a: tensor<32x64xf16>, %b: tensor<64x16xf16>) -> tensor<32x16xf16> {
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<32x16xf16>
  %f = linalg.fill ins(%zero : f16) outs(%e : tensor<32x16xf16>) -> tensor<32x16xf16>
  %m = linalg.matmul ins(%a, %b : tensor<32x64xf16>, tensor<64x16xf16>) outs(%f : tensor<32x16xf16>) -> tensor<32x16xf16>
  %r = linalg.exp ins(%m : tensor<32x16xf16>) outs(%e : tensor<32x16xf16>) -> tensor<32x16xf16>
  return %r : tensor<32x16xf16>
}
