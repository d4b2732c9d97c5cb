// A linear layer with bias and ReLU on a dynamic batch, written the way
// torch-mlir writes one (torch.export.Dim): the batch is flattened with the
// sequence, its sizes computed from tensor.dim, and checked.
#times16 = affine_map<()[s0] -> (s0 * 16)>
#row = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>
func.func @mlp(%x: tensor<?x16x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<?x16x32xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c0_i64 = arith.constant 0 : i64
  %zero = arith.constant 0.0 : f32
  %d = tensor.dim %x, %c0 : tensor<?x16x64xf32>
  %n64 = arith.index_cast %d : index to i64
  %ok = arith.cmpi sge, %n64, %c0_i64 : i64
  cf.assert %ok, "negative values not allowed in new dimensions"
  %flat = tensor.collapse_shape %x [[0, 1], [2]] : tensor<?x16x64xf32> into tensor<?x64xf32>
  %rows = affine.apply #times16()[%d]
  %e = tensor.empty(%rows) : tensor<?x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %m = linalg.matmul ins(%flat, %w : tensor<?x64xf32>, tensor<64x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  %h = linalg.generic {indexing_maps = [#row, #bias, #row], iterator_types = ["parallel", "parallel"]} ins(%m, %b : tensor<?x32xf32>, tensor<32xf32>) outs(%e : tensor<?x32xf32>) {
  ^bb0(%in: f32, %bb: f32, %out: f32):
    %s = arith.addf %in, %bb : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<?x32xf32>
  %n = arith.divsi %rows, %c16 : index
  %y = tensor.expand_shape %h [[0, 1], [2]] output_shape [%n, 16, 32] : tensor<?x32xf32> into tensor<?x16x32xf32>
  return %y : tensor<?x16x32xf32>
}
