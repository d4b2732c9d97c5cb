//===- DeadResults.h - Drop the results nothing reads -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// torch-mlir lowers `torch.max(x, dim)` and softmax's running maximum to one
// linalg.generic with two results, the maximum and its index, and the model
// often uses only the first. A reduction with one result is one the
// generated kernels can split across threads; with the index it would run
// in one thread. Removing the unused result, when the others do not read
// it, gives the kernels that single-result form.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_DEADRESULTS_H
#define KOPT_LIB_CODEGEN_DEADRESULTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::kopt {

/// Rewrites every linalg.generic in `func` that has a result nothing uses
/// into one without it (and without the body ops only it needed), provided
/// the results kept do not read its accumulator. Returns how many generics
/// it rewrote.
unsigned removeUnusedResults(func::FuncOp func);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_DEADRESULTS_H
