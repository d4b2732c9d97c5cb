//===- PlanRunner.cpp - Running a KernelPlan on a GPU -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The runner compiles every source with NVRTC, allocates every tensor (with
// redzones when asked) and prepares the steps through PreparedPlan, the
// launch path the runtime's BoundPlan uses too: what is validated and timed
// here is what users run. Running only enqueues work.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/PlanRunner.h"

#include "kopt/Runtime/Cuda/CublasLt.h"
#include "kopt/Runtime/Cuda/FlushedTimer.h"
#include "kopt/Runtime/Cuda/PreparedPlan.h"
#include "kopt/Runtime/PlanVerifier.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <mutex>
#include <optional>
#include <set>

using namespace kopt::runtime;

static Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

PlanTiming kopt::runtime::summarizeTimings(const std::vector<double> &timesUs) {
  PlanTiming timing;
  if (timesUs.empty())
    return timing;
  std::vector<double> sorted(timesUs.begin(), timesUs.end());
  std::sort(sorted.begin(), sorted.end());
  auto quantile = [&](double q) {
    double position = q * double(sorted.size() - 1);
    size_t below = size_t(std::floor(position));
    size_t above = std::min(below + 1, sorted.size() - 1);
    double fraction = position - double(below);
    return sorted[below] + fraction * (sorted[above] - sorted[below]);
  };
  timing.medianUs = quantile(0.5);
  timing.minUs = sorted.front();
  timing.p10Us = quantile(0.1);
  timing.p90Us = quantile(0.9);
  timing.repetitions = unsigned(sorted.size());
  return timing;
}

struct PlanRunner::Impl {
  const CudaContext *context = nullptr;
  KernelTask task;
  PlanRunnerOptions options;
  std::map<std::string, TensorSpec> tensors;
  std::map<std::string, DeviceBuffer> buffers;
  /// Offset of each tensor inside its buffer (non-zero with redzones).
  std::map<std::string, size_t> offsets;
  /// Timing state of `timeRun`, made on first use.
  std::unique_ptr<FlushedTimer> timer;
  std::map<std::string, CompiledKernel> compiled;
  std::vector<CUmodule> modules;
  /// The steps, through the launch path the runtime uses too.
  std::unique_ptr<PreparedPlan> prepared;
  /// Stays empty: a plan without GEMM steps never allocates a workspace.
  DeviceBuffer unusedWorkspace;
  std::set<std::string> inputsSet;

  // The modules belong to the context (`CudaContext::loadModule`).

  const CudaDriver &driver() const { return context->getDriver(); }

  CUdeviceptr pointer(const std::string &name) const {
    auto it = buffers.find(name);
    if (it == buffers.end())
      return 0;
    auto offset = offsets.find(name);
    return it->second.get() +
           (offset == offsets.end() ? 0 : CUdeviceptr(offset->second));
  }

  /// Makes `timer` on first use.
  Status makeTimer();

  Status enqueue(bool synchronizeEachStep) {
    return prepared->enqueue(context->getStream(), synchronizeEachStep);
  }
  /// One untimed run, waited for.
  Status runOnce() {
    if (Status status = enqueue(/*synchronizeEachStep=*/false); !status.isOk())
      return status;
    const CudaDriver &api = driver();
    return api.check(api.cuStreamSynchronize(context->getStream()),
                     "cuStreamSynchronize");
  }
};

PlanRunner::PlanRunner(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
PlanRunner::~PlanRunner() = default;

/// Compiles through a process-wide cache keyed by everything that affects
/// NVRTC's output: the architecture, the options, the source's name and its
/// code. A source being compiled by another thread is waited for. Failures
/// are not cached (they are cheap to repeat and carry logs).
static Result<CompiledKernel> compileCached(const std::string &code,
                                            const std::string &name,
                                            const std::string &arch,
                                            const NvrtcOptions &options) {
  using Future = std::shared_future<Result<CompiledKernel>>;
  static std::mutex mutex;
  static std::map<std::string, Future> cache;
  std::string key =
      arch + '\0' + name + '\0' + (options.warningsAsErrors ? "W" : "w") + '\0';
  for (const std::string &option : options.extra)
    key += option + '\0';
  key += code;
  std::promise<Result<CompiledKernel>> promise;
  std::optional<Future> pending;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end())
      pending = it->second;
    else
      cache.emplace(key, promise.get_future().share());
  }
  if (pending)
    return pending->get();
  Result<CompiledKernel> compiled = compileCuda(code, name, arch, options);
  promise.set_value(compiled);
  if (!compiled) {
    std::lock_guard<std::mutex> lock(mutex);
    cache.erase(key);
  }
  return compiled;
}

