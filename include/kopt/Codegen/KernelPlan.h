//===- KernelPlan.h - How to compute a task on a GPU ------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A KernelPlan is an ordered list of steps over a task's tensors and declared
// temporaries: CUDA kernel launches from the plan's own sources, or library
// calls (a cuBLASLt GEMM with an optional epilogue, a cuDNN convolution).
// Baseline, built-in and LLM candidates are all KernelPlans, so one
// evaluator and one runtime serve them all. Serialised as JSON
// (docs/KernelPlan.md).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_KERNELPLAN_H
#define KOPT_CODEGEN_KERNELPLAN_H

#include "kopt/Codegen/KernelTask.h"

#include <array>
#include <map>

namespace mlir::kopt {

/// CUDA C++ source of one or more kernels (device code only).
struct KernelSource {
  std::string id;
  std::string code;
};

/// A kernel launch. Grid and block sizes are integer expressions over the
/// plan's tensors (see `evaluatePlanExpression`), such as
/// `cdiv(numel(x), 1024)`.
struct LaunchStep {
  std::string source;
  std::string entry;
  std::array<std::string, 3> grid = {"1", "1", "1"};
  std::array<std::string, 3> block = {"1", "1", "1"};
  int64_t sharedBytes = 0;
  /// Kernel arguments in order: a tensor name (passed as a device pointer),
  /// or a typed scalar literal `i32:N`, `i64:N`, `f32:X`.
  std::vector<std::string> args;
};

/// `c[b] = epilogue(op(a[b]) @ op(b[b]) + bias)` in row-major layout,
/// through cuBLASLt. `bias` is a vector over the N columns, or empty.
struct GemmStep {
  std::string a, b, c, bias;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transposeA = false, transposeB = false;
  /// `none`, `relu`, `gelu` (tanh form, as cuBLASLt computes it).
  std::string activation = "none";
};

/// A 2-D cross-correlation through cuDNN, in NCHW/FCHW or NHWC/HWCF layout.
struct ConvStep {
  std::string input, filter, output;
  std::string layout = "nchw_fchw";
  std::array<int64_t, 2> strides = {1, 1};
  std::array<int64_t, 2> dilations = {1, 1};
};

/// One step of a plan.
struct PlanStep {
  enum class Kind { Launch, Gemm, Conv };
  Kind kind = Kind::Launch;
  /// What the step computes, for people reading the plan.
  std::string comment;
  LaunchStep launch;
  GemmStep gemm;
  ConvStep conv;
};

/// How to compute a task.
struct KernelPlan {
  static constexpr int64_t kSchemaVersion = 1;

  std::string taskKey;
  /// `baseline`, `builtin` or `llm`.
  std::string proposer;
  /// Names the variant among the proposer's candidates (`bs256_v4`).
  std::string variant;
  /// Device buffers the plan allocates besides the task's tensors.
  std::vector<TensorSpec> temporaries;
  std::vector<KernelSource> sources;
  std::vector<PlanStep> steps;
  /// NVRTC options beyond the architecture (never fast-math by default, so
  /// candidates and baseline share math flags).
  std::vector<std::string> compileOptions;

  /// Number of kernel launches the plan declares (library calls may add
  /// their own; the evaluator accounts for them separately).
  unsigned countLaunches() const;
};

/// Evaluates a grid/block expression: integer literals, `+ - * / %`,
/// parentheses, `cdiv(a, b)`, `min(a, b)`, `max(a, b)`, and `numel(t)` /
/// `dim(t, i)` over the tensors in `tensors`.
llvm::Expected<int64_t>
evaluatePlanExpression(llvm::StringRef expression,
                       const std::map<std::string, TensorSpec> &tensors);

/// Checks a plan against its task: unique tensor names, every step refers to
/// known tensors and sources, expressions evaluate to positive sizes within
/// CUDA's limits, GEMM/conv shapes agree with their tensors.
llvm::Error verifyPlan(const KernelPlan &plan, const KernelTask &task);

llvm::json::Value toJson(const KernelPlan &plan);
llvm::Expected<KernelPlan> kernelPlanFromJson(const llvm::json::Value &value);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_KERNELPLAN_H
