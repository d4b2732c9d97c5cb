// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// One function per row form the row kernels handle, small and with odd
// sizes (rows and lengths that no block size or vector width divides), in
// the shapes torch-mlir's FX importer writes them: reductions over a
// non-innermost dimension (sum, mean, max with its dropped index), RMSNorm
// and softmax over the channels, short rows, a softmax written out op by
// op, a layernorm over few long rows (split rows), statistics over two
// dimensions accumulated in f64, and rows too long for one block's
// registers (kept in shared memory, a block or a cluster of blocks per
// row, clusters of 16 too), of a length divisible by 4 and not, rows
// that do not fit the L2 cache (split rows in batches), and a layernorm of
// data with a large mean (the variance in the mean's pass).

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d0)>
#bcast2 = affine_map<(d0, d1) -> (d0, 0)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#keep3 = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
#drop3 = affine_map<(d0, d1, d2) -> (d0, d2)>
#stat3 = affine_map<(d0, d1, d2) -> (d0, 0, 0)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#drop4 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>

// torch.sum(x, dim=1, keepdim=True)
func.func @sum_dim1(%x: tensor<3x37x45xf32>) -> tensor<3x1x45xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x1x45xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x1x45xf32>) -> tensor<3x1x45xf32>
  %s = linalg.generic {indexing_maps = [#id3, #keep3], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : tensor<3x37x45xf32>) outs(%f : tensor<3x1x45xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<3x1x45xf32>
  return %s : tensor<3x1x45xf32>
}

// torch.mean(x, dim=1)
func.func @mean_dim1(%x: tensor<2x100x33xf32>) -> tensor<2x33xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 100.0 : f32
  %e = tensor.empty() : tensor<2x33xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x33xf32>) -> tensor<2x33xf32>
  %s = linalg.generic {indexing_maps = [#id3, #drop3], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : tensor<2x100x33xf32>) outs(%f : tensor<2x33xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<2x33xf32>
  %m = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<2x33xf32>) outs(%e : tensor<2x33xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.divf %in, %n : f32
    linalg.yield %d : f32
  } -> tensor<2x33xf32>
  return %m : tensor<2x33xf32>
}

// torch.max(x, dim=1)[0]: the index is computed and dropped.
func.func @max_dim1(%x: tensor<2x70x31xf32>) -> tensor<2x31xf32> {
  %c0 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %ei = tensor.empty() : tensor<2x31xi64>
  %fi = linalg.fill ins(%c0 : i64) outs(%ei : tensor<2x31xi64>) -> tensor<2x31xi64>
  %e = tensor.empty() : tensor<2x31xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x31xf32>) -> tensor<2x31xf32>
  %r:2 = linalg.generic {indexing_maps = [#id3, #drop3, #drop3], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : tensor<2x70x31xf32>) outs(%f, %fi : tensor<2x31xf32>, tensor<2x31xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %mx = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %ii, %idx : i64
    linalg.yield %mx, %sel : f32, i64
  } -> (tensor<2x31xf32>, tensor<2x31xi64>)
  return %r#0 : tensor<2x31xf32>
}

