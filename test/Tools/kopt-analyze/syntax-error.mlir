// RUN: not kopt analyze %s 2>&1 | FileCheck %s -DFILE=%s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A syntax error is reported at its file:line:col, then the file is named.
// CHECK: [[FILE]]:[[@LINE+2]]:14: error: expected non-function type
// CHECK: kopt: error: '[[FILE]]' could not be parsed
func.func @f( {
