//===- BoundPlan.cpp - A plan loaded for a device, on given buffers -------===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Loading is this file's own (shipped cubin, else PTX, else NVRTC); the
// steps are prepared, bound and launched by PreparedPlan, the same code the
// evaluator's PlanRunner validated and timed them with.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/BoundPlan.h"

#include "kopt/Runtime/Cuda/Nvrtc.h"
#include "kopt/Runtime/Cuda/PreparedPlan.h"
#include "kopt/Runtime/PlanVerifier.h"

#include <algorithm>
#include <cctype>

using namespace kopt::runtime;

static Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

/// The number and suffix of `sm_90a`: (90, "a"); (-1, "") when malformed.
static std::pair<int, std::string> splitArch(const std::string &arch) {
  if (arch.rfind("sm_", 0) != 0)
    return {-1, ""};
  size_t end = 3;
  while (end < arch.size() &&
         std::isdigit(static_cast<unsigned char>(arch[end])))
    ++end;
  if (end == 3)
    return {-1, ""};
  return {std::stoi(arch.substr(3, end - 3)), arch.substr(end)};
}

bool kopt::runtime::isPtxCompatible(const std::string &built,
                                    const std::string &device) {
  auto [builtNumber, builtSuffix] = splitArch(built);
  auto [deviceNumber, deviceSuffix] = splitArch(device);
  if (builtNumber < 0 || deviceNumber < 0)
    return false;
  if (!builtSuffix.empty())
    return built == device;
  return builtNumber <= deviceNumber;
}

struct BoundPlan::Impl {
  const CudaContext *context = nullptr;
  KernelTask task;
  std::map<std::string, DeviceBuffer> temporaries;
  DeviceBuffer ownWorkspace;
  /// The steps, through the launch path the evaluator validated them on.
  std::unique_ptr<PreparedPlan> prepared;
  std::vector<std::string> notes;
  bool bound = false;

  Result<CUmodule> loadSource(const KernelSource &source,
                              const std::string &arch,
                              const std::vector<std::string> &options,
                              const std::vector<SourceBinary> &binaries);
};

Result<CUmodule>
BoundPlan::Impl::loadSource(const KernelSource &source, const std::string &arch,
                            const std::vector<std::string> &options,
                            const std::vector<SourceBinary> &binaries) {
  std::string tried;
  auto note = [&](const std::string &text) {
    notes.push_back(source.id + ": " + text);
  };
  for (const SourceBinary &binary : binaries)
    if (binary.source == source.id && binary.arch == arch &&
        !binary.cubin.empty()) {
      auto module = context->loadModule(binary.cubin);
      if (module) {
        note("cubin for " + arch);
        return module;
      }
      tried += "; the cubin for " + arch + " did not load (" +
               module.status().message() + ")";
    }
  for (const SourceBinary &binary : binaries)
    if (binary.source == source.id && !binary.ptx.empty() &&
        isPtxCompatible(binary.arch, arch)) {
      // The driver wants PTX NUL-terminated.
      std::string ptx = binary.ptx + '\0';
      auto module = context->loadModule(ptx);
      if (module) {
        note("no cubin for " + arch + "; PTX for " + binary.arch +
             " JIT-compiled by the driver");
        return module;
      }
      tried += "; the PTX for " + binary.arch + " did not load (" +
               module.status().message() + ")";
    }
  NvrtcOptions nvrtcOptions;
  nvrtcOptions.extra = options;
  auto compiled =
      compileCuda(source.code, source.id + ".cu", arch, nvrtcOptions);
  if (!compiled)
    return compiled.status().withContext("source '" + source.id +
                                         "': no binary for " + arch + tried +
                                         "; compiling it with NVRTC failed");
  auto module = context->loadModule(compiled->cubin);
  if (!module)
    return module.status().withContext("source '" + source.id +
                                       "' compiled by NVRTC");
  note("no binary for " + arch + tried + "; compiled from source with NVRTC");
  return module;
}

BoundPlan::BoundPlan(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
BoundPlan::~BoundPlan() = default;

Result<std::unique_ptr<BoundPlan>> BoundPlan::create(
    const CudaContext &context, const KernelTask &task, const KernelPlan &plan,
    const std::vector<SourceBinary> &binaries, DeviceBuffer *workspace) {
  if (Status status = verifyPlan(plan, task); !status.isOk())
    return status;
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;
  auto impl = std::make_unique<Impl>();
  impl->context = &context;
  impl->task = task;

  // The device's architecture, or the plan's architecture-specific one.
  auto arch = getCompileArch(plan, context.getDeviceInfo().getArch());
  if (!arch)
    return arch.status();
  std::map<std::string, CUmodule> modules;
  for (const KernelSource &source : plan.sources) {
    auto module =
        impl->loadSource(source, *arch, plan.compileOptions, binaries);
    if (!module)
      return module.status();
    modules.emplace(source.id, *module);
  }
  for (const TensorSpec &tensor : plan.temporaries) {
    auto buffer =
        DeviceBuffer::allocate(context, tensor.getBytes().value_or(0));
    if (!buffer)
      return buffer.status().withContext("temporary '" + tensor.name + "'");
    impl->temporaries.emplace(tensor.name, std::move(*buffer));
  }

  auto prepared =
      PreparedPlan::create(context, task, plan, modules,
                           workspace ? *workspace : impl->ownWorkspace);
  if (!prepared)
    return prepared.status();
  impl->prepared = std::move(*prepared);
  // Temporaries are bound now, once.
  for (const auto &[name, buffer] : impl->temporaries)
    impl->prepared->bind(name, buffer.get());
  return std::unique_ptr<BoundPlan>(new BoundPlan(std::move(impl)));
}

Status BoundPlan::bind(const std::map<std::string, CUdeviceptr> &pointers) {
  for (const std::vector<TensorSpec> *list :
       {&impl->task.inputs, &impl->task.outputs}) {
    for (const TensorSpec &tensor : *list) {
      auto it = pointers.find(tensor.name);
      if (it == pointers.end() || !it->second)
        return invalid("no device pointer for tensor '" + tensor.name + "'");
    }
  }
  for (const auto &[name, pointer] : pointers)
    if (!impl->temporaries.count(name))
      impl->prepared->bind(name, pointer);
  impl->bound = true;
  return Status::success();
}

Status BoundPlan::enqueue(CUstream stream) const {
  if (!impl->bound)
    return invalid("the plan's tensors are not bound");
  return impl->prepared->enqueue(stream);
}

const std::vector<std::string> &BoundPlan::getLoadNotes() const {
  return impl->notes;
}

size_t BoundPlan::getNumSteps() const { return impl->prepared->getNumSteps(); }