// RMSNorm over the channels of NCHW: x / sqrt(mean(x^2, dim=1) + eps).
func.func @rmsnorm_channels(%x: tensor<2x24x5x7xf32>) -> tensor<2x24x5x7xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 24.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %e = tensor.empty() : tensor<2x24x5x7xf32>
  %sq = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<2x24x5x7xf32>) outs(%e : tensor<2x24x5x7xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<2x24x5x7xf32>
  %es = tensor.empty() : tensor<2x5x7xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<2x5x7xf32>) -> tensor<2x5x7xf32>
  %s = linalg.generic {indexing_maps = [#id4, #drop4], iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%sq : tensor<2x24x5x7xf32>) outs(%fs : tensor<2x5x7xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<2x5x7xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x5x7xf32>) outs(%es : tensor<2x5x7xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.divf %in, %n : f32
    %a = arith.addf %d, %eps : f32
    %q = math.sqrt %a : f32
    linalg.yield %q : f32
  } -> tensor<2x5x7xf32>
  %y = linalg.generic {indexing_maps = [#id4, #drop4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %r : tensor<2x24x5x7xf32>, tensor<2x5x7xf32>) outs(%e : tensor<2x24x5x7xf32>) {
  ^bb0(%in: f32, %rms: f32, %out: f32):
    %d = arith.divf %in, %rms : f32
    linalg.yield %d : f32
  } -> tensor<2x24x5x7xf32>
  return %y : tensor<2x24x5x7xf32>
}

// Softmax over dim 1 of [N, C, L]: a normalisation over a column.
func.func @softmax_dim1(%x: tensor<4x50x9xf32>) -> tensor<4x50x9xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %em = tensor.empty() : tensor<4x1x9xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%em : tensor<4x1x9xf32>) -> tensor<4x1x9xf32>
  %m = linalg.generic {indexing_maps = [#id3, #keep3], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : tensor<4x50x9xf32>) outs(%fm : tensor<4x1x9xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.maximumf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<4x1x9xf32>
  %e = tensor.empty() : tensor<4x50x9xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #keep3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %m : tensor<4x50x9xf32>, tensor<4x1x9xf32>) outs(%e : tensor<4x50x9xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %p = math.exp %d : f32
    linalg.yield %p : f32
  } -> tensor<4x50x9xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%em : tensor<4x1x9xf32>) -> tensor<4x1x9xf32>
  %s = linalg.generic {indexing_maps = [#id3, #keep3], iterator_types = ["parallel", "reduction", "parallel"]} ins(%ex : tensor<4x50x9xf32>) outs(%fs : tensor<4x1x9xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<4x1x9xf32>
  %y = linalg.generic {indexing_maps = [#id3, #keep3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex, %s : tensor<4x50x9xf32>, tensor<4x1x9xf32>) outs(%e : tensor<4x50x9xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %d = arith.divf %in, %sum : f32
    linalg.yield %d : f32
  } -> tensor<4x50x9xf32>
  return %y : tensor<4x50x9xf32>
}

// torch.sum(x, dim=-1) over short rows.
func.func @sum_short_rows(%x: tensor<37x19xf32>) -> tensor<37xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<37xf32>) -> tensor<37xf32>
  %s = linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<37x19xf32>) outs(%f : tensor<37xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<37xf32>
  return %s : tensor<37xf32>
}

// torch.softmax(x, dim=1) as the importer writes it: the running maximum
// with its index, x - max, exp, the row sum, the division.
func.func @softmax_written_out(%x: tensor<6x1000xf32>) -> tensor<6x1000xf32> {
  %c0 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %ei = tensor.empty() : tensor<6xi64>
  %fi = linalg.fill ins(%c0 : i64) outs(%ei : tensor<6xi64>) -> tensor<6xi64>
  %em = tensor.empty() : tensor<6xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%em : tensor<6xf32>) -> tensor<6xf32>
  %m:2 = linalg.generic {indexing_maps = [#id2, #row2, #row2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<6x1000xf32>) outs(%fm, %fi : tensor<6xf32>, tensor<6xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %mx = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %ii, %idx : i64
    linalg.yield %mx, %sel : f32, i64
  } -> (tensor<6xf32>, tensor<6xi64>)
  %mc = tensor.expand_shape %m#0 [[0, 1]] output_shape [6, 1] : tensor<6xf32> into tensor<6x1xf32>
  %e = tensor.empty() : tensor<6x1000xf32>
  %d = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %mc : tensor<6x1000xf32>, tensor<6x1xf32>) outs(%e : tensor<6x1000xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %s = arith.subf %in, %mx : f32
    linalg.yield %s : f32
  } -> tensor<6x1000xf32>
  %ex = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<6x1000xf32>) outs(%e : tensor<6x1000xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = math.exp %in : f32
    linalg.yield %p : f32
  } -> tensor<6x1000xf32>
  %es = tensor.empty() : tensor<6x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<6x1xf32>) -> tensor<6x1xf32>
  %s = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<6x1000xf32>) outs(%fs : tensor<6x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<6x1xf32>
  %y = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%ex, %s : tensor<6x1000xf32>, tensor<6x1xf32>) outs(%e : tensor<6x1000xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %q = arith.divf %in, %sum : f32
    linalg.yield %q : f32
  } -> tensor<6x1000xf32>
  return %y : tensor<6x1000xf32>
}

