// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Pools for the sliding-window pooling kernels (test/Tools/kopt-plan/
// pooling.test): padded and strided, dilated, 1-D, sum pools (one large
// enough for warps sliding down 16 and 32 rows of 32 columns, five for
// blocks staging tiles in shared memory, f16 and i32 among them), f16 and
// i32, widths no group of outputs divides, a channels-last pool (column
// kernels only) and a pool along an outer dimension the kernels leave to
// the pointwise ones; a convolution in generic form,
// which reads its window too, is no pool. (A pooling group holds the pad and the pool; the
// elementwise ops around a pool join it after a convolution:
// test/Inputs/conv/padded.mlir.)

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#conv_in = affine_map<(n, f, h, w, c, kh, kw) -> (n, c, h + kh, w + kw)>
#conv_filter = affine_map<(n, f, h, w, c, kh, kw) -> (f, c, kh, kw)>
#conv_out = affine_map<(n, f, h, w, c, kh, kw) -> (n, f, h, w)>

// ResNet's stem pool: max_pool2d(kernel 3, stride 2, padding 1) on 112x112.
func.func @resnet_maxpool(%x: tensor<2x16x112x112xf32>) -> tensor<2x16x56x56xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<2x16x112x112xf32> to tensor<2x16x114x114xf32>
  %e = tensor.empty() : tensor<2x16x56x56xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x16x56x56xf32>) -> tensor<2x16x56x56xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %win : tensor<2x16x114x114xf32>, tensor<3x3xf32>) outs(%f : tensor<2x16x56x56xf32>) -> tensor<2x16x56x56xf32>
  return %p : tensor<2x16x56x56xf32>
}

// A 2x2 stride-2 max-pool without padding, rows of 6 outputs: four per
// thread overlap at the end of a row, eight do not fit.
func.func @maxpool_odd(%x: tensor<1x3x9x13xf32>) -> tensor<1x3x4x6xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x3x4x6xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x3x4x6xf32>) -> tensor<1x3x4x6xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %win : tensor<1x3x9x13xf32>, tensor<2x2xf32>) outs(%f : tensor<1x3x4x6xf32>) -> tensor<1x3x4x6xf32>
  return %p : tensor<1x3x4x6xf32>
}

// avg_pool2d(kernel 3, stride 1, padding 1): a sum over a zero pad divided
// by the window, rows of 9.
func.func @avgpool(%x: tensor<2x4x10x9xf32>) -> tensor<2x4x10x9xf32> {
  %zero = arith.constant 0.0 : f32
  %nine = arith.constant 9.0 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x4x10x9xf32> to tensor<2x4x12x11xf32>
  %e = tensor.empty() : tensor<2x4x10x9xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x10x9xf32>) -> tensor<2x4x10x9xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %s = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %win : tensor<2x4x12x11xf32>, tensor<3x3xf32>) outs(%f : tensor<2x4x10x9xf32>) -> tensor<2x4x10x9xf32>
  %d = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x10x9xf32>) outs(%e : tensor<2x4x10x9xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.divf %in, %nine : f32
    linalg.yield %q : f32
  } -> tensor<2x4x10x9xf32>
  return %d : tensor<2x4x10x9xf32>
}

// avg_pool2d(kernel 3, stride 1, padding 1) on 40x70: warps of 32 columns
// sliding down 16 or 32 rows, the last warp of a row (at 38) and of a
// column (at 24 or 8) overlapping the one before.
func.func @avgpool_warps(%x: tensor<2x3x40x70xf32>) -> tensor<2x3x40x70xf32> {
  %zero = arith.constant 0.0 : f32
  %nine = arith.constant 9.0 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x3x40x70xf32> to tensor<2x3x42x72xf32>
  %e = tensor.empty() : tensor<2x3x40x70xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x40x70xf32>) -> tensor<2x3x40x70xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %s = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %win : tensor<2x3x42x72xf32>, tensor<3x3xf32>) outs(%f : tensor<2x3x40x70xf32>) -> tensor<2x3x40x70xf32>
  %d = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<2x3x40x70xf32>) outs(%e : tensor<2x3x40x70xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.divf %in, %nine : f32
    linalg.yield %q : f32
  } -> tensor<2x3x40x70xf32>
  return %d : tensor<2x3x40x70xf32>
}

