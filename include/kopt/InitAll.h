//===- InitAll.h - Register what kopt's tools need --------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_INITALL_H
#define KOPT_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir::kopt {

/// Adds the dialects kopt reads (func, arith, math, linalg, tensor, tosa and
/// their companions) to `registry`.
void registerAllDialects(DialectRegistry &registry);

/// Registers kopt's passes, the `kopt-tosa-to-linalg` and
/// `kopt-fusion-planning` pipelines, and the upstream passes kopt's tests use
/// (canonicalize, cse, the TOSA conversions, linalg generalisation).
void registerAllPasses();

/// Registers kopt's passes and the `kopt-tosa-to-linalg` and
/// `kopt-fusion-planning` pipelines, and no upstream pass: what a host that
/// already registers MLIR's passes (`mlir-opt` loading kopt's pass plugin, or
/// another compiler's driver) needs. registerAllPasses() calls it; call one
/// of the two, once per process.
void registerKoptPassesAndPipelines();

} // namespace mlir::kopt

#endif // KOPT_INITALL_H
