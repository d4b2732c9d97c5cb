//===- BoundPlan.cpp - A plan loaded for a device, on given buffers -------===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each launch step keeps an argument array whose pointer slots are refilled
// by `bind`; GEMM and convolution steps keep their buffer structs the same
// way. `enqueue` walks the steps and only launches.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/BoundPlan.h"

#include "kopt/Runtime/Cuda/CublasLt.h"
#include "kopt/Runtime/Cuda/Cudnn.h"
#include "kopt/Runtime/Cuda/LaunchArguments.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"
#include "kopt/Runtime/PlanVerifier.h"

#include <algorithm>
#include <cctype>

using namespace kopt::runtime;

/// Dynamic shared memory a kernel gets without opting in.
static constexpr int64_t kDefaultSharedBytes = 48 * 1024;

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

namespace {
/// Where a tensor pointer goes in a prepared step.
struct PointerSlot {
  std::string tensor;
  /// A launch argument's storage word, or a library step's pointer.
  uint64_t *word = nullptr;
  CUdeviceptr *pointer = nullptr;

  void set(CUdeviceptr value) const {
    if (word)
      *word = uint64_t(value);
    else
      *pointer = value;
  }
};

/// One prepared step.
struct Step {
  PlanStep::Kind kind = PlanStep::Kind::Launch;
  std::string where;
  CUfunction function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned sharedBytes = 0;
  std::vector<uint64_t> storage;
  std::vector<void *> arguments;
  std::unique_ptr<CublasLtGemm> gemm;
  GemmBuffers gemmBuffers;
  std::unique_ptr<CudnnConv> conv;
  ConvBuffers convBuffers;
};
} // namespace

struct BoundPlan::Impl {
  const CudaContext *context = nullptr;
  KernelTask task;
  std::map<std::string, TensorSpec> tensors;
  std::map<std::string, DeviceBuffer> temporaries;
  DeviceBuffer ownWorkspace;
  DeviceBuffer *workspace = nullptr;
  std::vector<Step> steps;
  /// Pointer slots of the steps, filled by `bind` (temporaries at once).
  std::vector<PointerSlot> slots;
  std::vector<std::string> notes;
  CodeOrigin origin = CodeOrigin::Cubin;
  bool bound = false;

  Result<CUmodule> loadSource(const KernelSource &source,
                              const std::vector<std::string> &options,
                              const std::vector<SourceBinary> &binaries);
  Status prepareLaunch(const PlanStep &planStep, CUmodule module, Step &step);
};

