// Reference-cost benchmark input (docs/Evaluator.md), in the form
// torch-mlir emits (test/Inputs/frontend/torch_mlp.mlir).
// Model: relu(linear(8192->8192)), x: [1024,8192] f32, weight [8192,8192].
#map = affine_map<(d0, d1) -> (d1)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @forward(%arg0: tensor<1024x8192xf32>, %arg1: tensor<8192x8192xf32>, %arg2: tensor<8192xf32>) -> tensor<1024x8192xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<8192x8192xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<8192x8192xf32>) outs(%0 : tensor<8192x8192xf32>) permutation = [1, 0] 
    %1 = tensor.empty() : tensor<1024x8192xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<1024x8192xf32>) -> tensor<1024x8192xf32>
    %3 = linalg.matmul ins(%arg0, %transposed : tensor<1024x8192xf32>, tensor<8192x8192xf32>) outs(%2 : tensor<1024x8192xf32>) -> tensor<1024x8192xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg2 : tensor<8192xf32>) outs(%1 : tensor<1024x8192xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1024x8192xf32>
    %5 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%3, %4 : tensor<1024x8192xf32>, tensor<1024x8192xf32>) outs(%1 : tensor<1024x8192xf32>) {
    ^bb0(%in: f32, %in_4: f32, %out: f32):
      %7 = arith.addf %in, %in_4 : f32
      linalg.yield %7 : f32
    } -> tensor<1024x8192xf32>
    %6 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%5 : tensor<1024x8192xf32>) outs(%1 : tensor<1024x8192xf32>) {
    ^bb0(%in: f32, %out: f32):
      %7 = arith.cmpf ugt, %in, %cst : f32
      %8 = arith.select %7, %in, %cst : f32
      linalg.yield %8 : f32
    } -> tensor<1024x8192xf32>
    return %6 : tensor<1024x8192xf32>
  }
}
