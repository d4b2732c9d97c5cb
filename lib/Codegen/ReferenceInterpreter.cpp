//===- ReferenceInterpreter.cpp - fp64 reference of a group -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `create` clones the function, generalises its named linalg ops to
// linalg.generic, and turns each tensor value into a node that knows how to
// produce one element: a function argument, a constant, a reshape of another
// node, a padded node, a softmax, or a result of a linalg.generic. Each
// generic body is compiled into a flat list of instructions over a slot array
// of doubles, with values captured from outside the body folded to constants.
//
// Evaluation is demand-driven: `valueAt(node, index)` returns a cached element
// or computes it. For a generic whose output maps are projected permutations
// of all its parallel dimensions, an output element fixes the parallel loop
// point; the body then runs over every reduction point in loop order, reading
// operands through `valueAt`, and the element of every result at that point
// is cached. Other generics are evaluated whole, once. A softmax element
// computes and caches its whole row. `evaluateAll` instead evaluates every
// generic whole, in loop-nest order, so the two modes check each other. Errors
// found while evaluating (an out-of-bounds access) are recorded and returned by
// the caller.
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/ReferenceInterpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Support/DebugStringHelper.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <deque>
#include <limits>

using namespace mlir;
using namespace mlir::kopt;

//===----------------------------------------------------------------------===//
// Scalar instructions
//===----------------------------------------------------------------------===//

namespace {

enum class Opcode : uint8_t {
  Unknown,
  Const,
  Index,
  Copy,
  // Floating point.
  AddF,
  SubF,
  MulF,
  DivF,
  RemF,
  NegF,
  MaximumF,
  MinimumF,
  MaxNumF,
  MinNumF,
  CmpF,
  Select,
  UIToFP,
  SIToFP,
  FPToSI,
  FPToUI,
  // Integer.
  AddI,
  SubI,
  MulI,
  DivSI,
  DivUI,
  RemSI,
  RemUI,
  CeilDivSI,
  FloorDivSI,
  AndI,
  OrI,
  XOrI,
  ShLI,
  ShRSI,
  ShRUI,
  MaxSI,
  MinSI,
  MaxUI,
  MinUI,
  CmpI,
  ExtSI,
  ExtUI,
  TruncI,
  IndexCast,
  IndexCastUI,
  AbsI,
  IPowI,
  // math.
  AbsF,
  Ceil,
  Floor,
  Round,
  RoundEven,
  Trunc,
  Exp,
  Exp2,
  ExpM1,
  Log,
  Log2,
  Log10,
  Log1p,
  Sqrt,
  Rsqrt,
  Cbrt,
  Tanh,
  Sinh,
  Cosh,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Asinh,
  Acosh,
  Atanh,
  Atan2,
  Erf,
  Erfc,
  PowF,
  FPowI,
  Fma,
  CopySign,
  IsNaN,
  IsInf,
  IsFinite,
};

/// One scalar operation: `slots[result] = op(slots[a], slots[b], slots[c])`.
struct Instr {
  Opcode code = Opcode::Unknown;
  int32_t result = 0;
  int32_t a = 0, b = 0, c = 0;
  /// Bit width of the integer result, or of the operands of cmpi.
  int32_t width = 64;
  /// Bit width of the integer operand of a cast.
  int32_t srcWidth = 64;
  /// Comparison predicate, or the dimension of linalg.index.
  int32_t attr = 0;
  double imm = 0.0;
};

/// A compiled op body: block arguments live in slots [0, numArgs), values
/// captured from outside the body in constant slots.
struct Program {
  std::vector<Instr> instrs;
  /// Initial slot contents (the captured constants); also the working slots.
  std::vector<double> slots;
  /// Slots of the yielded values.
  SmallVector<int32_t> yields;
};

} // namespace

static Opcode getOpcode(StringRef name) {
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

static double execute(const Instr &in, const double *s, const int64_t *ivs) {
  double a = s[in.a], b = s[in.b], c = s[in.c];
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
    if (std::isnan(a) || std::isnan(b))
      return std::nan("");
    if (a == b)
      return std::signbit(a) ? b : a;
    return a > b ? a : b;
  case Opcode::MinimumF:
    if (std::isnan(a) || std::isnan(b))
      return std::nan("");
    if (a == b)
      return std::signbit(a) ? a : b;
    return a < b ? a : b;
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
  case Opcode::RemUI: {
    uint64_t x = toUnsigned(a, w), y = toUnsigned(b, w);
    if (y == 0)
      return 0.0;
    return fromInt(
        static_cast<int64_t>(in.code == Opcode::DivUI ? x / y : x % y), w);
  }
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
  }
  return std::nan("");
}

static void run(Program &program, const int64_t *ivs) {
  double *slots = program.slots.data();
  for (const Instr &in : program.instrs)
    slots[in.result] = execute(in, slots, ivs);
}

static llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static std::string describe(Operation *op) {
  return "'" + op->getName().getStringRef().str() + "'";
}

