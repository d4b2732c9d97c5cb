// LayerNorm over the last dimension (mean, variance, normalise, scale and
// shift) followed by GELU (erf form), on 4096 tokens of 1024 features.
// Analyse with: kopt analyze examples/layernorm_gelu.mlir
#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#cols = affine_map<(d0, d1) -> (d1)>
#vec = affine_map<(d0) -> (d0)>
func.func @layernorm_gelu(%x: tensor<4096x1024xf32>, %gamma: tensor<1024xf32>,
                          %beta: tensor<1024xf32>) -> tensor<4096x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4096xf32>
  %fr = linalg.fill ins(%zero : f32) outs(%er : tensor<4096xf32>) -> tensor<4096xf32>
  %sum = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4096x1024xf32>) outs(%fr : tensor<4096xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<4096xf32>
  %mean = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%sum : tensor<4096xf32>) outs(%er : tensor<4096xf32>) {
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant 1024.0 : f32
    %m = arith.divf %s, %n : f32
    linalg.yield %m : f32
  } -> tensor<4096xf32>
  %e = tensor.empty() : tensor<4096x1024xf32>
  %centered = linalg.generic {indexing_maps = [#id, #rows, #id],
                              iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean : tensor<4096x1024xf32>, tensor<4096xf32>) outs(%e : tensor<4096x1024xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.subf %v, %m : f32
    linalg.yield %d : f32
  } -> tensor<4096x1024xf32>
  %sq = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%centered : tensor<4096x1024xf32>) outs(%fr : tensor<4096xf32>) {
  ^bb0(%d: f32, %acc: f32):
    %d2 = arith.mulf %d, %d : f32
    %s = arith.addf %acc, %d2 : f32
    linalg.yield %s : f32
  } -> tensor<4096xf32>
  %rstd = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%sq : tensor<4096xf32>) outs(%er : tensor<4096xf32>) {
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant 1024.0 : f32
    %eps = arith.constant 1.0e-5 : f32
    %var = arith.divf %s, %n : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<4096xf32>
  %y = linalg.generic {indexing_maps = [#id, #rows, #cols, #cols, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%centered, %rstd, %gamma, %beta : tensor<4096x1024xf32>, tensor<4096xf32>,
          tensor<1024xf32>, tensor<1024xf32>) outs(%e : tensor<4096x1024xf32>) {
  ^bb0(%d: f32, %r: f32, %g: f32, %b: f32, %o: f32):
    %n = arith.mulf %d, %r : f32
    %sc = arith.mulf %n, %g : f32
    %sh = arith.addf %sc, %b : f32
    linalg.yield %sh : f32
  } -> tensor<4096x1024xf32>
  // GELU: 0.5 * y * (1 + erf(y / sqrt(2)))
  %gelu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<4096x1024xf32>) outs(%e : tensor<4096x1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %rsqrt2 = arith.constant 0.70710678 : f32
    %a = arith.mulf %v, %rsqrt2 : f32
    %erf = math.erf %a : f32
    %p = arith.addf %one, %erf : f32
    %h = arith.mulf %half, %v : f32
    %r = arith.mulf %h, %p : f32
    linalg.yield %r : f32
  } -> tensor<4096x1024xf32>
  return %gelu : tensor<4096x1024xf32>
}
