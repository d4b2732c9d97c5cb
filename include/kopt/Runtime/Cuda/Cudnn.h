//===- Cudnn.h - Convolution steps through cuDNN ----------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Runs a plan's ConvStep (an unpadded 1-D, 2-D or 3-D cross-correlation,
// grouped or depthwise, in any layout of kopt/Runtime/ConvLayout.h: kopt's
// linalg convolutions carry padding as a separate tensor.pad) with cuDNN 9's
// N-d convolution API and a group count, opened with dlopen. fp32 with FMA
// math only: no TF32 tensor-core path, so results match the fp32 baseline's
// math.
//
// Where libcudnn.so.9 is found, in order: the loader's own search
// (LD_LIBRARY_PATH, the system cache), then `$KOPT_CUDNN_DIR` and
// `$KOPT_CUDNN_DIR/lib`, then the CUDA toolkit's library folders. On a
// machine where cuDNN lives only inside PyTorch's Python environment, scripts
// point KOPT_CUDNN_DIR (or LD_LIBRARY_PATH) at the folder that
// `python3 -c "import nvidia.cudnn; print(list(nvidia.cudnn.__path__)[0])"`
// prints; scripts/gpu-check does so.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_CUDNN_H
#define KOPT_RUNTIME_CUDA_CUDNN_H

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/TaskPlan.h"

#include <memory>

namespace kopt::runtime {

/// Device pointers of one convolution call.
struct ConvBuffers {
  CUdeviceptr input = 0, filter = 0, output = 0;
};

/// A convolution step with its cuDNN handle, descriptors, algorithm and
/// workspace, chosen once so that running it only enqueues work.
class CudnnConv {
public:
  /// Loads cuDNN, checks `step` against its fp32 tensors `input`, `filter`
  /// and `output` (shapes in the step's layout), and picks an algorithm.
  static Result<std::unique_ptr<CudnnConv>> create(const CudaContext &context,
                                                   const ConvStep &step,
                                                   const TensorSpec &input,
                                                   const TensorSpec &filter,
                                                   const TensorSpec &output);
  ~CudnnConv();

  /// Enqueues the convolution on `stream`.
  Status run(CUstream stream, const ConvBuffers &buffers) const;

  struct Impl;

private:
  explicit CudnnConv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// cuDNN's version (such as 91900), or an error when it cannot be loaded.
Result<size_t> getCudnnVersion();

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CUDA_CUDNN_H