namespace {

/// Compiles scalar ops into a Program.
class ProgramBuilder {
public:
  /// `outer` maps scalar values defined outside the body to their values.
  ProgramBuilder(Program &program, const DenseMap<Value, double> &outer)
      : program(program), outer(outer) {}

  /// Gives `value` a fresh argument slot.
  void addArgument(Value value) { slotOf[value] = newSlot(0.0); }

  llvm::Error addOp(Operation *op) {
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

  /// Records the slots of the values `yield` returns.
  llvm::Error addYield(Operation *yield) {
    for (Value operand : yield->getOperands()) {
      auto slot = getSlot(operand, yield);
      if (!slot)
        return slot.takeError();
      program.yields.push_back(*slot);
    }
    return llvm::Error::success();
  }

  /// The value of a scalar attribute (i1 reads as 0 or 1).
  static std::optional<double> getScalarAttrValue(Attribute attr) {
    if (auto floatAttr = dyn_cast<FloatAttr>(attr))
      return floatAttr.getValueAsDouble();
    if (auto intAttr = dyn_cast<IntegerAttr>(attr)) {
      if (intAttr.getType().isInteger(1))
        return intAttr.getValue().isZero() ? 0.0 : 1.0;
      return static_cast<double>(intAttr.getValue().getSExtValue());
    }
    return std::nullopt;
  }

private:
  int32_t newSlot(double initial) {
    program.slots.push_back(initial);
    return static_cast<int32_t>(program.slots.size() - 1);
  }

  llvm::Expected<int32_t> getSlot(Value value, Operation *user) {
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

  Program &program;
  const DenseMap<Value, double> &outer;
  DenseMap<Value, int32_t> slotOf;
};

//===----------------------------------------------------------------------===//
// Tensor nodes
//===----------------------------------------------------------------------===//

/// Memoised elements of one tensor: a dense array for full evaluation, a hash
/// map for sampled points.
struct Cache {
  bool dense = false;
  std::vector<double> values;
  std::vector<bool> present;
  DenseMap<int64_t, double> sparse;

  void reset(bool useDense, int64_t size) {
    dense = useDense;
    sparse.clear();
    values.clear();
    present.clear();
    if (dense) {
      values.assign(size, 0.0);
      present.assign(size, false);
    }
  }
  bool lookup(int64_t index, double &value) const {
    if (dense) {
      if (!present[index])
        return false;
      value = values[index];
      return true;
    }
    auto it = sparse.find(index);
    if (it == sparse.end())
      return false;
    value = it->second;
    return true;
  }
  void store(int64_t index, double value) {
    if (dense) {
      values[index] = value;
      present[index] = true;
      return;
    }
    sparse[index] = value;
  }
};

struct GenericNode;

/// One tensor value of the function.
struct TensorNode {
  enum class Kind { Input, Constant, Scalar, Alias, Generic, Softmax, Pad };
  Kind kind = Kind::Scalar;
  SmallVector<int64_t> shape;
  SmallVector<int64_t> strides;
  int64_t numElements = 1;
  /// Input: the argument number.
  unsigned inputIndex = 0;
  /// Constant: the elements.
  std::vector<double> constant;
  /// Scalar: every element; Pad: the padding value.
  double scalar = 0.0;
  /// Alias, Softmax and Pad: the tensor read.
  TensorNode *source = nullptr;
  /// Generic: the op and the result number.
  GenericNode *generic = nullptr;
  unsigned resultIndex = 0;
  /// Softmax: the reduced dimension.
  int64_t dimension = 0;
  /// Pad: the low padding per dimension.
  SmallVector<int64_t> padLow;
  Cache cache;
};

/// How a generic's operand is read at a loop point.
struct OperandAccess {
  /// Null for a scalar operand.
  TensorNode *tensor = nullptr;
  double scalar = 0.0;
  /// Whether the body reads the block argument.
  bool used = true;
  /// Linear maps: index = offset + sum(coeffs[d] * iv[d]).
  bool linear = true;
  SmallVector<int64_t> coeffs;
  int64_t offset = 0;
  /// Other maps are evaluated per coordinate.
  AffineMap map;
};

/// A linalg.generic and what it needs to run.
struct GenericNode {
  linalg::GenericOp op;
  SmallVector<int64_t> ranges;
  SmallVector<unsigned> reductionDims;
  SmallVector<OperandAccess> inputs;
  SmallVector<OperandAccess> outputs;
  SmallVector<TensorNode *> results;
  Program body;
  /// Whether an output element fixes the parallel loop point.
  bool lazy = true;
  /// For lazy ops, per output: per loop dimension, the output coordinate that
  /// gives it (-1 for reduction dimensions); and, per output coordinate, the
  /// constant it must equal (-1 when it is a dimension).
  SmallVector<SmallVector<int>> dimFromCoord;
  SmallVector<SmallVector<int64_t>> constCoord;
  bool evaluated = false;
};

} // namespace

static SmallVector<int64_t> getStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Adds `scale * expr` to a linear form over the loop dimensions; false when
/// `expr` is not linear.
static bool addLinearForm(AffineExpr expr, int64_t scale,
                          SmallVectorImpl<int64_t> &coeffs, int64_t &offset) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
    coeffs[dim.getPosition()] += scale;
    return true;
  }
  if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
    offset += scale * constant.getValue();
    return true;
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return false;
  if (binary.getKind() == AffineExprKind::Add)
    return addLinearForm(binary.getLHS(), scale, coeffs, offset) &&
           addLinearForm(binary.getRHS(), scale, coeffs, offset);
  if (binary.getKind() == AffineExprKind::Mul) {
    if (auto rhs = dyn_cast<AffineConstantExpr>(binary.getRHS()))
      return addLinearForm(binary.getLHS(), scale * rhs.getValue(), coeffs,
                           offset);
    if (auto lhs = dyn_cast<AffineConstantExpr>(binary.getLHS()))
      return addLinearForm(binary.getRHS(), scale * lhs.getValue(), coeffs,
                           offset);
  }
  return false;
}

