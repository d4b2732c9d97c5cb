// A convolution block: conv 3x3 (NCHW/FCHW) + bias + ReLU + 2x2 max-pool.
// Analyse with: kopt analyze examples/conv_block.mlir
#bias = affine_map<(n, c, h, w) -> (c)>
#id4 = affine_map<(n, c, h, w) -> (n, c, h, w)>
func.func @conv_block(%x: tensor<16x64x58x58xf32>, %w: tensor<128x64x3x3xf32>,
                      %b: tensor<128xf32>) -> tensor<16x128x28x28xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<16x128x56x56xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x128x56x56xf32>) -> tensor<16x128x56x56xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<16x64x58x58xf32>, tensor<128x64x3x3xf32>)
      outs(%f : tensor<16x128x56x56xf32>) -> tensor<16x128x56x56xf32>
  %r = linalg.generic {indexing_maps = [#id4, #bias, #id4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c, %b : tensor<16x128x56x56xf32>, tensor<128xf32>) outs(%e : tensor<16x128x56x56xf32>) {
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %v, %bv : f32
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %s, %z : f32
    linalg.yield %m : f32
  } -> tensor<16x128x56x56xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %ep = tensor.empty() : tensor<16x128x28x28xf32>
  %fp = linalg.fill ins(%ninf : f32) outs(%ep : tensor<16x128x28x28xf32>) -> tensor<16x128x28x28xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>,
                                strides = dense<2> : tensor<2xi64>}
      ins(%r, %window : tensor<16x128x56x56xf32>, tensor<2x2xf32>)
      outs(%fp : tensor<16x128x28x28xf32>) -> tensor<16x128x28x28xf32>
  return %p : tensor<16x128x28x28xf32>
}
