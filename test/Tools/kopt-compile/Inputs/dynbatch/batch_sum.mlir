// Each sample minus the sum of all samples (as a batch norm in training
// mode centres by the batch's mean): samples are not independent.
#in = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @center(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %d = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e8 = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#in, #col], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<?x8xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  %e = tensor.empty(%d) : tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#in, #col, #in], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<?x8xf32>, tensor<8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %t = arith.subf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