// max_pool2d(kernel 4, stride 1, padding 1) on 38x601: blocks staging
// tiles of 16 or 32 rows in shared memory, the last tile of a column (at
// 21 or 5) and of a row (at 88) overlapping the one before.
func.func @maxpool_tiles(%x: tensor<1x2x38x601xf32>) -> tensor<1x2x37x600xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<1x2x38x601xf32> to tensor<1x2x40x603xf32>
  %e = tensor.empty() : tensor<1x2x37x600xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x2x37x600xf32>) -> tensor<1x2x37x600xf32>
  %win = tensor.empty() : tensor<4x4xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %win : tensor<1x2x40x603xf32>, tensor<4x4xf32>) outs(%f : tensor<1x2x37x600xf32>) -> tensor<1x2x37x600xf32>
  return %p : tensor<1x2x37x600xf32>
}

// avg_pool2d(kernel 3, stride 1, padding 1) on 20x130: tiles of 16 rows,
// the division applied as each output is stored.
func.func @avgpool_tiles(%x: tensor<1x3x20x130xf32>) -> tensor<1x3x20x130xf32> {
  %zero = arith.constant 0.0 : f32
  %nine = arith.constant 9.0 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x3x20x130xf32> to tensor<1x3x22x132xf32>
  %e = tensor.empty() : tensor<1x3x20x130xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x3x20x130xf32>) -> tensor<1x3x20x130xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %s = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %win : tensor<1x3x22x132xf32>, tensor<3x3xf32>) outs(%f : tensor<1x3x20x130xf32>) -> tensor<1x3x20x130xf32>
  %d = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x3x20x130xf32>) outs(%e : tensor<1x3x20x130xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.divf %in, %nine : f32
    linalg.yield %q : f32
  } -> tensor<1x3x20x130xf32>
  return %d : tensor<1x3x20x130xf32>
}

// A 4x4 stride-1 sum pool over an input zero-padded along its channels too
// (a zero pad: a channel of pad alone sums to zeros, where a max pool's
// would be -inf): the tiles read it through the pad's general form
// instead of straight from the parameter's planes.
func.func @sumpool_tiles_channel_pad(%x: tensor<1x2x20x130xf32>) -> tensor<1x3x19x129xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 1, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x2x20x130xf32> to tensor<1x3x22x132xf32>
  %e = tensor.empty() : tensor<1x3x19x129xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x3x19x129xf32>) -> tensor<1x3x19x129xf32>
  %win = tensor.empty() : tensor<4x4xf32>
  %p = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %win : tensor<1x3x22x132xf32>, tensor<4x4xf32>) outs(%f : tensor<1x3x19x129xf32>) -> tensor<1x3x19x129xf32>
  return %p : tensor<1x3x19x129xf32>
}

// Tiles of an f16 max pool: halves read from the planes, folded in float.
func.func @maxpool_tiles_f16(%x: tensor<1x2x20x200xf16>) -> tensor<1x2x19x199xf16> {
  %pv = arith.constant 0xFC00 : f16
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %pv : f16
  } : tensor<1x2x20x200xf16> to tensor<1x2x22x202xf16>
  %e = tensor.empty() : tensor<1x2x19x199xf16>
  %f = linalg.fill ins(%pv : f16) outs(%e : tensor<1x2x19x199xf16>) -> tensor<1x2x19x199xf16>
  %win = tensor.empty() : tensor<4x4xf16>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %win : tensor<1x2x22x202xf16>, tensor<4x4xf16>) outs(%f : tensor<1x2x19x199xf16>) -> tensor<1x2x19x199xf16>
  return %p : tensor<1x2x19x199xf16>
}

// Tiles of an i32 sum pool: integers tiled as they are.
func.func @sumpool_tiles_i32(%x: tensor<1x2x20x200xi32>) -> tensor<1x2x19x199xi32> {
  %pv = arith.constant 0 : i32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %pv : i32
  } : tensor<1x2x20x200xi32> to tensor<1x2x22x202xi32>
  %e = tensor.empty() : tensor<1x2x19x199xi32>
  %f = linalg.fill ins(%pv : i32) outs(%e : tensor<1x2x19x199xi32>) -> tensor<1x2x19x199xi32>
  %win = tensor.empty() : tensor<4x4xi32>
  %p = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %win : tensor<1x2x22x202xi32>, tensor<4x4xi32>) outs(%f : tensor<1x2x19x199xi32>) -> tensor<1x2x19x199xi32>
  return %p : tensor<1x2x19x199xi32>
}

