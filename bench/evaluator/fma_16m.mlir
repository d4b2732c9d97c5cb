// The evaluator benchmark's model: out = a * b + c on 16M f32 elements,
// 64 MB per tensor (256 MB in all). `kopt plan --emit-dir` turns it into the
// task and plans under fma_16m/ (see docs/Evaluator.md).
func.func @fma_16m(%a: tensor<16777216xf32>, %b: tensor<16777216xf32>,
                   %c: tensor<16777216xf32>) -> tensor<16777216xf32> {
  %0 = tensor.empty() : tensor<16777216xf32>
  %1 = linalg.mul ins(%a, %b : tensor<16777216xf32>, tensor<16777216xf32>)
      outs(%0 : tensor<16777216xf32>) -> tensor<16777216xf32>
  %2 = linalg.add ins(%1, %c : tensor<16777216xf32>, tensor<16777216xf32>)
      outs(%0 : tensor<16777216xf32>) -> tensor<16777216xf32>
  return %2 : tensor<16777216xf32>
}
