//===- TaskPlan.h - KernelTask and KernelPlan -------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// KernelTask and KernelPlan, the values every stage of kopt passes on, and
// their JSON documents `kopt.task/1` and `kopt.plan/1` (docs/KernelPlan.md).
// This is their one definition: the runtime owns it (no LLVM or MLIR here),
// the compiler builds these values from IR and writes them directly
// (kopt/Codegen/KernelTask.h), and the evaluator worker, the database and
// the runtime read them. Readers refuse a schema version they do not know.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_TASKPLAN_H
#define KOPT_RUNTIME_TASKPLAN_H

#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/Status.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime {

/// Element types of task tensors.
enum class ElementType { F16, BF16, F32, F64, I1, I8, I16, I32, I64 };

/// The MLIR spelling of `type` (`f32`, `i1`, ...).
const char *stringifyElementType(ElementType type);
/// Parses an MLIR spelling; std::nullopt for anything else.
std::optional<ElementType> parseElementType(std::string_view text);
/// Bytes per element (`i1` is stored as one byte).
int64_t getElementBytes(ElementType type);

/// A dense, row-major tensor with a static shape.
struct TensorSpec {
  std::string name;
  ElementType elementType = ElementType::F32;
  std::vector<int64_t> shape;

  /// The product of the dimensions, or std::nullopt when it overflows int64.
  std::optional<int64_t> getNumElements() const;
  /// Size in bytes, or std::nullopt when it overflows int64.
  std::optional<int64_t> getBytes() const;
  bool operator==(const TensorSpec &other) const;
};

/// How close a candidate's outputs must be to the reference.
struct Tolerance {
  /// Bound on ||out - ref|| / ||ref|| over each output.
  double relative = 1e-5;
  /// Elementwise absolute floor, for outputs near cancellation.
  double absolute = 1e-6;
};

/// What a fused group computes (`kopt.task/1`).
struct KernelTask {
  /// The schema version this code reads and writes.
  static constexpr int64_t kSchemaVersion = 1;

  /// The group's SHA-256 key.
  std::string key;
  /// The outlined function's name.
  std::string name;
  /// `contraction`, `convolution`, `reduction`, `softmax`, `pooling` or
  /// `elementwise`.
  std::string kind;
  /// Arguments and results of the outlined function, in order.
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  /// The outlined function, printed as MLIR (the semantics).
  std::string mlir;
  Tolerance tolerance;
  /// The precision policy: `fp32` (fp32 accuracy: IEEE fp32 arithmetic, or
  /// another arithmetic a plan declares that proves at least as accurate),
  /// `fp32-ieee` (IEEE fp32 arithmetic only), `tf32` or `bf16`.
  std::string precision = "fp32";

  /// Returns the tensor named `name` among inputs and outputs, or nullptr.
  const TensorSpec *findTensor(std::string_view name) const;
};

/// CUDA C++ source of one or more kernels (device code only).
struct KernelSource {
  std::string id;
  std::string code;
};

/// A kernel launch; grid and block sizes are integer expressions over the
/// plan's tensors, such as `cdiv(numel(out0), 256)`.
struct LaunchStep {
  std::string source;
  std::string entry;
  std::array<std::string, 3> grid = {"1", "1", "1"};
  std::array<std::string, 3> block = {"1", "1", "1"};
  int64_t sharedBytes = 0;
  /// Tensor names (passed as device pointers) or scalar literals such as
  /// `i32:4` and `f32:0.5`.
  std::vector<std::string> args;
  /// Blocks per thread-block cluster along x, set at launch (sm_90): 1 (no
  /// cluster) to 16. More than 8 is a non-portable size, which the runtime
  /// allows for the kernel before launching it. The grid's x size must be a
  /// multiple of it.
  int64_t cluster = 1;
  /// Every block resident at once (a cooperative launch), so that the
  /// kernel may synchronise its whole grid (cooperative groups'
  /// `this_grid().sync()`). The runtime launches at most as many blocks as
  /// the device holds at once, so such a kernel loops over its work by
  /// `gridDim.x`. Not with clusters; the grid's y and z sizes must be 1.
  bool cooperative = false;
};

/// `c[b] = act(op(a[b]) . op(b[b]) + bias)`, row-major, through cuBLASLt.
struct GemmStep {
  std::string a, b, c;
  /// A vector over the N columns, or empty.
  std::string bias;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transposeA = false, transposeB = false;
  /// `none`, `relu` or `gelu`.
  std::string activation = "none";
  /// What the product is multiplied by before the bias and activation
  /// (cuBLASLt's alpha): a constant scaling the group applies to the
  /// product, such as attention's 1/sqrt(d). Written to JSON only when
  /// it is not 1.
  double scale = 1.0;
};

