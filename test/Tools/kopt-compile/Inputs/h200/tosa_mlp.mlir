#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
module {
  func.func private @tosa_mlp_kopt_g0_contraction(%arg0: tensor<1x256x512xf32>, %arg1: tensor<1x512x1024xf32>, %arg2: tensor<1x1x1024xf32>) -> tensor<1x256x1024xf32> attributes {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = {id = 0 : i64, kind = "contraction", parent = "tosa_mlp"}, kopt.key = "2f67501d3e977bb9d2eb38b6f8f1282e01f44cde6e67252c73010d38c73c1ba0", kopt.plan = "builtin/library_bs512_v4", kopt.plan_hash = "0c3944b86c2fd12a"} {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 1.000000e+00 : f32
    %0 = tensor.empty() : tensor<1x256x1024xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x256x1024xf32>) -> tensor<1x256x1024xf32>
    %2 = linalg.batch_matmul ins(%arg0, %arg1 : tensor<1x256x512xf32>, tensor<1x512x1024xf32>) outs(%1 : tensor<1x256x1024xf32>) -> tensor<1x256x1024xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %arg2 : tensor<1x256x1024xf32>, tensor<1x1x1024xf32>) outs(%0 : tensor<1x256x1024xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %6 = arith.addf %in, %in_1 : f32
      linalg.yield %6 : f32
    } -> tensor<1x256x1024xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3 : tensor<1x256x1024xf32>) outs(%0 : tensor<1x256x1024xf32>) {
    ^bb0(%in: f32, %out: f32):
      %6 = arith.negf %in : f32
      %7 = math.exp %6 : f32
      %8 = arith.addf %7, %cst_0 : f32
      %9 = arith.divf %cst_0, %8 : f32
      linalg.yield %9 : f32
    } -> tensor<1x256x1024xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4 : tensor<1x256x1024xf32>) outs(%0 : tensor<1x256x1024xf32>) {
    ^bb0(%in: f32, %out: f32):
      %6 = math.exp %in : f32
      linalg.yield %6 : f32
    } -> tensor<1x256x1024xf32>
    return %5 : tensor<1x256x1024xf32>
  }
  func.func private @tosa_mlp_kopt_g1_reduction(%arg0: tensor<1x256x1024xf32>) -> tensor<1x256x1024xf32> attributes {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = {id = 1 : i64, kind = "reduction", parent = "tosa_mlp"}, kopt.key = "ce39e6f01a27e3a89fd5538366ee62a664aa7e1eae5a8e49c95df7c69ba33431", kopt.plan = "builtin/rows_bs256_reg", kopt.plan_hash = "eead4287433dc0eb"} {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 1.000000e+00 : f32
    %0 = tensor.empty() : tensor<1x256x1024xf32>
    %1 = tensor.empty() : tensor<1x256x1xf32>
    %2 = tensor.empty() : tensor<1x256xf32>
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<1x256xf32>) -> tensor<1x256xf32>
    %reduced = linalg.reduce ins(%arg0 : tensor<1x256x1024xf32>) outs(%3 : tensor<1x256xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %6 = arith.addf %in, %init : f32
        linalg.yield %6 : f32
      }
    %expanded = tensor.expand_shape %reduced [[0], [1, 2]] output_shape [1, 256, 1] : tensor<1x256xf32> into tensor<1x256x1xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded : tensor<1x256x1xf32>) outs(%1 : tensor<1x256x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %6 = arith.divf %cst_0, %in : f32
      linalg.yield %6 : f32
    } -> tensor<1x256x1xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %4 : tensor<1x256x1024xf32>, tensor<1x256x1xf32>) outs(%0 : tensor<1x256x1024xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %6 = arith.mulf %in, %in_1 : f32
      linalg.yield %6 : f32
    } -> tensor<1x256x1024xf32>
    return %5 : tensor<1x256x1024xf32>
  }
  func.func @tosa_mlp(%arg0: tensor<1x256x512xf32>, %arg1: tensor<1x512x1024xf32>, %arg2: tensor<1x1x1024xf32>) -> tensor<1x256x1024xf32> {
    %0 = call @tosa_mlp_kopt_g0_contraction(%arg0, %arg1, %arg2) {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = 0 : i64, kopt.key = "2f67501d3e977bb9d2eb38b6f8f1282e01f44cde6e67252c73010d38c73c1ba0", kopt.plan = "builtin/library_bs512_v4", kopt.plan_hash = "0c3944b86c2fd12a"} : (tensor<1x256x512xf32>, tensor<1x512x1024xf32>, tensor<1x1x1024xf32>) -> tensor<1x256x1024xf32>
    %1 = call @tosa_mlp_kopt_g1_reduction(%0) {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = 1 : i64, kopt.key = "ce39e6f01a27e3a89fd5538366ee62a664aa7e1eae5a8e49c95df7c69ba33431", kopt.plan = "builtin/rows_bs256_reg", kopt.plan_hash = "eead4287433dc0eb"} : (tensor<1x256x1024xf32>) -> tensor<1x256x1024xf32>
    return %1 : tensor<1x256x1024xf32>
  }
}

