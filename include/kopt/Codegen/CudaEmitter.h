//===- CudaEmitter.h - Translate linalg bodies to CUDA C++ ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The pieces every generated kernel is made of: the common preamble, the
// CUDA types that store and compute each element type, conversions between
// them, and the translation of a linalg body (arith and math ops on
// scalars) into CUDA statements.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_CUDAEMITTER_H
#define KOPT_CODEGEN_CUDAEMITTER_H

#include "kopt/Codegen/KernelTask.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <string>

namespace mlir::kopt {

/// Accumulates CUDA source text with indentation.
class CodeWriter {
public:
  /// Appends `line` at the current indentation, with a newline.
  void line(llvm::StringRef text);
  /// Appends each non-empty line of `text` (another writer's code) at the
  /// current indentation.
  void lines(llvm::StringRef text);
  /// Appends `text` as a `//` comment line, made safe with
  /// sanitizeCommentText: it may hold names taken from the model.
  void comment(llvm::StringRef text);
  void indent() { depth += 2; }
  void dedent() { depth -= 2; }
  /// A fresh local name with `prefix` (`v12`).
  std::string fresh(llvm::StringRef prefix = "v");
  const std::string &str() const { return text; }

  /// Lines written after `setAside()` are set aside: `takeAside` removes
  /// and returns them, indented as if written at depth 0, to be written
  /// again with `lines()` inside code that is only known later. Fresh names
  /// keep counting, so that none is given twice.
  struct Aside {
    size_t size;
    int depth;
  };
  Aside setAside();
  std::string takeAside(Aside aside);

private:
  std::string text;
  int depth = 0;
  unsigned counter = 0;
};

/// The preamble every kopt kernel source starts with: fp16/bf16 headers and
/// the helpers generated code calls (NaN-propagating min/max, conversions).
llvm::StringRef getKernelPreamble();

/// What defines `kopt_trap_when_late(started)`: called on each turn of a
/// wait loop (`started` zero before the first), it stops the kernel
/// (`__trap`) once 2 s of `%globaltimer` have passed, so that a wait that
/// cannot end fails the run instead of hanging whoever runs it.
llvm::StringRef getDeadlineHelper();

/// The CUDA type arithmetic on `type` is done in: float for f16, bf16 and
/// f32; double for f64; the integer type itself; bool for i1.
llvm::StringRef getCudaComputeType(ElementType type);

/// An expression converting `expr`, a value of `type`'s storage type, to its
/// compute type (and back for `fromCompute`).
std::string convertToCompute(ElementType type, llvm::StringRef expr);
std::string convertFromCompute(ElementType type, llvm::StringRef expr);

/// Prints `expr` as a C expression over index variables named by
/// `dimName(position)` and `symbolName(position)`.
std::string
printAffineExpr(AffineExpr expr,
                const std::function<std::string(unsigned)> &dimName);

/// Translates the scalar ops of a linalg body into CUDA statements.
class BodyEmitter {
public:
  /// Gives an expression for the element of a `tensor.extract`'s tensor at
  /// the index whose coordinates are the C expressions `indices`.
  using ExtractFn = std::function<llvm::Expected<std::string>(
      tensor::ExtractOp, llvm::ArrayRef<std::string>)>;

  explicit BodyEmitter(CodeWriter &out) : out(out) {}

  /// Lets bodies read other tensors through `tensor.extract` (gathers);
  /// without it such a body is an error.
  void setExtractHandler(ExtractFn handler) { extractAt = std::move(handler); }

  /// Emits the ops of `body` (a linalg region's block) given expressions
  /// for its arguments, and returns the expressions it yields. `indexOf(d)`
  /// gives the loop index `linalg.index d` refers to. Values from outside
  /// the body (captured constants) are emitted on first use. Only ops the
  /// yielded values depend on are emitted: `cf.assert` (which kernels do
  /// not check) and the conditions only it reads leave a comment.
  llvm::Expected<llvm::SmallVector<std::string>>
  emit(Block &body, llvm::ArrayRef<std::string> arguments,
       const std::function<std::string(unsigned)> &indexOf);

  /// Returns an expression for the scalar constant `value` of MLIR type
  /// `type`, or an error for non-scalar constants.
  static llvm::Expected<std::string> printConstant(Attribute value, Type type);

private:
  llvm::Expected<std::string>
  emitOp(Operation *op, const std::function<std::string(unsigned)> &indexOf);
  llvm::Expected<std::string>
  lookup(Value value, const std::function<std::string(unsigned)> &indexOf);

  llvm::Expected<std::string>
  emitIntegerPower(Operation *op, llvm::ArrayRef<std::string> args);

  CodeWriter &out;
  llvm::DenseMap<Value, std::string> names;
  ExtractFn extractAt;
};

/// The C type holding scalars of MLIR type `type` during computation.
llvm::Expected<std::string> getCudaScalarType(Type type);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_CUDAEMITTER_H
