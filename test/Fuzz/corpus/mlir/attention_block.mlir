// Scaled dot-product attention for 8 heads of 512 tokens x 64:
// softmax(Q @ K^T * 1/sqrt(64)) @ V, with K given transposed.
// Analyse with: kopt analyze examples/attention_block.mlir
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @attention_block(%q: tensor<8x512x64xf32>, %kt: tensor<8x64x512xf32>,
                           %v: tensor<8x512x64xf32>) -> tensor<8x512x64xf32> {
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<8x512x512xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x512x64xf32>, tensor<8x64x512xf32>)
                           outs(%fs : tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
  %scaled = linalg.generic {indexing_maps = [#id3, #id3],
                            iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<8x512x512xf32>) outs(%es : tensor<8x512x512xf32>) {
  ^bb0(%a: f32, %o: f32):
    %scale = arith.constant 0.125 : f32
    %r = arith.mulf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<8x512x512xf32>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<8x512x512xf32>)
                     outs(%es : tensor<8x512x512xf32>) -> tensor<8x512x512xf32>
  %eo = tensor.empty() : tensor<8x512x64xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x512x512xf32>, tensor<8x512x64xf32>)
                           outs(%fo : tensor<8x512x64xf32>) -> tensor<8x512x64xf32>
  return %o : tensor<8x512x64xf32>
}
