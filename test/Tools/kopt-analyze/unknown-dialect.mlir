// RUN: not kopt analyze %s 2>&1 | FileCheck %s -DFILE=%s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// An op of a dialect kopt does not know.
// CHECK: [[FILE]]:[[@LINE+4]]:3: error: Dialect `foo' not found for custom op 'foo.bar'
// CHECK: kopt: error: '[[FILE]]' could not be parsed
// CHECK-NOT: fusion group
func.func @f() {
  foo.bar
  return
}
