// One elementwise group for the `kopt propose` tests: a bias over rows, then
// ReLU.
func.func @bias_relu(%x: tensor<256x1024xf32>, %b: tensor<1024xf32>) -> tensor<256x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x1024xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<256x1024xf32>, tensor<1024xf32>) outs(%e : tensor<256x1024xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %a = arith.addf %v, %w : f32
    linalg.yield %a : f32
  } -> tensor<256x1024xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<256x1024xf32>) outs(%e : tensor<256x1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<256x1024xf32>
  return %r : tensor<256x1024xf32>
}
