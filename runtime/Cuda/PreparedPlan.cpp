//===- PreparedPlan.cpp - A plan's steps, ready to launch -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/PreparedPlan.h"

#include "kopt/Runtime/Cuda/CublasLt.h"
#include "kopt/Runtime/Cuda/Cudnn.h"
#include "kopt/Runtime/Cuda/LaunchArguments.h"
#include "kopt/Runtime/PlanVerifier.h"

#include <vector>

using namespace kopt::runtime;

/// Dynamic shared memory a kernel gets without opting in.
static constexpr int64_t kDefaultSharedBytes = 48 * 1024;

namespace {
/// One step with everything resolved. Its argument storage never moves once
/// prepared: `arguments` and the pointer slots point into it.
struct Step {
  PlanStep::Kind kind = PlanStep::Kind::Launch;
  std::string where;
  CUfunction function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned sharedBytes = 0;
  /// Blocks per cluster along x; 1 launches without clusters.
  unsigned cluster = 1;
  /// A cooperative launch (every block resident at once).
  bool cooperative = false;
  /// Eight bytes per argument (a device pointer or a scalar), and the
  /// pointers to them that cuLaunchKernel takes.
  std::vector<uint64_t> storage;
  std::vector<void *> arguments;
  std::unique_ptr<CublasLtGemm> gemm;
  GemmBuffers gemmBuffers;
  std::unique_ptr<CudnnConv> conv;
  ConvBuffers convBuffers;
};

/// Where a tensor's address goes in a prepared step.
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

/// The launch configuration of `step` with its attributes: clusters of
/// `step.cluster` blocks along x, a cooperative launch, or both.
struct LaunchConfig {
  CUlaunchAttribute attributes[2] = {};
  CUlaunchConfig config = {};

  LaunchConfig(const Step &step, CUstream stream) {
    unsigned count = 0;
    if (step.cluster > 1) {
      CUlaunchAttribute &cluster = attributes[count++];
      cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      cluster.value.clusterDim.x = step.cluster;
      cluster.value.clusterDim.y = 1;
      cluster.value.clusterDim.z = 1;
    }
    if (step.cooperative) {
      CUlaunchAttribute &cooperative = attributes[count++];
      cooperative.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      cooperative.value.cooperative = 1;
    }
    config.gridDimX = step.grid[0];
    config.gridDimY = step.grid[1];
    config.gridDimZ = step.grid[2];
    config.blockDimX = step.block[0];
    config.blockDimY = step.block[1];
    config.blockDimZ = step.block[2];
    config.sharedMemBytes = step.sharedBytes;
    config.hStream = stream;
    config.attrs = attributes;
    config.numAttrs = count;
  }
  LaunchConfig(const LaunchConfig &) = delete;
  LaunchConfig &operator=(const LaunchConfig &) = delete;
};

/// Launches `step` in clusters, cooperatively, or both.
Status launchWithAttribute(const CudaDriver &api, const Step &step,
                           CUstream stream) {
  LaunchConfig launch(step, stream);
  return api.check(
      api.cuLaunchKernelEx(&launch.config, step.function,
                           const_cast<void **>(step.arguments.data()), nullptr),
      "cuLaunchKernelEx");
}

std::string describeStep(const PlanStep &step, size_t index) {
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

Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}
} // namespace

struct PreparedPlan::Impl {
  const CudaContext *context = nullptr;
  std::map<std::string, TensorSpec> tensors;
  DeviceBuffer *workspace = nullptr;
  /// Sized once, so the steps' storage never moves.
  std::vector<Step> steps;
  std::vector<PointerSlot> slots;

  Status prepareLaunch(const LaunchStep &launch,
                       const std::map<std::string, CUmodule> &modules,
                       Step &step);
  Status prepareGemm(const GemmStep &gemm, Step &step);
  Status prepareConv(const ConvStep &conv, Step &step);
};