static int64_t floorDivide(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// Evaluates an affine expression over loop indices; false on a division or
/// modulo by a non-positive value or a symbol.
static bool evaluateAffine(AffineExpr expr, const int64_t *ivs,
                           int64_t &result) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
    result = ivs[dim.getPosition()];
    return true;
  }
  if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
    result = constant.getValue();
    return true;
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  int64_t lhs, rhs;
  if (!binary || !evaluateAffine(binary.getLHS(), ivs, lhs) ||
      !evaluateAffine(binary.getRHS(), ivs, rhs))
    return false;
  switch (binary.getKind()) {
  case AffineExprKind::Add:
    result = lhs + rhs;
    return true;
  case AffineExprKind::Mul:
    result = lhs * rhs;
    return true;
  case AffineExprKind::Mod:
    if (rhs <= 0)
      return false;
    result = lhs - floorDivide(lhs, rhs) * rhs;
    return true;
  case AffineExprKind::FloorDiv:
    if (rhs <= 0)
      return false;
    result = floorDivide(lhs, rhs);
    return true;
  case AffineExprKind::CeilDiv:
    if (rhs <= 0)
      return false;
    result = -floorDivide(-lhs, rhs);
    return true;
  default:
    return false;
  }
}

//===----------------------------------------------------------------------===//
// The interpreter
//===----------------------------------------------------------------------===//

struct ReferenceInterpreter::Impl {
  OwningOpRef<ModuleOp> module;
  std::deque<TensorNode> tensors;
  std::deque<GenericNode> generics;
  DenseMap<Value, TensorNode *> nodeOf;
  DenseMap<Value, double> scalars;
  SmallVector<TensorNode *> inputNodes;
  SmallVector<TensorNode *> outputNodes;

  /// The caller's inputs during an evaluation.
  ArrayRef<std::vector<double>> inputs;
  /// The first error met during an evaluation.
  std::string error;
  /// Whether generics are evaluated whole (full evaluation) rather than per
  /// element; the two orders cross-check each other in the tests.
  bool wholeOps = false;

  llvm::Error build(func::FuncOp func);
  llvm::Expected<TensorNode *> newTensor(Value value, TensorNode::Kind kind);
  llvm::Expected<TensorNode *> getNode(Value value, Operation *user);
  llvm::Error addGeneric(linalg::GenericOp op);
  llvm::Error addOperand(GenericNode &node, OpOperand &operand,
                         OperandAccess &access);

  llvm::Error begin(ArrayRef<std::vector<double>> inputs, bool dense);
  double valueAt(TensorNode *node, int64_t index);
  double operandAt(const OperandAccess &access, const int64_t *ivs);
  int64_t linearIndex(const OperandAccess &access, const int64_t *ivs);
  void computeGenericPoint(GenericNode &node, unsigned result, int64_t index);
  void computeGenericWhole(GenericNode &node);
  void computeSoftmaxRow(TensorNode *node, int64_t index);
  void fail(const Twine &message) {
    if (error.empty())
      error = message.str();
  }
};

llvm::Expected<TensorNode *>
ReferenceInterpreter::Impl::newTensor(Value value, TensorNode::Kind kind) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return makeError("value of type " + mlir::debugString(value.getType()) +
                     " is not a statically shaped tensor");
  TensorNode &node = tensors.emplace_back();
  node.kind = kind;
  node.shape.assign(type.getShape().begin(), type.getShape().end());
  node.strides = getStrides(node.shape);
  node.numElements = type.getNumElements();
  nodeOf[value] = &node;
  return &node;
}

llvm::Expected<TensorNode *>
ReferenceInterpreter::Impl::getNode(Value value, Operation *user) {
  auto it = nodeOf.find(value);
  if (it == nodeOf.end())
    return makeError("tensor operand of " + describe(user) +
                     " is not produced by a supported operation");
  return it->second;
}

