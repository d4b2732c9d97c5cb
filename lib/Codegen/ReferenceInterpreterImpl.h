//===- ReferenceInterpreterImpl.h - fp64 reference internals ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Codegen: what the files of the reference interpreter share.
// ReferenceInstructions.cpp compiles op bodies into scalar instructions and
// runs them; ReferenceGeneric.cpp builds and evaluates linalg.generic nodes;
// ReferenceInterpreter.cpp builds the graph of tensor nodes, evaluates the
// other kinds and holds the public interface (ReferenceInterpreter.h).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_REFERENCEINTERPRETERIMPL_H
#define KOPT_LIB_CODEGEN_REFERENCEINTERPRETERIMPL_H

#include "kopt/Codegen/ReferenceInterpreter.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace mlir::kopt {
namespace reference {

//===----------------------------------------------------------------------===//
// Scalar instructions
//===----------------------------------------------------------------------===//

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

/// The opcode of the op named `name`, or `Opcode::Unknown`.
Opcode getOpcode(StringRef name);

/// Runs `program` at loop point `ivs` (null outside a loop nest).
void run(Program &program, const int64_t *ivs);

inline llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

inline std::string describe(Operation *op) {
  return "'" + op->getName().getStringRef().str() + "'";
}

/// Compiles scalar ops into a Program.
class ProgramBuilder {
public:
  /// `outer` maps scalar values defined outside the body to their values.
  ProgramBuilder(Program &program, const DenseMap<Value, double> &outer)
      : program(program), outer(outer) {}

  /// Gives `value` a fresh argument slot.
  void addArgument(Value value) { slotOf[value] = newSlot(0.0); }

  /// Compiles `op` into an instruction; fails on an unsupported op or an
  /// operand not known before evaluation.
  llvm::Error addOp(Operation *op);

  /// Records the slots of the values `yield` returns.
  llvm::Error addYield(Operation *yield);

  /// The value of a scalar attribute (i1 reads as 0 or 1).
  static std::optional<double> getScalarAttrValue(Attribute attr);

private:
  int32_t newSlot(double initial) {
    program.slots.push_back(initial);
    return static_cast<int32_t>(program.slots.size() - 1);
  }

  llvm::Expected<int32_t> getSlot(Value value, Operation *user);

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
struct TensorNode;

/// A tensor placed in a window of a Place node (`PlacedTensor`), or the
/// window a Slice node reads (`SliceRead`, whose `resultDims` are held in
/// `sourceDims`).
struct PlacedNode {
  TensorNode *source = nullptr;
  SmallVector<int64_t> offsets, strides, sourceDims;
};

/// One tensor value of the function.
struct TensorNode {
  enum class Kind {
    Input,
    Constant,
    Scalar,
    Alias,
    Generic,
    Softmax,
    Place,
    Slice
  };
  Kind kind = Kind::Scalar;
  SmallVector<int64_t> shape;
  SmallVector<int64_t> strides;
  int64_t numElements = 1;
  /// Input: the argument number.
  unsigned inputIndex = 0;
  /// Constant: the elements.
  std::vector<double> constant;
  /// Scalar: every element; Place: the padding value.
  double scalar = 0.0;
  /// Alias, Softmax and Slice: the tensor read; Place: the tensor read
  /// where no piece covers the element (else `scalar`), or null.
  TensorNode *source = nullptr;
  /// Generic: the op and the result number.
  GenericNode *generic = nullptr;
  unsigned resultIndex = 0;
  /// Softmax: the reduced dimension.
  int64_t dimension = 0;
  /// Place: the pieces, the first covering an element giving it; Slice:
  /// the window read.
  SmallVector<PlacedNode> pieces;
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

} // namespace reference

struct ReferenceInterpreter::Impl {
  OwningOpRef<ModuleOp> module;
  std::deque<reference::TensorNode> tensors;
  std::deque<reference::GenericNode> generics;
  DenseMap<Value, reference::TensorNode *> nodeOf;
  DenseMap<Value, double> scalars;
  SmallVector<reference::TensorNode *> inputNodes;
  SmallVector<reference::TensorNode *> outputNodes;

  /// The caller's inputs during an evaluation.
  ArrayRef<std::vector<double>> inputs;
  /// The first error met during an evaluation.
  std::string error;
  /// Whether generics are evaluated whole (full evaluation) rather than per
  /// element; the two orders cross-check each other in the tests.
  bool wholeOps = false;

  llvm::Error build(func::FuncOp func);
  llvm::Expected<reference::TensorNode *>
  newTensor(Value value, reference::TensorNode::Kind kind);
  llvm::Expected<reference::TensorNode *> getNode(Value value, Operation *user);
  llvm::Error addGeneric(linalg::GenericOp op);
  llvm::Error addOperand(reference::GenericNode &node, OpOperand &operand,
                         reference::OperandAccess &access);

  llvm::Error begin(ArrayRef<std::vector<double>> inputs, bool dense);
  double valueAt(reference::TensorNode *node, int64_t index);
  double operandAt(const reference::OperandAccess &access, const int64_t *ivs);
  int64_t linearIndex(const reference::OperandAccess &access,
                      const int64_t *ivs);
  void computeGenericPoint(reference::GenericNode &node, unsigned result,
                           int64_t index);
  void computeGenericWhole(reference::GenericNode &node);
  void computeSoftmaxRow(reference::TensorNode *node, int64_t index);
  void fail(const Twine &message) {
    if (error.empty())
      error = message.str();
  }
};

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_REFERENCEINTERPRETERIMPL_H