/// A 1-D, 2-D or 3-D cross-correlation through cuDNN, with zero padding.
struct ConvStep {
  std::string input, filter, output;
  /// The operands' layout, as linalg names its convolutions: `nchw_fchw`,
  /// `nhwc_hwcf`, `ngchw_gfchw`, `nchw_chw` (depthwise), ...
  /// (kopt/Runtime/ConvLayout.h lists them).
  std::string layout = "nchw_fchw";
  /// One entry per spatial dimension of the layout.
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> dilations = {1, 1};
  /// Feature groups: the size of `g`, the channels of a depthwise layout,
  /// 1 otherwise.
  int64_t groups = 1;
  /// Zeros cuDNN reads around the input, as many before as after each
  /// spatial dimension: one entry per spatial dimension, or none for no
  /// padding at all.
  std::vector<int64_t> padding;
};

/// One step of a plan; `kind` says which of the members applies.
struct PlanStep {
  enum class Kind { Launch, Gemm, Conv };
  Kind kind = Kind::Launch;
  /// What the step computes, for people reading the plan.
  std::string comment;
  LaunchStep launch;
  GemmStep gemm;
  ConvStep conv;
};

/// How to compute a task (`kopt.plan/1`).
struct KernelPlan {
  /// The schema version this code reads and writes.
  static constexpr int64_t kSchemaVersion = 1;

  std::string taskKey;
  /// `baseline`, `builtin` or `llm`.
  std::string proposer;
  /// Which of the proposer's variants.
  std::string variant;
  /// Device buffers the plan allocates besides the task's tensors.
  std::vector<TensorSpec> temporaries;
  std::vector<KernelSource> sources;
  std::vector<PlanStep> steps;
  /// NVRTC options beyond the architecture.
  std::vector<std::string> compileOptions;
  /// The arithmetic the plan's products are computed in: `fp32` (IEEE
  /// single precision, the default) or `3xtf32` (fp32 operands split into
  /// TF32 parts, three tensor-core products accumulated in fp32). Written to
  /// JSON only when not `fp32`.
  std::string arithmetic = "fp32";
  /// An architecture-specific target the sources need (`sm_90a`, for
  /// wgmma): they are compiled for it instead of the device's architecture,
  /// and the plan runs only on devices of that compute capability. Empty
  /// (the default, not written to JSON): the device's architecture.
  std::string arch;

  /// Number of kernel launches the plan declares.
  unsigned countLaunches() const;
  /// Returns the source with `id`, or nullptr.
  const KernelSource *findSource(std::string_view id) const;
};

/// True for the precision policies kopt knows: `fp32`, `fp32-ieee`, `tf32`
/// and `bf16`.
bool isKnownPrecision(std::string_view precision);
/// True for the arithmetics a plan may declare: `fp32` and `3xtf32`.
bool isKnownArithmetic(std::string_view arithmetic);
/// True if a plan computing in `arithmetic` may serve a task under
/// `precision`: `fp32-ieee` takes IEEE fp32 arithmetic only, every other
/// policy any known arithmetic (under `fp32`, the evaluator then demands
/// fp32 accuracy of it, docs/Evaluator.md).
bool isArithmeticAllowed(std::string_view precision,
                         std::string_view arithmetic);

/// True for the values KernelPlan::arch may hold: empty, or an
/// architecture-specific target `sm_<number>a`.
bool isValidPlanArch(std::string_view arch);
/// The architecture to compile `plan`'s sources for on a device (or for a
/// build target) of `deviceArch` (`sm_90`): the plan's own when it declares
/// one, which must then be of the device's compute capability (`sm_90a` on
/// `sm_90`), else `deviceArch`.
Result<std::string> getCompileArch(const KernelPlan &plan,
                                   const std::string &deviceArch);

/// Reads a tensor `{"name", "element_type", "shape"}`.
Result<TensorSpec> tensorSpecFromJson(const json::Value &value);
/// Reads a `kopt.task/1` document; refuses any other schema.
Result<KernelTask> kernelTaskFromJson(const json::Value &value);
/// Reads a `kopt.plan/1` document; refuses any other schema. Checks the
/// document's shape only: whether the plan fits its task is checked when it
/// runs.
Result<KernelPlan> kernelPlanFromJson(const json::Value &value);

/// Writes `tensor` as JSON.
json::Value toJson(const TensorSpec &tensor);
/// Writes `task` as a `kopt.task/1` document.
json::Value toJson(const KernelTask &task);
/// Writes `plan` as a `kopt.plan/1` document.
json::Value toJson(const KernelPlan &plan);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_TASKPLAN_H
