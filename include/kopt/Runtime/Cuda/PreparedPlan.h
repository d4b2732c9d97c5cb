//===- PreparedPlan.h - A plan's steps, ready to launch ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The one launch path of a KernelPlan. Preparing a plan resolves every step
// once: the kernel in its loaded module, grid and block evaluated over the
// task's shapes, dynamic shared memory opted into, the argument array built,
// cuBLASLt and cuDNN descriptors made. Tensor addresses are bound by name
// afterwards, and enqueuing only launches.
//
// The evaluator (through PlanRunner, which validates and times candidates)
// and the runtime (through BoundPlan, which runs modules and database
// kernels for users) both launch through it, so the launch sequence that
// was validated is exactly the one users run.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_PREPAREDPLAN_H
#define KOPT_RUNTIME_CUDA_PREPAREDPLAN_H

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Status.h"
#include "kopt/Runtime/TaskPlan.h"

#include <map>
#include <memory>
#include <string>

namespace kopt::runtime {

class PreparedPlan {
public:
  /// Prepares every step of `plan` (checked against `task` by the caller)
  /// with the kernels of `modules`, one loaded module per source id.
  /// `workspace` holds the cuBLASLt workspace, allocated here when a GEMM
  /// step needs it and it is empty; it may be shared by plans that run on
  /// one stream. The context and `workspace` must outlive the result.
  static Result<std::unique_ptr<PreparedPlan>>
  create(const CudaContext &context, const KernelTask &task,
         const KernelPlan &plan, const std::map<std::string, CUmodule> &modules,
         DeviceBuffer &workspace);
  ~PreparedPlan();
  PreparedPlan(const PreparedPlan &) = delete;
  PreparedPlan &operator=(const PreparedPlan &) = delete;

  /// Sets the device address of tensor `name` (a task tensor or a
  /// temporary) in every step that uses it. The caller binds every task
  /// tensor and temporary before enqueuing.
  void bind(const std::string &name, CUdeviceptr pointer);
  /// Enqueues every step in order on `stream`, waiting for each when
  /// `synchronizeEachStep` (so a fault names its step). Fails, naming the
  /// step, on a launch or library error.
  Status enqueue(CUstream stream, bool synchronizeEachStep = false) const;
  /// Kernel launches and library calls per enqueue.
  size_t getNumSteps() const;

private:
  struct Impl;
  explicit PreparedPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CUDA_PREPAREDPLAN_H