Status PlanRunner::precompile(const std::string &arch, const KernelPlan &plan,
                              const PlanRunnerOptions &options) {
  auto planArch = getCompileArch(plan, arch);
  if (!planArch)
    return planArch.status();
  NvrtcOptions nvrtcOptions;
  nvrtcOptions.extra = plan.compileOptions;
  nvrtcOptions.warningsAsErrors = options.warningsAsErrors;
  for (const KernelSource &source : plan.sources) {
    auto compiled =
        compileCached(source.code, source.id + ".cu", *planArch, nvrtcOptions);
    if (!compiled)
      return compiled.status();
  }
  return Status::success();
}

Result<std::unique_ptr<PlanRunner>>
PlanRunner::create(const CudaContext &context, const KernelTask &task,
                   const KernelPlan &plan, const PlanRunnerOptions &options) {
  if (Status status = verifyPlan(plan, task); !status.isOk())
    return status;
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;
  auto impl = std::make_unique<Impl>();
  impl->context = &context;
  impl->task = task;
  impl->options = options;
  for (const std::vector<TensorSpec> *list :
       {&task.inputs, &task.outputs, &plan.temporaries})
    for (const TensorSpec &tensor : *list)
      impl->tensors.emplace(tensor.name, tensor);

  // Compile everything first: a source that does not compile fails the plan
  // before any device memory is touched.
  auto arch = getCompileArch(plan, context.getDeviceInfo().getArch());
  if (!arch)
    return arch.status();
  NvrtcOptions nvrtcOptions;
  nvrtcOptions.extra = plan.compileOptions;
  nvrtcOptions.warningsAsErrors = options.warningsAsErrors;
  for (const KernelSource &source : plan.sources) {
    auto compiled =
        compileCached(source.code, source.id + ".cu", *arch, nvrtcOptions);
    if (!compiled)
      return compiled.status();
    impl->compiled.emplace(source.id, std::move(*compiled));
  }

  const CudaDriver &api = context.getDriver();
  std::map<std::string, CUmodule> modules;
  for (const KernelSource &source : plan.sources) {
    const CompiledKernel &compiled = impl->compiled.at(source.id);
    auto module = context.loadModule(compiled.cubin);
    // The PTX is the fallback (with its NUL); report the cubin's failure if
    // it fails too.
    if (!module) {
      auto fromPtx = context.loadModule(
          std::string_view(compiled.ptx.c_str(), compiled.ptx.size() + 1));
      if (!fromPtx)
        return module.status().withContext("cubin of '" + source.id + "'");
      module = fromPtx;
    }
    impl->modules.push_back(*module);
    modules.emplace(source.id, *module);
  }

  // Allocate every tensor; all but the inputs start as 0xff bytes.
  for (const auto &[name, tensor] : impl->tensors) {
    std::optional<int64_t> bytes = tensor.getBytes();
    if (!bytes)
      return Status::error(StatusCode::OutOfRange,
                           "tensor '" + name + "' is too large");
    // With redzones: the guard rounded up to the alignment in front, the
    // guard itself behind.
    size_t offset = (options.redzoneBytes + 255) / 256 * 256;
    auto buffer = DeviceBuffer::allocate(
        context, int64_t(offset + size_t(*bytes) + options.redzoneBytes));
    if (!buffer)
      return buffer.status();
    impl->offsets.emplace(name, offset);
    // C++17 lambdas cannot capture a structured binding: name it.
    const std::string &tensorName = name;
    bool isInput = std::any_of(
        task.inputs.begin(), task.inputs.end(),
        [&](const TensorSpec &input) { return input.name == tensorName; });
    if (!isInput)
      if (Status status = api.check(
              api.cuMemsetD8(buffer->get() + offset, 0xff, size_t(*bytes)),
              "cuMemsetD8");
          !status.isOk())
        return status;
    impl->buffers.emplace(name, std::move(*buffer));
  }

  // GEMM steps use the context's one workspace: runners on a context run in
  // order on its stream, and a workspace each would cost 32 MiB per runner.
  DeviceBuffer *workspace = &impl->unusedWorkspace;
  if (std::any_of(plan.steps.begin(), plan.steps.end(), [](const PlanStep &s) {
        return s.kind == PlanStep::Kind::Gemm;
      })) {
    auto shared = getSharedGemmWorkspace(context);
    if (!shared)
      return shared.status();
    workspace = *shared;
  }
  auto prepared =
      PreparedPlan::create(context, task, plan, modules, *workspace);
  if (!prepared)
    return prepared.status();
  impl->prepared = std::move(*prepared);
  for (const auto &[name, tensor] : impl->tensors)
    impl->prepared->bind(name, impl->pointer(name));
  if (Status status = api.check(api.cuCtxSynchronize(), "cuCtxSynchronize");
      !status.isOk())
    return status;
  return std::unique_ptr<PlanRunner>(new PlanRunner(std::move(impl)));
}

