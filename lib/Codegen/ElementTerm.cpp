//===- ElementTerm.cpp - A tensor element as a tree of scalar ops -*- C++ -*-=//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "ElementTerm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::kopt;

/// Trees larger than this are not followed: matching them is not worth it.
constexpr unsigned kMaxNodes = 48;

Type ElementTerm::getType() const {
  switch (kind) {
  case Kind::Read:
    return getElementTypeOrSelf(tensor.getType());
  case Kind::Op:
    return op->getResult(0).getType();
  case Kind::Outer:
    return value.getType();
  }
  return {};
}

bool ElementTerm::dependsOn(unsigned dim) const {
  if (kind == Kind::Read)
    return llvm::any_of(
        index, [&](AffineExpr expr) { return expr.isFunctionOfDim(dim); });
  return llvm::any_of(operands, [&](const ElementTerm &operand) {
    return operand.dependsOn(dim);
  });
}

std::optional<double> ElementTerm::getConstant() const {
  Value scalar = kind == Kind::Outer ? value
                 : kind == Kind::Op && isa<arith::ConstantOp>(op)
                     ? op->getResult(0)
                     : Value();
  APFloat constant(0.0);
  if (!scalar || !matchPattern(scalar, m_ConstantFloat(&constant)))
    return std::nullopt;
  return constant.convertToDouble();
}

void ElementTerm::collectReads(std::vector<ElementTerm> &reads) const {
  if (kind == Kind::Read) {
    if (!llvm::is_contained(reads, *this))
      reads.push_back(*this);
    return;
  }
  for (const ElementTerm &operand : operands)
    operand.collectReads(reads);
}

bool ElementTerm::operator==(const ElementTerm &other) const {
  if (kind != other.kind)
    return false;
  switch (kind) {
  case Kind::Read:
    return tensor == other.tensor && index == other.index;
  case Kind::Outer:
    if (value == other.value)
      return true;
    return getConstant() && getConstant() == other.getConstant() &&
           getType() == other.getType();
  case Kind::Op:
    return op->getName() == other.op->getName() &&
           op->getResultTypes() == other.op->getResultTypes() &&
           op->getAttrDictionary() == other.op->getAttrDictionary() &&
           operands == other.operands;
  }
  return false;
}

namespace {
/// Follows values into trees, counting the nodes made.
class Resolver {
public:
  explicit Resolver(unsigned numDims) : numDims(numDims) {}

  std::optional<ElementTerm> bodyValue(linalg::GenericOp generic, Value value,
                                       llvm::ArrayRef<AffineExpr> loops);
  std::optional<ElementTerm> tensorAt(Value tensor,
                                      llvm::ArrayRef<AffineExpr> index);

private:
  unsigned numDims;
  unsigned nodes = 0;
};
} // namespace

std::optional<ElementTerm>
Resolver::tensorAt(Value tensor, llvm::ArrayRef<AffineExpr> index) {
  if (++nodes > kMaxNodes)
    return std::nullopt;
  auto generic = tensor.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumReductionLoops() != 0) {
    ElementTerm read;
    read.kind = ElementTerm::Kind::Read;
    read.tensor = tensor;
    for (AffineExpr expr : index)
      read.index.push_back(simplifyAffineExpr(expr, numDims, 0));
    return read;
  }
  // The producer's loops at this element: its output map inverted.
  auto result = cast<OpResult>(tensor);
  AffineMap outMap = generic.getIndexingMapMatchingResult(result);
  SmallVector<AffineExpr> loops(generic.getNumLoops());
  for (auto [position, expr] : llvm::enumerate(outMap.getResults())) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      if (loops[dim.getPosition()])
        return std::nullopt;
      loops[dim.getPosition()] = index[position];
    } else if (!isa<AffineConstantExpr>(expr)) {
      return std::nullopt;
    }
  }
  SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
  for (auto [loop, range] : llvm::zip(loops, ranges)) {
    if (loop)
      continue;
    if (range != 1)
      return std::nullopt;
    loop = getAffineConstantExpr(0, generic.getContext());
  }
  Operation *yield = generic.getRegion().front().getTerminator();
  return bodyValue(generic, yield->getOperand(result.getResultNumber()), loops);
}

std::optional<ElementTerm>
Resolver::bodyValue(linalg::GenericOp generic, Value value,
                    llvm::ArrayRef<AffineExpr> loops) {
  if (++nodes > kMaxNodes)
    return std::nullopt;
  Block &body = generic.getRegion().front();
  auto argument = dyn_cast<BlockArgument>(value);
  if (argument && argument.getOwner() == &body) {
    if (argument.getArgNumber() >= generic.getNumDpsInputs())
      return std::nullopt;
    OpOperand *input = generic.getDpsInputOperand(argument.getArgNumber());
    SmallVector<AffineExpr> index;
    for (AffineExpr expr : generic.getMatchingIndexingMap(input).getResults())
      index.push_back(expr.replaceDims(loops));
    return tensorAt(input->get(), index);
  }
  Operation *op = value.getDefiningOp();
  if (!op || !generic->isProperAncestor(op)) {
    ElementTerm outer;
    outer.kind = ElementTerm::Kind::Outer;
    outer.value = value;
    return outer;
  }
  Dialect *dialect = op->getDialect();
  if (op->getBlock() != &body || op->getNumResults() != 1 ||
      op->getNumRegions() != 0 || !isPure(op) || !dialect ||
      !isa<arith::ArithDialect, math::MathDialect>(dialect))
    return std::nullopt;
  ElementTerm term;
  term.kind = ElementTerm::Kind::Op;
  term.op = op;
  for (Value operand : op->getOperands()) {
    std::optional<ElementTerm> resolved = bodyValue(generic, operand, loops);
    if (!resolved)
      return std::nullopt;
    term.operands.push_back(std::move(*resolved));
  }
  return term;
}

std::optional<ElementTerm>
mlir::kopt::resolveBodyValue(linalg::GenericOp generic, Value value,
                             llvm::ArrayRef<AffineExpr> loops,
                             unsigned numDims) {
  return Resolver(numDims).bodyValue(generic, value, loops);
}

Value mlir::kopt::buildElement(
    OpBuilder &builder, const ElementTerm &term,
    llvm::function_ref<Value(const ElementTerm &)> readValue) {
  switch (term.kind) {
  case ElementTerm::Kind::Read:
    return readValue(term);
  case ElementTerm::Kind::Outer:
    return term.value;
  case ElementTerm::Kind::Op:
    break;
  }
  IRMapping mapping;
  for (auto [operand, child] : llvm::zip(term.op->getOperands(), term.operands))
    if (!mapping.contains(operand))
      mapping.map(operand, buildElement(builder, child, readValue));
  return builder.clone(*term.op, mapping)->getResult(0);
}
