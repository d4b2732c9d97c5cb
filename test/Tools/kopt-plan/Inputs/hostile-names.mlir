// Functions whose names are not C identifiers, and would be code if pasted
// into a kernel: a path with a space, one that closes a comment, includes a
// file, ends a line (\0A), continues a line (a backslash) and opens a macro,
// and one in non-ASCII letters. For kopt-plan/hostile-names.test.
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
func.func @"../../etc/evil name"(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %a = linalg.exp ins(%x : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %b = linalg.negf ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %b : tensor<64x64xf32>
}

func.func @"f*/ #include \"/etc/passwd\"\0A} void injected() { /* \\\0A(x); #define A \\"(%x: tensor<32x256xf32>) -> tensor<32x256xf32> {
  %e = tensor.empty() : tensor<32x256xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<32x256xf32>) outs(%e : tensor<32x256xf32>) -> tensor<32x256xf32>
  return %s : tensor<32x256xf32>
}

func.func @"модель_λ"(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %a = linalg.add ins(%x, %y : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %b = linalg.exp ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %b : tensor<64x64xf32>
}
