// A generic reading every other element: its map is neither a projected
// permutation nor a unit broadcast, so kopt fuses it nowhere.
#strided = affine_map<(d0) -> (d0 * 2)>
#id = affine_map<(d0) -> (d0)>
func.func @forward(%x: tensor<16xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#strided, #id], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