Status PlanRunner::setInput(std::string_view name, const uint8_t *data,
                            size_t size) {
  const TensorSpec *input = nullptr;
  for (const TensorSpec &tensor : impl->task.inputs)
    if (tensor.name == name)
      input = &tensor;
  if (!input)
    return invalid("the task has no input '" + std::string(name) + "'");
  int64_t bytes = input->getBytes().value_or(-1);
  if (int64_t(size) != bytes)
    return invalid("input '" + std::string(name) + "' takes " +
                   std::to_string(bytes) + " bytes, got " +
                   std::to_string(size));
  if (Status status = impl->context->makeCurrent(); !status.isOk())
    return status;
  const CudaDriver &api = impl->driver();
  if (size)
    if (Status status =
            api.check(api.cuMemcpyHtoD(impl->pointer(input->name), data, size),
                      "cuMemcpyHtoD(" + input->name + ")");
        !status.isOk())
      return status;
  impl->inputsSet.insert(input->name);
  return Status::success();
}

Status PlanRunner::markInputWritten(std::string_view name) {
  for (const TensorSpec &tensor : impl->task.inputs)
    if (tensor.name == name) {
      impl->inputsSet.insert(tensor.name);
      return Status::success();
    }
  return invalid("the task has no input '" + std::string(name) + "'");
}

