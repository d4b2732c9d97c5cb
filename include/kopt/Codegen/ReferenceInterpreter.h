//===- ReferenceInterpreter.h - fp64 reference of a group -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The reference a candidate kernel's outputs are checked against: an
// interpreter that evaluates an outlined group function on the CPU in double
// precision. Every value is computed in double whatever its element type:
// the reference is the exact math, not a simulation of rounding, so
// arith.truncf and arith.extf are no-ops. Integer and i1 values are held
// exactly (double holds integers up to 2^53).
//
// Two modes: `evaluateAll` computes every element of every tensor the outputs
// need, in order, into dense arrays (a whole graph: convolutions, GEMMs and
// reductions in tight loops over tiles of output elements, on threads), and
// `evaluatePoints` computes only the requested elements of one output, pulling
// the producer elements each of them needs, so a large GEMM is checked at a
// few thousand sampled points for K multiply-adds each. There the inputs may
// be read on demand (`ReferenceInput`), so no input is materialised; elements
// that cost a reduction are memoised, so points that share a row share its
// reduction, and elementwise ones are recomputed, so memory stays
// proportional to the points; and the work may be spread over threads, with
// the same values bit for bit whatever their number.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_REFERENCEINTERPRETER_H
#define KOPT_CODEGEN_REFERENCEINTERPRETER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace mlir::kopt {

/// The elements of one function argument, read on demand. `read` must be a
/// pure function of the indices, safe to call from several threads at once.
class ReferenceInput {
public:
  virtual ~ReferenceInput();
  /// Writes the elements at the row-major linear `indices` (all in range) to
  /// `values[0 .. indices.size())`.
  virtual void read(llvm::ArrayRef<int64_t> indices, double *values) const = 0;
};

/// Evaluates an outlined fusion group function in fp64.
///
/// The function must have a single block of linalg ops on static-shaped
/// tensors (linalg.generic with any iterators and affine indexing maps, named
/// linalg ops that generalise to it, linalg.fill, linalg.softmax),
/// tensor.empty (read as zero), arith.constant (scalars and dense tensors),
/// tensor.expand_shape, tensor.collapse_shape, tensor.cast, tensor.pad with a
/// scalar padding value, scalar arith/math ops, and `func.return`. Bodies
/// may gather with `tensor.extract` from any tensor of the function, each
/// index clamped into its dimension as the CUDA code does. `cf.assert` is
/// not checked, in bodies or outside them, as kernels do not check it.
/// Tensors are row-major arrays of doubles. The MLIRContext of the function
/// must outlive the interpreter.
class ReferenceInterpreter {
public:
  /// Prepares `func`: clones it, generalises its named linalg ops on the clone
  /// and compiles every op body. Fails with a message naming the first
  /// unsupported op or type; `func` itself is not changed.
  static llvm::Expected<std::unique_ptr<ReferenceInterpreter>>
  create(func::FuncOp func);

  ~ReferenceInterpreter();
  ReferenceInterpreter(const ReferenceInterpreter &) = delete;
  ReferenceInterpreter &operator=(const ReferenceInterpreter &) = delete;

  /// Number of function arguments and results.
  unsigned getNumInputs() const;
  unsigned getNumOutputs() const;
  /// Shape of argument `index`.
  llvm::ArrayRef<int64_t> getInputShape(unsigned index) const;
  /// Number of elements of argument (result) `index`.
  int64_t getInputNumElements(unsigned index) const;
  int64_t getOutputNumElements(unsigned index) const;

  /// Computes every element of every result from `inputs` (one row-major
  /// array per argument), on up to `numThreads` threads (0: one per
  /// hardware thread); every value is the one `evaluatePoints` gives,
  /// whatever `numThreads`. Memory: the arrays of the tensors alive at once
  /// (each is freed after its last reader). Fails on a wrong input count or
  /// size, or on an out-of-bounds access in the IR.
  llvm::Expected<std::vector<std::vector<double>>>
  evaluateAll(llvm::ArrayRef<std::vector<double>> inputs,
              unsigned numThreads = 1);

  /// Computes the elements of result `outputIndex` at the row-major linear
  /// indices `linearPoints` only, evaluating the producer elements they need
  /// lazily. Fails like `evaluateAll`, or for an index out of range.
  llvm::Expected<std::vector<double>>
  evaluatePoints(llvm::ArrayRef<std::vector<double>> inputs,
                 unsigned outputIndex, llvm::ArrayRef<int64_t> linearPoints);

  /// Like the above, with every argument read on demand from `inputs` (one
  /// per argument, each of the argument's size), on up to `numThreads`
  /// threads (0: one per hardware thread). The values do not depend on
  /// `numThreads`.
  llvm::Expected<std::vector<double>>
  evaluatePoints(llvm::ArrayRef<const ReferenceInput *> inputs,
                 unsigned outputIndex, llvm::ArrayRef<int64_t> linearPoints,
                 unsigned numThreads = 1);

  struct Impl;

private:
  explicit ReferenceInterpreter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_REFERENCEINTERPRETER_H
