//===- CublasLt.h - GEMM steps through cuBLASLt -----------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Runs a plan's GemmStep with cuBLASLt, opened with dlopen. kopt's tensors are
// row-major and cuBLASLt's matrices column-major; the row-major product
// C = A·B is computed as the column-major product C^T = B^T·A^T, which reads
// the same memory without any copy. fp32 only, with CUBLAS_COMPUTE_32F (never
// the TF32 fast path, so results match the fp32 baseline's math).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_CUBLASLT_H
#define KOPT_RUNTIME_CUDA_CUBLASLT_H

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/TaskPlan.h"

#include <memory>

namespace kopt::runtime {

/// Device pointers of one GEMM call (`bias` is 0 when the step has none).
struct GemmBuffers {
  CUdeviceptr a = 0, b = 0, c = 0, bias = 0;
};

/// A GEMM step with its cuBLASLt handle, descriptors and algorithm, chosen
/// once so that running it only enqueues work.
class CublasLtGemm {
public:
  /// Workspace cuBLASLt may use per call (32 MiB, what Hopper kernels want).
  static constexpr int64_t kWorkspaceBytes = 32 << 20;

  /// Loads cuBLASLt, checks `step` (fp32 operands of `elementType`), and
  /// picks an algorithm for it on `context`'s device.
  static Result<std::unique_ptr<CublasLtGemm>>
  create(const CudaContext &context, const GemmStep &step,
         ElementType elementType);
  ~CublasLtGemm();

  /// Enqueues the GEMM on `stream`, with `workspace` of at least
  /// `kWorkspaceBytes`.
  Status run(CUstream stream, const GemmBuffers &buffers,
             CUdeviceptr workspace) const;

  struct Impl;

private:
  explicit CublasLtGemm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// cuBLASLt's version (such as 130100), or an error when it cannot be
/// loaded.
Result<size_t> getCublasLtVersion();

/// The GEMM workspace of `context` (`CublasLtGemm::kWorkspaceBytes`): one per
/// context, allocated on first use and kept until the context is destroyed.
/// The plans of one context run in order on its stream, so one workspace
/// serves them all; a runner of its own per plan would cost 32 MiB each.
Result<DeviceBuffer *> getSharedGemmWorkspace(const CudaContext &context);

/// The bytes of `context`'s shared GEMM workspace: 0 before it was made.
int64_t getSharedGemmWorkspaceBytes(const CudaContext &context);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CUDA_CUBLASLT_H
