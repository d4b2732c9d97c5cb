//===- ReferenceInstructions.cpp - Scalar ops of the reference --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The scalar half of the reference interpreter (ReferenceInterpreter.cpp
// describes the whole): each op of a generic body, and each scalar op
// outside one, becomes an instruction over a slot array of doubles. Integer
// results wrap to their bit width and float-to-integer conversions
// saturate; float ops compute in double.
//
//===----------------------------------------------------------------------===//

#include "ReferenceInterpreterImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/bit.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::reference;

//===----------------------------------------------------------------------===//
// Scalar instructions
//===----------------------------------------------------------------------===//

Opcode reference::getOpcode(StringRef name) {
  return llvm::StringSwitch<Opcode>(name)
      .Case("arith.constant", Opcode::Const)
      .Case("linalg.index", Opcode::Index)
      .Case("arith.extf", Opcode::Copy)
      .Case("arith.truncf", Opcode::Copy)
      .Case("arith.addf", Opcode::AddF)
      .Case("arith.subf", Opcode::SubF)
      .Case("arith.mulf", Opcode::MulF)
      .Case("arith.divf", Opcode::DivF)
      .Case("arith.remf", Opcode::RemF)
      .Case("arith.negf", Opcode::NegF)
      .Case("arith.maximumf", Opcode::MaximumF)
      .Case("arith.minimumf", Opcode::MinimumF)
      .Case("arith.maxnumf", Opcode::MaxNumF)
      .Case("arith.minnumf", Opcode::MinNumF)
      .Case("arith.cmpf", Opcode::CmpF)
      .Case("arith.select", Opcode::Select)
      .Case("arith.uitofp", Opcode::UIToFP)
      .Case("arith.sitofp", Opcode::SIToFP)
      .Case("arith.fptosi", Opcode::FPToSI)
      .Case("arith.fptoui", Opcode::FPToUI)
      .Case("arith.addi", Opcode::AddI)
      .Case("arith.subi", Opcode::SubI)
      .Case("arith.muli", Opcode::MulI)
      .Case("arith.divsi", Opcode::DivSI)
      .Case("arith.divui", Opcode::DivUI)
      .Case("arith.remsi", Opcode::RemSI)
      .Case("arith.remui", Opcode::RemUI)
      .Case("arith.ceildivsi", Opcode::CeilDivSI)
      .Case("arith.floordivsi", Opcode::FloorDivSI)
      .Case("arith.andi", Opcode::AndI)
      .Case("arith.ori", Opcode::OrI)
      .Case("arith.xori", Opcode::XOrI)
      .Case("arith.shli", Opcode::ShLI)
      .Case("arith.shrsi", Opcode::ShRSI)
      .Case("arith.shrui", Opcode::ShRUI)
      .Case("arith.maxsi", Opcode::MaxSI)
      .Case("arith.minsi", Opcode::MinSI)
      .Case("arith.maxui", Opcode::MaxUI)
      .Case("arith.minui", Opcode::MinUI)
      .Case("arith.cmpi", Opcode::CmpI)
      .Case("arith.extsi", Opcode::ExtSI)
      .Case("arith.extui", Opcode::ExtUI)
      .Case("arith.trunci", Opcode::TruncI)
      .Case("arith.index_cast", Opcode::IndexCast)
      .Case("arith.index_castui", Opcode::IndexCastUI)
      .Case("math.absi", Opcode::AbsI)
      .Case("math.ipowi", Opcode::IPowI)
      .Case("math.absf", Opcode::AbsF)
      .Case("math.ceil", Opcode::Ceil)
      .Case("math.floor", Opcode::Floor)
      .Case("math.round", Opcode::Round)
      .Case("math.roundeven", Opcode::RoundEven)
      .Case("math.trunc", Opcode::Trunc)
      .Case("math.exp", Opcode::Exp)
      .Case("math.exp2", Opcode::Exp2)
      .Case("math.expm1", Opcode::ExpM1)
      .Case("math.log", Opcode::Log)
      .Case("math.log2", Opcode::Log2)
      .Case("math.log10", Opcode::Log10)
      .Case("math.log1p", Opcode::Log1p)
      .Case("math.sqrt", Opcode::Sqrt)
      .Case("math.rsqrt", Opcode::Rsqrt)
      .Case("math.cbrt", Opcode::Cbrt)
      .Case("math.tanh", Opcode::Tanh)
      .Case("math.sinh", Opcode::Sinh)
      .Case("math.cosh", Opcode::Cosh)
      .Case("math.sin", Opcode::Sin)
      .Case("math.cos", Opcode::Cos)
      .Case("math.tan", Opcode::Tan)
      .Case("math.asin", Opcode::Asin)
      .Case("math.acos", Opcode::Acos)
      .Case("math.atan", Opcode::Atan)
      .Case("math.asinh", Opcode::Asinh)
      .Case("math.acosh", Opcode::Acosh)
      .Case("math.atanh", Opcode::Atanh)
      .Case("math.atan2", Opcode::Atan2)
      .Case("math.erf", Opcode::Erf)
      .Case("math.erfc", Opcode::Erfc)
      .Case("math.powf", Opcode::PowF)
      .Case("math.fpowi", Opcode::FPowI)
      .Case("math.fma", Opcode::Fma)
      .Case("math.copysign", Opcode::CopySign)
      .Case("math.isnan", Opcode::IsNaN)
      .Case("math.isinf", Opcode::IsInf)
      .Case("math.isfinite", Opcode::IsFinite)
      .Case("math.isnormal", Opcode::IsNormal)
      .Case("arith.ceildivui", Opcode::CeilDivUI)
      .Case("math.ctlz", Opcode::Ctlz)
      .Case("math.cttz", Opcode::Cttz)
      .Case("math.ctpop", Opcode::Ctpop)
      .Case("arith.bitcast", Opcode::Bitcast)
      .Case("tensor.extract", Opcode::Extract)
      .Default(Opcode::Unknown);
}