// A layernorm over three long rows: the mean, then the mean of the squared
// deviations from it (two levels of reductions), then the outputs.
func.func @layernorm_long_rows(%x: tensor<3x10007xf32>) -> tensor<3x10007xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 10007.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %es = tensor.empty() : tensor<3x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<3x1xf32>) -> tensor<3x1xf32>
  %s = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x10007xf32>) outs(%fs : tensor<3x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<3x1xf32>
  %e = tensor.empty() : tensor<3x10007xf32>
  %dev = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<3x10007xf32>, tensor<3x1xf32>) outs(%e : tensor<3x10007xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %mean = arith.divf %sum, %n : f32
    %d = arith.subf %in, %mean : f32
    linalg.yield %d : f32
  } -> tensor<3x10007xf32>
  %v = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%dev : tensor<3x10007xf32>) outs(%fs : tensor<3x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.mulf %in, %in : f32
    %a = arith.addf %q, %out : f32
    linalg.yield %a : f32
  } -> tensor<3x1xf32>
  %y = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%dev, %v : tensor<3x10007xf32>, tensor<3x1xf32>) outs(%e : tensor<3x10007xf32>) {
  ^bb0(%in: f32, %var: f32, %out: f32):
    %m = arith.divf %var, %n : f32
    %a = arith.addf %m, %eps : f32
    %r = math.rsqrt %a : f32
    %o = arith.mulf %in, %r : f32
    linalg.yield %o : f32
  } -> tensor<3x10007xf32>
  return %y : tensor<3x10007xf32>
}

// Group statistics as GroupNorm takes them: the mean of each group of
// channels and positions, summed in f64, and the centred input.
func.func @group_stats_f64(%x: tensor<4x6x35xf32>) -> tensor<4x6x35xf32> {
  %zero = arith.constant 0.0 : f64
  %n = arith.constant 210.0 : f64
  %e64 = tensor.empty() : tensor<4x6x35xf64>
  %x64 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<4x6x35xf32>) outs(%e64 : tensor<4x6x35xf64>) {
  ^bb0(%in: f32, %out: f64):
    %w = arith.extf %in : f32 to f64
    linalg.yield %w : f64
  } -> tensor<4x6x35xf64>
  %es = tensor.empty() : tensor<4x1x1xf64>
  %fs = linalg.fill ins(%zero : f64) outs(%es : tensor<4x1x1xf64>) -> tensor<4x1x1xf64>
  %s = linalg.generic {indexing_maps = [#id3, #stat3], iterator_types = ["parallel", "reduction", "reduction"]} ins(%x64 : tensor<4x6x35xf64>) outs(%fs : tensor<4x1x1xf64>) {
  ^bb0(%in: f64, %out: f64):
    %a = arith.addf %in, %out : f64
    linalg.yield %a : f64
  } -> tensor<4x1x1xf64>
  %e = tensor.empty() : tensor<4x6x35xf32>
  %y = linalg.generic {indexing_maps = [#id3, #stat3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x64, %s : tensor<4x6x35xf64>, tensor<4x1x1xf64>) outs(%e : tensor<4x6x35xf32>) {
  ^bb0(%in: f64, %sum: f64, %out: f32):
    %mean = arith.divf %sum, %n : f64
    %d = arith.subf %in, %mean : f64
    %t = arith.truncf %d : f64 to f32
    linalg.yield %t : f32
  } -> tensor<4x6x35xf32>
  return %y : tensor<4x6x35xf32>
}

// The same softmax over rows kept in shared memory.
func.func @softmax_shared_rows(%x: tensor<3x40000xf32>) -> tensor<3x40000xf32> {
  %c0 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %ei = tensor.empty() : tensor<3xi64>
  %fi = linalg.fill ins(%c0 : i64) outs(%ei : tensor<3xi64>) -> tensor<3xi64>
  %em = tensor.empty() : tensor<3xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%em : tensor<3xf32>) -> tensor<3xf32>
  %m:2 = linalg.generic {indexing_maps = [#id2, #row2, #row2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x40000xf32>) outs(%fm, %fi : tensor<3xf32>, tensor<3xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %mx = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %ii, %idx : i64
    linalg.yield %mx, %sel : f32, i64
  } -> (tensor<3xf32>, tensor<3xi64>)
  %mc = tensor.expand_shape %m#0 [[0, 1]] output_shape [3, 1] : tensor<3xf32> into tensor<3x1xf32>
  %e = tensor.empty() : tensor<3x40000xf32>
  %d = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %mc : tensor<3x40000xf32>, tensor<3x1xf32>) outs(%e : tensor<3x40000xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %s = arith.subf %in, %mx : f32
    linalg.yield %s : f32
  } -> tensor<3x40000xf32>
  %ex = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<3x40000xf32>) outs(%e : tensor<3x40000xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = math.exp %in : f32
    linalg.yield %p : f32
  } -> tensor<3x40000xf32>
  %es = tensor.empty() : tensor<3x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<3x1xf32>) -> tensor<3x1xf32>
  %s = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<3x40000xf32>) outs(%fs : tensor<3x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<3x1xf32>
  %y = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%ex, %s : tensor<3x40000xf32>, tensor<3x1xf32>) outs(%e : tensor<3x40000xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %q = arith.divf %in, %sum : f32
    linalg.yield %q : f32
  } -> tensor<3x40000xf32>
  return %y : tensor<3x40000xf32>
}

