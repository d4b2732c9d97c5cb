#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  func.func private @attention_block_kopt_g0_contraction(%arg0: tensor<8x512x64xf32>, %arg1: tensor<8x64x512xf32>) -> tensor<8x512x512xf32> attributes {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = {id = 0 : i64, kind = "contraction", parent = "attention_block"}, kopt.key = "3a345fdb9d67509b3045f09733c73e58b4d1ea4b68ccaade50415ad0bf0db8ab", kopt.plan = "baseline/per-op", kopt.plan_hash = "8c65183ec0dbf68e"} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<8x512x512xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %2 = linalg.batch_matmul ins(%arg0, %arg1 : tensor<8x512x64xf32>, tensor<8x64x512xf32>) outs(%1 : tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2 : tensor<8x512x512xf32>) outs(%0 : tensor<8x512x512xf32>) {
    ^bb0(%in: f32, %out: f32):
      %cst_0 = arith.constant 1.250000e-01 : f32
      %4 = arith.mulf %in, %cst_0 : f32
      linalg.yield %4 : f32
    } -> tensor<8x512x512xf32>
    return %3 : tensor<8x512x512xf32>
  }
  func.func private @attention_block_kopt_g1_softmax(%arg0: tensor<8x512x512xf32>) -> tensor<8x512x512xf32> attributes {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = {id = 1 : i64, kind = "softmax", parent = "attention_block"}, kopt.key = "cc6c43c59de05ed14ea1e797e9aee5b312344aba61ef41e35430a81661de0dc7", kopt.plan = "baseline/per-op", kopt.plan_hash = "606dce92e4feba95"} {
    %0 = tensor.empty() : tensor<8x512x512xf32>
    %1 = linalg.softmax dimension(2) ins(%arg0 : tensor<8x512x512xf32>) outs(%0 : tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    return %1 : tensor<8x512x512xf32>
  }
  func.func private @attention_block_kopt_g2_contraction(%arg0: tensor<8x512x512xf32>, %arg1: tensor<8x512x64xf32>) -> tensor<8x512x64xf32> attributes {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = {id = 2 : i64, kind = "contraction", parent = "attention_block"}, kopt.key = "159ccf8fd5b21730001370f3c92c20a50e9135d5468b53ad3925a0f1680131ff", kopt.plan = "baseline/per-op", kopt.plan_hash = "b2b7f35ea2314c94"} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<8x512x64xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    %2 = linalg.batch_matmul ins(%arg0, %arg1 : tensor<8x512x512xf32>, tensor<8x512x64xf32>) outs(%1 : tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    return %2 : tensor<8x512x64xf32>
  }
  func.func @attention_block(%arg0: tensor<8x512x64xf32>, %arg1: tensor<8x64x512xf32>, %arg2: tensor<8x512x64xf32>) -> tensor<8x512x64xf32> {
    %0 = call @attention_block_kopt_g0_contraction(%arg0, %arg1) {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = 0 : i64, kopt.key = "3a345fdb9d67509b3045f09733c73e58b4d1ea4b68ccaade50415ad0bf0db8ab", kopt.plan = "baseline/per-op", kopt.plan_hash = "8c65183ec0dbf68e"} : (tensor<8x512x64xf32>, tensor<8x64x512xf32>) -> tensor<8x512x512xf32>
    %1 = call @attention_block_kopt_g1_softmax(%0) {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = 1 : i64, kopt.key = "cc6c43c59de05ed14ea1e797e9aee5b312344aba61ef41e35430a81661de0dc7", kopt.plan = "baseline/per-op", kopt.plan_hash = "606dce92e4feba95"} : (tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
    %2 = call @attention_block_kopt_g2_contraction(%1, %arg2) {kopt.fingerprint = "3b36b51f52dad403", kopt.fusion_group = 2 : i64, kopt.key = "159ccf8fd5b21730001370f3c92c20a50e9135d5468b53ad3925a0f1680131ff", kopt.plan = "baseline/per-op", kopt.plan_hash = "b2b7f35ea2314c94"} : (tensor<8x512x512xf32>, tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
    return %2 : tensor<8x512x64xf32>
  }
}

