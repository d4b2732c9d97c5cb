// A max pool padded with -inf, asymmetrically, returned with its padding.
func.func @pad_pool(%x: tensor<1x4x9x9xf32>) -> (tensor<1x4x11x12xf32>, tensor<1x4x5x5xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %p = tensor.pad %x low[0, 0, 1, 2] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %ninf : f32
  } : tensor<1x4x9x9xf32> to tensor<1x4x11x12xf32>
  %e = tensor.empty() : tensor<1x4x5x5xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  %k = tensor.empty() : tensor<3x3xf32>
  %m = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%p, %k : tensor<1x4x11x12xf32>, tensor<3x3xf32>) outs(%f : tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  return %p, %m : tensor<1x4x11x12xf32>, tensor<1x4x5x5xf32>
}