// The same layernorm over rows too long for one block: a cluster per row.
func.func @layernorm_cluster_rows(%x: tensor<2x70001xf32>) -> tensor<2x70001xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 70001.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %es = tensor.empty() : tensor<2x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<2x1xf32>) -> tensor<2x1xf32>
  %s = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<2x70001xf32>) outs(%fs : tensor<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<2x1xf32>
  %e = tensor.empty() : tensor<2x70001xf32>
  %dev = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<2x70001xf32>, tensor<2x1xf32>) outs(%e : tensor<2x70001xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %mean = arith.divf %sum, %n : f32
    %d = arith.subf %in, %mean : f32
    linalg.yield %d : f32
  } -> tensor<2x70001xf32>
  %v = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%dev : tensor<2x70001xf32>) outs(%fs : tensor<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.mulf %in, %in : f32
    %a = arith.addf %q, %out : f32
    linalg.yield %a : f32
  } -> tensor<2x1xf32>
  %y = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%dev, %v : tensor<2x70001xf32>, tensor<2x1xf32>) outs(%e : tensor<2x70001xf32>) {
  ^bb0(%in: f32, %var: f32, %out: f32):
    %m = arith.divf %var, %n : f32
    %a = arith.addf %m, %eps : f32
    %r = math.rsqrt %a : f32
    %o = arith.mulf %in, %r : f32
    linalg.yield %o : f32
  } -> tensor<2x70001xf32>
  return %y : tensor<2x70001xf32>
}

// A row sum over rows too long for one block's shared memory.
func.func @sum_cluster_rows(%x: tensor<2x90001xf32>) -> tensor<2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  %s = linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<2x90001xf32>) outs(%f : tensor<2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<2xf32>
  return %s : tensor<2xf32>
}