// A dilated 3x2 max-pool, strides 1 and 3, dilations 2 and 2.
func.func @dilated_maxpool(%x: tensor<1x2x11x40xf32>) -> tensor<1x2x7x13xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x2x7x13xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x2x7x13xf32>) -> tensor<1x2x7x13xf32>
  %win = tensor.empty() : tensor<3x2xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<2> : vector<2xi64>, strides = dense<[1, 3]> : vector<2xi64>} ins(%x, %win : tensor<1x2x11x40xf32>, tensor<3x2xf32>) outs(%f : tensor<1x2x7x13xf32>) -> tensor<1x2x7x13xf32>
  return %p : tensor<1x2x7x13xf32>
}

// A 1-D max-pool, window 5, stride 1, rows of 29.
func.func @maxpool1d(%x: tensor<3x5x33xf32>) -> tensor<3x5x29xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<3x5x29xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<3x5x29xf32>) -> tensor<3x5x29xf32>
  %win = tensor.empty() : tensor<5xf32>
  %p = linalg.pooling_ncw_max {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>} ins(%x, %win : tensor<3x5x33xf32>, tensor<5xf32>) outs(%f : tensor<3x5x29xf32>) -> tensor<3x5x29xf32>
  return %p : tensor<3x5x29xf32>
}

// f16 and i32: the fold in the compute type, the stores in the storage type.
func.func @maxpool_f16(%x: tensor<2x4x17x19xf16>) -> tensor<2x4x8x9xf16> {
  %ninf = arith.constant 0xFC00 : f16
  %e = tensor.empty() : tensor<2x4x8x9xf16>
  %f = linalg.fill ins(%ninf : f16) outs(%e : tensor<2x4x8x9xf16>) -> tensor<2x4x8x9xf16>
  %win = tensor.empty() : tensor<3x3xf16>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %win : tensor<2x4x17x19xf16>, tensor<3x3xf16>) outs(%f : tensor<2x4x8x9xf16>) -> tensor<2x4x8x9xf16>
  return %p : tensor<2x4x8x9xf16>
}
func.func @sumpool_i32(%x: tensor<2x4x17x19xi32>) -> tensor<2x4x15x17xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<2x4x15x17xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<2x4x15x17xi32>) -> tensor<2x4x15x17xi32>
  %win = tensor.empty() : tensor<3x3xi32>
  %p = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %win : tensor<2x4x17x19xi32>, tensor<3x3xi32>) outs(%f : tensor<2x4x15x17xi32>) -> tensor<2x4x15x17xi32>
  return %p : tensor<2x4x15x17xi32>
}

// Channels last: the window slides along the width, the dimension before
// the channels, so the column kernels take it (threads along the channels).
func.func @nhwc_maxpool(%x: tensor<1x8x34x16xf32>) -> tensor<1x4x17x16xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x4x17x16xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x4x17x16xf32>) -> tensor<1x4x17x16xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %p = linalg.pooling_nhwc_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %win : tensor<1x8x34x16xf32>, tensor<2x2xf32>) outs(%f : tensor<1x4x17x16xf32>) -> tensor<1x4x17x16xf32>
  return %p : tensor<1x4x17x16xf32>
}

// A window along an outer dimension only (dimension 1 of 4): neither
// sliding kernel fits, a remark says why.
#outer_in = affine_map<(n, l, a, b, k) -> (n, l + k, a, b)>
#outer_win = affine_map<(n, l, a, b, k) -> (k)>
#outer_out = affine_map<(n, l, a, b, k) -> (n, l, a, b)>
func.func @outer_maxpool(%x: tensor<2x9x4x4xf32>) -> tensor<2x8x4x4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<2x8x4x4xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
  %win = tensor.empty() : tensor<2xf32>
  %p = linalg.generic {indexing_maps = [#outer_in, #outer_win, #outer_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %win : tensor<2x9x4x4xf32>, tensor<2xf32>) outs(%f : tensor<2x8x4x4xf32>) {
  ^bb0(%in: f32, %w: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  } -> tensor<2x8x4x4xf32>
  return %p : tensor<2x8x4x4xf32>
}

// A convolution in generic form with a ReLU: a windowed reduction, but it
// reads its filter too, so no pool and no remark.
func.func @generic_conv_relu(%x: tensor<1x3x10x10xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %c = linalg.generic {indexing_maps = [#conv_in, #conv_filter, #conv_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%f : tensor<1x4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8x8xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x4x8x8xf32>) outs(%e : tensor<1x4x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x4x8x8xf32>
  return %r : tensor<1x4x8x8xf32>
}
