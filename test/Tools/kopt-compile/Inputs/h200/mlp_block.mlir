#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
module {
  func.func private @mlp_block_kopt_g0_contraction(%arg0: tensor<512x1024xf32>, %arg1: tensor<1024x4096xf32>, %arg2: tensor<4096xf32>) -> tensor<512x4096xf32> attributes {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = {id = 0 : i64, kind = "contraction", parent = "mlp_block"}, kopt.key = "8a3abab0f72c008722b2d9c8c7f9d96059c42d73ade6b90a0033ca66db419558", kopt.plan = "builtin/gemm_epilogue_bs128_v4", kopt.plan_hash = "5a53420cc286794c"} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<512x4096xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<512x4096xf32>) -> tensor<512x4096xf32>
    %2 = linalg.matmul ins(%arg0, %arg1 : tensor<512x1024xf32>, tensor<1024x4096xf32>) outs(%1 : tensor<512x4096xf32>) -> tensor<512x4096xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%2, %arg2 : tensor<512x4096xf32>, tensor<4096xf32>) outs(%0 : tensor<512x4096xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %5 = arith.addf %in, %in_0 : f32
      linalg.yield %5 : f32
    } -> tensor<512x4096xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%3 : tensor<512x4096xf32>) outs(%0 : tensor<512x4096xf32>) {
    ^bb0(%in: f32, %out: f32):
      %cst_0 = arith.constant 5.000000e-01 : f32
      %cst_1 = arith.constant 1.000000e+00 : f32
      %cst_2 = arith.constant 0.797884583 : f32
      %cst_3 = arith.constant 4.471500e-02 : f32
      %5 = arith.mulf %in, %in : f32
      %6 = arith.mulf %5, %in : f32
      %7 = arith.mulf %cst_3, %6 : f32
      %8 = arith.addf %in, %7 : f32
      %9 = arith.mulf %cst_2, %8 : f32
      %10 = math.tanh %9 : f32
      %11 = arith.addf %cst_1, %10 : f32
      %12 = arith.mulf %cst_0, %in : f32
      %13 = arith.mulf %12, %11 : f32
      linalg.yield %13 : f32
    } -> tensor<512x4096xf32>
    return %4 : tensor<512x4096xf32>
  }
  func.func private @mlp_block_kopt_g1_contraction(%arg0: tensor<512x4096xf32>, %arg1: tensor<4096x1024xf32>, %arg2: tensor<1024xf32>) -> tensor<512x1024xf32> attributes {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = {id = 1 : i64, kind = "contraction", parent = "mlp_block"}, kopt.key = "a4873cfc186937f8b9cea6b2bcb5756d411837454756967fca7e9639e8271c48", kopt.plan = "baseline/per-op", kopt.plan_hash = "7583215385be428f"} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<512x1024xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<512x1024xf32>) -> tensor<512x1024xf32>
    %2 = linalg.matmul ins(%arg0, %arg1 : tensor<512x4096xf32>, tensor<4096x1024xf32>) outs(%1 : tensor<512x1024xf32>) -> tensor<512x1024xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%2, %arg2 : tensor<512x1024xf32>, tensor<1024xf32>) outs(%0 : tensor<512x1024xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %4 = arith.addf %in, %in_0 : f32
      linalg.yield %4 : f32
    } -> tensor<512x1024xf32>
    return %3 : tensor<512x1024xf32>
  }
  func.func @mlp_block(%arg0: tensor<512x1024xf32>, %arg1: tensor<1024x4096xf32>, %arg2: tensor<4096xf32>, %arg3: tensor<4096x1024xf32>, %arg4: tensor<1024xf32>) -> tensor<512x1024xf32> {
    %0 = call @mlp_block_kopt_g0_contraction(%arg0, %arg1, %arg2) {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = 0 : i64, kopt.key = "8a3abab0f72c008722b2d9c8c7f9d96059c42d73ade6b90a0033ca66db419558", kopt.plan = "builtin/gemm_epilogue_bs128_v4", kopt.plan_hash = "5a53420cc286794c"} : (tensor<512x1024xf32>, tensor<1024x4096xf32>, tensor<4096xf32>) -> tensor<512x4096xf32>
    %1 = call @mlp_block_kopt_g1_contraction(%0, %arg3, %arg4) {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = 1 : i64, kopt.key = "a4873cfc186937f8b9cea6b2bcb5756d411837454756967fca7e9639e8271c48", kopt.plan = "baseline/per-op", kopt.plan_hash = "7583215385be428f"} : (tensor<512x4096xf32>, tensor<4096x1024xf32>, tensor<1024xf32>) -> tensor<512x1024xf32>
    return %1 : tensor<512x1024xf32>
  }
}

