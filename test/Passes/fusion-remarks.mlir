// RUN: kopt-opt %s --allow-unregistered-dialect --split-input-file --kopt-form-fusion-groups -verify-diagnostics | FileCheck %s
// RUN: kopt-opt %s --allow-unregistered-dialect --split-input-file --kopt-form-fusion-groups=emit-remarks=false 2>&1 | FileCheck %s --check-prefix=QUIET
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The remark, word for word, for each op the planner leaves out, and that the
// op is left untagged; then the remarks for assertions, which do not keep an
// op out. With emit-remarks=false nothing is printed.
// QUIET-NOT: remark: kopt
// CHECK-NOT: kopt.group_id

// A dynamic shape is left to the default lowering.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @dynamic(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-remark @+1 {{kopt: not fused: dynamic shape tensor<?x8xf32> (only static shapes are tuned)}}
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<?x8xf32>) outs(%b : tensor<?x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  } -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// A gather from a tensor of unknown size (kopt clamps gather indices into
// static shapes).
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @gather_body(%ids: tensor<4x8xindex>, %table: tensor<?xf32>, %o: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-remark @+1 {{kopt: not fused: its body uses 'tensor.extract' on tensor<?xf32>, a type kopt cannot generate code for}}
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4x8xindex>) outs(%o : tensor<4x8xf32>) {
  ^bb0(%i: index, %out: f32):
    %v = tensor.extract %table[%i] : tensor<?xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A body op with two results.
#id = affine_map<(d0) -> (d0)>
func.func @two_results(%x: tensor<8xf32>, %o: tensor<8xf32>) -> tensor<8xf32> {
  // expected-remark @+1 {{kopt: not fused: its body uses 'math.sincos', which has two results; kopt translates single-result ops}}
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%o : tensor<8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s, %c = math.sincos %a : f32
    %v = arith.addf %s, %c : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A strided indexing map is not a projected permutation.
#strided = affine_map<(d0, d1) -> (d0 * 2, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @strided_map(%x: tensor<16x8xf32>, %o: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-remark @+1 {{kopt: not fused: an indexing map is neither a projected permutation nor a unit broadcast}}
  %0 = linalg.generic {indexing_maps = [#strided, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x8xf32>) outs(%o : tensor<8x8xf32>) {
  ^bb0(%v: f32, %out: f32):
    linalg.yield %v : f32
  } -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// An op on buffers.
func.func @buffers(%a: memref<8x8xf32>, %b: memref<8x8xf32>) {
  // expected-remark @+1 {{kopt: not fused: operates on buffers (memref<8x8xf32>); kopt tunes tensor programs}}
  linalg.map { math.exp } ins(%a : memref<8x8xf32>) outs(%b : memref<8x8xf32>)
  return
}

// -----

// An element type the code generators do not handle.
func.func @element_type(%a: tensor<8xi4>, %b: tensor<8xi4>) -> tensor<8xi4> {
  // expected-remark @+1 {{kopt: not fused: unsupported element type in tensor<8xi4>}}
  %0 = linalg.map { arith.addi } ins(%a, %a : tensor<8xi4>, tensor<8xi4>) outs(%b : tensor<8xi4>)
  return %0 : tensor<8xi4>
}

// -----

// A function with more than one block is not planned at all, so the
// exp/tanh chain that would otherwise be a group stays untagged.
// expected-remark @+1 {{kopt: not planned: the function has control flow (more than one block)}}
func.func @multi_block(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  "test.br"()[^bb1] : () -> ()
^bb1:
  %0 = linalg.map { math.exp } ins(%a : tensor<8xf32>) outs(%b : tensor<8xf32>)
  %1 = linalg.map { math.tanh } ins(%0 : tensor<8xf32>) outs(%b : tensor<8xf32>)
  return %1 : tensor<8xf32>
}

// -----

// An embedding lookup guarded by torch-mlir's bounds checks is fused with
// the add after it (the gather is supported), and each assertion is said
// to be dropped.
#ids = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: @asserts
func.func @asserts(%ids: tensor<4xi64>, %table: tensor<16x8xf32>, %x: tensor<4x8xf32>, %o: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : i64
  %c16 = arith.constant 16 : index
  %0 = linalg.generic {indexing_maps = [#ids, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%o : tensor<4x8xf32>) {
  ^bb0(%id: i64, %out: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 1 : index
    %lt = arith.cmpi slt, %i, %c16 : index
    // expected-remark @+1 {{kopt: cf.assert dropped: kopt's kernels do not check "index must be smaller than dim size"}}
    cf.assert %lt, "index must be smaller than dim size"
    %ge = arith.cmpi sge, %id, %c0 : i64
    // expected-remark @+1 {{kopt: cf.assert dropped: kopt's kernels do not check "index must be larger or equal to 0"}}
    cf.assert %ge, "index must be larger or equal to 0"
    %v = tensor.extract %table[%i, %j] : tensor<16x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  // CHECK: linalg.map
  // CHECK-SAME: kopt.group_id = 0
  %1 = linalg.map { arith.addf } ins(%0, %x : tensor<4x8xf32>, tensor<4x8xf32>) outs(%o : tensor<4x8xf32>)
  return %1 : tensor<4x8xf32>
}
