// The q/k/v split of a fused projection, a strided and a rank-reducing
// slice, and the halves of rotate_half put back with tensor.insert_slice.
func.func @slices(%qkv: tensor<2x16x96xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<8x16xf32>, tensor<2x16x32xf32>) {
  %q = tensor.extract_slice %qkv[0, 0, 0] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
  %k = tensor.extract_slice %qkv[0, 0, 32] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
  %s = tensor.extract_slice %qkv[1, 3, 64] [1, 8, 16] [1, 1, 2] : tensor<2x16x96xf32> to tensor<8x16xf32>
  %lo = tensor.extract_slice %qkv[0, 0, 64] [2, 16, 16] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x16xf32>
  %hi = tensor.extract_slice %qkv[0, 0, 80] [2, 16, 16] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x16xf32>
  %a = tensor.insert_slice %hi into %k[0, 0, 0] [2, 16, 16] [1, 1, 1] : tensor<2x16x16xf32> into tensor<2x16x32xf32>
  %b = tensor.insert_slice %lo into %a[0, 0, 16] [2, 16, 16] [1, 1, 1] : tensor<2x16x16xf32> into tensor<2x16x32xf32>
  return %q, %k, %s, %b : tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<8x16xf32>, tensor<2x16x32xf32>
}
