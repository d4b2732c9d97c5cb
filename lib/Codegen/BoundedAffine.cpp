//===- BoundedAffine.cpp - Affine indices simplified with ranges -*- C++
//-*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "BoundedAffine.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <optional>

using namespace mlir;
using namespace mlir::kopt;

namespace {
/// An inclusive range; an unknown end is unbounded.
struct Range {
  std::optional<int64_t> lo, hi;
};
} // namespace

static std::optional<int64_t> addChecked(std::optional<int64_t> a,
                                         std::optional<int64_t> b) {
  int64_t sum;
  if (!a || !b || __builtin_add_overflow(*a, *b, &sum))
    return std::nullopt;
  return sum;
}

static std::optional<int64_t> mulChecked(std::optional<int64_t> a, int64_t b) {
  int64_t product;
  if (!a || __builtin_mul_overflow(*a, b, &product))
    return std::nullopt;
  return product;
}

static int64_t floorDiv(int64_t a, int64_t b) {
  return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static Range getRange(AffineExpr expr, llvm::ArrayRef<int64_t> extents) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
    unsigned d = dim.getPosition();
    if (d < extents.size() && extents[d] > 0)
      return {0, extents[d] - 1};
    return {};
  }
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return {constant.getValue(), constant.getValue()};
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return {};
  Range lhs = getRange(binary.getLHS(), extents);
  auto constant = dyn_cast<AffineConstantExpr>(binary.getRHS());
  switch (expr.getKind()) {
  case AffineExprKind::Add: {
    Range rhs = getRange(binary.getRHS(), extents);
    return {addChecked(lhs.lo, rhs.lo), addChecked(lhs.hi, rhs.hi)};
  }
  case AffineExprKind::Mul: {
    if (!constant)
      return {};
    int64_t c = constant.getValue();
    Range scaled = {mulChecked(lhs.lo, c), mulChecked(lhs.hi, c)};
    if (c < 0)
      std::swap(scaled.lo, scaled.hi);
    return scaled;
  }
  case AffineExprKind::FloorDiv: {
    if (!constant || constant.getValue() <= 0)
      return {};
    int64_t k = constant.getValue();
    Range result;
    if (lhs.lo)
      result.lo = floorDiv(*lhs.lo, k);
    if (lhs.hi)
      result.hi = floorDiv(*lhs.hi, k);
    return result;
  }
  case AffineExprKind::Mod: {
    if (!constant || constant.getValue() <= 0)
      return {};
    int64_t k = constant.getValue();
    if (lhs.lo && lhs.hi && *lhs.lo >= 0 && *lhs.hi < k)
      return lhs;
    return {0, k - 1};
  }
  default:
    return {};
  }
}

static bool isWithin(const Range &range, int64_t lo, int64_t hi) {
  return range.lo && range.hi && *range.lo >= lo && *range.hi <= hi;
}

static void collectTerms(AffineExpr expr, SmallVectorImpl<AffineExpr> &terms) {
  if (expr.getKind() == AffineExprKind::Add) {
    auto binary = cast<AffineBinaryOpExpr>(expr);
    collectTerms(binary.getLHS(), terms);
    collectTerms(binary.getRHS(), terms);
    return;
  }
  terms.push_back(expr);
}

static AffineExpr sumOf(ArrayRef<AffineExpr> terms, MLIRContext *context) {
  AffineExpr sum = getAffineConstantExpr(0, context);
  for (AffineExpr term : terms)
    sum = sum + term;
  return sum;
}

/// `lhs floordiv k` for k > 0, with lhs already simplified.
static AffineExpr simplifyFloorDiv(AffineExpr lhs, int64_t k,
                                   llvm::ArrayRef<int64_t> extents) {
  MLIRContext *context = lhs.getContext();
  Range range = getRange(lhs, extents);
  if (range.lo && range.hi && floorDiv(*range.lo, k) == floorDiv(*range.hi, k))
    return getAffineConstantExpr(floorDiv(*range.lo, k), context);
  SmallVector<AffineExpr> terms;
  collectTerms(lhs, terms);
  // The divisors a of k that some term is a multiple of, largest first.
  SmallVector<int64_t> divisors;
  for (AffineExpr term : terms) {
    int64_t a = term.getLargestKnownDivisor();
    if (a > 1 && k % a == 0 && !llvm::is_contained(divisors, a))
      divisors.push_back(a);
  }
  llvm::sort(divisors, std::greater<int64_t>());
  for (int64_t a : divisors) {
    SmallVector<AffineExpr> multiples, rest;
    for (AffineExpr term : terms)
      (term.getLargestKnownDivisor() % a == 0 ? multiples : rest)
          .push_back(term);
    if (!isWithin(getRange(sumOf(rest, context), extents), 0, a - 1))
      continue;
    AffineExpr quotient = simplifyAffineExpr(
        sumOf(multiples, context).floorDiv(a), extents.size(), 0);
    if (k == a)
      return quotient;
    return simplifyFloorDiv(quotient, k / a, extents);
  }
  return lhs.floorDiv(k);
}

AffineExpr mlir::kopt::simplifyWithDimExtents(AffineExpr expr,
                                              llvm::ArrayRef<int64_t> extents) {
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return expr;
  AffineExpr lhs = simplifyWithDimExtents(binary.getLHS(), extents);
  AffineExpr rhs = simplifyWithDimExtents(binary.getRHS(), extents);
  auto constant = dyn_cast<AffineConstantExpr>(rhs);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return lhs + rhs;
  case AffineExprKind::Mul:
    return lhs * rhs;
  case AffineExprKind::FloorDiv:
    if (constant && constant.getValue() > 0)
      return simplifyFloorDiv(lhs, constant.getValue(), extents);
    return lhs.floorDiv(rhs);
  case AffineExprKind::Mod:
    if (constant && constant.getValue() > 0 &&
        isWithin(getRange(lhs, extents), 0, constant.getValue() - 1))
      return lhs;
    return lhs % rhs;
  case AffineExprKind::CeilDiv:
    return lhs.ceilDiv(rhs);
  default:
    return expr;
  }
}
