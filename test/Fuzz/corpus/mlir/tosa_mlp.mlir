// A TOSA graph (as TFLite and other TOSA importers emit it): a batched
// matmul, bias add, sigmoid, then a row softmax-like exp/sum/reciprocal.
// kopt lowers it with the upstream TOSA-to-linalg pipelines first.
// Analyse with: kopt analyze examples/tosa_mlp.mlir
func.func @tosa_mlp(%x: tensor<1x256x512xf32>, %w: tensor<1x512x1024xf32>,
                    %b: tensor<1x1x1024xf32>) -> tensor<1x256x1024xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm = tosa.matmul %x, %w, %zp, %zp : (tensor<1x256x512xf32>, tensor<1x512x1024xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x256x1024xf32>
  %biased = tosa.add %mm, %b : (tensor<1x256x1024xf32>, tensor<1x1x1024xf32>) -> tensor<1x256x1024xf32>
  %act = tosa.sigmoid %biased : (tensor<1x256x1024xf32>) -> tensor<1x256x1024xf32>
  %ex = tosa.exp %act : (tensor<1x256x1024xf32>) -> tensor<1x256x1024xf32>
  %sum = tosa.reduce_sum %ex {axis = 2 : i32} : (tensor<1x256x1024xf32>) -> tensor<1x256x1xf32>
  %inv = tosa.reciprocal %sum : (tensor<1x256x1xf32>) -> tensor<1x256x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %out = tosa.mul %ex, %inv, %shift : (tensor<1x256x1024xf32>, tensor<1x256x1xf32>, tensor<1xi8>) -> tensor<1x256x1024xf32>
  return %out : tensor<1x256x1024xf32>
}
