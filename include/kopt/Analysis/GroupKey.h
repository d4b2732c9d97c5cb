//===- GroupKey.h - Canonical form and key of a fusion group ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Two structurally equal fusion groups anywhere in any model share a key, so
// the kernel database tunes each of them once. The key is the SHA-256 of a
// canonical text of the outlined function: operations in a canonical
// topological order, arguments and results in a canonical order, SSA names,
// the function's name, attribute order and locations normalised away.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_ANALYSIS_GROUPKEY_H
#define KOPT_ANALYSIS_GROUPKEY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::kopt {

/// The version of the canonical form; part of every key, bumped whenever the
/// canonical text changes.
inline constexpr llvm::StringLiteral kGroupKeyVersion = "kopt-group-key-v1";

/// The permutation applied by `canonicalizeGroupFunction`: entry `i` is the
/// old index of the new argument (result) `i`.
struct GroupPermutation {
  llvm::SmallVector<unsigned> argOrder;
  llvm::SmallVector<unsigned> resultOrder;
};

/// Reorders the single-block body of `func` into canonical order and permutes
/// its arguments and results into canonical order. Callers must permute the
/// operands and results of every call of `func` the same way.
GroupPermutation canonicalizeGroupFunction(func::FuncOp func);

/// Returns the canonical text of `func` (which must already be canonicalized)
/// with its name, visibility, `kopt.*` attributes and locations removed.
std::string printCanonicalGroup(func::FuncOp func);

/// Returns the 64-hex-digit SHA-256 key of `func`, computed on a canonicalized
/// copy: `func` itself is not changed.
std::string computeGroupKey(func::FuncOp func);

} // namespace mlir::kopt

#endif // KOPT_ANALYSIS_GROUPKEY_H
