//===- PlanRunner.cpp - Running a KernelPlan on a GPU -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each step is turned into a prepared form when the runner is created: a
// launch into its CUfunction, grid, block and an argument array whose
// pointers stay fixed; a GEMM into a CublasLtGemm; a convolution into a
// CudnnConv. Running walks the prepared steps and only enqueues work.
//
//===----------------------------------------------------------------------===//

#include "kopt/Execution/PlanRunner.h"

#include "kopt/Execution/CublasLt.h"
#include "kopt/Execution/Cudnn.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mlir::kopt;

/// Dynamic shared memory a kernel gets without opting in.
static constexpr int64_t kDefaultSharedBytes = 48 * 1024;

PlanTiming mlir::kopt::summarizeTimings(llvm::ArrayRef<double> timesUs) {
  PlanTiming timing;
  if (timesUs.empty())
    return timing;
  std::vector<double> sorted(timesUs.begin(), timesUs.end());
  llvm::sort(sorted);
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

namespace {
/// A launch step with everything resolved.
struct PreparedLaunch {
  CUfunction function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned sharedBytes = 0;
  /// Eight bytes per argument (a device pointer or a scalar), and the
  /// pointers to them that cuLaunchKernel takes.
  std::vector<uint64_t> storage;
  std::vector<void *> arguments;
};

/// One step, prepared.
struct PreparedStep {
  PlanStep::Kind kind = PlanStep::Kind::Launch;
  std::string where;
  PreparedLaunch launch;
  std::unique_ptr<CublasLtGemm> gemm;
  GemmBuffers gemmBuffers;
  std::unique_ptr<CudnnConv> conv;
  ConvBuffers convBuffers;
};
} // namespace

struct PlanRunner::Impl {
  const CudaContext *context = nullptr;
  KernelTask task;
  PlanRunnerOptions options;
  std::map<std::string, TensorSpec> tensors;
  std::map<std::string, DeviceBuffer> buffers;
  std::map<std::string, CompiledKernel> compiled;
  std::vector<CUmodule> modules;
  std::vector<PreparedStep> steps;
  DeviceBuffer gemmWorkspace;
  llvm::StringSet<> inputsSet;

  ~Impl() {
    for (CUmodule module : modules)
      llvm::consumeError(context->getDriver().check(
          context->getDriver().cuModuleUnload(module), "cuModuleUnload"));
  }

  const CudaDriver &driver() const { return context->getDriver(); }

  CUdeviceptr pointer(const std::string &name) const {
    auto it = buffers.find(name);
    return it == buffers.end() ? 0 : it->second.get();
  }

  llvm::Error prepareLaunch(const LaunchStep &step,
                            const std::map<std::string, CUmodule> &byId,
                            PreparedLaunch &launch);
  llvm::Error enqueue(bool synchronizeEachStep);
};

/// True for a typed scalar literal argument (`i32:`, `i64:`, `f32:`,
/// `f64:`).
static bool isScalarArgument(llvm::StringRef arg) {
  return llvm::any_of(
      llvm::ArrayRef<llvm::StringRef>{"i32:", "i64:", "f32:", "f64:"},
      [&](llvm::StringRef prefix) { return arg.starts_with(prefix); });
}

/// Parses a `i32:N`, `i64:N`, `f32:X` or `f64:X` literal into 8 bytes of
/// argument storage (the kernel reads only the first 4 for 32-bit types).
static llvm::Expected<uint64_t> parseScalar(llvm::StringRef arg) {
  auto [type, text] = arg.split(':');
  uint64_t storage = 0;
  if (type == "i32" || type == "i64") {
    int64_t value = 0;
    if (text.getAsInteger(10, value) ||
        (type == "i32" && (value < INT32_MIN || value > INT32_MAX)))
      return llvm::createStringError("bad %s literal '%s'", type.str().c_str(),
                                     arg.str().c_str());
    if (type == "i32") {
      int32_t narrow = int32_t(value);
      std::memcpy(&storage, &narrow, sizeof(narrow));
    } else {
      std::memcpy(&storage, &value, sizeof(value));
    }
    return storage;
  }
  if (type == "f32" || type == "f64") {
    double value = 0;
    if (text.getAsDouble(value))
      return llvm::createStringError("bad %s literal '%s'", type.str().c_str(),
                                     arg.str().c_str());
    if (type == "f32") {
      float narrow = float(value);
      std::memcpy(&storage, &narrow, sizeof(narrow));
    } else {
      std::memcpy(&storage, &value, sizeof(value));
    }
    return storage;
  }
  return llvm::createStringError("unknown argument '%s'", arg.str().c_str());
}

llvm::Error
PlanRunner::Impl::prepareLaunch(const LaunchStep &step,
                                const std::map<std::string, CUmodule> &byId,
                                PreparedLaunch &launch) {
  const CudaDriver &api = driver();
  CUmodule module = byId.at(step.source);
  if (llvm::Error error = api.check(
          api.cuModuleGetFunction(&launch.function, module, step.entry.c_str()),
          "cuModuleGetFunction('" + step.entry + "' in source '" + step.source +
              "')"))
    return error;
  for (int axis = 0; axis < 3; ++axis) {
    auto grid = evaluatePlanExpression(step.grid[axis], tensors);
    if (!grid)
      return grid.takeError();
    auto block = evaluatePlanExpression(step.block[axis], tensors);
    if (!block)
      return block.takeError();
    launch.grid[axis] = unsigned(*grid);
    launch.block[axis] = unsigned(*block);
  }
  int64_t optin = context->getDeviceInfo().maxSharedPerBlockOptin;
  if (step.sharedBytes > optin)
    return llvm::createStringError(
        "%lld bytes of dynamic shared memory; the device allows %lld",
        (long long)step.sharedBytes, (long long)optin);
  launch.sharedBytes = unsigned(step.sharedBytes);
  if (step.sharedBytes > kDefaultSharedBytes)
    if (llvm::Error error =
            api.check(api.cuFuncSetAttribute(
                          launch.function,
                          CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                          int(step.sharedBytes)),
                      "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"))
      return error;
  for (const std::string &arg : step.args) {
    // The same rule as verifyPlan: a typed prefix makes a literal.
    if (!isScalarArgument(arg)) {
      launch.storage.push_back(uint64_t(pointer(arg)));
      continue;
    }
    auto scalar = parseScalar(arg);
    if (!scalar)
      return scalar.takeError();
    launch.storage.push_back(*scalar);
  }
  // Only now, with the storage complete, take the addresses.
  for (uint64_t &slot : launch.storage)
    launch.arguments.push_back(&slot);
  return llvm::Error::success();
}

PlanRunner::PlanRunner(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
PlanRunner::~PlanRunner() = default;

static std::string describeStep(const PlanStep &step, size_t index) {
  std::string where = "step " + std::to_string(index);
  const char *kind = step.kind == PlanStep::Kind::Launch ? "launch"
                     : step.kind == PlanStep::Kind::Gemm ? "gemm"
                                                         : "conv";
  where += std::string(" (") + kind;
  if (step.kind == PlanStep::Kind::Launch)
    where += " " + step.launch.entry;
  if (!step.comment.empty())
    where += ": " + step.comment;
  return where + ")";
}

llvm::Expected<std::unique_ptr<PlanRunner>>
PlanRunner::create(const CudaContext &context, const KernelTask &task,
                   const KernelPlan &plan, const PlanRunnerOptions &options) {
  if (llvm::Error error = verifyPlan(plan, task))
    return std::move(error);
  if (llvm::Error error = context.makeCurrent())
    return std::move(error);
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
  std::string arch = context.getDeviceInfo().getArch();
  NvrtcOptions nvrtcOptions;
  nvrtcOptions.extra = plan.compileOptions;
  nvrtcOptions.warningsAsErrors = options.warningsAsErrors;
  for (const KernelSource &source : plan.sources) {
    auto compiled =
        compileCuda(source.code, source.id + ".cu", arch, nvrtcOptions);
    if (!compiled)
      return compiled.takeError();
    impl->compiled.emplace(source.id, std::move(*compiled));
  }

  const CudaDriver &api = context.getDriver();
  std::map<std::string, CUmodule> modules;
  for (const KernelSource &source : plan.sources) {
    const CompiledKernel &compiled = impl->compiled.at(source.id);
    CUmodule module = nullptr;
    llvm::Error error =
        api.check(api.cuModuleLoadData(&module, compiled.cubin.data()),
                  "cuModuleLoadData(cubin of '" + source.id + "')");
    if (error) {
      // The PTX is the fallback; report the cubin's failure if it fails too.
      if (api.cuModuleLoadData(&module, compiled.ptx.c_str()) != CUDA_SUCCESS)
        return std::move(error);
      llvm::consumeError(std::move(error));
    }
    impl->modules.push_back(module);
    modules.emplace(source.id, module);
  }

  // Allocate every tensor; all but the inputs start as 0xff bytes.
  for (const auto &[name, tensor] : impl->tensors) {
    auto buffer = DeviceBuffer::allocate(context, tensor.getBytes());
    if (!buffer)
      return buffer.takeError();
    bool isInput = llvm::any_of(task.inputs, [&](const TensorSpec &input) {
      return input.name == name;
    });
    if (!isInput)
      if (llvm::Error error = api.check(
              api.cuMemsetD8(buffer->get(), 0xff, size_t(tensor.getBytes())),
              "cuMemsetD8"))
        return std::move(error);
    impl->buffers.emplace(name, std::move(*buffer));
  }

  for (auto [index, step] : llvm::enumerate(plan.steps)) {
    PreparedStep prepared;
    prepared.kind = step.kind;
    prepared.where = describeStep(step, index);
    auto fail = [&](llvm::Error error) -> llvm::Error {
      return llvm::createStringError("%s: %s", prepared.where.c_str(),
                                     llvm::toString(std::move(error)).c_str());
    };
    switch (step.kind) {
    case PlanStep::Kind::Launch:
      if (llvm::Error error =
              impl->prepareLaunch(step.launch, modules, prepared.launch))
        return fail(std::move(error));
      break;
    case PlanStep::Kind::Gemm: {
      const GemmStep &gemm = step.gemm;
      for (const std::string &name : {gemm.a, gemm.b, gemm.c, gemm.bias})
        if (!name.empty() &&
            impl->tensors.at(name).elementType != ElementType::F32)
          return fail(llvm::createStringError(
              "GEMM steps run in fp32 only; '%s' is not f32", name.c_str()));
      auto prepare = CublasLtGemm::create(context, gemm,
                                          impl->tensors.at(gemm.c).elementType);
      if (!prepare)
        return fail(prepare.takeError());
      prepared.gemm = std::move(*prepare);
      prepared.gemmBuffers = {impl->pointer(gemm.a), impl->pointer(gemm.b),
                              impl->pointer(gemm.c),
                              gemm.bias.empty() ? 0 : impl->pointer(gemm.bias)};
      if (!impl->gemmWorkspace.get()) {
        auto workspace =
            DeviceBuffer::allocate(context, CublasLtGemm::kWorkspaceBytes);
        if (!workspace)
          return fail(workspace.takeError());
        impl->gemmWorkspace = std::move(*workspace);
      }
      break;
    }
    case PlanStep::Kind::Conv: {
      const ConvStep &conv = step.conv;
      auto prepare = CudnnConv::create(
          context, conv, impl->tensors.at(conv.input),
          impl->tensors.at(conv.filter), impl->tensors.at(conv.output));
      if (!prepare)
        return fail(prepare.takeError());
      prepared.conv = std::move(*prepare);
      prepared.convBuffers = {impl->pointer(conv.input),
                              impl->pointer(conv.filter),
                              impl->pointer(conv.output)};
      break;
    }
    }
    impl->steps.push_back(std::move(prepared));
  }
  if (llvm::Error error = api.check(api.cuCtxSynchronize(), "cuCtxSynchronize"))
    return std::move(error);
  return std::unique_ptr<PlanRunner>(new PlanRunner(std::move(impl)));
}

llvm::Error PlanRunner::setInput(llvm::StringRef name,
                                 llvm::ArrayRef<uint8_t> bytes) {
  const TensorSpec *input = nullptr;
  for (const TensorSpec &tensor : impl->task.inputs)
    if (tensor.name == name)
      input = &tensor;
  if (!input)
    return llvm::createStringError("the task has no input '%s'",
                                   name.str().c_str());
  if (int64_t(bytes.size()) != input->getBytes())
    return llvm::createStringError("input '%s' takes %lld bytes, got %zu",
                                   name.str().c_str(),
                                   (long long)input->getBytes(), bytes.size());
  if (llvm::Error error = impl->context->makeCurrent())
    return error;
  const CudaDriver &api = impl->driver();
  if (!bytes.empty())
    if (llvm::Error error =
            api.check(api.cuMemcpyHtoD(impl->pointer(name.str()), bytes.data(),
                                       bytes.size()),
                      "cuMemcpyHtoD(" + name.str() + ")"))
      return error;
  impl->inputsSet.insert(name);
  return llvm::Error::success();
}

llvm::Error PlanRunner::setInputs(llvm::ArrayRef<std::vector<uint8_t>> inputs) {
  if (inputs.size() != impl->task.inputs.size())
    return llvm::createStringError("the task takes %zu inputs, got %zu",
                                   impl->task.inputs.size(), inputs.size());
  for (auto [tensor, bytes] : llvm::zip(impl->task.inputs, inputs))
    if (llvm::Error error = setInput(tensor.name, bytes))
      return error;
  return llvm::Error::success();
}

llvm::Error PlanRunner::Impl::enqueue(bool synchronizeEachStep) {
  const CudaDriver &api = driver();
  CUstream stream = context->getStream();
  for (PreparedStep &step : steps) {
    llvm::Error error = llvm::Error::success();
    switch (step.kind) {
    case PlanStep::Kind::Launch: {
      PreparedLaunch &launch = step.launch;
      error = api.check(
          api.cuLaunchKernel(launch.function, launch.grid[0], launch.grid[1],
                             launch.grid[2], launch.block[0], launch.block[1],
                             launch.block[2], launch.sharedBytes, stream,
                             launch.arguments.data(), nullptr),
          "cuLaunchKernel");
      break;
    }
    case PlanStep::Kind::Gemm:
      error = step.gemm->run(stream, step.gemmBuffers, gemmWorkspace.get());
      break;
    case PlanStep::Kind::Conv:
      error = step.conv->run(stream, step.convBuffers);
      break;
    }
    if (!error && synchronizeEachStep)
      error = api.check(api.cuStreamSynchronize(stream), "cuStreamSynchronize");
    if (error)
      return llvm::createStringError("%s: %s", step.where.c_str(),
                                     llvm::toString(std::move(error)).c_str());
  }
  return llvm::Error::success();
}

llvm::Error PlanRunner::run() {
  for (const TensorSpec &input : impl->task.inputs)
    if (!impl->inputsSet.contains(input.name))
      return llvm::createStringError("input '%s' was never set",
                                     input.name.c_str());
  if (llvm::Error error = impl->context->makeCurrent())
    return error;
  if (llvm::Error error = impl->enqueue(impl->options.synchronizeEachStep))
    return error;
  const CudaDriver &api = impl->driver();
  return api.check(api.cuStreamSynchronize(impl->context->getStream()),
                   "cuStreamSynchronize after the last step");
}

llvm::Expected<PlanTiming> PlanRunner::timePlan(unsigned iterations,
                                                double warmupMs) {
  if (iterations < 1)
    return llvm::createStringError("timing needs at least one iteration");
  // One checked run first: a failing plan fails here with its step named.
  if (llvm::Error error = run())
    return std::move(error);
  const CudaDriver &api = impl->driver();
  CUstream stream = impl->context->getStream();
  int64_t flushBytes =
      std::max<int64_t>(2 * impl->context->getDeviceInfo().l2Bytes, 1 << 20);
  auto flush = DeviceBuffer::allocate(*impl->context, flushBytes);
  if (!flush)
    return flush.takeError();

  PlanTiming timing;
  auto start = std::chrono::steady_clock::now();
  do {
    if (llvm::Error error = impl->enqueue(/*synchronizeEachStep=*/false))
      return std::move(error);
    if (llvm::Error error =
            api.check(api.cuStreamSynchronize(stream), "cuStreamSynchronize"))
      return std::move(error);
    ++timing.warmupRuns;
  } while (std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
               .count() < warmupMs);

  CUevent begin = nullptr, end = nullptr;
  if (llvm::Error error = api.check(api.cuEventCreate(&begin, CU_EVENT_DEFAULT),
                                    "cuEventCreate"))
    return std::move(error);
  llvm::scope_exit destroyBegin([&] { api.cuEventDestroy(begin); });
  if (llvm::Error error =
          api.check(api.cuEventCreate(&end, CU_EVENT_DEFAULT), "cuEventCreate"))
    return std::move(error);
  llvm::scope_exit destroyEnd([&] { api.cuEventDestroy(end); });

  std::vector<double> timesUs;
  for (unsigned i = 0; i < iterations; ++i) {
    // Evict the plan's data from L2, before the start event.
    if (llvm::Error error =
            api.check(api.cuMemsetD8Async(flush->get(), uint8_t(i),
                                          size_t(flushBytes), stream),
                      "cuMemsetD8Async(L2 flush)"))
      return std::move(error);
    if (llvm::Error error =
            api.check(api.cuEventRecord(begin, stream), "cuEventRecord"))
      return std::move(error);
    if (llvm::Error error = impl->enqueue(/*synchronizeEachStep=*/false))
      return std::move(error);
    if (llvm::Error error =
            api.check(api.cuEventRecord(end, stream), "cuEventRecord"))
      return std::move(error);
    if (llvm::Error error =
            api.check(api.cuEventSynchronize(end), "cuEventSynchronize"))
      return std::move(error);
    float ms = 0;
    if (llvm::Error error = api.check(api.cuEventElapsedTime(&ms, begin, end),
                                      "cuEventElapsedTime"))
      return std::move(error);
    timesUs.push_back(double(ms) * 1e3);
  }
  PlanTiming summary = summarizeTimings(timesUs);
  summary.warmupRuns = timing.warmupRuns;
  return summary;
}

llvm::Expected<std::vector<uint8_t>>
PlanRunner::readTensor(llvm::StringRef name) const {
  auto it = impl->tensors.find(name.str());
  if (it == impl->tensors.end())
    return llvm::createStringError("no tensor '%s'", name.str().c_str());
  if (llvm::Error error = impl->context->makeCurrent())
    return std::move(error);
  std::vector<uint8_t> bytes(size_t(it->second.getBytes()));
  const CudaDriver &api = impl->driver();
  if (!bytes.empty())
    if (llvm::Error error =
            api.check(api.cuMemcpyDtoH(bytes.data(), impl->pointer(it->first),
                                       bytes.size()),
                      "cuMemcpyDtoH(" + name.str() + ")"))
      return std::move(error);
  return bytes;
}

llvm::Expected<std::vector<std::vector<uint8_t>>>
PlanRunner::readOutputs() const {
  std::vector<std::vector<uint8_t>> outputs;
  for (const TensorSpec &output : impl->task.outputs) {
    auto bytes = readTensor(output.name);
    if (!bytes)
      return bytes.takeError();
    outputs.push_back(std::move(*bytes));
  }
  return outputs;
}

CUdeviceptr PlanRunner::getDevicePointer(llvm::StringRef name) const {
  return impl->pointer(name.str());
}

const std::map<std::string, CompiledKernel> &
PlanRunner::getCompiledSources() const {
  return impl->compiled;
}

llvm::Expected<std::vector<std::vector<uint8_t>>>
mlir::kopt::runPlan(const CudaContext &context, const KernelTask &task,
                    const KernelPlan &plan,
                    llvm::ArrayRef<std::vector<uint8_t>> inputs,
                    const PlanRunnerOptions &options) {
  auto runner = PlanRunner::create(context, task, plan, options);
  if (!runner)
    return runner.takeError();
  if (llvm::Error error = (*runner)->setInputs(inputs))
    return std::move(error);
  if (llvm::Error error = (*runner)->run())
    return std::move(error);
  return (*runner)->readOutputs();
}
