// RUN: kopt-opt %s --kopt-align-reduction-domains --split-input-file | FileCheck %s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Elementwise ops that read a reduction's tensors through reshapes, as
// torch-mlir writes GroupNorm (bench/suite/real/l1_groupnorm.mlir and
// l2_gemm_groupnorm_hardtanh.mlir, here at 2 samples of 2 groups of 4
// channels): moved over the reduction's domain, reading the reduction's
// own tensor, with the per-channel scale fused into them; an epilogue of a
// matmul, a reshape whose dimensions straddle, a broadcast along part of a
// dimension and an empty domain stay.

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#rows4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
#per_rows = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, d3)>
#per_gc = affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>
#per_nc = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>

// GroupNorm over [N, C, H, W] = [2, 8, 4, 4], statistics over
// [N, G, C/G, H*W] = [2, 2, 4, 16]: the normalisation moves to the
// statistics' domain and reads their input; the per-channel scale, over
// [2, 2, 4, 1], is fused into it; the result is reshaped back.
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[ROWS:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
// CHECK-DAG: #[[GC:.+]] = affine_map<(d0, d1, d2, d3) -> (0, d1, d2, 0)>
// CHECK-LABEL: func.func @groupnorm_nchw(
//  CHECK-SAME:     %[[X:[a-zA-Z0-9]+]]: tensor<2x8x4x4xf32>
//       CHECK:   %[[V:.+]] = tensor.expand_shape %{{.+}} {{\[}}[0], [1, 2], [3]] output_shape [2, 2, 4, 16]
//       CHECK:   %[[SUM:.+]] = linalg.generic {{.+}} ins(%[[V]] : tensor<2x2x4x16xf32>)
//   CHECK-NOT:   tensor<2x2x4x1xf32>
//       CHECK:   %[[Y:.+]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROWS]], #[[GC]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
//  CHECK-SAME:       ins(%[[V]], %[[SUM]], %{{.+}} : tensor<2x2x4x16xf32>, tensor<2x2x1x1xf32>, tensor<1x2x4x1xf32>)
//  CHECK-SAME:       outs(%{{.+}} : tensor<2x2x4x16xf32>)
//       CHECK:     arith.mulf
//       CHECK:     arith.mulf
//       CHECK:   %[[F:.+]] = tensor.collapse_shape %[[Y]] {{\[}}[0, 1, 2, 3]] : tensor<2x2x4x16xf32> into tensor<256xf32>
//       CHECK:   %[[R:.+]] = tensor.expand_shape %[[F]] {{\[}}[0, 1, 2, 3]] output_shape [2, 8, 4, 4]
//       CHECK:   return %[[R]]
func.func @groupnorm_nchw(%x: tensor<2x8x4x4xf32>, %gamma: tensor<8xf32>) -> tensor<2x8x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c = tensor.collapse_shape %x [[0], [1], [2, 3]] : tensor<2x8x4x4xf32> into tensor<2x8x16xf32>
  %v = tensor.expand_shape %c [[0], [1, 2], [3]] output_shape [2, 2, 4, 16] : tensor<2x8x16xf32> into tensor<2x2x4x16xf32>
  %e = tensor.empty() : tensor<2x2x1x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2x1x1xf32>) -> tensor<2x2x1x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #rows4], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%v : tensor<2x2x4x16xf32>) outs(%f : tensor<2x2x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x2x1x1xf32>
  %g = tensor.expand_shape %gamma [[0, 1, 2, 3]] output_shape [1, 2, 4, 1] : tensor<8xf32> into tensor<1x2x4x1xf32>
  %es = tensor.empty() : tensor<2x2x4x1xf32>
  %scale = linalg.generic {indexing_maps = [#per_rows, #per_gc, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sum, %g : tensor<2x2x1x1xf32>, tensor<1x2x4x1xf32>) outs(%es : tensor<2x2x4x1xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x1xf32>
  %sf = tensor.collapse_shape %scale [[0, 1, 2, 3]] : tensor<2x2x4x1xf32> into tensor<16xf32>
  %sn = tensor.expand_shape %sf [[0, 1, 2, 3]] output_shape [2, 8, 1, 1] : tensor<16xf32> into tensor<2x8x1x1xf32>
  %ey = tensor.empty() : tensor<2x8x4x4xf32>
  %y = linalg.generic {indexing_maps = [#id4, #per_nc, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %sn : tensor<2x8x4x4xf32>, tensor<2x8x1x1xf32>) outs(%ey : tensor<2x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x8x4x4xf32>
  return %y : tensor<2x8x4x4xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>

// GroupNorm over the features of [N, C] = [4, 16], normalised over
// [N, G, C/G] = [4, 2, 8], then per-feature weights and a clamp over
// [4, 16]: the weight and the clamp follow the normalisation into its
// domain, one after the other, the weight read as [2, 8].
// CHECK-DAG: #[[ID3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[GC3:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @groupnorm_features(
//  CHECK-SAME:     %[[X:[a-zA-Z0-9]+]]: tensor<4x16xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<16xf32>
//       CHECK:   %[[N:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<4x2x8xf32>, tensor<4x2x1xf32>)
//       CHECK:   %[[W2:.+]] = tensor.expand_shape %[[W]] {{\[}}[0, 1]] output_shape [2, 8] : tensor<16xf32> into tensor<2x8xf32>
//       CHECK:   %[[A:.+]] = linalg.generic {indexing_maps = [#[[ID3]], #[[GC3]], #[[ID3]]], {{.+}} ins(%[[N]], %[[W2]] : tensor<4x2x8xf32>, tensor<2x8xf32>)
//       CHECK:   %[[B:.+]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ID3]]], {{.+}} ins(%[[A]] : tensor<4x2x8xf32>)
//       CHECK:     arith.maximumf
//       CHECK:   %[[F:.+]] = tensor.collapse_shape %[[B]] {{\[}}[0, 1, 2]] : tensor<4x2x8xf32> into tensor<64xf32>
//       CHECK:   %[[R:.+]] = tensor.expand_shape %[[F]] {{\[}}[0, 1]] output_shape [4, 16]
//       CHECK:   return %[[R]]
func.func @groupnorm_features(%x: tensor<4x16xf32>, %w: tensor<16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %v = tensor.expand_shape %x [[0], [1, 2]] output_shape [4, 2, 8] : tensor<4x16xf32> into tensor<4x2x8xf32>
  %e = tensor.empty() : tensor<4x2x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2x1xf32>) -> tensor<4x2x1xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%v : tensor<4x2x8xf32>) outs(%f : tensor<4x2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<4x2x1xf32>
  %en = tensor.empty() : tensor<4x2x8xf32>
  %n = linalg.generic {indexing_maps = [#id3, #rows3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%v, %sum : tensor<4x2x8xf32>, tensor<4x2x1xf32>) outs(%en : tensor<4x2x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x2x8xf32>
  %nc = tensor.collapse_shape %n [[0], [1, 2]] : tensor<4x2x8xf32> into tensor<4x16xf32>
  %ey = tensor.empty() : tensor<4x16xf32>
  %a = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%nc, %w : tensor<4x16xf32>, tensor<16xf32>) outs(%ey : tensor<4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %b = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x16xf32>) outs(%ey : tensor<4x16xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = arith.maximumf %p, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  return %b : tensor<4x16xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>

// The bias of a matmul whose result the reduction reads through a reshape
// stays in the matmul's domain: it is the matmul's epilogue.
// CHECK-LABEL: func.func @matmul_epilogue_stays(
//       CHECK:   %[[MM:.+]] = linalg.matmul
//       CHECK:   linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel"]} ins(%[[MM]], %{{.+}} : tensor<4x16xf32>, tensor<16xf32>)
func.func @matmul_epilogue_stays(%x: tensor<4x32xf32>, %w: tensor<32x16xf32>, %bias: tensor<16xf32>) -> tensor<4x2x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x32xf32>, tensor<32x16xf32>) outs(%f0 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %v = tensor.expand_shape %mm [[0], [1, 2]] output_shape [4, 2, 8] : tensor<4x16xf32> into tensor<4x2x8xf32>
  %e = tensor.empty() : tensor<4x2x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2x1xf32>) -> tensor<4x2x1xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%v : tensor<4x2x8xf32>) outs(%f : tensor<4x2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<4x2x1xf32>
  %b = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<4x16xf32>, tensor<16xf32>) outs(%e0 : tensor<4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %bv = tensor.expand_shape %b [[0], [1, 2]] output_shape [4, 2, 8] : tensor<4x16xf32> into tensor<4x2x8xf32>
  %sum2 = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%bv : tensor<4x2x8xf32>) outs(%sum : tensor<4x2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<4x2x1xf32>
  return %sum2 : tensor<4x2x1xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d0)>
#rows2 = affine_map<(d0, d1) -> (d0, 0)>

// A reduction over [2, 16] of data an op reads as [8, 4] broadcast along
// its second dimension: the broadcast covers part of the reduction's
// second dimension (4 of its 16 elements at a time), so the op stays.
// A reduction over [4, 6] of data read as [6, 4]: no common dimensions,
// the op stays too.
// CHECK-LABEL: func.func @partial_broadcast_stays(
//       CHECK:   linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<8x4xf32>, tensor<8xf32>) outs(%{{.+}} : tensor<8x4xf32>)
// CHECK-LABEL: func.func @straddling_reshape_stays(
//       CHECK:   linalg.generic {{.+}} ins(%{{.+}} : tensor<6x4xf32>) outs(%{{.+}} : tensor<6x4xf32>)
func.func @partial_broadcast_stays(%x: tensor<8x4xf32>, %s: tensor<8xf32>) -> (tensor<2x1xf32>, tensor<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = tensor.collapse_shape %x [[0, 1]] : tensor<8x4xf32> into tensor<32xf32>
  %v = tensor.expand_shape %c [[0, 1]] output_shape [2, 16] : tensor<32xf32> into tensor<2x16xf32>
  %e = tensor.empty() : tensor<2x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x1xf32>) -> tensor<2x1xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #rows2], iterator_types = ["parallel", "reduction"]} ins(%v : tensor<2x16xf32>) outs(%f : tensor<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x1xf32>
  %ey = tensor.empty() : tensor<8x4xf32>
  %y = linalg.generic {indexing_maps = [#id2, #row2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<8x4xf32>, tensor<8xf32>) outs(%ey : tensor<8x4xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  return %sum, %y : tensor<2x1xf32>, tensor<8x4xf32>
}

func.func @straddling_reshape_stays(%x: tensor<6x4xf32>) -> (tensor<4x1xf32>, tensor<6x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = tensor.collapse_shape %x [[0, 1]] : tensor<6x4xf32> into tensor<24xf32>
  %v = tensor.expand_shape %c [[0, 1]] output_shape [4, 6] : tensor<24xf32> into tensor<4x6xf32>
  %e = tensor.empty() : tensor<4x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #rows2], iterator_types = ["parallel", "reduction"]} ins(%v : tensor<4x6xf32>) outs(%f : tensor<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<4x1xf32>
  %ey = tensor.empty() : tensor<6x4xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<6x4xf32>) outs(%ey : tensor<6x4xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = arith.negf %p : f32
    linalg.yield %r : f32
  } -> tensor<6x4xf32>
  return %sum, %y : tensor<4x1xf32>, tensor<6x4xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows2 = affine_map<(d0, d1) -> (d0, 0)>

// An op reading the reduction's input twice reads the reduction's very
// tensor twice, not a second view of it.
// CHECK-LABEL: func.func @same_input_twice(
//       CHECK:   %[[V:.+]] = tensor.expand_shape
//   CHECK-NOT:   tensor.expand_shape
//       CHECK:   linalg.generic {{.+}} ins(%[[V]], %[[V]] : tensor<2x16xf32>, tensor<2x16xf32>) outs(%{{.+}} : tensor<2x16xf32>)
func.func @same_input_twice(%x: tensor<32xf32>) -> (tensor<2x1xf32>, tensor<32xf32>) {
  %zero = arith.constant 0.0 : f32
  %v = tensor.expand_shape %x [[0, 1]] output_shape [2, 16] : tensor<32xf32> into tensor<2x16xf32>
  %e = tensor.empty() : tensor<2x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x1xf32>) -> tensor<2x1xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #rows2], iterator_types = ["parallel", "reduction"]} ins(%v : tensor<2x16xf32>) outs(%f : tensor<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x1xf32>
  %ey = tensor.empty() : tensor<32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %x : tensor<32xf32>, tensor<32xf32>) outs(%ey : tensor<32xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<32xf32>
  return %sum, %y : tensor<2x1xf32>, tensor<32xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows2 = affine_map<(d0, d1) -> (d0, 0)>

// A reduction over an empty domain: nothing to align to, nothing moves.
// CHECK-LABEL: func.func @empty_domain(
//       CHECK:   linalg.generic {{.+}} ins(%{{.+}} : tensor<0xf32>) outs(%{{.+}} : tensor<0xf32>)
func.func @empty_domain(%x: tensor<0xf32>) -> (tensor<0x1xf32>, tensor<0xf32>) {
  %zero = arith.constant 0.0 : f32
  %v = tensor.expand_shape %x [[0, 1]] output_shape [0, 4] : tensor<0xf32> into tensor<0x4xf32>
  %e = tensor.empty() : tensor<0x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<0x1xf32>) -> tensor<0x1xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #rows2], iterator_types = ["parallel", "reduction"]} ins(%v : tensor<0x4xf32>) outs(%f : tensor<0x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<0x1xf32>
  %ey = tensor.empty() : tensor<0xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<0xf32>) outs(%ey : tensor<0xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = arith.negf %p : f32
    linalg.yield %r : f32
  } -> tensor<0xf32>
  return %sum, %y : tensor<0x1xf32>, tensor<0xf32>
}
