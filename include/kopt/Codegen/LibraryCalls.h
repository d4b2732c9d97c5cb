//===- LibraryCalls.h - Steps that call cuBLASLt and cuDNN ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_LIBRARYCALLS_H
#define KOPT_CODEGEN_LIBRARYCALLS_H

#include "kopt/Codegen/PlanBuilder.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace mlir::kopt {

/// A library-call step and the values it writes.
struct LibraryStep {
  PlanStep step;
  llvm::SmallVector<Value> writes;
};

/// Returns a cuBLASLt GEMM step for a matrix product (matchGemmForm:
/// matmul, batch_matmul or a contraction-shaped generic, either operand
/// transposed through its indexing map or by a transpose that produced it),
/// or a cuDNN step for a convolution in a conv step's layout (matchConvForm:
/// 1-D, 2-D or 3-D, grouped or depthwise, named or generic), when the op
/// qualifies: f32 operands, a zero accumulator, operands already in plan
/// tensors (both batched, for a batched GEMM). Returns std::nullopt
/// otherwise (the op is then generated as a kernel).
std::optional<LibraryStep> buildLibraryCall(Operation *op,
                                            PlanBuilder &builder);

/// True if `op` may become a library step: a matmul, a batch_matmul, a
/// generic matrix product matchGemmForm recognises, or a convolution
/// matchConvForm recognises (whatever its types and accumulator).
bool isLibraryCandidate(Operation *op);

/// True if `value` is a tensor of zeros: a fill of 0 or a zero splat.
bool isZeroTensor(Value value);

/// A short description of `op` for comments in generated code.
std::string describeOpForCode(Operation *op);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_LIBRARYCALLS_H
