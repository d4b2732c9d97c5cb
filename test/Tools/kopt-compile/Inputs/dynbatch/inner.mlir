// A dynamic dimension that is not the batch (a sequence length): refused.
func.func @inner(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  return %x : tensor<2x?xf32>
}