// A softmax over rows a cluster of 8 blocks would hold in more than half
// an SM's shared memory each: also clusters of 16 blocks.
func.func @softmax_cluster16_rows(%x: tensor<2x250001xf32>) -> tensor<2x250001xf32> {
  %c0 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %ei = tensor.empty() : tensor<2xi64>
  %fi = linalg.fill ins(%c0 : i64) outs(%ei : tensor<2xi64>) -> tensor<2xi64>
  %em = tensor.empty() : tensor<2xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%em : tensor<2xf32>) -> tensor<2xf32>
  %m:2 = linalg.generic {indexing_maps = [#id2, #row2, #row2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<2x250001xf32>) outs(%fm, %fi : tensor<2xf32>, tensor<2xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %mx = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %ii, %idx : i64
    linalg.yield %mx, %sel : f32, i64
  } -> (tensor<2xf32>, tensor<2xi64>)
  %mc = tensor.expand_shape %m#0 [[0, 1]] output_shape [2, 1] : tensor<2xf32> into tensor<2x1xf32>
  %e = tensor.empty() : tensor<2x250001xf32>
  %d = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %mc : tensor<2x250001xf32>, tensor<2x1xf32>) outs(%e : tensor<2x250001xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %s = arith.subf %in, %mx : f32
    linalg.yield %s : f32
  } -> tensor<2x250001xf32>
  %ex = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<2x250001xf32>) outs(%e : tensor<2x250001xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = math.exp %in : f32
    linalg.yield %p : f32
  } -> tensor<2x250001xf32>
  %es = tensor.empty() : tensor<2x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<2x1xf32>) -> tensor<2x1xf32>
  %s = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<2x250001xf32>) outs(%fs : tensor<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<2x1xf32>
  %y = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%ex, %s : tensor<2x250001xf32>, tensor<2x1xf32>) outs(%e : tensor<2x250001xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %q = arith.divf %in, %sum : f32
    linalg.yield %q : f32
  } -> tensor<2x250001xf32>
  return %y : tensor<2x250001xf32>
}

// The same over rows of 16-byte vectors: also the softmax that reads its
// row once and folds it while it lands (ClusterSoftmax.h), a cluster of 8
// and of 16 per row, 4,097 vectors a block so no block size divides them.
func.func @softmax_cluster_read_once(%x: tensor<2x262208xf32>) -> tensor<2x262208xf32> {
  %c0 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %ei = tensor.empty() : tensor<2xi64>
  %fi = linalg.fill ins(%c0 : i64) outs(%ei : tensor<2xi64>) -> tensor<2xi64>
  %em = tensor.empty() : tensor<2xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%em : tensor<2xf32>) -> tensor<2xf32>
  %m:2 = linalg.generic {indexing_maps = [#id2, #row2, #row2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<2x262208xf32>) outs(%fm, %fi : tensor<2xf32>, tensor<2xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %mx = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %ii, %idx : i64
    linalg.yield %mx, %sel : f32, i64
  } -> (tensor<2xf32>, tensor<2xi64>)
  %mc = tensor.expand_shape %m#0 [[0, 1]] output_shape [2, 1] : tensor<2xf32> into tensor<2x1xf32>
  %e = tensor.empty() : tensor<2x262208xf32>
  %d = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %mc : tensor<2x262208xf32>, tensor<2x1xf32>) outs(%e : tensor<2x262208xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %s = arith.subf %in, %mx : f32
    linalg.yield %s : f32
  } -> tensor<2x262208xf32>
  %ex = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<2x262208xf32>) outs(%e : tensor<2x262208xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = math.exp %in : f32
    linalg.yield %p : f32
  } -> tensor<2x262208xf32>
  %es = tensor.empty() : tensor<2x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<2x1xf32>) -> tensor<2x1xf32>
  %s = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<2x262208xf32>) outs(%fs : tensor<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<2x1xf32>
  %y = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%ex, %s : tensor<2x262208xf32>, tensor<2x1xf32>) outs(%e : tensor<2x262208xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %q = arith.divf %in, %sum : f32
    linalg.yield %q : f32
  } -> tensor<2x262208xf32>
  return %y : tensor<2x262208xf32>
}

