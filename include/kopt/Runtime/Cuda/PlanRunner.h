//===- PlanRunner.h - Running a KernelPlan on a GPU -------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Executes a KernelPlan for its KernelTask on one device. Creating a runner
// does all the preparation, in this order, before anything runs: verify the
// plan, compile every source with NVRTC for the device's architecture, load
// the modules, resolve the entries, prepare cuBLASLt and cuDNN steps
// (algorithm choice, workspaces), and allocate every tensor (inputs, outputs
// and temporaries). Running then only uploads, enqueues the steps on the
// context's stream, synchronizes and downloads.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_PLANRUNNER_H
#define KOPT_RUNTIME_CUDA_PLANRUNNER_H

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"
#include "kopt/Runtime/Status.h"
#include "kopt/Runtime/TaskPlan.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime {

/// How a runner prepares and runs a plan.
struct PlanRunnerOptions {
  /// Treat any NVRTC warning as a compile error.
  bool warningsAsErrors = false;
  /// In `run()`, synchronize after every step, so that a fault is reported
  /// with the step that caused it. Timing never synchronizes between steps.
  bool synchronizeEachStep = true;
  /// When non-zero, every tensor (inputs, outputs, temporaries) sits inside
  /// a larger allocation with at least this many guard bytes on each side,
  /// its start kept at a multiple of 256 bytes (`getAllocation`). The
  /// runner leaves the guards' contents to the caller.
  size_t redzoneBytes = 0;
};

/// Where a tensor lies inside its allocation.
struct TensorAllocation {
  /// Start of the whole allocation.
  CUdeviceptr base = 0;
  /// Offset of the tensor from `base`; the leading guard is before it.
  size_t bufferOffset = 0;
  /// Bytes of the tensor.
  size_t bufferBytes = 0;
  /// Bytes of the whole allocation; the trailing guard follows the tensor.
  size_t totalBytes = 0;
};

/// Times of one plan, in microseconds, over `repetitions` timed runs.
struct PlanTiming {
  double medianUs = 0;
  double minUs = 0;
  double p10Us = 0;
  double p90Us = 0;
  unsigned repetitions = 0;
  /// Untimed runs made first, to fill the warm-up time.
  unsigned warmupRuns = 0;
};

/// Summarises `timesUs` (at least one value): median, minimum, and the 10th
/// and 90th percentiles, interpolated linearly between the nearest ranks.
PlanTiming summarizeTimings(const std::vector<double> &timesUs);

/// A plan prepared on a device, ready to run any number of times.
class PlanRunner {
public:
  /// Prepares `plan` for `task` on `context` (see the file comment). The
  /// runner keeps references to `context`, which must outlive it. Tensors
  /// other than inputs start filled with 0xff bytes (NaN for floats), so a
  /// step that does not write its output is noticed.
  static Result<std::unique_ptr<PlanRunner>>
  create(const CudaContext &context, const KernelTask &task,
         const KernelPlan &plan, const PlanRunnerOptions &options = {});

  /// Compiles `plan`'s sources for `arch` (`sm_90`) into the process-wide
  /// cache that `create` reads, without a context: callers compile several
  /// plans on threads of their own before creating their runners. A source
  /// that another thread is compiling is waited for, not compiled twice.
  static Status precompile(const std::string &arch, const KernelPlan &plan,
                           const PlanRunnerOptions &options = {});
  ~PlanRunner();

  /// Uploads the `size` bytes at `data` (row-major, in the tensor's element
  /// type, exactly the tensor's size) into input `name`.
  Status setInput(std::string_view name, const uint8_t *data, size_t size);
  /// Uploads `bytes` into input `name`, as the pointer-and-size overload.
  Status setInput(std::string_view name, const std::vector<uint8_t> &bytes) {
    return setInput(name, bytes.data(), bytes.size());
  }
  /// Uploads `inputs`, one per task input in the task's order.
  Status setInputs(const std::vector<std::vector<uint8_t>> &inputs);

  /// Records that the caller wrote input `name` on the device itself
  /// (through `getDevicePointer`), as `setInput` would have.
  Status markInputWritten(std::string_view name);

  /// Runs every step once in order on the context's stream and waits for
  /// them. Fails, naming the step, on any launch or library error, and when
  /// an input was never set.
  Status run();

  /// Times the whole plan: untimed runs for `warmupMs` milliseconds (at
  /// least one), then `iterations` runs, each between two CUDA events on the
  /// stream. Before each timed run, outside the timed region, a scratch
  /// buffer twice the L2 size is read so no run finds the previous one's
  /// data in L2.
  Result<PlanTiming> timePlan(unsigned iterations, double warmupMs);

  /// Warm-up for timing with `timeRun`: untimed runs, without synchronizing
  /// between steps, until `warmupMs` milliseconds have passed (at least
  /// one). Returns the number of runs.
  Result<unsigned> warmUp(double warmupMs);
  /// One timed run, as one repetition of `timePlan`: the L2 flush outside
  /// the timed region, then the steps between two CUDA events. Returns the
  /// time in microseconds. Lets a caller interleave the runs of several
  /// plans.
  Result<double> timeRun();
  /// The L2 flush of `timeRun` alone, waited for: the next run starts cold,
  /// as a timed run does.
  Status flushL2();

  /// Downloads tensor `name` (an input, output or temporary).
  Result<std::vector<uint8_t>> readTensor(std::string_view name) const;
  /// Downloads every task output, in the task's order.
  Result<std::vector<std::vector<uint8_t>>> readOutputs() const;

  /// The device address of tensor `name`, or 0 when there is none.
  CUdeviceptr getDevicePointer(std::string_view name) const;
  /// Where tensor `name` lies in its allocation, or std::nullopt when there
  /// is no such tensor.
  std::optional<TensorAllocation> getAllocation(std::string_view name) const;
  /// NVRTC's output per source id.
  const std::map<std::string, CompiledKernel> &getCompiledSources() const;

  struct Impl;

private:
  explicit PlanRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// Prepares `plan`, uploads `inputs` (one per task input, in order), runs it
/// once and returns the outputs in the task's order.
Result<std::vector<std::vector<uint8_t>>>
runPlan(const CudaContext &context, const KernelTask &task,
        const KernelPlan &plan, const std::vector<std::vector<uint8_t>> &inputs,
        const PlanRunnerOptions &options = {});

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CUDA_PLANRUNNER_H