llvm::Error ReferenceInterpreter::Impl::addOperand(GenericNode &node,
                                                   OpOperand &operand,
                                                   OperandAccess &access) {
  Operation *op = node.op;
  BlockArgument arg = node.op.getMatchingBlockArgument(&operand);
  access.used = !arg.use_empty();
  if (!isa<ShapedType>(operand.get().getType())) {
    auto it = scalars.find(operand.get());
    if (it == scalars.end())
      return makeError("scalar operand of " + describe(op) +
                       " is not known before evaluation");
    access.tensor = nullptr;
    access.scalar = it->second;
    return llvm::Error::success();
  }
  auto tensor = getNode(operand.get(), op);
  if (!tensor)
    return tensor.takeError();
  access.tensor = *tensor;
  AffineMap map = node.op.getMatchingIndexingMap(&operand);
  if (map.getNumSymbols() != 0 ||
      map.getNumResults() != access.tensor->shape.size())
    return makeError("unsupported indexing map in " + describe(op));
  access.map = map;
  unsigned numLoops = node.ranges.size();
  access.coeffs.assign(numLoops, 0);
  access.offset = 0;
  access.linear = true;
  for (auto [i, expr] : llvm::enumerate(map.getResults())) {
    SmallVector<int64_t> coeffs(numLoops, 0);
    int64_t offset = 0;
    if (!addLinearForm(expr, 1, coeffs, offset)) {
      access.linear = false;
      continue;
    }
    // A linear coordinate is checked once against the loop ranges.
    int64_t lo = offset, hi = offset;
    bool empty = false;
    for (unsigned d = 0; d < numLoops; ++d) {
      if (node.ranges[d] == 0)
        empty = true;
      int64_t extreme = coeffs[d] * (node.ranges[d] - 1);
      lo += std::min<int64_t>(0, extreme);
      hi += std::max<int64_t>(0, extreme);
    }
    if (!empty && (lo < 0 || hi >= access.tensor->shape[i]))
      return makeError("indexing map of " + describe(op) +
                       " reads out of bounds of operand #" +
                       Twine(operand.getOperandNumber()));
    for (unsigned d = 0; d < numLoops; ++d)
      access.coeffs[d] += coeffs[d] * access.tensor->strides[i];
    access.offset += offset * access.tensor->strides[i];
  }
  return llvm::Error::success();
}

llvm::Error ReferenceInterpreter::Impl::addGeneric(linalg::GenericOp op) {
  GenericNode &node = generics.emplace_back();
  node.op = op;
  node.ranges = op.getStaticLoopRanges();
  if (llvm::any_of(node.ranges, ShapedType::isDynamic))
    return makeError("dynamic loop range in " + describe(op));
  for (auto [d, type] : llvm::enumerate(op.getIteratorTypesArray()))
    if (type == utils::IteratorType::reduction)
      node.reductionDims.push_back(d);
  for (OpOperand *operand : op.getDpsInputOperands())
    if (llvm::Error err =
            addOperand(node, *operand, node.inputs.emplace_back()))
      return err;
  for (OpOperand &operand : op.getDpsInitsMutable())
    if (llvm::Error err =
            addOperand(node, operand, node.outputs.emplace_back()))
      return err;
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    auto tensor = newTensor(result, TensorNode::Kind::Generic);
    if (!tensor)
      return tensor.takeError();
    (*tensor)->generic = &node;
    (*tensor)->resultIndex = i;
    node.results.push_back(*tensor);
  }

  // Compile the body.
  Block &block = op.getRegion().front();
  ProgramBuilder builder(node.body, scalars);
  for (BlockArgument arg : block.getArguments())
    builder.addArgument(arg);
  for (Operation &bodyOp : block) {
    llvm::Error err = isa<linalg::YieldOp>(bodyOp) ? builder.addYield(&bodyOp)
                                                   : builder.addOp(&bodyOp);
    if (err)
      return makeError(llvm::toString(std::move(err)) + " in the body of " +
                       describe(op));
  }
  if (node.body.slots.empty())
    node.body.slots.push_back(0.0);
  if (node.body.yields.size() != node.results.size())
    return makeError("malformed body of " + describe(op));

  // An output element fixes the parallel point when every output map is a
  // permutation of all parallel dimensions plus constant coordinates.
  unsigned numLoops = node.ranges.size();
  for (OpOperand &operand : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    SmallVector<int> dimFromCoord(numLoops, -1);
    SmallVector<int64_t> constCoord(map.getNumResults(), -1);
    for (auto [i, expr] : llvm::enumerate(map.getResults())) {
      if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
        unsigned d = dim.getPosition();
        if (dimFromCoord[d] != -1 || llvm::is_contained(node.reductionDims, d))
          node.lazy = false;
        else
          dimFromCoord[d] = i;
      } else if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
        constCoord[i] = constant.getValue();
      } else {
        node.lazy = false;
      }
    }
    for (unsigned d = 0; d < numLoops; ++d)
      if (dimFromCoord[d] == -1 && !llvm::is_contained(node.reductionDims, d))
        node.lazy = false;
    node.dimFromCoord.push_back(std::move(dimFromCoord));
    node.constCoord.push_back(std::move(constCoord));
  }
  return llvm::Error::success();
}

