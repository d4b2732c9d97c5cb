// RUN: not kopt analyze %s 2>&1 | FileCheck %s -DFILE=%s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// An unknown op in a known dialect, in custom and in generic form.
// CHECK: [[FILE]]:[[@LINE+5]]:8: error: custom op 'arith.frobnicate' is unknown
// CHECK: kopt: error: '[[FILE]]' could not be parsed
// CHECK-NOT: fusion group
func.func @f(%a: f32) -> f32 {
  %c = arith.constant 1.0 : f32
  %0 = arith.frobnicate %a, %c : f32
  return %0 : f32
}
