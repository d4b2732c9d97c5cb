//===- PlanBuilder.h - Assemble a KernelPlan from generated -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Shared by the proposers: prepares a copy of a group for code generation,
// gives every materialised value a plan tensor (task inputs, task outputs or
// temporaries), and collects kernels and library calls into a plan.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_PLANBUILDER_H
#define KOPT_CODEGEN_PLANBUILDER_H

#include "kopt/Codegen/KernelGenerator.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::kopt {

/// A copy of a group function ready for code generation: linalg.softmax
/// decomposed, named ops generalised except those library calls may take
/// (matmul, batch_matmul, convolutions matchConvForm recognises) and fills.
struct PreparedGroup {
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
};

/// On the ops a decomposed `linalg.softmax` became: which softmax (i64).
inline constexpr llvm::StringLiteral kSoftmaxPartAttrName = "kopt.softmax_part";

/// Clones and prepares `func`.
llvm::Expected<PreparedGroup> prepareGroup(func::FuncOp func);

/// True for ops the generated code recomputes wherever used: constants,
/// tensor.empty, fills of constants and reshapes.
bool isInlinedOp(Operation *op);

/// Builds one plan.
class PlanBuilder {
public:
  PlanBuilder(const KernelTask &task, func::FuncOp func,
              llvm::StringRef proposer, llvm::StringRef variant);

  /// Marks `value` as held in a plan tensor and returns its name: the task
  /// input or output it is, or a new temporary.
  std::string materialize(Value value);
  /// Declares a temporary not tied to an IR value (partial results).
  void declareTemporary(TensorSpec tensor) {
    plan.temporaries.push_back(std::move(tensor));
  }
  /// The plan tensor already holding `value`'s data: its own, or, through
  /// reshapes, its source's. Empty when no step has written it yet.
  std::string findBuffer(Value value) const;

  /// A leaf function reading materialised values from their tensors.
  TensorEmitter::LeafFn leafFn() const;
  /// The kernel output record for `value` (materialising it).
  KernelOutput outputFor(Value value);

  /// Adds a kernel as a source and a launch step.
  void addKernel(const GeneratedKernel &kernel, llvm::StringRef comment);
  /// Adds a launch step of a kernel added before, with `kernel`'s grid
  /// and arguments (another batch of rows).
  void addLaunch(const GeneratedKernel &kernel, llvm::StringRef comment);
  /// Adds a library-call step that writes `writes`.
  void addStep(PlanStep step, llvm::ArrayRef<Value> writes);

  /// Adds copy kernels for task outputs that no step writes (results that
  /// are reshapes, constants or inputs, or returned twice).
  llvm::Error finishOutputs(MLIRContext *context);

  /// A fresh kernel entry name, readable: `<group>_<what>_<n>`, where
  /// `<group>` is the task name made a C identifier (sanitizeIdentifier).
  std::string entryName(llvm::StringRef what);

  KernelPlan take();

private:
  const KernelTask &task;
  func::FuncOp func;
  KernelPlan plan;
  llvm::DenseMap<Value, std::string> names;
  llvm::DenseSet<Value> written;
  unsigned temporaries = 0;
  unsigned kernels = 0;
};

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_PLANBUILDER_H