llvm::Error ReferenceInterpreter::Impl::build(func::FuncOp original) {
  module = ModuleOp::create(original.getLoc());
  auto func = cast<func::FuncOp>(original->clone());
  module->push_back(func);
  std::string funcName = "@" + func.getSymName().str();
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return makeError("function " + funcName + " must have a single block");

  // Generalise named linalg ops (everything but generic and fill; softmax is
  // not a structured op and is interpreted directly).
  SmallVector<linalg::LinalgOp> named;
  func.walk([&](linalg::LinalgOp op) {
    if (!isa<linalg::GenericOp, linalg::FillOp>(op))
      named.push_back(op);
  });
  IRRewriter rewriter(func.getContext());
  for (linalg::LinalgOp op : named) {
    std::string name = describe(op);
    rewriter.setInsertionPoint(op);
    if (failed(linalg::generalizeNamedOp(rewriter, op)))
      return makeError("cannot generalise " + name + " in " + funcName);
  }

  Block &block = func.getBody().front();
  for (BlockArgument arg : block.getArguments()) {
    auto node = newTensor(arg, TensorNode::Kind::Input);
    if (!node)
      return makeError("argument #" + Twine(arg.getArgNumber()) + " of " +
                       funcName + ": " + llvm::toString(node.takeError()));
    (*node)->inputIndex = arg.getArgNumber();
    inputNodes.push_back(*node);
  }

  for (Operation &op : block) {
    auto withContext = [&](llvm::Error err) {
      return makeError(llvm::toString(std::move(err)) + " (in " + funcName +
                       ")");
    };
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value operand : ret.getOperands()) {
        auto node = getNode(operand, &op);
        if (!node)
          return withContext(node.takeError());
        outputNodes.push_back(*node);
      }
      continue;
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      if (!isa<ShapedType>(constant.getType())) {
        std::optional<double> value =
            ProgramBuilder::getScalarAttrValue(constant.getValue());
        if (!value)
          return withContext(makeError("unsupported constant"));
        scalars[constant] = *value;
        continue;
      }
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!dense)
        return withContext(
            makeError("unsupported tensor constant (only dense elements)"));
      auto node = newTensor(constant, TensorNode::Kind::Constant);
      if (!node)
        return withContext(node.takeError());
      bool isBool = dense.getElementType().isInteger(1);
      if (isa<FloatType>(dense.getElementType())) {
        for (const APFloat &v : dense.getValues<APFloat>()) {
          APFloat d = v;
          bool losesInfo = false;
          d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                    &losesInfo);
          (*node)->constant.push_back(d.convertToDouble());
        }
      } else if (dense.getElementType().isIntOrIndex()) {
        for (const APInt &v : dense.getValues<APInt>())
          (*node)->constant.push_back(
              isBool ? (v.isZero() ? 0.0 : 1.0)
                     : static_cast<double>(v.getSExtValue()));
      } else {
        return withContext(makeError("unsupported tensor constant type"));
      }
      if (dense.isSplat() && !(*node)->constant.empty()) {
        (*node)->kind = TensorNode::Kind::Scalar;
        (*node)->scalar = (*node)->constant.front();
        (*node)->constant.clear();
      }
      continue;
    }
    if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
      auto node = newTensor(empty, TensorNode::Kind::Scalar);
      if (!node)
        return withContext(node.takeError());
      continue;
    }
    if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      auto it = scalars.find(fill.getInputs()[0]);
      if (it == scalars.end())
        return withContext(makeError("fill value of " + describe(&op) +
                                     " is not known before evaluation"));
      if (fill->getNumResults() != 1)
        return withContext(makeError(describe(&op) + " on a buffer"));
      auto node = newTensor(fill->getResult(0), TensorNode::Kind::Scalar);
      if (!node)
        return withContext(node.takeError());
      (*node)->scalar = it->second;
      continue;
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(
            op)) {
      // Row-major reshapes keep every element's linear index.
      auto source = getNode(op.getOperand(0), &op);
      if (!source)
        return withContext(source.takeError());
      auto node = newTensor(op.getResult(0), TensorNode::Kind::Alias);
      if (!node)
        return withContext(node.takeError());
      if ((*node)->numElements != (*source)->numElements)
        return withContext(makeError("reshape changes the element count"));
      (*node)->source = *source;
      continue;
    }
    if (auto pad = dyn_cast<tensor::PadOp>(op)) {
      auto source = getNode(pad.getSource(), &op);
      if (!source)
        return withContext(source.takeError());
      Value padValue = pad.getConstantPaddingValue();
      if (auto constant =
              padValue ? padValue.getDefiningOp<arith::ConstantOp>() : nullptr)
        if (std::optional<double> value =
                ProgramBuilder::getScalarAttrValue(constant.getValue()))
          scalars[padValue] = *value;
      auto it = padValue ? scalars.find(padValue) : scalars.end();
      if (it == scalars.end())
        return withContext(
            makeError(describe(&op) + " without a constant padding value"));
      auto node = newTensor(pad.getResult(), TensorNode::Kind::Pad);
      if (!node)
        return withContext(node.takeError());
      (*node)->source = *source;
      (*node)->scalar = it->second;
      (*node)->padLow.assign(pad.getStaticLow().begin(),
                             pad.getStaticLow().end());
      if (llvm::any_of((*node)->padLow, ShapedType::isDynamic))
        return withContext(makeError(describe(&op) + " with dynamic padding"));
      continue;
    }
    if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op)) {
      auto source = getNode(softmax.getInput(), &op);
      if (!source)
        return withContext(source.takeError());
      if (softmax->getNumResults() != 1)
        return withContext(makeError(describe(&op) + " on a buffer"));
      auto node = newTensor(softmax->getResult(0), TensorNode::Kind::Softmax);
      if (!node)
        return withContext(node.takeError());
      (*node)->source = *source;
      (*node)->dimension = softmax.getDimension();
      if ((*node)->dimension < 0 ||
          (*node)->dimension >= static_cast<int64_t>((*node)->shape.size()))
        return withContext(makeError("softmax dimension out of range"));
      continue;
    }
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (!generic.hasPureTensorSemantics())
        return withContext(makeError(describe(&op) + " on buffers"));
      if (llvm::Error err = addGeneric(generic))
        return withContext(std::move(err));
      continue;
    }
    // Scalar arith and math ops outside any body are folded now.
    if (op.getNumResults() == 1 &&
        !isa<ShapedType>(op.getResult(0).getType()) &&
        getOpcode(op.getName().getStringRef()) != Opcode::Unknown &&
        !isa<linalg::IndexOp>(op)) {
      Program program;
      ProgramBuilder builder(program, scalars);
      if (llvm::Error err = builder.addOp(&op))
        return withContext(std::move(err));
      run(program, nullptr);
      scalars[op.getResult(0)] = program.slots[program.instrs.back().result];
      continue;
    }
    return withContext(makeError("unsupported operation " + describe(&op)));
  }
  return llvm::Error::success();
}

