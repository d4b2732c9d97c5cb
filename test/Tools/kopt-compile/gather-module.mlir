// RUN: rm -rf %t && mkdir %t
// RUN: kopt compile %s --db %t/k.db --tune=never -o %t/out.mlir --emit-module %t/m.kmod --module-arch=none > %t/compile.out 2> %t/compile.err
// RUN: FileCheck %s --check-prefix=COMPILE --input-file=%t/compile.out
// RUN: FileCheck %s --check-prefix=REMARK --input-file=%t/compile.err
// RUN: FileCheck %s --check-prefix=GRAPH --input-file=%t/out.mlir
// RUN: kopt-run %t/m.kmod --list | FileCheck %s --check-prefix=LIST
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A BERT-style embedding lookup outside the fusion groups becomes a
// runtime module: the gather runs as a group of its own whose inputs are
// the ids and the table, its bounds checks and the function's shape check
// are dropped (each said in a remark), and the rewritten graph keeps them.

// REMARK: gather-module.mlir:[[@LINE+22]]:3: remark: kopt: cf.assert dropped: kopt's kernels do not check "mismatched size"
// REMARK: gather-module.mlir:[[@LINE+28]]:5: remark: kopt: cf.assert dropped: kopt's kernels do not check "index must be smaller than dim size"
// REMARK-NOT: error
//
// COMPILE: module: writing '{{.*}}m.kmod' (sources only)
// COMPILE: @forward_kopt_g1000_elementwise: baseline/per-op
// COMPILE: module: 3 buffers, 1 plans, 1 steps
//
// GRAPH: cf.assert {{.*}} "mismatched size"
// GRAPH: cf.assert {{.*}} "index must be smaller than dim size"
//
// LIST:      input   ids          i64[2x16]
// LIST-NEXT: input   table        f32[100x8]
// LIST-NEXT: output  r            f32[2x16x8]
// LIST-NEXT: step 0  @forward_kopt_g1000_elementwise  baseline/per-op
#in = affine_map<(d0, d1, d2) -> (d0, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @forward(%ids: tensor<2x16xi64>, %table: tensor<100x8xf32>) -> tensor<2x16x8xf32> {
  %c0 = arith.constant 0 : index
  %c100 = arith.constant 100 : index
  %rows = tensor.dim %table, %c0 : tensor<100x8xf32>
  %ok = arith.cmpi eq, %rows, %c100 : index
  cf.assert %ok, "mismatched size"
  %e = tensor.empty() : tensor<2x16x8xf32>
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<2x16xi64>) outs(%e : tensor<2x16x8xf32>) {
  ^bb0(%in: i64, %out: f32):
    %i = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %lt = arith.cmpi slt, %i, %c100 : index
    cf.assert %lt, "index must be smaller than dim size"
    %v = tensor.extract %table[%i, %j] : tensor<100x8xf32>
    linalg.yield %v : f32
  } -> tensor<2x16x8xf32>
  return %r : tensor<2x16x8xf32>
}
