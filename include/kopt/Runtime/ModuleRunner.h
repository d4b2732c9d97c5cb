//===- ModuleRunner.h - Running a runtime module on a GPU -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A RuntimeModule instantiated on one device: every buffer allocated (aliases
// share their target's memory), constants uploaded, each plan step loaded
// and bound (BoundPlan.h). Running enqueues the steps in order on a stream,
// or launches a CUDA graph captured from them once. Inputs and outputs live
// in the module's own buffers unless the caller binds its device pointers.
// This is the C++ layer under libkoptrt's C API and kopt-run.
//
// A module with a dynamic batch has a program per tuned batch size, each
// instantiated here; the inputs and outputs that do not carry the batch
// (weights) are shared by all. A run at a tuned size runs its program on
// the caller's buffers; a run at another size (allowed when the module's
// samples are independent) runs chunks of the samples through the tuned
// programs (BatchChunks.h), copying each chunk's inputs into the program's
// own buffers and its outputs back, device to device.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_MODULERUNNER_H
#define KOPT_RUNTIME_MODULERUNNER_H

#include "kopt/Runtime/BatchChunks.h"
#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/KernelDatabase.h"
#include "kopt/Runtime/RuntimeModule.h"
#include "kopt/Runtime/Status.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime {

/// How a module is instantiated.
struct ModuleRunnerOptions {
  /// The kernel database that plans by reference are looked up in; a module
  /// with such plans fails to load without one.
  KernelDatabase *database = nullptr;
};

/// A runtime module ready to run on one device.
class ModuleRunner {
public:
  /// Instantiates `module` on `context` (see the file comment). The context
  /// must outlive the runner.
  static Result<std::unique_ptr<ModuleRunner>>
  create(const CudaContext &context, RuntimeModule module,
         const ModuleRunnerOptions &options = {});
  ~ModuleRunner();

  const RuntimeModule &getModule() const;
  const CudaContext &getContext() const;
  /// How each plan's code was loaded: `@function: source: how` lines.
  const std::vector<std::string> &getLoadNotes() const;
  /// Kernel launches, library calls and copies per run.
  size_t getNumLaunches() const;

  /// The batch size of the next runs: the module's first tuned size until
  /// `setBatch`; 0 for a static module.
  int64_t getBatch() const;
  /// Sets the batch size of the next runs of a module with a dynamic batch:
  /// a tuned size, or any positive size when the module's samples are
  /// independent (`RuntimeModule::checkBatch`). A new size forgets the
  /// values and bindings of the inputs and outputs that carry the batch
  /// (bind or set them again); the others stay. Setting the size in effect
  /// changes nothing.
  Status setBatch(int64_t batch);
  /// How a run goes at the current batch size: one chunk when it is a tuned
  /// size.
  const std::vector<BatchChunk> &getChunks() const;
  /// Input or output `name` at the current batch size.
  Result<TensorSpec> getTensor(std::string_view name) const;

  /// Copies `size` host bytes (exactly the tensor's) into input `name`.
  Status setInput(std::string_view name, const void *data, size_t size);
  /// Copies output (or any buffer) `name` to the host, after waiting for
  /// all work on the device.
  Result<std::string> readBuffer(std::string_view name) const;
  /// Uses the caller's device memory at `pointer` (at least the tensor's
  /// size at the current batch) for input or output `name`; 0 goes back to
  /// the module's own buffer. A captured graph is captured again on the
  /// next run.
  Status bindBuffer(std::string_view name, CUdeviceptr pointer);
  /// The device address of buffer `name` (an alias gives its target's), or
  /// 0 when there is none.
  CUdeviceptr getDevicePointer(std::string_view name) const;

  /// Runs through a CUDA graph captured from the steps on the first run
  /// (and after a rebinding or a new batch size) instead of enqueuing each
  /// step.
  void setUseGraph(bool useGraph);

  /// Enqueues one run of every step on `stream` (the context's own when
  /// null) and returns without waiting.
  Status enqueue(CUstream stream = nullptr);
  /// Enqueues one run and waits for it.
  Status run(CUstream stream = nullptr);

  struct Impl;

private:
  explicit ModuleRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// The kernel database record a plan by reference names: the record of
/// `plan.key` on `*plan.reference`, whose plan must hash to `plan.planHash`.
/// Returns the plan and the record's binaries.
Result<std::pair<KernelPlan, std::vector<SourceBinary>>>
resolvePlanReference(KernelDatabase &database, const ModulePlan &plan);

/// The binaries a kernel database record keeps (one cubin and PTX, for a
/// plan of one source, built for `arch`).
std::vector<SourceBinary> getRecordBinaries(const KernelRecord &record,
                                            const KernelPlan &plan);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_MODULERUNNER_H
