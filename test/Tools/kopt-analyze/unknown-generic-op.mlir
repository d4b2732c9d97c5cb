// RUN: not kopt analyze %s 2>&1 | FileCheck %s -DFILE=%s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// An unregistered op written in generic form in a known dialect.
// CHECK: [[FILE]]:[[@LINE+3]]:3: error: unregistered operation 'arith.bogus' found in dialect ('arith') that does not allow unknown operations
// CHECK: kopt: error: '[[FILE]]' could not be parsed
func.func @f() {
  "arith.bogus"() : () -> ()
  return
}