// Rows enough for a block or a cluster taking 4 rows in turn, each
// row's copies issued as the row before is written (ClusterSoftmax.h);
// 10,002 and 5,001 vectors a block.
func.func @softmax_cluster_rows_in_turn(%x: tensor<32x40008xf32>) -> tensor<32x40008xf32> {
  %c0 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %ei = tensor.empty() : tensor<32xi64>
  %fi = linalg.fill ins(%c0 : i64) outs(%ei : tensor<32xi64>) -> tensor<32xi64>
  %em = tensor.empty() : tensor<32xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%em : tensor<32xf32>) -> tensor<32xf32>
  %m:2 = linalg.generic {indexing_maps = [#id2, #row2, #row2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<32x40008xf32>) outs(%fm, %fi : tensor<32xf32>, tensor<32xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %mx = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %ii, %idx : i64
    linalg.yield %mx, %sel : f32, i64
  } -> (tensor<32xf32>, tensor<32xi64>)
  %mc = tensor.expand_shape %m#0 [[0, 1]] output_shape [32, 1] : tensor<32xf32> into tensor<32x1xf32>
  %e = tensor.empty() : tensor<32x40008xf32>
  %d = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %mc : tensor<32x40008xf32>, tensor<32x1xf32>) outs(%e : tensor<32x40008xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %s = arith.subf %in, %mx : f32
    linalg.yield %s : f32
  } -> tensor<32x40008xf32>
  %ex = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<32x40008xf32>) outs(%e : tensor<32x40008xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = math.exp %in : f32
    linalg.yield %p : f32
  } -> tensor<32x40008xf32>
  %es = tensor.empty() : tensor<32x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<32x1xf32>) -> tensor<32x1xf32>
  %s = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<32x40008xf32>) outs(%fs : tensor<32x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<32x1xf32>
  %y = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%ex, %s : tensor<32x40008xf32>, tensor<32x1xf32>) outs(%e : tensor<32x40008xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %q = arith.divf %in, %sum : f32
    linalg.yield %q : f32
  } -> tensor<32x40008xf32>
  return %y : tensor<32x40008xf32>
}

// A layernorm over rows whose inputs do not fit the L2 cache: also split
// rows in batches of rows that do.
func.func @layernorm_batched_rows(%x: tensor<3x5600003xf32>) -> tensor<3x5600003xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 5600003.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %es = tensor.empty() : tensor<3x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<3x1xf32>) -> tensor<3x1xf32>
  %s = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x5600003xf32>) outs(%fs : tensor<3x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<3x1xf32>
  %e = tensor.empty() : tensor<3x5600003xf32>
  %dev = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<3x5600003xf32>, tensor<3x1xf32>) outs(%e : tensor<3x5600003xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %mean = arith.divf %sum, %n : f32
    %d = arith.subf %in, %mean : f32
    linalg.yield %d : f32
  } -> tensor<3x5600003xf32>
  %v = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%dev : tensor<3x5600003xf32>) outs(%fs : tensor<3x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.mulf %in, %in : f32
    %a = arith.addf %q, %out : f32
    linalg.yield %a : f32
  } -> tensor<3x1xf32>
  %y = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%dev, %v : tensor<3x5600003xf32>, tensor<3x1xf32>) outs(%e : tensor<3x5600003xf32>) {
  ^bb0(%in: f32, %var: f32, %out: f32):
    %m = arith.divf %var, %n : f32
    %a = arith.addf %m, %eps : f32
    %r = math.rsqrt %a : f32
    %o = arith.mulf %in, %r : f32
    linalg.yield %o : f32
  } -> tensor<3x5600003xf32>
  return %y : tensor<3x5600003xf32>
}

// torch.sum(x, dim=0) of a tall, narrow tensor: few outputs, long columns.
#col2 = affine_map<(d0, d1) -> (d1)>
func.func @sum_dim0_tall(%x: tensor<5000x37xf32>) -> tensor<37xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<37xf32>) -> tensor<37xf32>
  %s = linalg.generic {indexing_maps = [#id2, #col2], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<5000x37xf32>) outs(%f : tensor<37xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<37xf32>
  return %s : tensor<37xf32>
}

// A softmax whose exponentials the function also returns: not one
// softmax op, so the baseline runs its ops one by one.
func.func @softmax_exp_returned(%x: tensor<5x300xf32>) -> (tensor<5x300xf32>, tensor<5x300xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %em = tensor.empty() : tensor<5xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%em : tensor<5xf32>) -> tensor<5xf32>
  %m = linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<5x300xf32>) outs(%fm : tensor<5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %mx = arith.maximumf %in, %out : f32
    linalg.yield %mx : f32
  } -> tensor<5xf32>
  %mc = tensor.expand_shape %m [[0, 1]] output_shape [5, 1] : tensor<5xf32> into tensor<5x1xf32>
  %e = tensor.empty() : tensor<5x300xf32>
  %d = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %mc : tensor<5x300xf32>, tensor<5x1xf32>) outs(%e : tensor<5x300xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %s = arith.subf %in, %mx : f32
    linalg.yield %s : f32
  } -> tensor<5x300xf32>
  %ex = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<5x300xf32>) outs(%e : tensor<5x300xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = math.exp %in : f32
    linalg.yield %p : f32
  } -> tensor<5x300xf32>
  %es = tensor.empty() : tensor<5x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<5x1xf32>) -> tensor<5x1xf32>
  %s = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<5x300xf32>) outs(%fs : tensor<5x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<5x1xf32>
  %y = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%ex, %s : tensor<5x300xf32>, tensor<5x1xf32>) outs(%e : tensor<5x300xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %q = arith.divf %in, %sum : f32
    linalg.yield %q : f32
  } -> tensor<5x300xf32>
  return %y, %ex : tensor<5x300xf32>, tensor<5x300xf32>
}