llvm::Error
ReferenceInterpreter::Impl::begin(ArrayRef<std::vector<double>> newInputs,
                                  bool dense) {
  if (newInputs.size() != inputNodes.size())
    return makeError("expected " + Twine(inputNodes.size()) + " inputs, got " +
                     Twine(newInputs.size()));
  for (auto [i, node] : llvm::enumerate(inputNodes))
    if (static_cast<int64_t>(newInputs[i].size()) != node->numElements)
      return makeError("input #" + Twine(i) + " has " +
                       Twine(newInputs[i].size()) + " elements, expected " +
                       Twine(node->numElements));
  inputs = newInputs;
  error.clear();
  for (TensorNode &node : tensors)
    if (node.kind == TensorNode::Kind::Generic ||
        node.kind == TensorNode::Kind::Softmax)
      node.cache.reset(dense, node.numElements);
  for (GenericNode &node : generics)
    node.evaluated = false;
  return llvm::Error::success();
}

int64_t ReferenceInterpreter::Impl::linearIndex(const OperandAccess &access,
                                                const int64_t *ivs) {
  if (access.linear) {
    int64_t index = access.offset;
    for (auto [d, coeff] : llvm::enumerate(access.coeffs))
      index += coeff * ivs[d];
    return index;
  }
  int64_t index = 0;
  for (auto [i, expr] : llvm::enumerate(access.map.getResults())) {
    int64_t coord;
    if (!evaluateAffine(expr, ivs, coord) || coord < 0 ||
        coord >= access.tensor->shape[i]) {
      fail("an indexing map reads out of bounds");
      return 0;
    }
    index += coord * access.tensor->strides[i];
  }
  return index;
}

double ReferenceInterpreter::Impl::operandAt(const OperandAccess &access,
                                             const int64_t *ivs) {
  if (!access.tensor)
    return access.scalar;
  return valueAt(access.tensor, linearIndex(access, ivs));
}

