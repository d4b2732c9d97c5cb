// x - x: 0 for every input kopt check-module draws.
#map = affine_map<(d0) -> (d0)>
func.func @forward(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %0 = tensor.empty() : tensor<4096xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<4096xf32>) outs(%0 : tensor<4096xf32>) {
  ^bb0(%a: f32, %o: f32):
    %z = arith.subf %a, %a : f32
    linalg.yield %z : f32
  } -> tensor<4096xf32>
  return %1 : tensor<4096xf32>
}
