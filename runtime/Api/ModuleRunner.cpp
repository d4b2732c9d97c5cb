//===- ModuleRunner.cpp - Running a runtime module on a GPU -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/ModuleRunner.h"

#include "kopt/Runtime/Cuda/BoundPlan.h"

#include <map>
#include <set>

using namespace kopt::runtime;

static Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

std::vector<SourceBinary>
kopt::runtime::getRecordBinaries(const KernelRecord &record,
                                 const KernelPlan &plan) {
  std::vector<SourceBinary> binaries;
  if (plan.sources.size() != 1 || (!record.cubin && !record.ptx))
    return binaries;
  SourceBinary binary;
  binary.source = plan.sources.front().id;
  binary.arch = record.fingerprint.computeCapability;
  binary.cubin = record.cubin.value_or("");
  binary.ptx = record.ptx.value_or("");
  binaries.push_back(std::move(binary));
  return binaries;
}

Result<std::pair<KernelPlan, std::vector<SourceBinary>>>
kopt::runtime::resolvePlanReference(KernelDatabase &database,
                                    const ModulePlan &plan) {
  std::string where =
      "plan of @" + plan.function + " (key " + plan.key.substr(0, 12) + ")";
  auto record = database.lookup(plan.key, *plan.reference);
  if (!record)
    return record.status().withContext(where);
  if (!*record)
    return Status::error(StatusCode::Unavailable,
                         where +
                             ": the kernel database has no record for it "
                             "on fingerprint " +
                             plan.reference->hash());
  auto parsed = kernelPlanFromJson((*record)->plan);
  if (!parsed)
    return parsed.status().withContext(where + ": the stored plan");
  std::string hash = hashBytes(json::write(toJson(*parsed)));
  if (!plan.planHash.empty() && hash != plan.planHash)
    return Status::error(StatusCode::Unavailable,
                         where + ": the database's plan (hash " + hash +
                             ") is not the one the module was built with "
                             "(hash " +
                             plan.planHash + "); emit the module again");
  std::vector<SourceBinary> binaries = getRecordBinaries(**record, *parsed);
  return std::make_pair(std::move(*parsed), std::move(binaries));
}

namespace {
/// One step, instantiated.
struct RunStep {
  ModuleStep::Kind kind = ModuleStep::Kind::Plan;
  std::unique_ptr<BoundPlan> plan;
  /// Copy steps: sizes; pointers are looked up when binding.
  size_t bytes = 0;
  CUdeviceptr from = 0, to = 0;
};
} // namespace

struct ModuleRunner::Impl {
  const CudaContext *context = nullptr;
  RuntimeModule module;
  std::map<std::string, DeviceBuffer> buffers;
  /// Caller-bound pointers of inputs and outputs.
  std::map<std::string, CUdeviceptr> external;
  DeviceBuffer workspace;
  std::vector<RunStep> steps;
  std::vector<std::string> notes;
  bool useGraph = false;
  CUgraph graph = nullptr;
  CUgraphExec graphExec = nullptr;

  ~Impl() { dropGraph(); }

  const CudaDriver &api() const { return context->getDriver(); }

  void dropGraph() {
    if (graphExec)
      api()
          .check(api().cuGraphExecDestroy(graphExec), "cuGraphExecDestroy")
          .ignore();
    if (graph)
      api().check(api().cuGraphDestroy(graph), "cuGraphDestroy").ignore();
    graphExec = nullptr;
    graph = nullptr;
  }

  CUdeviceptr pointer(const std::string &name) const {
    const ModuleBuffer *buffer = module.findBuffer(name);
    if (!buffer)
      return 0;
    const std::string &owner =
        buffer->kind == ModuleBuffer::Kind::Alias ? buffer->aliasOf : name;
    auto bound = external.find(owner);
    if (bound != external.end())
      return bound->second;
    auto it = buffers.find(owner);
    return it == buffers.end() ? 0 : it->second.get();
  }

  Status bindSteps();
  Status enqueueSteps(CUstream stream) const;
  Status capture(CUstream stream);
};

Status ModuleRunner::Impl::bindSteps() {
  for (size_t i = 0; i < steps.size(); ++i) {
    const ModuleStep &step = module.steps[i];
    RunStep &run = steps[i];
    if (step.kind == ModuleStep::Kind::Copy) {
      run.from = pointer(step.from);
      run.to = pointer(step.to);
      continue;
    }
    const ModulePlan &plan = module.plans[step.plan];
    std::map<std::string, CUdeviceptr> pointers;
    for (size_t k = 0; k < plan.inputs.size(); ++k)
      pointers[plan.inputs[k].name] = pointer(step.inputs[k]);
    for (size_t k = 0; k < plan.outputs.size(); ++k)
      pointers[plan.outputs[k].name] = pointer(step.outputs[k]);
    if (Status status = run.plan->bind(pointers); !status.isOk())
      return status.withContext("step " + std::to_string(i));
  }
  return Status::success();
}

