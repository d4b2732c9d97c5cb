// A graph ending in a reshape of a group's result (a head split).
func.func @returned_view(%a: tensor<8x16x16xf32>, %b: tensor<8x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<8x16x16xf32>, tensor<8x16x8xf32>) outs(%f : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %r = tensor.expand_shape %m [[0, 1], [2], [3]] output_shape [2, 4, 16, 8] : tensor<8x16x8xf32> into tensor<2x4x16x8xf32>
  return %r : tensor<2x4x16x8xf32>
}
