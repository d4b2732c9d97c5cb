// RUN: rm -rf %t && mkdir %t
// RUN: kopt-opt %s --split-input-file --verify-diagnostics --kopt-fusion-planning --kopt-autotune="db=%t/k.db tune=never require-cache-hit=true"
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// kopt-autotune with require-cache-hit and an empty database: a module with
// a fusion group fails on the module; one without groups has nothing to
// miss.

// expected-error @below {{kopt-autotune: 1 of 1 groups missed the kernel database}}
module {
func.func @softmax_rows(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %init = tensor.empty() : tensor<64x256xf32>
  %0 = linalg.softmax dimension(1) ins(%x : tensor<64x256xf32>)
                                   outs(%init : tensor<64x256xf32>) -> tensor<64x256xf32>
  return %0 : tensor<64x256xf32>
}
}

// -----

module {
func.func @no_groups(%x: tensor<8xf32>) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}
}
