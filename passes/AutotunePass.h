//===- AutotunePass.h - The kopt-autotune pass ------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The kopt-autotune pass (AutotunePass.td): the autotuner over every
// outlined fusion group, for other compilers' pipelines. Its own library,
// KoptAutotunePass, since it links the runtime's database and CUDA layer.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_PASSES_AUTOTUNEPASS_H
#define KOPT_PASSES_AUTOTUNEPASS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kopt {

#define GEN_PASS_DECL_AUTOTUNEPASS
#include "passes/AutotunePass.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/AutotunePass.h.inc"

} // namespace mlir::kopt

#endif // KOPT_PASSES_AUTOTUNEPASS_H
