// kopt-autotune as a pass: without database entries (and without tuning)
// each outlined group keeps the baseline, tagged on the function and the
// call, and one remark counts the misses; require-cache-hit makes that an
// error.
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// RUN: rm -rf %t && mkdir %t
// RUN: kopt-opt %s --kopt-fusion-planning --kopt-autotune="db=%t/k.db tune=never" 2>&1 | FileCheck %s
// RUN: not kopt-opt %s --kopt-fusion-planning --kopt-autotune="db=%t/k.db tune=never require-cache-hit=true" 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: not kopt-opt %s --kopt-fusion-planning --kopt-autotune="db=%t/k.db tune=sometimes" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: env KOPT_LLM_ENDPOINT=http://127.0.0.1:9/v1 not kopt-opt %s --kopt-fusion-planning --kopt-autotune="db=%t/k.db tune=never proposers=builtin,llm" 2>&1 | FileCheck %s --check-prefix=NOLLM
// RUN: not kopt-opt %s --kopt-fusion-planning --kopt-autotune="db=%t/k.db tune=never proposers=llm llm-provider=replay llm-option=dir" 2>&1 | FileCheck %s --check-prefix=LLMOPT
// RUN: not kopt-opt %s --kopt-fusion-planning --kopt-autotune="db=%t/k.db tune=never proposers=llm llm-provider=openai llm-option=api-key=sk-test" 2>&1 | FileCheck %s --check-prefix=KEY
//
// CHECK: remark: kopt-autotune: 1 of 1 groups missed the kernel database
// CHECK: func.func private @softmax_rows_kopt_g0_softmax
// CHECK-SAME: kopt.plan = "baseline/
// CHECK: call @softmax_rows_kopt_g0_softmax
// CHECK-SAME: kopt.plan = "baseline/
//
// STRICT: error: kopt-autotune: 1 of 1 groups missed the kernel database
// BAD: error: kopt-autotune: tune must be never, missing or always, not 'sometimes'
// The pass reads no environment: the driver names the provider.
// NOLLM: error: kopt-autotune: proposers=llm needs llm-provider (openai, command or replay)
// LLMOPT: error: kopt-autotune: llm-option wants key=value
// KEY: error: kopt-autotune: llm-option api-key=... would put the key in shell histories and logs; set KOPT_LLM_API_KEY
// KEY-NOT: sk-test

func.func @softmax_rows(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %init = tensor.empty() : tensor<64x256xf32>
  %0 = linalg.softmax dimension(1) ins(%x : tensor<64x256xf32>)
                                   outs(%init : tensor<64x256xf32>) -> tensor<64x256xf32>
  return %0 : tensor<64x256xf32>
}
