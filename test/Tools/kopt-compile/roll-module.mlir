// torch.roll as torch-mlir writes it for Swin's shifted windows: along
// each rolled dimension, two slices cast to a dynamic size and
// concatenated into a static tensor. kopt-fold-tensor-casts gives the
// concatenations their static slices, so the runtime module holds every
// value (the slices and concatenations run as groups of one) and the fp64
// reference over the whole graph reads it; the reference of every element
// agrees bit for bit with the lazy evaluation of sampled points.
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// RUN: rm -rf %t && mkdir %t
// RUN: kopt compile %s --db %t/k.db --tune=never -o %t/graph.mlir --emit-module %t/roll.kmod --module-arch=none | FileCheck %s
// RUN: FileCheck %s --check-prefix=GRAPH --input-file=%t/graph.mlir
// RUN: kopt-run %t/roll.kmod --list | FileCheck %s --check-prefix=LIST
// RUN: kopt-reference-bench --graph --lazy --threads 2 %s | FileCheck %s --check-prefix=REF
//
// CHECK: module: 8 buffers, 7 plans, 7 steps
//
// GRAPH-LABEL: func.func @forward(
// GRAPH-NOT: tensor.cast
// GRAPH: tensor.concat dim(1) %{{.+}}, %{{.+}} : (tensor<1x5x8x4xf32>, tensor<1x3x8x4xf32>) -> tensor<1x8x8x4xf32>
//
// LIST:      input   x            f32[1x8x8x4]
// LIST-NEXT: output  r            f32[1x8x8x4]
// LIST:      step 6  @forward_kopt_g1006_elementwise  baseline/per-op
//
// REF: every output element (evaluateAll)
// REF: largest difference 0{{$}}
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @forward(%x: tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32> {
  %a = tensor.extract_slice %x[0, 3, 0, 0] [1, 5, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> to tensor<1x5x8x4xf32>
  %ac = tensor.cast %a : tensor<1x5x8x4xf32> to tensor<1x?x8x4xf32>
  %b = tensor.extract_slice %x[0, 0, 0, 0] [1, 3, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> to tensor<1x3x8x4xf32>
  %bc = tensor.cast %b : tensor<1x3x8x4xf32> to tensor<1x?x8x4xf32>
  %rows = tensor.concat dim(1) %ac, %bc : (tensor<1x?x8x4xf32>, tensor<1x?x8x4xf32>) -> tensor<1x8x8x4xf32>
  %c = tensor.extract_slice %rows[0, 0, 3, 0] [1, 8, 5, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> to tensor<1x8x5x4xf32>
  %cc = tensor.cast %c : tensor<1x8x5x4xf32> to tensor<1x8x?x4xf32>
  %d = tensor.extract_slice %rows[0, 0, 0, 0] [1, 8, 3, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> to tensor<1x8x3x4xf32>
  %dc = tensor.cast %d : tensor<1x8x3x4xf32> to tensor<1x8x?x4xf32>
  %rolled = tensor.concat dim(2) %cc, %dc : (tensor<1x8x?x4xf32>, tensor<1x8x?x4xf32>) -> tensor<1x8x8x4xf32>
  %e = tensor.empty() : tensor<1x8x8x4xf32>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%rolled, %x : tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) outs(%e : tensor<1x8x8x4xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %s = arith.addf %in, %in_0 : f32
    linalg.yield %s : f32
  } -> tensor<1x8x8x4xf32>
  return %r : tensor<1x8x8x4xf32>
}
