// RUN: rm -rf %t && mkdir %t
// RUN: kopt compile %s --db %t/k.db --tune=never -o %t/out.mlir --emit-module %t/m.kmod --module-arch=none | FileCheck %s --check-prefix=COMPILE
// RUN: kopt-run %t/m.kmod --list | FileCheck %s --check-prefix=LIST
// RUN: kopt plan --compile %s | FileCheck %s --check-prefix=PLAN
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A grouped convolution as torch-mlir writes it for RegNet and ResNeXt:
// input, weight and the zeros it accumulates into are reshaped to
// [N, G, C/G, H, W], the zeros as a fill of a reshaped tensor.empty. The
// reshaped empty tensor is cloned into the convolution's group with the
// fill, so nothing is left outside the groups that a runtime module could
// not hold, and the group's plans (the cuDNN call, the direct kernels)
// compile.
//
// COMPILE: @grouped_conv_kopt_g1000_elementwise: baseline/per-op
// COMPILE: @grouped_conv_kopt_g0_convolution: baseline/per-op
// COMPILE: module: 7 buffers, 2 plans, 2 steps
//
// LIST:      input   x            f32[1x8x10x10]
// LIST-NEXT: input   w            f32[8x4x3x3]
// LIST-NEXT: output  r            f32[1x8x10x10]
// LIST:      step 0  @grouped_conv_kopt_g1000_elementwise  baseline/per-op
// LIST-NEXT: step 1  @grouped_conv_kopt_g0_convolution  baseline/per-op
//
// PLAN: compiled baseline per-op for sm_90: ok
// PLAN: compiled builtin direct_{{.*}}: ok
// PLAN-NOT: failed
func.func @grouped_conv(%x: tensor<1x8x10x10xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x10x10xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x10x10xf32> to tensor<1x8x12x12xf32>
  %xs = tensor.expand_shape %p [[0], [1, 2], [3], [4]] output_shape [1, 2, 4, 12, 12] : tensor<1x8x12x12xf32> into tensor<1x2x4x12x12xf32>
  %ws = tensor.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [2, 4, 4, 3, 3] : tensor<8x4x3x3xf32> into tensor<2x4x4x3x3xf32>
  %e = tensor.empty() : tensor<1x8x10x10xf32>
  %es = tensor.expand_shape %e [[0], [1, 2], [3], [4]] output_shape [1, 2, 4, 10, 10] : tensor<1x8x10x10xf32> into tensor<1x2x4x10x10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%es : tensor<1x2x4x10x10xf32>) -> tensor<1x2x4x10x10xf32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%xs, %ws : tensor<1x2x4x12x12xf32>, tensor<2x4x4x3x3xf32>) outs(%f : tensor<1x2x4x10x10xf32>) -> tensor<1x2x4x10x10xf32>
  %r = tensor.collapse_shape %c [[0], [1, 2], [3], [4]] : tensor<1x2x4x10x10xf32> into tensor<1x8x10x10xf32>
  return %r : tensor<1x8x10x10xf32>
}