Status PlanRunner::setInputs(const std::vector<std::vector<uint8_t>> &inputs) {
  if (inputs.size() != impl->task.inputs.size())
    return invalid("the task takes " +
                   std::to_string(impl->task.inputs.size()) + " inputs, got " +
                   std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (Status status = setInput(impl->task.inputs[i].name, inputs[i]);
        !status.isOk())
      return status;
  return Status::success();
}

Status PlanRunner::run() {
  for (const TensorSpec &input : impl->task.inputs)
    if (!impl->inputsSet.count(input.name))
      return invalid("input '" + input.name + "' was never set");
  if (Status status = impl->context->makeCurrent(); !status.isOk())
    return status;
  if (Status status = impl->enqueue(impl->options.synchronizeEachStep);
      !status.isOk())
    return status;
  const CudaDriver &api = impl->driver();
  return api.check(api.cuStreamSynchronize(impl->context->getStream()),
                   "cuStreamSynchronize after the last step");
}

Result<PlanTiming> PlanRunner::timePlan(unsigned iterations, double warmupMs) {
  if (iterations < 1)
    return invalid("timing needs at least one iteration");
  // One checked run first: a failing plan fails here with its step named.
  if (Status status = run(); !status.isOk())
    return status;
  auto warmupRuns = warmUpFor(warmupMs, [&] { return impl->runOnce(); });
  if (!warmupRuns)
    return warmupRuns.status();
  std::vector<double> timesUs;
  for (unsigned i = 0; i < iterations; ++i) {
    auto time = timeRun();
    if (!time)
      return time.status();
    timesUs.push_back(*time);
  }
  PlanTiming summary = summarizeTimings(timesUs);
  summary.warmupRuns = *warmupRuns;
  return summary;
}

Result<unsigned> PlanRunner::warmUp(double warmupMs) {
  if (Status status = impl->context->makeCurrent(); !status.isOk())
    return status;
  return warmUpFor(warmupMs, [&] { return impl->runOnce(); });
}

Status PlanRunner::Impl::makeTimer() {
  if (timer)
    return Status::success();
  auto made = FlushedTimer::create(*context);
  if (!made)
    return made.status();
  timer = std::move(*made);
  return Status::success();
}

Result<double> PlanRunner::timeRun() {
  if (Status status = impl->makeTimer(); !status.isOk())
    return status;
  return impl->timer->time(
      [&] { return impl->enqueue(/*synchronizeEachStep=*/false); });
}

Status PlanRunner::flushL2() {
  if (Status status = impl->makeTimer(); !status.isOk())
    return status;
  if (Status status = impl->timer->flush(); !status.isOk())
    return status;
  const CudaDriver &api = impl->driver();
  return api.check(api.cuStreamSynchronize(impl->context->getStream()),
                   "cuStreamSynchronize");
}

std::optional<TensorAllocation>
PlanRunner::getAllocation(std::string_view name) const {
  auto it = impl->buffers.find(std::string(name));
  if (it == impl->buffers.end())
    return std::nullopt;
  TensorAllocation allocation;
  allocation.base = it->second.get();
  allocation.bufferOffset = impl->offsets.at(it->first);
  allocation.bufferBytes =
      size_t(impl->tensors.at(it->first).getBytes().value_or(0));
  allocation.totalBytes = size_t(it->second.getBytes());
  return allocation;
}

Result<std::vector<uint8_t>>
PlanRunner::readTensor(std::string_view name) const {
  auto it = impl->tensors.find(std::string(name));
  if (it == impl->tensors.end())
    return invalid("no tensor '" + std::string(name) + "'");
  if (Status status = impl->context->makeCurrent(); !status.isOk())
    return status;
  // Every tensor's size was checked when its buffer was allocated.
  std::vector<uint8_t> bytes(size_t(it->second.getBytes().value_or(0)));
  const CudaDriver &api = impl->driver();
  if (!bytes.empty())
    if (Status status =
            api.check(api.cuMemcpyDtoH(bytes.data(), impl->pointer(it->first),
                                       bytes.size()),
                      "cuMemcpyDtoH(" + it->first + ")");
        !status.isOk())
      return status;
  return bytes;
}

Result<std::vector<std::vector<uint8_t>>> PlanRunner::readOutputs() const {
  std::vector<std::vector<uint8_t>> outputs;
  for (const TensorSpec &output : impl->task.outputs) {
    auto bytes = readTensor(output.name);
    if (!bytes)
      return bytes.status();
    outputs.push_back(std::move(*bytes));
  }
  return outputs;
}

CUdeviceptr PlanRunner::getDevicePointer(std::string_view name) const {
  return impl->pointer(std::string(name));
}

const std::map<std::string, CompiledKernel> &
PlanRunner::getCompiledSources() const {
  return impl->compiled;
}

Result<std::vector<std::vector<uint8_t>>>
kopt::runtime::runPlan(const CudaContext &context, const KernelTask &task,
                       const KernelPlan &plan,
                       const std::vector<std::vector<uint8_t>> &inputs,
                       const PlanRunnerOptions &options) {
  auto runner = PlanRunner::create(context, task, plan, options);
  if (!runner)
    return runner.status();
  if (Status status = (*runner)->setInputs(inputs); !status.isOk())
    return status;
  if (Status status = (*runner)->run(); !status.isOk())
    return status;
  return (*runner)->readOutputs();
}
