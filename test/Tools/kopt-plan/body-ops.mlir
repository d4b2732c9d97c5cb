// RUN: rm -rf %t && kopt plan --compile %s --emit-dir %t > %t.out 2> %t.err
// RUN: FileCheck %s --input-file=%t.out
// RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.err
// RUN: not grep -i "warning\|error" %t.err
// RUN: FileCheck %s --check-prefix=POW --input-file=%t/powers_kopt_g0_elementwise/baseline-per-op.main.cu
// RUN: FileCheck %s --check-prefix=GATHER --input-file=%t/embedding_kopt_g0_elementwise/builtin-bs128_v1.main.cu
// RUN: FileCheck %s --check-prefix=POOL --input-file=%t/adaptive_avg_pool_kopt_g0_reduction/baseline-per-op.main.cu
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What torch-mlir puts in linalg bodies beyond plain arithmetic, translated
// to CUDA that NVRTC compiles: math.fpowi, gathers through tensor.extract
// with computed indices (clamped into the tensor), linalg.index arithmetic,
// and cf.assert (not checked, said in a remark).

// tanh-GELU's x**3 and RMSNorm's x**2: math.fpowi. A small constant
// exponent is a product; any other goes through powf.
// CHECK-LABEL: @powers_kopt_g0_elementwise
// CHECK: compiled baseline per-op for sm_90: ok
// CHECK: compiled builtin bs128_v4 for sm_90: ok
// POW: const float [[CUBE:v[0-9]+]] = (xv0.v[lane] * xv0.v[lane] * xv0.v[lane]);
// POW: const float [[POW:v[0-9]+]] = powf(xv0.v[lane], (float)(xv1.v[lane]));
// POW: const float v{{[0-9]+}} = (1.0f / (xv0.v[lane] * xv0.v[lane]));
#m = affine_map<(d0, d1) -> (d0, d1)>
func.func @powers(%x: tensor<128x768xf32>, %n: tensor<128x768xi32>) -> tensor<128x768xf32> {
  %c3 = arith.constant 3 : i64
  %cm2 = arith.constant -2 : i32
  %e = tensor.empty() : tensor<128x768xf32>
  %p = linalg.generic {indexing_maps = [#m, #m, #m], iterator_types = ["parallel", "parallel"]} ins(%x, %n : tensor<128x768xf32>, tensor<128x768xi32>) outs(%e : tensor<128x768xf32>) {
  ^bb0(%in: f32, %k: i32, %out: f32):
    %c = math.fpowi %in, %c3 : f32, i64
    %d = math.fpowi %in, %k : f32, i32
    %i = math.fpowi %in, %cm2 : f32, i32
    %s = arith.addf %c, %d : f32
    %t = arith.addf %s, %i : f32
    linalg.yield %t : f32
  } -> tensor<128x768xf32>
  %r = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<128x768xf32>) outs(%e : tensor<128x768xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<128x768xf32>
  return %r : tensor<128x768xf32>
}

// BERT's word embedding: i64 ids index the rows of a table (an input of
// the task), with torch-mlir's bounds checks, then the position embedding
// is added. An out-of-range id reads the nearest row.
// REMARK: body-ops.mlir:[[@LINE+23]]:5: remark: kopt: cf.assert dropped: kopt's kernels do not check "index must be smaller than dim size"
// REMARK: body-ops.mlir:[[@LINE+24]]:5: remark: kopt: cf.assert dropped: kopt's kernels do not check "index must be larger or equal to 0"
// CHECK-LABEL: @embedding_kopt_g0_elementwise
// CHECK: compiled baseline per-op for sm_90: ok
// CHECK: compiled builtin bs128_v1 for sm_90: ok
// GATHER: (const long long *__restrict__ in0, const float *__restrict__ in1, const float *__restrict__ in2, float *__restrict__ out0)
// GATHER: const long long [[ID:v[0-9]+]] = (long long)(x{{[0-9]+}});
// GATHER: // not checked: cf.assert "index must be smaller than dim size"
// GATHER: const long long [[ROW:at[0-9]+]] = min(max((long long)([[ID]]), 0LL), 30521LL);
// GATHER: const long long [[COL:at[0-9]+]] = min(max((long long)(v{{[0-9]+}}), 0LL), 767LL);
// GATHER: in1[(([[ROW]] * 768LL) + [[COL]])]
#ids = affine_map<(d0, d1, d2) -> (d0, d1)>
#pos = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @embedding(%ids: tensor<2x128xi64>, %table: tensor<30522x768xf32>, %positions: tensor<128x768xf32>) -> tensor<2x128x768xf32> {
  %c0_i64 = arith.constant 0 : i64
  %c30522 = arith.constant 30522 : index
  %e = tensor.empty() : tensor<2x128x768xf32>
  %g = linalg.generic {indexing_maps = [#ids, #out], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<2x128xi64>) outs(%e : tensor<2x128x768xf32>) {
  ^bb0(%in: i64, %out: f32):
    %i = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %lt = arith.cmpi slt, %i, %c30522 : index
    cf.assert %lt, "index must be smaller than dim size"
    %ge = arith.cmpi sge, %in, %c0_i64 : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %v = tensor.extract %table[%i, %j] : tensor<30522x768xf32>
    linalg.yield %v : f32
  } -> tensor<2x128x768xf32>
  %r = linalg.generic {indexing_maps = [#out, #pos, #out], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g, %positions : tensor<2x128x768xf32>, tensor<128x768xf32>) outs(%e : tensor<2x128x768xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x128x768xf32>
  return %r : tensor<2x128x768xf32>
}

// An adaptive average pool (7x7 to 3x3) the way torch-mlir writes it: a
// sum over the largest window, each output element's own window computed
// from linalg.index, the input read with tensor.extract; then a division by
// the window's size.
// CHECK-LABEL: @adaptive_avg_pool_kopt_g0_reduction
// CHECK: compiled baseline per-op for sm_90: ok
// CHECK: compiled builtin bs128_v1 for sm_90: ok
// POOL: for (long long r{{[0-9]+}} = 0; r{{[0-9]+}} < 4LL;
// POOL: kopt_floordiv(
// POOL: kopt_ceildiv(
// POOL: min(max((long long)(v{{[0-9]+}}), 0LL), 6LL);
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#acc = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @adaptive_avg_pool(%x: tensor<1x4x7x7xf32>) -> tensor<1x4x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %window = tensor.empty() : tensor<4x4xf32>
  %e = tensor.empty() : tensor<1x4x3x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %sum = linalg.generic {indexing_maps = [#win, #acc], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%window : tensor<4x4xf32>) outs(%f : tensor<1x4x3x3xf32>) {
  ^bb0(%w: f32, %out: f32):
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %ki = linalg.index 4 : index
    %kj = linalg.index 5 : index
    %i7 = arith.muli %i, %c7 : index
    %hs = arith.floordivsi %i7, %c3 : index
    %i1 = arith.addi %i, %c1 : index
    %i17 = arith.muli %i1, %c7 : index
    %he = arith.ceildivsi %i17, %c3 : index
    %h = arith.addi %hs, %ki : index
    %hin = arith.cmpi slt, %h, %he : index
    %hc = arith.select %hin, %h, %hs : index
    %j7 = arith.muli %j, %c7 : index
    %ws = arith.floordivsi %j7, %c3 : index
    %j1 = arith.addi %j, %c1 : index
    %j17 = arith.muli %j1, %c7 : index
    %we = arith.ceildivsi %j17, %c3 : index
    %v = arith.addi %ws, %kj : index
    %vin = arith.cmpi slt, %v, %we : index
    %vc = arith.select %vin, %v, %ws : index
    %in = arith.andi %hin, %vin : i1
    %x1 = tensor.extract %x[%n, %c, %hc, %vc] : tensor<1x4x7x7xf32>
    %s = arith.addf %out, %x1 : f32
    %r = arith.select %in, %s, %out : f32
    linalg.yield %r : f32
  } -> tensor<1x4x3x3xf32>
  %avg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sum : tensor<1x4x3x3xf32>) outs(%e : tensor<1x4x3x3xf32>) {
  ^bb0(%s: f32, %out: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %i7 = arith.muli %i, %c7 : index
    %hs = arith.floordivsi %i7, %c3 : index
    %i1 = arith.addi %i, %c1 : index
    %i17 = arith.muli %i1, %c7 : index
    %he = arith.ceildivsi %i17, %c3 : index
    %j7 = arith.muli %j, %c7 : index
    %ws = arith.floordivsi %j7, %c3 : index
    %j1 = arith.addi %j, %c1 : index
    %j17 = arith.muli %j1, %c7 : index
    %we = arith.ceildivsi %j17, %c3 : index
    %dh = arith.subi %he, %hs : index
    %dw = arith.subi %we, %ws : index
    %count = arith.muli %dh, %dw : index
    %ci = arith.index_cast %count : index to i64
    %cf = arith.sitofp %ci : i64 to f32
    %a = arith.divf %s, %cf : f32
    linalg.yield %a : f32
  } -> tensor<1x4x3x3xf32>
  return %avg : tensor<1x4x3x3xf32>
}

// torch-mlir's reciprocal checks for zero with an assertion, which kernels
// do not evaluate: the comparison feeding it is not emitted either.
// REMARK: body-ops.mlir:[[@LINE+12]]:5: remark: kopt: cf.assert dropped: kopt's kernels do not check "unimplemented: tensor with zero element"
// CHECK-LABEL: @reciprocal_kopt_g0_elementwise
// CHECK: compiled baseline per-op for sm_90: ok
// CHECK: compiled builtin bs128_v4 for sm_90: ok
#v = affine_map<(d0) -> (d0)>
func.func @reciprocal(%x: tensor<32xf32>) -> tensor<32xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<32xf32>
  %r = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%x : tensor<32xf32>) outs(%e : tensor<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %nz = arith.cmpf one, %in, %zero : f32
    cf.assert %nz, "unimplemented: tensor with zero element"
    %d = arith.divf %one, %in : f32
    linalg.yield %d : f32
  } -> tensor<32xf32>
  %s = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%r : tensor<32xf32>) outs(%e : tensor<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.sin %in : f32
    linalg.yield %t : f32
  } -> tensor<32xf32>
  return %s : tensor<32xf32>
}