/// The bit width integer semantics use for `type` (index is 64 bits).
static int32_t getIntWidth(Type type) {
  if (auto intType = dyn_cast<IntegerType>(type))
    return static_cast<int32_t>(intType.getWidth());
  return 64;
}

/// `value` as an integer; NaN reads as 0 and out-of-range values saturate.
static int64_t toInt(double value) {
  if (std::isnan(value))
    return 0;
  if (value >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (value <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

/// Truncates `value` to `width` bits. i1 is held as 0 or 1; wider integers
/// are held sign-extended.
static int64_t wrap(int64_t value, int32_t width) {
  if (width >= 64)
    return value;
  if (width == 1)
    return value & 1;
  uint64_t mask = (uint64_t(1) << width) - 1;
  uint64_t bits = static_cast<uint64_t>(value) & mask;
  if (bits >> (width - 1))
    bits |= ~mask;
  return static_cast<int64_t>(bits);
}

/// The signed reading of a held integer (i1 true is -1).
static int64_t toSigned(double value, int32_t width) {
  int64_t v = toInt(value);
  return width == 1 ? -(v & 1) : v;
}

/// The unsigned reading of a held integer.
static uint64_t toUnsigned(double value, int32_t width) {
  uint64_t v = static_cast<uint64_t>(toInt(value));
  return width >= 64 ? v : v & ((uint64_t(1) << width) - 1);
}

static double fromInt(int64_t value, int32_t width) {
  return static_cast<double>(wrap(value, width));
}

static double fromBool(bool value) { return value ? 1.0 : 0.0; }

static bool compareFloats(arith::CmpFPredicate predicate, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (predicate) {
  case arith::CmpFPredicate::AlwaysFalse:
    return false;
  case arith::CmpFPredicate::OEQ:
    return !unordered && a == b;
  case arith::CmpFPredicate::OGT:
    return !unordered && a > b;
  case arith::CmpFPredicate::OGE:
    return !unordered && a >= b;
  case arith::CmpFPredicate::OLT:
    return !unordered && a < b;
  case arith::CmpFPredicate::OLE:
    return !unordered && a <= b;
  case arith::CmpFPredicate::ONE:
    return !unordered && a != b;
  case arith::CmpFPredicate::ORD:
    return !unordered;
  case arith::CmpFPredicate::UEQ:
    return unordered || a == b;
  case arith::CmpFPredicate::UGT:
    return unordered || a > b;
  case arith::CmpFPredicate::UGE:
    return unordered || a >= b;
  case arith::CmpFPredicate::ULT:
    return unordered || a < b;
  case arith::CmpFPredicate::ULE:
    return unordered || a <= b;
  case arith::CmpFPredicate::UNE:
    return unordered || a != b;
  case arith::CmpFPredicate::UNO:
    return unordered;
  case arith::CmpFPredicate::AlwaysTrue:
    return true;
  }
  return false;
}

static bool compareInts(arith::CmpIPredicate predicate, double a, double b,
                        int32_t width) {
  int64_t sa = toSigned(a, width), sb = toSigned(b, width);
  uint64_t ua = toUnsigned(a, width), ub = toUnsigned(b, width);
  switch (predicate) {
  case arith::CmpIPredicate::eq:
    return ua == ub;
  case arith::CmpIPredicate::ne:
    return ua != ub;
  case arith::CmpIPredicate::slt:
    return sa < sb;
  case arith::CmpIPredicate::sle:
    return sa <= sb;
  case arith::CmpIPredicate::sgt:
    return sa > sb;
  case arith::CmpIPredicate::sge:
    return sa >= sb;
  case arith::CmpIPredicate::ult:
    return ua < ub;
  case arith::CmpIPredicate::ule:
    return ua <= ub;
  case arith::CmpIPredicate::ugt:
    return ua > ub;
  case arith::CmpIPredicate::uge:
    return ua >= ub;
  }
  return false;
}

/// Float to integer, rounding toward zero and saturating at the type's range
/// (the IR leaves out-of-range conversions undefined).
static double floatToInt(double value, int32_t width, bool isSigned) {
  if (std::isnan(value))
    return 0.0;
  double t = std::trunc(value);
  double lo = isSigned ? -std::ldexp(1.0, width - 1) : 0.0;
  double hi =
      isSigned ? std::ldexp(1.0, width - 1) - 1 : std::ldexp(1.0, width) - 1;
  t = std::min(std::max(t, lo), hi);
  return fromInt(toInt(t), width);
}

/// arith.maximumf: NaN when either is, +0 over -0.
static double maximumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::nan("");
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

/// arith.minimumf: NaN when either is, -0 under +0.
static double minimumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::nan("");
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

/// The float formats arith.bitcast reinterprets, as `Instr::attr` encodes
/// them: 0 for an integer.
enum class BitFormat : int32_t { Integer, F16, BF16, F32, F64 };

static const llvm::fltSemantics &getSemantics(BitFormat format) {
  switch (format) {
  case BitFormat::F16:
    return llvm::APFloat::IEEEhalf();
  case BitFormat::BF16:
    return llvm::APFloat::BFloat();
  case BitFormat::F32:
    return llvm::APFloat::IEEEsingle();
  default:
    return llvm::APFloat::IEEEdouble();
  }
}

static BitFormat getBitFormat(Type type) {
  if (type.isF16())
    return BitFormat::F16;
  if (type.isBF16())
    return BitFormat::BF16;
  if (type.isF32())
    return BitFormat::F32;
  if (type.isF64())
    return BitFormat::F64;
  return BitFormat::Integer;
}

/// arith.bitcast: the value's bits in its own format (a float rounded to it
/// first: held values are exact), read in the result's.
static double bitcast(double value, const Instr &in) {
  auto from = static_cast<BitFormat>(in.attr >> 4);
  auto to = static_cast<BitFormat>(in.attr & 15);
  uint64_t bits;
  if (from == BitFormat::Integer) {
    bits = toUnsigned(value, in.srcWidth);
  } else {
    llvm::APFloat number(value);
    bool losesInfo = false;
    number.convert(getSemantics(from), llvm::APFloat::rmNearestTiesToEven,
                   &losesInfo);
    bits = number.bitcastToAPInt().getZExtValue();
  }
  if (to == BitFormat::Integer)
    return fromInt(static_cast<int64_t>(bits), in.width);
  llvm::APFloat number(getSemantics(to), llvm::APInt(in.width, bits));
  bool losesInfo = false;
  number.convert(llvm::APFloat::IEEEdouble(),
                 llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return number.convertToDouble();
}

/// The result of `in` on the operand values `a`, `b` and `c`.
static double execute(const Instr &in, double a, double b, double c,
                      const int64_t *ivs) {
  int32_t w = in.width;
  switch (in.code) {
  case Opcode::Unknown:
    return std::nan("");
  case Opcode::Const:
    return in.imm;
  case Opcode::Index:
    return static_cast<double>(ivs[in.attr]);
  case Opcode::Copy:
    return a;
  case Opcode::AddF:
    return a + b;
  case Opcode::SubF:
    return a - b;
  case Opcode::MulF:
    return a * b;
  case Opcode::DivF:
    return a / b;
  case Opcode::RemF:
    return std::fmod(a, b);
  case Opcode::NegF:
    return -a;
  case Opcode::MaximumF:
    return maximumF(a, b);
  case Opcode::MinimumF:
    return minimumF(a, b);
  case Opcode::MaxNumF:
    return std::fmax(a, b);
  case Opcode::MinNumF:
    return std::fmin(a, b);
  case Opcode::CmpF:
    return fromBool(
        compareFloats(static_cast<arith::CmpFPredicate>(in.attr), a, b));
  case Opcode::Select:
    return a != 0.0 ? b : c;
  case Opcode::UIToFP:
    return static_cast<double>(toUnsigned(a, in.srcWidth));
  case Opcode::SIToFP:
    return static_cast<double>(toSigned(a, in.srcWidth));
  case Opcode::FPToSI:
    return floatToInt(a, w, /*isSigned=*/true);
  case Opcode::FPToUI:
    return floatToInt(a, w, /*isSigned=*/false);
  case Opcode::AddI:
    return fromInt(static_cast<int64_t>(toUnsigned(a, 64) + toUnsigned(b, 64)),
                   w);
  case Opcode::SubI:
    return fromInt(static_cast<int64_t>(toUnsigned(a, 64) - toUnsigned(b, 64)),
                   w);
  case Opcode::MulI:
    return fromInt(static_cast<int64_t>(toUnsigned(a, 64) * toUnsigned(b, 64)),
                   w);
  case Opcode::DivSI:
  case Opcode::RemSI:
  case Opcode::CeilDivSI:
  case Opcode::FloorDivSI: {
    int64_t x = toSigned(a, w), y = toSigned(b, w);
    // Division by zero and overflow are undefined in the IR; read as 0.
    if (y == 0 || (x == std::numeric_limits<int64_t>::min() && y == -1))
      return 0.0;
    int64_t q = x / y, r = x % y;
    if (in.code == Opcode::RemSI)
      return fromInt(r, w);
    if (in.code == Opcode::CeilDivSI && r != 0 && ((r > 0) == (y > 0)))
      ++q;
    if (in.code == Opcode::FloorDivSI && r != 0 && ((r < 0) != (y < 0)))
      --q;
    return fromInt(q, w);
  }
  case Opcode::DivUI:
  case Opcode::RemUI:
  case Opcode::CeilDivUI: {
    uint64_t x = toUnsigned(a, w), y = toUnsigned(b, w);
    if (y == 0)
      return 0.0;
    uint64_t result = in.code == Opcode::RemUI ? x % y : x / y;
    if (in.code == Opcode::CeilDivUI && x % y != 0)
      ++result;
    return fromInt(static_cast<int64_t>(result), w);
  }
  case Opcode::Ctlz:
    return fromInt(llvm::countl_zero(toUnsigned(a, w)) - (64 - w), w);
  case Opcode::Cttz: {
    uint64_t x = toUnsigned(a, w);
    return fromInt(x == 0 ? w : llvm::countr_zero(x), w);
  }
  case Opcode::Ctpop:
    return fromInt(llvm::popcount(toUnsigned(a, w)), w);
  case Opcode::Bitcast:
    return bitcast(a, in);
  case Opcode::AndI:
    return fromInt(static_cast<int64_t>(toUnsigned(a, w) & toUnsigned(b, w)),
                   w);
  case Opcode::OrI:
    return fromInt(static_cast<int64_t>(toUnsigned(a, w) | toUnsigned(b, w)),
                   w);
  case Opcode::XOrI:
    return fromInt(static_cast<int64_t>(toUnsigned(a, w) ^ toUnsigned(b, w)),
                   w);
  case Opcode::ShLI:
  case Opcode::ShRSI:
  case Opcode::ShRUI: {
    uint64_t shift = toUnsigned(b, w);
    if (shift >= static_cast<uint64_t>(w))
      return 0.0;
    if (in.code == Opcode::ShLI)
      return fromInt(static_cast<int64_t>(toUnsigned(a, w) << shift), w);
    if (in.code == Opcode::ShRUI)
      return fromInt(static_cast<int64_t>(toUnsigned(a, w) >> shift), w);
    return fromInt(toSigned(a, w) >> shift, w);
  }
  case Opcode::MaxSI:
    return fromInt(std::max(toSigned(a, w), toSigned(b, w)), w);
  case Opcode::MinSI:
    return fromInt(std::min(toSigned(a, w), toSigned(b, w)), w);
  case Opcode::MaxUI:
    return fromInt(
        static_cast<int64_t>(std::max(toUnsigned(a, w), toUnsigned(b, w))), w);
  case Opcode::MinUI:
    return fromInt(
        static_cast<int64_t>(std::min(toUnsigned(a, w), toUnsigned(b, w))), w);
  case Opcode::CmpI:
    return fromBool(
        compareInts(static_cast<arith::CmpIPredicate>(in.attr), a, b, w));
  case Opcode::ExtSI:
  case Opcode::IndexCast:
    return fromInt(toSigned(a, in.srcWidth), w);
  case Opcode::ExtUI:
  case Opcode::IndexCastUI:
    return fromInt(static_cast<int64_t>(toUnsigned(a, in.srcWidth)), w);
  case Opcode::TruncI:
    return fromInt(toInt(a), w);
  case Opcode::AbsI: {
    int64_t x = toSigned(a, w);
    return fromInt(
        x < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x)) : x, w);
  }
  case Opcode::IPowI: {
    int64_t base = toSigned(a, w), exponent = toSigned(b, w);
    if (exponent < 0)
      return fromInt(base == 1 ? 1 : (base == -1 ? (exponent % 2 ? -1 : 1) : 0),
                     w);
    uint64_t result = 1, factor = static_cast<uint64_t>(base);
    for (; exponent; exponent >>= 1, factor *= factor)
      if (exponent & 1)
        result *= factor;
    return fromInt(static_cast<int64_t>(result), w);
  }
  case Opcode::AbsF:
    return std::fabs(a);
  case Opcode::Ceil:
    return std::ceil(a);
  case Opcode::Floor:
    return std::floor(a);
  case Opcode::Round:
    return std::round(a);
  case Opcode::RoundEven:
    return std::nearbyint(a);
  case Opcode::Trunc:
    return std::trunc(a);
  case Opcode::Exp:
    return std::exp(a);
  case Opcode::Exp2:
    return std::exp2(a);
  case Opcode::ExpM1:
    return std::expm1(a);
  case Opcode::Log:
    return std::log(a);
  case Opcode::Log2:
    return std::log2(a);
  case Opcode::Log10:
    return std::log10(a);
  case Opcode::Log1p:
    return std::log1p(a);
  case Opcode::Sqrt:
    return std::sqrt(a);
  case Opcode::Rsqrt:
    return 1.0 / std::sqrt(a);
  case Opcode::Cbrt:
    return std::cbrt(a);
  case Opcode::Tanh:
    return std::tanh(a);
  case Opcode::Sinh:
    return std::sinh(a);
  case Opcode::Cosh:
    return std::cosh(a);
  case Opcode::Sin:
    return std::sin(a);
  case Opcode::Cos:
    return std::cos(a);
  case Opcode::Tan:
    return std::tan(a);
  case Opcode::Asin:
    return std::asin(a);
  case Opcode::Acos:
    return std::acos(a);
  case Opcode::Atan:
    return std::atan(a);
  case Opcode::Asinh:
    return std::asinh(a);
  case Opcode::Acosh:
    return std::acosh(a);
  case Opcode::Atanh:
    return std::atanh(a);
  case Opcode::Atan2:
    return std::atan2(a, b);
  case Opcode::Erf:
    return std::erf(a);
  case Opcode::Erfc:
    return std::erfc(a);
  case Opcode::PowF:
    return std::pow(a, b);
  case Opcode::FPowI:
    return std::pow(a, static_cast<double>(toSigned(b, in.srcWidth)));
  case Opcode::Fma:
    return std::fma(a, b, c);
  case Opcode::CopySign:
    return std::copysign(a, b);
  case Opcode::IsNaN:
    return fromBool(std::isnan(a));
  case Opcode::IsInf:
    return fromBool(std::isinf(a));
  case Opcode::IsFinite:
    return fromBool(std::isfinite(a));
  case Opcode::IsNormal:
    // `imm` holds the smallest normal number of the operand's format.
    return fromBool(std::isfinite(a) && std::fabs(a) >= in.imm);
  case Opcode::Extract:
    break; // Run by `run` and `runBatch`, which can read tensors.
  }
  return std::nan("");
}

/// The linear index of the element a `tensor.extract` reads, its
/// coordinates `coordinate(slot)` each clamped into their dimension.
template <typename Coordinate>
static int64_t extractIndex(const ExtractSite &site, Coordinate coordinate) {
  const TensorNode *tensor = site.tensor;
  int64_t linear = 0;
  for (auto [dim, slot] : llvm::enumerate(site.coordinates)) {
    int64_t at = toInt(coordinate(slot));
    at = std::min(std::max<int64_t>(at, 0), tensor->shape[dim] - 1);
    linear += at * tensor->strides[dim];
  }
  return linear;
}

void reference::run(const Program &program, double *slots, const int64_t *ivs,
                    GatherFn gather) {
  for (const Instr &in : program.instrs) {
    if (in.code == Opcode::Extract) {
      const ExtractSite &site = program.extracts[in.attr];
      int64_t index =
          extractIndex(site, [&](int32_t slot) { return slots[slot]; });
      gather(site.tensor, ArrayRef<int64_t>(index), &slots[in.result]);
      continue;
    }
    slots[in.result] = execute(in, slots[in.a], slots[in.b], slots[in.c], ivs);
  }
}

double reference::fold(const Instr &in, bool accIsA, double acc,
                       const double *x, size_t count) {
  // The commonest folds in tight loops, with `execute`'s operations and
  // operand order.
  switch (in.code) {
  case Opcode::AddF:
    if (accIsA)
      for (size_t i = 0; i < count; ++i)
        acc = acc + x[i];
    else
      for (size_t i = 0; i < count; ++i)
        acc = x[i] + acc;
    return acc;
  case Opcode::MulF:
    if (accIsA)
      for (size_t i = 0; i < count; ++i)
        acc = acc * x[i];
    else
      for (size_t i = 0; i < count; ++i)
        acc = x[i] * acc;
    return acc;
  case Opcode::MaximumF:
    if (accIsA)
      for (size_t i = 0; i < count; ++i)
        acc = maximumF(acc, x[i]);
    else
      for (size_t i = 0; i < count; ++i)
        acc = maximumF(x[i], acc);
    return acc;
  case Opcode::MinimumF:
    if (accIsA)
      for (size_t i = 0; i < count; ++i)
        acc = minimumF(acc, x[i]);
    else
      for (size_t i = 0; i < count; ++i)
        acc = minimumF(x[i], acc);
    return acc;
  default:
    for (size_t i = 0; i < count; ++i)
      acc = accIsA ? execute(in, acc, x[i], 0.0, nullptr)
                   : execute(in, x[i], acc, 0.0, nullptr);
    return acc;
  }
}

void reference::runBatch(const Program &program, ArrayRef<double *> lanes,
                         size_t count, const int64_t *ivs, unsigned numLoops,
                         GatherFn gather) {
  for (const Instr &in : program.instrs) {
    double *r = lanes[in.result];
    const double *a = lanes[in.a], *b = lanes[in.b], *c = lanes[in.c];
    // The commonest instructions in tight loops; the same operations as
    // `execute`.
    switch (in.code) {
    case Opcode::Const:
      std::fill(r, r + count, in.imm);
      continue;
    case Opcode::Copy:
      std::copy(a, a + count, r);
      continue;
    case Opcode::AddF:
      for (size_t i = 0; i < count; ++i)
        r[i] = a[i] + b[i];
      continue;
    case Opcode::SubF:
      for (size_t i = 0; i < count; ++i)
        r[i] = a[i] - b[i];
      continue;
    case Opcode::MulF:
      for (size_t i = 0; i < count; ++i)
        r[i] = a[i] * b[i];
      continue;
    case Opcode::DivF:
      for (size_t i = 0; i < count; ++i)
        r[i] = a[i] / b[i];
      continue;
    case Opcode::NegF:
      for (size_t i = 0; i < count; ++i)
        r[i] = -a[i];
      continue;
    case Opcode::Select:
      for (size_t i = 0; i < count; ++i)
        r[i] = a[i] != 0.0 ? b[i] : c[i];
      continue;
    case Opcode::Exp:
      for (size_t i = 0; i < count; ++i)
        r[i] = std::exp(a[i]);
      continue;
    case Opcode::Sqrt:
      for (size_t i = 0; i < count; ++i)
        r[i] = std::sqrt(a[i]);
      continue;
    case Opcode::Rsqrt:
      for (size_t i = 0; i < count; ++i)
        r[i] = 1.0 / std::sqrt(a[i]);
      continue;
    case Opcode::Tanh:
      for (size_t i = 0; i < count; ++i)
        r[i] = std::tanh(a[i]);
      continue;
    case Opcode::Erf:
      for (size_t i = 0; i < count; ++i)
        r[i] = std::erf(a[i]);
      continue;
    case Opcode::Extract: {
      // The whole batch's elements in one gather.
      const ExtractSite &site = program.extracts[in.attr];
      std::vector<int64_t> indices(count);
      for (size_t i = 0; i < count; ++i)
        indices[i] =
            extractIndex(site, [&](int32_t slot) { return lanes[slot][i]; });
      gather(site.tensor, indices, r);
      continue;
    }
    default:
      for (size_t i = 0; i < count; ++i)
        r[i] =
            execute(in, a[i], b[i], c[i], ivs ? ivs + i * numLoops : nullptr);
      continue;
    }
  }
}

//===----------------------------------------------------------------------===//
// Compiling op bodies
//===----------------------------------------------------------------------===//

llvm::Error ProgramBuilder::addExtract(Operation *op) {
  auto extract = cast<tensor::ExtractOp>(op);
  auto it = tensors ? tensors->find(extract.getTensor())
                    : DenseMap<Value, TensorNode *>::const_iterator();
  if (!tensors || it == tensors->end())
    return makeError("the tensor " + describe(op) +
                     " reads is not produced by a supported operation");
  ExtractSite site;
  site.tensor = it->second;
  for (Value index : extract.getIndices()) {
    auto slot = getSlot(index, op);
    if (!slot)
      return slot.takeError();
    site.coordinates.push_back(*slot);
  }
  Instr in;
  in.code = Opcode::Extract;
  in.attr = static_cast<int32_t>(program.extracts.size());
  in.result = newSlot(0.0);
  slotOf[extract.getResult()] = in.result;
  program.extracts.push_back(std::move(site));
  program.instrs.push_back(in);
  return llvm::Error::success();
}

llvm::Error ProgramBuilder::addOp(Operation *op) {
  // Kernels do not check assertions (a remark says so); nor does the
  // reference, which computes what they compute.
  if (isa<cf::AssertOp>(op))
    return llvm::Error::success();
  if (isa<tensor::ExtractOp>(op))
    return addExtract(op);
  Opcode code = getOpcode(op->getName().getStringRef());
  if (code == Opcode::Unknown || op->getNumResults() != 1 ||
      op->getNumRegions() != 0)
    return makeError("unsupported operation " + describe(op));
  Value result = op->getResult(0);
  if (isa<ShapedType>(result.getType()))
    return makeError("operation " + describe(op) +
                     " on a vector or tensor is not supported in a body");
  Instr in;
  in.code = code;
  in.width = getIntWidth(result.getType());
  if (op->getNumOperands() > 3)
    return makeError("unsupported operation " + describe(op));
  int32_t *operandSlots[3] = {&in.a, &in.b, &in.c};
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    auto slot = getSlot(operand, op);
    if (!slot)
      return slot.takeError();
    *operandSlots[i] = *slot;
  }
  if (op->getNumOperands() > 0)
    in.srcWidth = getIntWidth(op->getOperand(0).getType());
  if (code == Opcode::FPowI)
    in.srcWidth = getIntWidth(op->getOperand(1).getType());
  if (code == Opcode::Bitcast) {
    Type from = op->getOperand(0).getType(), to = result.getType();
    if (from.isIndex() || to.isIndex() ||
        from.getIntOrFloatBitWidth() != to.getIntOrFloatBitWidth())
      return makeError("unsupported operation " + describe(op));
    in.attr = static_cast<int32_t>(getBitFormat(from)) << 4 |
              static_cast<int32_t>(getBitFormat(to));
    in.width = static_cast<int32_t>(to.getIntOrFloatBitWidth());
    in.srcWidth = in.width;
  }
  if (code == Opcode::IsNormal) {
    Type type = op->getOperand(0).getType();
    in.imm = type.isF16() ? 0x1p-14 : type.isF64() ? 0x1p-1022 : 0x1p-126;
  }
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    std::optional<double> value = getScalarAttrValue(constant.getValue());
    if (!value)
      return makeError("unsupported constant in " + describe(op));
    in.imm = *value;
  } else if (auto index = dyn_cast<linalg::IndexOp>(op)) {
    in.attr = static_cast<int32_t>(index.getDim());
  } else if (auto cmpf = dyn_cast<arith::CmpFOp>(op)) {
    in.attr = static_cast<int32_t>(cmpf.getPredicate());
  } else if (auto cmpi = dyn_cast<arith::CmpIOp>(op)) {
    in.attr = static_cast<int32_t>(cmpi.getPredicate());
    in.width = getIntWidth(cmpi.getLhs().getType());
  }
  in.result = newSlot(0.0);
  slotOf[result] = in.result;
  program.instrs.push_back(in);
  return llvm::Error::success();
}

llvm::Error ProgramBuilder::addYield(Operation *yield) {
  for (Value operand : yield->getOperands()) {
    auto slot = getSlot(operand, yield);
    if (!slot)
      return slot.takeError();
    program.yields.push_back(*slot);
  }
  return llvm::Error::success();
}

std::optional<double> ProgramBuilder::getScalarAttrValue(Attribute attr) {
  if (auto floatAttr = dyn_cast<FloatAttr>(attr))
    return floatAttr.getValueAsDouble();
  if (auto intAttr = dyn_cast<IntegerAttr>(attr)) {
    if (intAttr.getType().isInteger(1))
      return intAttr.getValue().isZero() ? 0.0 : 1.0;
    return static_cast<double>(intAttr.getValue().getSExtValue());
  }
  return std::nullopt;
}

llvm::Expected<int32_t> ProgramBuilder::getSlot(Value value, Operation *user) {
  auto it = slotOf.find(value);
  if (it != slotOf.end())
    return it->second;
  auto outerIt = outer.find(value);
  if (outerIt == outer.end())
    return makeError("operand of " + describe(user) +
                     " is not a scalar known before evaluation");
  int32_t slot = newSlot(outerIt->second);
  slotOf[value] = slot;
  return slot;
}
