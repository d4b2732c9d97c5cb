//===- AffineIndex.h - Indices through an indexing map ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_AFFINEINDEX_H
#define KOPT_LIB_CODEGEN_AFFINEINDEX_H

#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::kopt {

/// Applies `map` to loop index expressions `loops`: the index of an
/// operand of a linalg op at those loops.
inline llvm::SmallVector<AffineExpr>
applyMap(AffineMap map, llvm::ArrayRef<AffineExpr> loops) {
  llvm::SmallVector<AffineExpr> result;
  for (AffineExpr expr : map.getResults())
    result.push_back(expr.replaceDims(loops));
  return result;
}

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_AFFINEINDEX_H
