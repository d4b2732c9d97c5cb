//===- BoundPlan.h - A plan loaded for a device, on given buffers -*- C++ -*-=//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What the runtime launches: a KernelPlan whose code is loaded on one device
// and whose task tensors live in buffers someone else owns (a runtime
// module's, or a caller's device pointers). Unlike the PlanRunner, which
// allocates every tensor and always compiles with NVRTC, a BoundPlan takes
// shipped binaries first: the cubin for the device's architecture, else PTX
// the driver JIT-compiles, else the source through NVRTC; and it says which.
// Enqueuing only launches: everything else is done when it is created or
// bound.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_BOUNDPLAN_H
#define KOPT_RUNTIME_CUDA_BOUNDPLAN_H

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/RuntimeModule.h"
#include "kopt/Runtime/Status.h"
#include "kopt/Runtime/TaskPlan.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kopt::runtime {

/// Whether code built for `built` (`sm_80`) runs on `device` (`sm_90`):
/// PTX of an older or equal architecture does; an arch-specific one
/// (`sm_90a`) only on its own.
bool isPtxCompatible(const std::string &built, const std::string &device);

/// A plan on a device, over buffers bound by name.
class BoundPlan {
public:
  /// Checks `plan` against `task`, loads every source (see the file
  /// comment), resolves the kernels, evaluates launch sizes, prepares
  /// library steps and allocates the plan's temporaries. `workspace`, when
  /// not null, is a cuBLASLt workspace shared with other plans that run on
  /// the same stream (allocated here on first need); otherwise the plan
  /// allocates its own. The context and `workspace` must outlive the plan.
  static Result<std::unique_ptr<BoundPlan>>
  create(const CudaContext &context, const KernelTask &task,
         const KernelPlan &plan, const std::vector<SourceBinary> &binaries,
         DeviceBuffer *workspace = nullptr);
  ~BoundPlan();

  /// Binds the task's inputs and outputs, by their task names (`in0`,
  /// `out0`, ...), to device pointers; every one must be given.
  Status bind(const std::map<std::string, CUdeviceptr> &pointers);

  /// Enqueues every step on `stream`; fails when not bound.
  Status enqueue(CUstream stream) const;

  /// How each source was loaded, as `source: how` lines.
  const std::vector<std::string> &getLoadNotes() const;
  /// Kernel launches and library calls per enqueue.
  size_t getNumSteps() const;

  struct Impl;

private:
  explicit BoundPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CUDA_BOUNDPLAN_H
