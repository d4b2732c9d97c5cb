#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d1)>
module {
  func.func private @conv_block_kopt_g0_convolution(%arg0: tensor<16x64x58x58xf32>, %arg1: tensor<128x64x3x3xf32>, %arg2: tensor<128xf32>) -> tensor<16x128x28x28xf32> attributes {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = {id = 0 : i64, kind = "convolution", parent = "conv_block"}, kopt.key = "37010a01b802bb87982faed8a069c0c0812ddf5a929721776aa24b33434c6865", kopt.plan = "builtin/library_bs512_v1", kopt.plan_hash = "2343d6760252f945"} {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<16x128x28x28xf32>
    %1 = linalg.fill ins(%cst_0 : f32) outs(%0 : tensor<16x128x28x28xf32>) -> tensor<16x128x28x28xf32>
    %2 = tensor.empty() : tensor<16x128x56x56xf32>
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<16x128x56x56xf32>) -> tensor<16x128x56x56xf32>
    %4 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %arg1 : tensor<16x64x58x58xf32>, tensor<128x64x3x3xf32>) outs(%3 : tensor<16x128x56x56xf32>) -> tensor<16x128x56x56xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%4, %arg2 : tensor<16x128x56x56xf32>, tensor<128xf32>) outs(%2 : tensor<16x128x56x56xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %8 = arith.addf %in, %in_1 : f32
      %9 = arith.maximumf %8, %cst : f32
      linalg.yield %9 : f32
    } -> tensor<16x128x56x56xf32>
    %6 = tensor.empty() : tensor<2x2xf32>
    %7 = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%5, %6 : tensor<16x128x56x56xf32>, tensor<2x2xf32>) outs(%1 : tensor<16x128x28x28xf32>) -> tensor<16x128x28x28xf32>
    return %7 : tensor<16x128x28x28xf32>
  }
  func.func @conv_block(%arg0: tensor<16x64x58x58xf32>, %arg1: tensor<128x64x3x3xf32>, %arg2: tensor<128xf32>) -> tensor<16x128x28x28xf32> {
    %0 = call @conv_block_kopt_g0_convolution(%arg0, %arg1, %arg2) {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = 0 : i64, kopt.key = "37010a01b802bb87982faed8a069c0c0812ddf5a929721776aa24b33434c6865", kopt.plan = "builtin/library_bs512_v1", kopt.plan_hash = "2343d6760252f945"} : (tensor<16x64x58x58xf32>, tensor<128x64x3x3xf32>, tensor<128xf32>) -> tensor<16x128x28x28xf32>
    return %0 : tensor<16x128x28x28xf32>
  }
}