Result<CUmodule>
BoundPlan::Impl::loadSource(const KernelSource &source,
                            const std::vector<std::string> &options,
                            const std::vector<SourceBinary> &binaries) {
  std::string arch = context->getDeviceInfo().getArch();
  std::string tried;
  auto note = [&](CodeOrigin how, const std::string &text) {
    notes.push_back(source.id + ": " + text);
    origin = std::max(origin, how);
  };
  for (const SourceBinary &binary : binaries)
    if (binary.source == source.id && binary.arch == arch &&
        !binary.cubin.empty()) {
      auto module = context->loadModule(binary.cubin);
      if (module) {
        note(CodeOrigin::Cubin, "cubin for " + arch);
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
        note(CodeOrigin::Ptx, "no cubin for " + arch + "; PTX for " +
                                  binary.arch + " JIT-compiled by the driver");
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
  note(CodeOrigin::Nvrtc,
       "no binary for " + arch + tried + "; compiled from source with NVRTC");
  return module;
}

Status BoundPlan::Impl::prepareLaunch(const PlanStep &planStep, CUmodule module,
                                      Step &step) {
  const LaunchStep &launch = planStep.launch;
  const CudaDriver &api = context->getDriver();
  if (Status status = api.check(
          api.cuModuleGetFunction(&step.function, module, launch.entry.c_str()),
          "cuModuleGetFunction('" + launch.entry + "')");
      !status.isOk())
    return status;
  for (int axis = 0; axis < 3; ++axis) {
    auto grid = evaluatePlanExpression(launch.grid[axis], tensors);
    if (!grid)
      return grid.status();
    auto block = evaluatePlanExpression(launch.block[axis], tensors);
    if (!block)
      return block.status();
    step.grid[axis] = unsigned(*grid);
    step.block[axis] = unsigned(*block);
  }
  int64_t optin = context->getDeviceInfo().maxSharedPerBlockOptin;
  if (launch.sharedBytes > optin)
    return Status::error(StatusCode::Unsupported,
                         std::to_string(launch.sharedBytes) +
                             " bytes of dynamic shared memory; the device "
                             "allows " +
                             std::to_string(optin));
  step.sharedBytes = unsigned(launch.sharedBytes);
  if (launch.sharedBytes > kDefaultSharedBytes)
    if (Status status = api.check(
            api.cuFuncSetAttribute(
                step.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                int(launch.sharedBytes)),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
        !status.isOk())
      return status;
  for (const std::string &arg : launch.args) {
    if (isScalarLiteral(arg)) {
      auto scalar = encodeScalarArgument(arg);
      if (!scalar)
        return scalar.status();
      step.storage.push_back(*scalar);
    } else {
      step.storage.push_back(0);
    }
  }
  // The storage is complete: its addresses stay fixed from here on.
  for (size_t i = 0; i < launch.args.size(); ++i) {
    step.arguments.push_back(&step.storage[i]);
    if (!isScalarLiteral(launch.args[i]))
      slots.push_back({launch.args[i], &step.storage[i], nullptr});
  }
  return Status::success();
}

BoundPlan::BoundPlan(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
BoundPlan::~BoundPlan() = default;

static std::string describeStep(const PlanStep &step, size_t index) {
  std::string where = "step " + std::to_string(index);
  if (step.kind == PlanStep::Kind::Launch)
    where += " (launch " + step.launch.entry + ")";
  else
    where += step.kind == PlanStep::Kind::Gemm ? " (gemm)" : " (conv)";
  return where;
}

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
  impl->workspace = workspace ? workspace : &impl->ownWorkspace;
  for (const std::vector<TensorSpec> *list :
       {&task.inputs, &task.outputs, &plan.temporaries})
    for (const TensorSpec &tensor : *list)
      impl->tensors.emplace(tensor.name, tensor);

  std::map<std::string, CUmodule> modules;
  for (const KernelSource &source : plan.sources) {
    auto module = impl->loadSource(source, plan.compileOptions, binaries);
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

  impl->steps.resize(plan.steps.size());
  for (size_t index = 0; index < plan.steps.size(); ++index) {
    const PlanStep &planStep = plan.steps[index];
    Step &step = impl->steps[index];
    step.kind = planStep.kind;
    step.where = describeStep(planStep, index);
    Status status;
    if (planStep.kind == PlanStep::Kind::Launch) {
      status = impl->prepareLaunch(planStep, modules.at(planStep.launch.source),
                                   step);
    } else if (planStep.kind == PlanStep::Kind::Gemm) {
      const GemmStep &gemm = planStep.gemm;
      for (const std::string &name : {gemm.a, gemm.b, gemm.c, gemm.bias})
        if (!name.empty() &&
            impl->tensors.at(name).elementType != ElementType::F32)
          status =
              invalid("GEMM steps run in fp32 only; '" + name + "' is not f32");
      if (status.isOk()) {
        auto prepared = CublasLtGemm::create(
            context, gemm, impl->tensors.at(gemm.c).elementType);
        if (prepared)
          step.gemm = std::move(*prepared);
        else
          status = prepared.status();
      }
      if (status.isOk() && !impl->workspace->get()) {
        auto buffer =
            DeviceBuffer::allocate(context, CublasLtGemm::kWorkspaceBytes);
        if (buffer)
          *impl->workspace = std::move(*buffer);
        else
          status = buffer.status();
      }
      impl->slots.push_back({gemm.a, nullptr, &step.gemmBuffers.a});
      impl->slots.push_back({gemm.b, nullptr, &step.gemmBuffers.b});
      impl->slots.push_back({gemm.c, nullptr, &step.gemmBuffers.c});
      if (!gemm.bias.empty())
        impl->slots.push_back({gemm.bias, nullptr, &step.gemmBuffers.bias});
    } else {
      const ConvStep &conv = planStep.conv;
      auto prepared = CudnnConv::create(
          context, conv, impl->tensors.at(conv.input),
          impl->tensors.at(conv.filter), impl->tensors.at(conv.output));
      if (prepared)
        step.conv = std::move(*prepared);
      else
        status = prepared.status();
      impl->slots.push_back({conv.input, nullptr, &step.convBuffers.input});
      impl->slots.push_back({conv.filter, nullptr, &step.convBuffers.filter});
      impl->slots.push_back({conv.output, nullptr, &step.convBuffers.output});
    }
    if (!status.isOk())
      return status.withContext(step.where);
  }
  // Temporaries are bound now, once.
  for (PointerSlot &slot : impl->slots) {
    auto it = impl->temporaries.find(slot.tensor);
    if (it != impl->temporaries.end())
      slot.set(it->second.get());
  }
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
  for (PointerSlot &slot : impl->slots) {
    auto it = pointers.find(slot.tensor);
    if (it != pointers.end())
      slot.set(it->second);
  }
  impl->bound = true;
  return Status::success();
}

Status BoundPlan::enqueue(CUstream stream) const {
  if (!impl->bound)
    return invalid("the plan's tensors are not bound");
  const CudaDriver &api = impl->context->getDriver();
  for (const Step &step : impl->steps) {
    Status status;
    switch (step.kind) {
    case PlanStep::Kind::Launch:
      status = api.check(
          api.cuLaunchKernel(
              step.function, step.grid[0], step.grid[1], step.grid[2],
              step.block[0], step.block[1], step.block[2], step.sharedBytes,
              stream, const_cast<void **>(step.arguments.data()), nullptr),
          "cuLaunchKernel");
      break;
    case PlanStep::Kind::Gemm:
      status = step.gemm->run(stream, step.gemmBuffers, impl->workspace->get());
      break;
    case PlanStep::Kind::Conv:
      status = step.conv->run(stream, step.convBuffers);
      break;
    }
    if (!status.isOk())
      return status.withContext(step.where);
  }
  return Status::success();
}

const std::vector<std::string> &BoundPlan::getLoadNotes() const {
  return impl->notes;
}

CodeOrigin BoundPlan::getOrigin() const { return impl->origin; }

size_t BoundPlan::getNumSteps() const { return impl->steps.size(); }
