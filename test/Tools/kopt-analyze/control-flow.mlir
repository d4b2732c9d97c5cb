// RUN: kopt analyze %s 2>&1 | FileCheck %s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A function with control flow loads (cf is registered) and is left alone
// with a remark at its location; the file still gets its report.

// CHECK: control-flow.mlir:[[@LINE+1]]:1: remark: kopt: not planned: the function has control flow (more than one block)
func.func @branchy(%x: tensor<8xf32>, %c: i1) -> tensor<8xf32> {
  cf.cond_br %c, ^a, ^b
^a:
  return %x : tensor<8xf32>
^b:
  return %x : tensor<8xf32>
}
// CHECK: control-flow.mlir: 0 fusion groups