// A layernorm in torch's form (statistics in f64, the variance the mean of
// the squared deviations from the mean) of data whose mean is 1e8 times its
// spread: a variance computed in the mean's pass must not lose it to
// cancellation.
func.func @layernorm_large_mean(%x: tensor<3x20011xf32>) -> tensor<3x20011xf32> {
  %zero = arith.constant 0.0 : f64
  %n = arith.constant 20011.0 : f64
  %shift = arith.constant 1.0e+08 : f64
  %eps = arith.constant 1.0e-05 : f64
  %e64 = tensor.empty() : tensor<3x20011xf64>
  %g = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<3x20011xf32>) outs(%e64 : tensor<3x20011xf64>) {
  ^bb0(%in: f32, %out: f64):
    %w = arith.extf %in : f32 to f64
    %a = arith.addf %w, %shift : f64
    linalg.yield %a : f64
  } -> tensor<3x20011xf64>
  %es = tensor.empty() : tensor<3x1xf64>
  %fs = linalg.fill ins(%zero : f64) outs(%es : tensor<3x1xf64>) -> tensor<3x1xf64>
  %s = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%g : tensor<3x20011xf64>) outs(%fs : tensor<3x1xf64>) {
  ^bb0(%in: f64, %out: f64):
    %a = arith.addf %in, %out : f64
    linalg.yield %a : f64
  } -> tensor<3x1xf64>
  %m = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<3x1xf64>) outs(%es : tensor<3x1xf64>) {
  ^bb0(%in: f64, %out: f64):
    %q = arith.divf %in, %n : f64
    linalg.yield %q : f64
  } -> tensor<3x1xf64>
  %dev = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%g, %m : tensor<3x20011xf64>, tensor<3x1xf64>) outs(%e64 : tensor<3x20011xf64>) {
  ^bb0(%in: f64, %mean: f64, %out: f64):
    %d = arith.subf %in, %mean : f64
    linalg.yield %d : f64
  } -> tensor<3x20011xf64>
  %sq = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%dev, %dev : tensor<3x20011xf64>, tensor<3x20011xf64>) outs(%e64 : tensor<3x20011xf64>) {
  ^bb0(%in: f64, %in2: f64, %out: f64):
    %p = arith.mulf %in, %in2 : f64
    linalg.yield %p : f64
  } -> tensor<3x20011xf64>
  %v = linalg.generic {indexing_maps = [#id2, #bcast2], iterator_types = ["parallel", "reduction"]} ins(%sq : tensor<3x20011xf64>) outs(%fs : tensor<3x1xf64>) {
  ^bb0(%in: f64, %out: f64):
    %a = arith.addf %in, %out : f64
    linalg.yield %a : f64
  } -> tensor<3x1xf64>
  %e = tensor.empty() : tensor<3x20011xf32>
  %y = linalg.generic {indexing_maps = [#id2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%dev, %v : tensor<3x20011xf64>, tensor<3x1xf64>) outs(%e : tensor<3x20011xf32>) {
  ^bb0(%in: f64, %var: f64, %out: f32):
    %q = arith.divf %var, %n : f64
    %a = arith.addf %q, %eps : f64
    %r = math.rsqrt %a : f64
    %o = arith.mulf %in, %r : f64
    %t = arith.truncf %o : f64 to f32
    linalg.yield %t : f32
  } -> tensor<3x20011xf32>
  return %y : tensor<3x20011xf32>
}
