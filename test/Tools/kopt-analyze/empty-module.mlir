// RUN: not kopt analyze %s 2>&1 | FileCheck %s -DFILE=%s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A module with nothing in it is an error, not an empty report.
// CHECK: kopt: error: '[[FILE]]' holds an empty module: nothing to work on
// CHECK-NOT: fusion group
module {}
