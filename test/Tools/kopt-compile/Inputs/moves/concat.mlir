// A class token before the patches, and a concatenation of three along
// the last dimension.
func.func @concat(%cls: tensor<1x1x64xf32>, %patches: tensor<1x49x64xf32>, %a: tensor<1x50x8xf32>) -> (tensor<1x50x64xf32>, tensor<1x50x80xf32>) {
  %t = tensor.concat dim(1) %cls, %patches : (tensor<1x1x64xf32>, tensor<1x49x64xf32>) -> tensor<1x50x64xf32>
  %u = tensor.concat dim(2) %a, %t, %a : (tensor<1x50x8xf32>, tensor<1x50x64xf32>, tensor<1x50x8xf32>) -> tensor<1x50x80xf32>
  return %t, %u : tensor<1x50x64xf32>, tensor<1x50x80xf32>
}