double ReferenceInterpreter::Impl::valueAt(TensorNode *node, int64_t index) {
  switch (node->kind) {
  case TensorNode::Kind::Input:
    return inputs[node->inputIndex][index];
  case TensorNode::Kind::Constant:
    return node->constant[index];
  case TensorNode::Kind::Scalar:
    return node->scalar;
  case TensorNode::Kind::Alias:
    return valueAt(node->source, index);
  case TensorNode::Kind::Pad: {
    TensorNode *source = node->source;
    int64_t sourceIndex = 0;
    for (size_t i = 0; i < node->shape.size(); ++i) {
      int64_t coord = (index / node->strides[i]) % node->shape[i];
      int64_t sourceCoord = coord - node->padLow[i];
      if (sourceCoord < 0 || sourceCoord >= source->shape[i])
        return node->scalar;
      sourceIndex += sourceCoord * source->strides[i];
    }
    return valueAt(source, sourceIndex);
  }
  case TensorNode::Kind::Generic:
  case TensorNode::Kind::Softmax:
    break;
  }
  double value;
  if (node->cache.lookup(index, value))
    return value;
  if (node->kind == TensorNode::Kind::Softmax)
    computeSoftmaxRow(node, index);
  else
    computeGenericPoint(*node->generic, node->resultIndex, index);
  if (!node->cache.lookup(index, value)) {
    fail("internal error: element not computed");
    return std::nan("");
  }
  return value;
}

void ReferenceInterpreter::Impl::computeSoftmaxRow(TensorNode *node,
                                                   int64_t index) {
  int64_t dim = node->dimension;
  int64_t stride = node->strides[dim], size = node->shape[dim];
  int64_t base = index - ((index / stride) % size) * stride;
  std::vector<double> row(size);
  double maximum = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < size; ++k) {
    row[k] = valueAt(node->source, base + k * stride);
    maximum = std::max(maximum, row[k]);
  }
  double sum = 0.0;
  for (double &v : row) {
    v = std::exp(v - maximum);
    sum += v;
  }
  for (int64_t k = 0; k < size; ++k)
    node->cache.store(base + k * stride, row[k] / sum);
}

void ReferenceInterpreter::Impl::computeGenericPoint(GenericNode &node,
                                                     unsigned result,
                                                     int64_t index) {
  if (!node.lazy || wholeOps) {
    computeGenericWhole(node);
    return;
  }
  TensorNode *out = node.results[result];
  SmallVector<int64_t> coords(out->shape.size());
  for (size_t i = 0; i < coords.size(); ++i)
    coords[i] = (index / out->strides[i]) % out->shape[i];
  // An element off the constant coordinates of the map is never written.
  for (auto [i, constant] : llvm::enumerate(node.constCoord[result])) {
    if (constant != -1 && coords[i] != constant) {
      out->cache.store(index, valueAt(node.outputs[result].tensor, index));
      return;
    }
  }
  unsigned numLoops = node.ranges.size();
  SmallVector<int64_t> ivs(numLoops, 0);
  for (unsigned d = 0; d < numLoops; ++d)
    if (node.dimFromCoord[result][d] != -1)
      ivs[d] = coords[node.dimFromCoord[result][d]];

  unsigned numInputs = node.inputs.size(), numOutputs = node.outputs.size();
  SmallVector<int64_t> outIndex(numOutputs);
  SmallVector<double> acc(numOutputs, 0.0);
  for (unsigned o = 0; o < numOutputs; ++o)
    outIndex[o] =
        o == result ? index : linearIndex(node.outputs[o], ivs.data());
  int64_t numReductionPoints = 1;
  for (unsigned d : node.reductionDims)
    numReductionPoints *= node.ranges[d];
  for (unsigned o = 0; o < numOutputs; ++o)
    if (node.outputs[o].used || numReductionPoints == 0)
      acc[o] = valueAt(node.outputs[o].tensor, outIndex[o]);

  Program &body = node.body;
  for (int64_t point = 0; point < numReductionPoints; ++point) {
    for (unsigned i = 0; i < numInputs; ++i)
      if (node.inputs[i].used)
        body.slots[i] = operandAt(node.inputs[i], ivs.data());
    for (unsigned o = 0; o < numOutputs; ++o)
      body.slots[numInputs + o] = acc[o];
    run(body, ivs.data());
    for (unsigned o = 0; o < numOutputs; ++o)
      acc[o] = body.slots[body.yields[o]];
    if (!error.empty())
      return;
    // Advance the reduction odometer, innermost dimension fastest.
    for (int64_t r = static_cast<int64_t>(node.reductionDims.size()) - 1;
         r >= 0; --r) {
      unsigned d = node.reductionDims[r];
      if (++ivs[d] < node.ranges[d])
        break;
      ivs[d] = 0;
    }
  }
  for (unsigned o = 0; o < numOutputs; ++o)
    node.results[o]->cache.store(outIndex[o], acc[o]);
}

