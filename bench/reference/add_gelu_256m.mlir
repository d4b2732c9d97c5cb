// Reference-cost benchmark input (docs/Evaluator.md), in the form
// torch-mlir emits (test/Inputs/frontend/torch_mlp.mlir).
// Model: gelu(x + y) (erf form), x, y: [16384,16384] f32.
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @forward(%arg0: tensor<16384x16384xf32>, %arg1: tensor<16384x16384xf32>) -> tensor<16384x16384xf32> {
    %cst_0 = arith.constant 1.000000e+00 : f32
    %cst_1 = arith.constant 5.000000e-01 : f32
    %cst_2 = arith.constant 1.41421354 : f32
    %0 = tensor.empty() : tensor<16384x16384xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<16384x16384xf32>, tensor<16384x16384xf32>) outs(%0 : tensor<16384x16384xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %3 = arith.addf %in, %in_3 : f32
      linalg.yield %3 : f32
    } -> tensor<16384x16384xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%1 : tensor<16384x16384xf32>) outs(%0 : tensor<16384x16384xf32>) {
    ^bb0(%in: f32, %out: f32):
      %3 = arith.divf %in, %cst_2 : f32
      %4 = math.erf %3 : f32
      %5 = arith.addf %4, %cst_0 : f32
      %6 = arith.mulf %5, %cst_1 : f32
      %7 = arith.mulf %in, %6 : f32
      linalg.yield %7 : f32
    } -> tensor<16384x16384xf32>
    return %2 : tensor<16384x16384xf32>
  }
}
