// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A matmul that accumulates into its broadcast bias (torch addmm as
// torch-mlir may write it): the broadcast joins the contraction group.
func.func @addmm(%a: tensor<64x96xf32>, %b: tensor<96x80xf32>, %bias: tensor<80xf32>) -> tensor<64x80xf32> {
  %e = tensor.empty() : tensor<64x80xf32>
  %br = linalg.broadcast ins(%bias : tensor<80xf32>) outs(%e : tensor<64x80xf32>) dimensions = [0]
  %mm = linalg.matmul ins(%a, %b : tensor<64x96xf32>, tensor<96x80xf32>) outs(%br : tensor<64x80xf32>) -> tensor<64x80xf32>
  return %mm : tensor<64x80xf32>
}
