// x + (sqrt(x - c) - sqrt(x - c)): x where x >= c, NaN below c. With c = 0
// normal inputs give NaN in about half the elements and uniform(0.5, 2) none;
// with c = 10 every input kopt check-module draws gives NaN.
#map = affine_map<(d0) -> (d0)>
func.func @forward(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %c = arith.constant SHIFT : f32
  %0 = tensor.empty() : tensor<4096xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<4096xf32>) outs(%0 : tensor<4096xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.subf %a, %c : f32
    %r = math.sqrt %s : f32
    %z = arith.subf %r, %r : f32
    %y = arith.addf %a, %z : f32
    linalg.yield %y : f32
  } -> tensor<4096xf32>
  return %1 : tensor<4096xf32>
}
