// RUN: kopt analyze %s 2>&1 | FileCheck %s -DFILE=%s
// RUN: kopt analyze %s --json 2>/dev/null | FileCheck %s --check-prefix=JSON -DFILE=%s
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A dynamic shape is not an error: kopt exits 0, reports no group, and says
// at file:line:col why the op was left out, in text and in the JSON document.
// CHECK: [[FILE]]:[[@LINE+8]]:8: remark: kopt: not fused: dynamic shape tensor<?x8xf32> (only static shapes are tuned)
// CHECK: [[FILE]]: 0 fusion groups
// JSON: "location": "[[FILE]]:[[@LINE+6]]:8",
// JSON-NEXT: "message": "kopt: not fused: dynamic shape tensor<?x8xf32> (only static shapes are tuned)",
// JSON-NEXT: "severity": "remark"
// JSON: "groups": [],
// JSON-NEXT: "ok": true,
func.func @dyn(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = linalg.map { math.exp } ins(%a : tensor<?x8xf32>) outs(%b : tensor<?x8xf32>)
  return %0 : tensor<?x8xf32>
}