Status ModuleRunner::Impl::enqueueSteps(CUstream stream) const {
  const CudaDriver &driver = api();
  for (size_t i = 0; i < steps.size(); ++i) {
    const RunStep &run = steps[i];
    Status status = run.kind == ModuleStep::Kind::Copy
                        ? driver.check(driver.cuMemcpyDtoDAsync(
                                           run.to, run.from, run.bytes, stream),
                                       "cuMemcpyDtoDAsync")
                        : run.plan->enqueue(stream);
    if (!status.isOk())
      return status.withContext(
          "step " + std::to_string(i) + " (@" +
          (run.plan ? module.plans[module.steps[i].plan].function
                    : std::string("copy")) +
          ")");
  }
  return Status::success();
}

Status ModuleRunner::Impl::capture(CUstream stream) {
  const CudaDriver &driver = api();
  dropGraph();
  if (Status status =
          driver.check(driver.cuStreamBeginCapture(
                           stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                       "cuStreamBeginCapture");
      !status.isOk())
    return status;
  Status enqueued = enqueueSteps(stream);
  Status ended = driver.check(driver.cuStreamEndCapture(stream, &graph),
                              "cuStreamEndCapture");
  if (!enqueued.isOk() || !ended.isOk()) {
    dropGraph();
    return (enqueued.isOk() ? ended : enqueued)
        .withContext("capturing the module as a CUDA graph");
  }
  if (Status status =
          driver.check(driver.cuGraphInstantiate(&graphExec, graph, 0),
                       "cuGraphInstantiate");
      !status.isOk()) {
    dropGraph();
    return status;
  }
  return Status::success();
}

ModuleRunner::ModuleRunner(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
ModuleRunner::~ModuleRunner() = default;

Result<std::unique_ptr<ModuleRunner>>
ModuleRunner::create(const CudaContext &context, RuntimeModule module,
                     const ModuleRunnerOptions &options) {
  if (Status status = module.verify(); !status.isOk())
    return status;
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;
  auto impl = std::make_unique<Impl>();
  impl->context = &context;
  impl->module = std::move(module);
  const RuntimeModule &mod = impl->module;
  const CudaDriver &api = context.getDriver();

  for (const ModuleBuffer &buffer : mod.buffers) {
    if (buffer.kind == ModuleBuffer::Kind::Alias)
      continue;
    auto allocated =
        DeviceBuffer::allocate(context, buffer.tensor.getBytes().value_or(0));
    if (!allocated)
      return allocated.status().withContext("buffer '" + buffer.tensor.name +
                                            "'");
    if (buffer.kind == ModuleBuffer::Kind::Constant && !buffer.data.empty())
      if (Status status =
              api.check(api.cuMemcpyHtoD(allocated->get(), buffer.data.data(),
                                         buffer.data.size()),
                        "cuMemcpyHtoD(constant '" + buffer.tensor.name + "')");
          !status.isOk())
        return status;
    impl->buffers.emplace(buffer.tensor.name, std::move(*allocated));
  }

  // Resolve each plan once; instantiate it per step.
  std::vector<std::optional<std::pair<KernelPlan, std::vector<SourceBinary>>>>
      resolved(mod.plans.size());
  std::set<size_t> noted;
  for (size_t i = 0; i < mod.steps.size(); ++i) {
    const ModuleStep &step = mod.steps[i];
    RunStep run;
    run.kind = step.kind;
    if (step.kind == ModuleStep::Kind::Copy) {
      run.bytes =
          size_t(mod.findBuffer(step.from)->tensor.getBytes().value_or(0));
      impl->steps.push_back(std::move(run));
      continue;
    }
    const ModulePlan &plan = mod.plans[step.plan];
    if (!resolved[step.plan]) {
      if (plan.plan) {
        resolved[step.plan].emplace(*plan.plan, plan.binaries);
      } else if (!options.database) {
        return Status::error(
            StatusCode::InvalidArgument,
            "plan of @" + plan.function +
                " is a reference to a kernel database record; open the "
                "database it was built with");
      } else {
        auto found = resolvePlanReference(*options.database, plan);
        if (!found)
          return found.status();
        resolved[step.plan] = std::move(*found);
      }
    }
    auto bound =
        BoundPlan::create(context, plan.getTask(), resolved[step.plan]->first,
                          resolved[step.plan]->second, &impl->workspace);
    if (!bound)
      return bound.status().withContext("step " + std::to_string(i) + " (@" +
                                        plan.function + ")");
    if (noted.insert(step.plan).second)
      for (const std::string &note : (*bound)->getLoadNotes())
        impl->notes.push_back("@" + plan.function + ": " + note);
    run.plan = std::move(*bound);
    impl->steps.push_back(std::move(run));
  }
  if (Status status = impl->bindSteps(); !status.isOk())
    return status;
  return std::unique_ptr<ModuleRunner>(new ModuleRunner(std::move(impl)));
}

const RuntimeModule &ModuleRunner::getModule() const { return impl->module; }
const CudaContext &ModuleRunner::getContext() const { return *impl->context; }
const std::vector<std::string> &ModuleRunner::getLoadNotes() const {
  return impl->notes;
}

size_t ModuleRunner::getNumLaunches() const {
  size_t count = 0;
  for (const RunStep &step : impl->steps)
    count += step.plan ? step.plan->getNumSteps() : 1;
  return count;
}

Status ModuleRunner::setInput(std::string_view name, const void *data,
                              size_t size) {
  const ModuleBuffer *buffer = impl->module.findBuffer(name);
  if (!buffer || buffer->kind != ModuleBuffer::Kind::Input)
    return invalid("the module has no input '" + std::string(name) + "'");
  int64_t bytes = buffer->tensor.getBytes().value_or(-1);
  if (int64_t(size) != bytes)
    return invalid("input '" + std::string(name) + "' takes " +
                   std::to_string(bytes) + " bytes, got " +
                   std::to_string(size));
  if (Status status = impl->context->makeCurrent(); !status.isOk())
    return status;
  const CudaDriver &api = impl->api();
  if (!size)
    return Status::success();
  return api.check(
      api.cuMemcpyHtoD(impl->pointer(std::string(name)), data, size),
      "cuMemcpyHtoD(input '" + std::string(name) + "')");
}

Result<std::string> ModuleRunner::readBuffer(std::string_view name) const {
  const ModuleBuffer *buffer = impl->module.findBuffer(name);
  if (!buffer)
    return invalid("the module has no buffer '" + std::string(name) + "'");
  if (Status status = impl->context->makeCurrent(); !status.isOk())
    return status;
  const CudaDriver &api = impl->api();
  if (Status status = api.check(api.cuCtxSynchronize(), "cuCtxSynchronize");
      !status.isOk())
    return status;
  std::string bytes(size_t(buffer->tensor.getBytes().value_or(0)), '\0');
  if (!bytes.empty())
    if (Status status = api.check(
            api.cuMemcpyDtoH(bytes.data(), impl->pointer(std::string(name)),
                             bytes.size()),
            "cuMemcpyDtoH('" + std::string(name) + "')");
        !status.isOk())
      return status;
  return bytes;
}

Status ModuleRunner::bindBuffer(std::string_view name, CUdeviceptr pointer) {
  const ModuleBuffer *buffer = impl->module.findBuffer(name);
  if (!buffer || (buffer->kind != ModuleBuffer::Kind::Input &&
                  buffer->kind != ModuleBuffer::Kind::Output))
    return invalid("the module has no input or output '" + std::string(name) +
                   "'");
  if (pointer)
    impl->external[std::string(name)] = pointer;
  else
    impl->external.erase(std::string(name));
  impl->dropGraph();
  return impl->bindSteps();
}

CUdeviceptr ModuleRunner::getDevicePointer(std::string_view name) const {
  return impl->pointer(std::string(name));
}

void ModuleRunner::setUseGraph(bool useGraph) {
  impl->useGraph = useGraph;
  if (!useGraph)
    impl->dropGraph();
}

Status ModuleRunner::enqueue(CUstream stream) {
  if (!stream)
    stream = impl->context->getStream();
  if (Status status = impl->context->makeCurrent(); !status.isOk())
    return status;
  if (!impl->useGraph)
    return impl->enqueueSteps(stream);
  if (!impl->graphExec)
    if (Status status = impl->capture(stream); !status.isOk())
      return status;
  const CudaDriver &api = impl->api();
  return api.check(api.cuGraphLaunch(impl->graphExec, stream), "cuGraphLaunch");
}

Status ModuleRunner::run(CUstream stream) {
  if (!stream)
    stream = impl->context->getStream();
  if (Status status = enqueue(stream); !status.isOk())
    return status;
  const CudaDriver &api = impl->api();
  return api.check(api.cuStreamSynchronize(stream), "cuStreamSynchronize");
}
