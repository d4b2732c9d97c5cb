// An MLP block as a linalg importer emits it: x @ W1 + b1, GELU (tanh form),
// then @ W2 + b2. Analyse with: kopt analyze examples/mlp_block.mlir
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @mlp_block(%x: tensor<512x1024xf32>, %w1: tensor<1024x4096xf32>,
                     %b1: tensor<4096xf32>, %w2: tensor<4096x1024xf32>,
                     %b2: tensor<1024xf32>) -> tensor<512x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<512x4096xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<512x4096xf32>) -> tensor<512x4096xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<512x1024xf32>, tensor<1024x4096xf32>)
                     outs(%f1 : tensor<512x4096xf32>) -> tensor<512x4096xf32>
  %hb = linalg.generic {indexing_maps = [#id, #row, #id],
                        iterator_types = ["parallel", "parallel"]}
      ins(%h, %b1 : tensor<512x4096xf32>, tensor<4096xf32>) outs(%e1 : tensor<512x4096xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    linalg.yield %s : f32
  } -> tensor<512x4096xf32>
  // GELU: 0.5 * v * (1 + tanh(sqrt(2/pi) * (v + 0.044715 v^3)))
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%hb : tensor<512x4096xf32>) outs(%e1 : tensor<512x4096xf32>) {
  ^bb0(%v: f32, %o: f32):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %k = arith.constant 0.7978845608 : f32
    %c = arith.constant 0.044715 : f32
    %v2 = arith.mulf %v, %v : f32
    %v3 = arith.mulf %v2, %v : f32
    %cv3 = arith.mulf %c, %v3 : f32
    %in = arith.addf %v, %cv3 : f32
    %kin = arith.mulf %k, %in : f32
    %t = math.tanh %kin : f32
    %onet = arith.addf %one, %t : f32
    %hv = arith.mulf %half, %v : f32
    %r = arith.mulf %hv, %onet : f32
    linalg.yield %r : f32
  } -> tensor<512x4096xf32>
  %e2 = tensor.empty() : tensor<512x1024xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  %y = linalg.matmul ins(%g, %w2 : tensor<512x4096xf32>, tensor<4096x1024xf32>)
                     outs(%f2 : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  %yb = linalg.generic {indexing_maps = [#id, #row, #id],
                        iterator_types = ["parallel", "parallel"]}
      ins(%y, %b2 : tensor<512x1024xf32>, tensor<1024xf32>) outs(%e2 : tensor<512x1024xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    linalg.yield %s : f32
  } -> tensor<512x1024xf32>
  return %yb : tensor<512x1024xf32>
}
