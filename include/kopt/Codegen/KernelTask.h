//===- KernelTask.h - What a fused group computes ---------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A KernelTask describes a fusion group independently of how it is computed:
// its input and output tensors, the outlined function as MLIR text (the
// semantics), its key, and the tolerance a candidate's outputs must meet.
// It is a plain value, serialised as JSON (docs/KernelPlan.md), so any stage
// can run in another process or on another machine.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_KERNELTASK_H
#define KOPT_CODEGEN_KERNELTASK_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::kopt {

/// Element types kopt generates code for.
enum class ElementType { F16, BF16, F32, F64, I1, I8, I16, I32, I64 };

/// The MLIR spelling of `type` (`f32`, `i1`, ...).
llvm::StringRef stringifyElementType(ElementType type);
/// Parses an MLIR spelling; std::nullopt for anything else.
std::optional<ElementType> parseElementType(llvm::StringRef text);
/// Converts an MLIR element type; std::nullopt when unsupported.
std::optional<ElementType> getElementType(Type type);
/// Bytes per element (i1 is stored as one byte).
int64_t getElementBytes(ElementType type);
/// The CUDA C++ type that stores `type` (`float`, `__half`, `bool`, ...).
llvm::StringRef getCudaStorageType(ElementType type);
/// True for f16, bf16, f32 and f64.
bool isFloat(ElementType type);

/// A dense, row-major tensor at a task's boundary.
struct TensorSpec {
  std::string name;
  ElementType elementType = ElementType::F32;
  std::vector<int64_t> shape;

  int64_t getNumElements() const;
  int64_t getBytes() const;
  bool operator==(const TensorSpec &other) const;
};

/// How close a candidate's outputs must be to the reference.
struct Tolerance {
  /// Bound on ||out - ref|| / ||ref|| over each output (relative error
  /// norm).
  double relative = 1e-5;
  /// Elementwise absolute floor, for outputs near cancellation.
  double absolute = 1e-6;
};

/// What a fused group computes.
struct KernelTask {
  /// The JSON schema version this code reads and writes.
  static constexpr int64_t kSchemaVersion = 1;

  /// The group's SHA-256 key (docs/FusionGroups.md).
  std::string key;
  /// The outlined function's name and the group's kind.
  std::string name;
  std::string kind;
  /// Arguments and results of the outlined function, in order.
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  /// The outlined function, printed as MLIR.
  std::string mlir;
  /// Derived from element types and reduction sizes (`deriveTolerance`).
  Tolerance tolerance;
  /// The precision policy (`fp32`, `tf32`, `bf16`): part of the cache key.
  std::string precision = "fp32";

  /// Returns the tensor named `name` among inputs and outputs, or nullptr.
  const TensorSpec *findTensor(llvm::StringRef name) const;
};

/// Builds the task of an outlined group function (with `kopt.key`). Fails
/// with a message for dynamic shapes or unsupported element types.
llvm::Expected<KernelTask> buildKernelTask(func::FuncOp func);

/// The tolerance for outputs of `type` computed with reductions over at most
/// `reductionSize` elements, under precision policy `precision`.
Tolerance deriveTolerance(ElementType type, int64_t reductionSize,
                          llvm::StringRef precision);

llvm::json::Value toJson(const TensorSpec &tensor);
llvm::json::Value toJson(const KernelTask &task);
llvm::Expected<TensorSpec> tensorSpecFromJson(const llvm::json::Value &value);
llvm::Expected<KernelTask> kernelTaskFromJson(const llvm::json::Value &value);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_KERNELTASK_H
