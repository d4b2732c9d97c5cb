// Reference-cost benchmark input (docs/Evaluator.md), in the form
// torch-mlir emits (keepdim reductions as in
// test/Inputs/frontend/torch_attention.mlir).
// Model: torch.sum(x, dim=1, keepdim=True), x: [16,64,256,256] f32 (NCHW).
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
module {
  func.func @forward(%arg0: tensor<16x64x256x256xf32>) -> tensor<16x1x256x256xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<16x1x256x256xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<16x1x256x256xf32>) -> tensor<16x1x256x256xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%arg0 : tensor<16x64x256x256xf32>) outs(%1 : tensor<16x1x256x256xf32>) {
    ^bb0(%in: f32, %out: f32):
      %3 = arith.addf %in, %out : f32
      linalg.yield %3 : f32
    } -> tensor<16x1x256x256xf32>
    return %2 : tensor<16x1x256x256xf32>
  }
}