void ReferenceInterpreter::Impl::computeGenericWhole(GenericNode &node) {
  if (node.evaluated) {
    fail("internal error: an element of a whole evaluation is missing");
    return;
  }
  node.evaluated = true;
  unsigned numInputs = node.inputs.size(), numOutputs = node.outputs.size();
  std::vector<std::vector<double>> acc(numOutputs);
  for (unsigned o = 0; o < numOutputs; ++o) {
    TensorNode *init = node.outputs[o].tensor;
    acc[o].resize(init->numElements);
    for (int64_t i = 0; i < init->numElements; ++i)
      acc[o][i] = valueAt(init, i);
  }
  unsigned numLoops = node.ranges.size();
  int64_t numPoints = 1;
  for (int64_t range : node.ranges)
    numPoints *= range;
  SmallVector<int64_t> ivs(numLoops, 0), outIndex(numOutputs);
  Program &body = node.body;
  for (int64_t point = 0; point < numPoints; ++point) {
    for (unsigned i = 0; i < numInputs; ++i)
      if (node.inputs[i].used)
        body.slots[i] = operandAt(node.inputs[i], ivs.data());
    for (unsigned o = 0; o < numOutputs; ++o) {
      outIndex[o] = linearIndex(node.outputs[o], ivs.data());
      body.slots[numInputs + o] = acc[o][outIndex[o]];
    }
    if (!error.empty())
      return;
    run(body, ivs.data());
    for (unsigned o = 0; o < numOutputs; ++o)
      acc[o][outIndex[o]] = body.slots[body.yields[o]];
    for (int64_t d = static_cast<int64_t>(numLoops) - 1; d >= 0; --d) {
      if (++ivs[d] < node.ranges[d])
        break;
      ivs[d] = 0;
    }
  }
  for (unsigned o = 0; o < numOutputs; ++o)
    for (int64_t i = 0, e = acc[o].size(); i < e; ++i)
      node.results[o]->cache.store(i, acc[o][i]);
}

//===----------------------------------------------------------------------===//
// Public interface
//===----------------------------------------------------------------------===//

ReferenceInterpreter::ReferenceInterpreter(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}

ReferenceInterpreter::~ReferenceInterpreter() = default;

llvm::Expected<std::unique_ptr<ReferenceInterpreter>>
ReferenceInterpreter::create(func::FuncOp func) {
  auto impl = std::make_unique<Impl>();
  if (llvm::Error err = impl->build(func))
    return std::move(err);
  return std::unique_ptr<ReferenceInterpreter>(
      new ReferenceInterpreter(std::move(impl)));
}

unsigned ReferenceInterpreter::getNumInputs() const {
  return impl->inputNodes.size();
}
unsigned ReferenceInterpreter::getNumOutputs() const {
  return impl->outputNodes.size();
}
ArrayRef<int64_t> ReferenceInterpreter::getInputShape(unsigned index) const {
  return impl->inputNodes[index]->shape;
}
ArrayRef<int64_t> ReferenceInterpreter::getOutputShape(unsigned index) const {
  return impl->outputNodes[index]->shape;
}
int64_t ReferenceInterpreter::getInputNumElements(unsigned index) const {
  return impl->inputNodes[index]->numElements;
}
int64_t ReferenceInterpreter::getOutputNumElements(unsigned index) const {
  return impl->outputNodes[index]->numElements;
}

/// Tensors up to this many elements get a dense cache in `evaluateAll`.
static constexpr int64_t kMaxDenseCacheElements = int64_t(1) << 24;

llvm::Expected<std::vector<std::vector<double>>>
ReferenceInterpreter::evaluateAll(ArrayRef<std::vector<double>> inputs) {
  bool dense = llvm::all_of(impl->tensors, [](const TensorNode &node) {
    return node.numElements <= kMaxDenseCacheElements;
  });
  if (llvm::Error err = impl->begin(inputs, dense))
    return std::move(err);
  impl->wholeOps = true;
  std::vector<std::vector<double>> outputs;
  for (TensorNode *node : impl->outputNodes) {
    std::vector<double> &values = outputs.emplace_back(node->numElements);
    for (int64_t i = 0; i < node->numElements; ++i)
      values[i] = impl->valueAt(node, i);
    if (!impl->error.empty())
      return makeError(impl->error);
  }
  return outputs;
}

llvm::Expected<std::vector<double>>
ReferenceInterpreter::evaluatePoints(ArrayRef<std::vector<double>> inputs,
                                     unsigned outputIndex,
                                     ArrayRef<int64_t> linearPoints) {
  if (outputIndex >= impl->outputNodes.size())
    return makeError("output #" + Twine(outputIndex) + " does not exist (" +
                     Twine(impl->outputNodes.size()) + " outputs)");
  TensorNode *node = impl->outputNodes[outputIndex];
  for (int64_t point : linearPoints)
    if (point < 0 || point >= node->numElements)
      return makeError("point " + Twine(point) +
                       " is out of range for output #" + Twine(outputIndex) +
                       " of " + Twine(node->numElements) + " elements");
  if (llvm::Error err = impl->begin(inputs, /*dense=*/false))
    return std::move(err);
  impl->wholeOps = false;
  std::vector<double> values;
  values.reserve(linearPoints.size());
  for (int64_t point : linearPoints) {
    values.push_back(impl->valueAt(node, point));
    if (!impl->error.empty())
      return makeError(impl->error);
  }
  return values;
}
