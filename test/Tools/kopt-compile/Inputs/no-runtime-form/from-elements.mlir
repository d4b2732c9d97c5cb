// A scalar read out of a tensor and packed into another by a tensor op
// outside any group: a value the runtime module cannot compute.
func.func @forward(%x: tensor<4xf32>) -> tensor<2xf32> {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %a = tensor.extract %x[%c0] : tensor<4xf32>
  %b = tensor.extract %x[%c3] : tensor<4xf32>
  %r = tensor.from_elements %a, %b : tensor<2xf32>
  return %r : tensor<2xf32>
}
