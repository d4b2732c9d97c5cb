//===- BodyOps.h - The ops kopt translates inside linalg bodies -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The one list of what may appear in the body of a linalg op kopt fuses:
// the classifier refuses an op whose body holds anything else, and the CUDA
// code generators and the fp64 reference interpreter translate everything
// it accepts (test/unit/BodyOpsTest.cpp checks that the three agree, for
// every op of the arith and math dialects).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_ANALYSIS_BODYOPS_H
#define KOPT_ANALYSIS_BODYOPS_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::kopt {

/// Why ops named `name` cannot appear in a body kopt translates, or "" when
/// they can: every single-result arith and math op but `math.clampf` (whose
/// definition and lowerings disagree), `linalg.yield`, `linalg.index`,
/// `tensor.extract` (a gather, its indices clamped into the tensor) and
/// `cf.assert` (dropped: kernels do not check it).
std::string getBodyOpRefusal(llvm::StringRef name);

/// Why `op`, an op in the body of the linalg op `owner`, cannot be
/// translated, or "": its name must be accepted by `getBodyOpRefusal`, its
/// scalar operands and results must be of kopt's element types, and a
/// `tensor.extract` must read a static tensor defined outside `owner`.
std::string checkBodyOp(Operation *op, Operation *owner);

/// Whether `type` is a scalar type kopt's code generators compute in: f16,
/// bf16, f32, f64, i1, i8, i16, i32, i64 and index.
bool isSupportedScalarType(Type type);

} // namespace mlir::kopt

#endif // KOPT_ANALYSIS_BODYOPS_H