Status PreparedPlan::Impl::prepareLaunch(
    const LaunchStep &launch, const std::map<std::string, CUmodule> &modules,
    Step &step) {
  const CudaDriver &api = context->getDriver();
  auto module = modules.find(launch.source);
  if (module == modules.end())
    return invalid("no module for source '" + launch.source + "'");
  if (Status status =
          api.check(api.cuModuleGetFunction(&step.function, module->second,
                                            launch.entry.c_str()),
                    "cuModuleGetFunction('" + launch.entry + "' in source '" +
                        launch.source + "')");
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
  step.cluster = unsigned(launch.cluster);
  step.cooperative = launch.cooperative;
  if (step.cluster > 1 && step.grid[0] % step.cluster != 0)
    return invalid("grid size " + std::to_string(step.grid[0]) +
                   " is not a multiple of the cluster of " +
                   std::to_string(step.cluster) + " blocks");
  // Clusters of more than 8 blocks (non-portable) need the kernel's opt-in.
  if (step.cluster > 8)
    if (Status status = api.check(
            api.cuFuncSetAttribute(
                step.function,
                CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
            "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)");
        !status.isOk())
      return status;
  // A cooperative grid holds at most the blocks the device runs at once;
  // with clusters, the clusters it places at once (after the opt-in above,
  // which the count depends on).
  if (step.cooperative) {
    int64_t resident = 0;
    if (step.cluster > 1) {
      int clusters = 0;
      // The count for clusters alone, the cooperative attribute aside.
      LaunchConfig probe(step, nullptr);
      probe.config.numAttrs = 1;
      if (Status status =
              api.check(api.cuOccupancyMaxActiveClusters(
                            &clusters, step.function, &probe.config),
                        "cuOccupancyMaxActiveClusters");
          !status.isOk())
        return status;
      resident = int64_t(clusters) * step.cluster;
    } else {
      int perSM = 0;
      if (Status status =
              api.check(api.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                            &perSM, step.function,
                            int(step.block[0] * step.block[1] * step.block[2]),
                            size_t(step.sharedBytes)),
                        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
          !status.isOk())
        return status;
      resident = int64_t(perSM) * std::max(1, context->getDeviceInfo().smCount);
    }
    if (resident < 1)
      return Status::error(
          StatusCode::Unsupported,
          "a cooperative launch: not one " +
              std::string(step.cluster > 1 ? "cluster" : "block") + " of " +
              std::to_string(step.block[0]) + " threads fits the device");
    step.grid[0] = unsigned(std::min<int64_t>(step.grid[0], resident));
  }
  // The same rule as verifyPlan: a typed prefix makes a literal; anything
  // else is a tensor, bound later.
  for (const std::string &arg : launch.args) {
    if (!isScalarLiteral(arg)) {
      step.storage.push_back(0);
      continue;
    }
    auto scalar = encodeScalarArgument(arg);
    if (!scalar)
      return scalar.status();
    step.storage.push_back(*scalar);
  }
  // Only now, with the storage complete, take the addresses.
  for (size_t i = 0; i < launch.args.size(); ++i) {
    step.arguments.push_back(&step.storage[i]);
    if (!isScalarLiteral(launch.args[i]))
      slots.push_back({launch.args[i], &step.storage[i], nullptr});
  }
  return Status::success();
}

Status PreparedPlan::Impl::prepareGemm(const GemmStep &gemm, Step &step) {
  for (const std::string &name : {gemm.a, gemm.b, gemm.c, gemm.bias})
    if (!name.empty() && tensors.at(name).elementType != ElementType::F32)
      return invalid("GEMM steps run in fp32 only; '" + name + "' is not f32");
  auto prepared =
      CublasLtGemm::create(*context, gemm, tensors.at(gemm.c).elementType);
  if (!prepared)
    return prepared.status();
  step.gemm = std::move(*prepared);
  if (!workspace->get()) {
    auto buffer =
        DeviceBuffer::allocate(*context, CublasLtGemm::kWorkspaceBytes);
    if (!buffer)
      return buffer.status();
    *workspace = std::move(*buffer);
  }
  slots.push_back({gemm.a, nullptr, &step.gemmBuffers.a});
  slots.push_back({gemm.b, nullptr, &step.gemmBuffers.b});
  slots.push_back({gemm.c, nullptr, &step.gemmBuffers.c});
  if (!gemm.bias.empty())
    slots.push_back({gemm.bias, nullptr, &step.gemmBuffers.bias});
  return Status::success();
}

Status PreparedPlan::Impl::prepareConv(const ConvStep &conv, Step &step) {
  auto prepared =
      CudnnConv::create(*context, conv, tensors.at(conv.input),
                        tensors.at(conv.filter), tensors.at(conv.output));
  if (!prepared)
    return prepared.status();
  step.conv = std::move(*prepared);
  slots.push_back({conv.input, nullptr, &step.convBuffers.input});
  slots.push_back({conv.filter, nullptr, &step.convBuffers.filter});
  slots.push_back({conv.output, nullptr, &step.convBuffers.output});
  return Status::success();
}

PreparedPlan::PreparedPlan(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
PreparedPlan::~PreparedPlan() = default;

Result<std::unique_ptr<PreparedPlan>> PreparedPlan::create(
    const CudaContext &context, const KernelTask &task, const KernelPlan &plan,
    const std::map<std::string, CUmodule> &modules, DeviceBuffer &workspace) {
  auto impl = std::make_unique<Impl>();
  impl->context = &context;
  impl->workspace = &workspace;
  for (const std::vector<TensorSpec> *list :
       {&task.inputs, &task.outputs, &plan.temporaries})
    for (const TensorSpec &tensor : *list)
      impl->tensors.emplace(tensor.name, tensor);

  impl->steps.resize(plan.steps.size());
  for (size_t index = 0; index < plan.steps.size(); ++index) {
    const PlanStep &planStep = plan.steps[index];
    Step &step = impl->steps[index];
    step.kind = planStep.kind;
    step.where = describeStep(planStep, index);
    Status status;
    switch (planStep.kind) {
    case PlanStep::Kind::Launch:
      status = impl->prepareLaunch(planStep.launch, modules, step);
      break;
    case PlanStep::Kind::Gemm:
      status = impl->prepareGemm(planStep.gemm, step);
      break;
    case PlanStep::Kind::Conv:
      status = impl->prepareConv(planStep.conv, step);
      break;
    }
    if (!status.isOk())
      return status.withContext(step.where);
  }
  return std::unique_ptr<PreparedPlan>(new PreparedPlan(std::move(impl)));
}

void PreparedPlan::bind(const std::string &name, CUdeviceptr pointer) {
  for (const PointerSlot &slot : impl->slots)
    if (slot.tensor == name)
      slot.set(pointer);
}

Status PreparedPlan::enqueue(CUstream stream, bool synchronizeEachStep) const {
  const CudaDriver &api = impl->context->getDriver();
  for (const Step &step : impl->steps) {
    Status status;
    switch (step.kind) {
    case PlanStep::Kind::Launch:
      if (step.cluster > 1 || step.cooperative) {
        status = launchWithAttribute(api, step, stream);
        break;
      }
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
    if (status.isOk() && synchronizeEachStep)
      status =
          api.check(api.cuStreamSynchronize(stream), "cuStreamSynchronize");
    if (!status.isOk())
      return status.withContext(step.where);
  }
  return Status::success();
}

size_t PreparedPlan::getNumSteps() const { return impl->steps.size(); }
