//===- ElementTerm.h - A tensor element as a tree of scalar ops -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The value of a tensor at an index, followed through the elementwise
// linalg.generics that produce it: a tree of the scalar ops of their bodies
// whose leaves are reads of other tensors (arguments, reductions, reshapes)
// at affine indices over one op's loops, and scalars defined outside every
// body (constants). Two trees are equal when they apply the same ops to the
// same reads, which is how a rewrite recognises the same g(x) at the same
// element in two reductions, and a tree can be emitted again into another
// body.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_ELEMENTTERM_H
#define KOPT_LIB_CODEGEN_ELEMENTTERM_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"

#include <optional>
#include <vector>

namespace mlir::kopt {

/// One node of an element's tree.
struct ElementTerm {
  enum class Kind { Read, Op, Outer };
  Kind kind = Kind::Outer;
  /// Read: `tensor` at `index`, affine expressions over the loops of the op
  /// the tree was resolved for.
  Value tensor;
  SmallVector<AffineExpr> index;
  /// Op: a single-result scalar op of a body, applied to `operands`, one
  /// per operand of `op`.
  Operation *op = nullptr;
  std::vector<ElementTerm> operands;
  /// Outer: a scalar defined outside every body, used as it is.
  Value value;

  /// The scalar type of the node's value.
  Type getType() const;
  /// Whether a read's index depends on loop `dim`.
  bool dependsOn(unsigned dim) const;
  /// The float value of an Outer or Op node that is an `arith.constant`.
  std::optional<double> getConstant() const;
  /// Appends the distinct reads of the tree to `reads`, in order of first
  /// appearance.
  void collectReads(std::vector<ElementTerm> &reads) const;

  bool operator==(const ElementTerm &other) const;
  bool operator!=(const ElementTerm &other) const { return !(*this == other); }
};

/// The scalar `value` of `generic`'s body with its loops at `loops` (affine
/// expressions over `numDims` loops of the op the tree is for), through the
/// elementwise single-result-per-yield generics that produce its inputs.
/// None when it reads an accumulator, an index (`linalg.index`), or goes
/// through any op but a single-result arith or math op, or when the tree
/// grows past a few dozen nodes.
std::optional<ElementTerm> resolveBodyValue(linalg::GenericOp generic,
                                            Value value,
                                            llvm::ArrayRef<AffineExpr> loops,
                                            unsigned numDims);

/// Emits `term` with `builder` inside a body under construction: each read
/// becomes `readValue(read)`, each op a clone of it.
Value buildElement(OpBuilder &builder, const ElementTerm &term,
                   llvm::function_ref<Value(const ElementTerm &)> readValue);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_ELEMENTTERM_H
