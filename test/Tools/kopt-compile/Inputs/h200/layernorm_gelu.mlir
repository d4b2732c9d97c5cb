#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0) -> (d0)>
#map3 = affine_map<(d0, d1) -> (d1)>
module {
  func.func private @layernorm_gelu_kopt_g0_reduction(%arg0: tensor<4096x1024xf32>, %arg1: tensor<1024xf32>, %arg2: tensor<1024xf32>) -> tensor<4096x1024xf32> attributes {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = {id = 0 : i64, kind = "reduction", parent = "layernorm_gelu"}, kopt.key = "8fff80b7af1783ad95ebd2518a1125f689c47076392c95b34834ca95a6d654cf", kopt.plan = "builtin/rows_bs128", kopt.plan_hash = "fb6f4053f813ab4c"} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<4096x1024xf32>
    %1 = tensor.empty() : tensor<4096xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<4096xf32>) -> tensor<4096xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<4096x1024xf32>) outs(%2 : tensor<4096xf32>) {
    ^bb0(%in: f32, %out: f32):
      %10 = arith.addf %out, %in : f32
      linalg.yield %10 : f32
    } -> tensor<4096xf32>
    %4 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel"]} ins(%3 : tensor<4096xf32>) outs(%1 : tensor<4096xf32>) {
    ^bb0(%in: f32, %out: f32):
      %cst_0 = arith.constant 1.024000e+03 : f32
      %10 = arith.divf %in, %cst_0 : f32
      linalg.yield %10 : f32
    } -> tensor<4096xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %4 : tensor<4096x1024xf32>, tensor<4096xf32>) outs(%0 : tensor<4096x1024xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %10 = arith.subf %in, %in_0 : f32
      linalg.yield %10 : f32
    } -> tensor<4096x1024xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%5 : tensor<4096x1024xf32>) outs(%2 : tensor<4096xf32>) {
    ^bb0(%in: f32, %out: f32):
      %10 = arith.mulf %in, %in : f32
      %11 = arith.addf %out, %10 : f32
      linalg.yield %11 : f32
    } -> tensor<4096xf32>
    %7 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel"]} ins(%6 : tensor<4096xf32>) outs(%1 : tensor<4096xf32>) {
    ^bb0(%in: f32, %out: f32):
      %cst_0 = arith.constant 1.024000e+03 : f32
      %cst_1 = arith.constant 9.99999974E-6 : f32
      %10 = arith.divf %in, %cst_0 : f32
      %11 = arith.addf %10, %cst_1 : f32
      %12 = math.rsqrt %11 : f32
      linalg.yield %12 : f32
    } -> tensor<4096xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map1, #map3, #map3, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %7, %arg1, %arg2 : tensor<4096x1024xf32>, tensor<4096xf32>, tensor<1024xf32>, tensor<1024xf32>) outs(%0 : tensor<4096x1024xf32>) {
    ^bb0(%in: f32, %in_0: f32, %in_1: f32, %in_2: f32, %out: f32):
      %10 = arith.mulf %in, %in_0 : f32
      %11 = arith.mulf %10, %in_1 : f32
      %12 = arith.addf %11, %in_2 : f32
      linalg.yield %12 : f32
    } -> tensor<4096x1024xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%8 : tensor<4096x1024xf32>) outs(%0 : tensor<4096x1024xf32>) {
    ^bb0(%in: f32, %out: f32):
      %cst_0 = arith.constant 5.000000e-01 : f32
      %cst_1 = arith.constant 1.000000e+00 : f32
      %cst_2 = arith.constant 0.707106769 : f32
      %10 = arith.mulf %in, %cst_2 : f32
      %11 = math.erf %10 : f32
      %12 = arith.addf %cst_1, %11 : f32
      %13 = arith.mulf %cst_0, %in : f32
      %14 = arith.mulf %13, %12 : f32
      linalg.yield %14 : f32
    } -> tensor<4096x1024xf32>
    return %9 : tensor<4096x1024xf32>
  }
  func.func @layernorm_gelu(%arg0: tensor<4096x1024xf32>, %arg1: tensor<1024xf32>, %arg2: tensor<1024xf32>) -> tensor<4096x1024xf32> {
    %0 = call @layernorm_gelu_kopt_g0_reduction(%arg0, %arg1, %arg2) {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = 0 : i64, kopt.key = "8fff80b7af1783ad95ebd2518a1125f689c47076392c95b34834ca95a6d654cf", kopt.plan = "builtin/rows_bs128", kopt.plan_hash = "fb6f4053f813ab4c"} : (tensor<4096x1024xf32>, tensor<1024xf32>, tensor<1024xf32>) -> tensor<4096x1024xf32>
    return %0 : tensor<4096x1024xf32>
  }
}

