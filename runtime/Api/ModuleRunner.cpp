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
  // An architecture-specific plan's binaries were built for its own target.
  auto arch = getCompileArch(plan, record.fingerprint.computeCapability);
  binary.arch = arch ? *arch : record.fingerprint.computeCapability;
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

/// One program, instantiated: its own buffers and its steps.
struct ProgramRun {
  const ModuleProgram *program = nullptr;
  /// Every buffer that is not an alias, except the shared inputs and
  /// outputs.
  std::map<std::string, DeviceBuffer> buffers;
  std::vector<RunStep> steps;

  CUdeviceptr own(const std::string &name) const {
    auto it = buffers.find(name);
    return it == buffers.end() ? 0 : it->second.get();
  }
};
} // namespace

struct ModuleRunner::Impl {
  const CudaContext *context = nullptr;
  RuntimeModule module;
  /// One per program, in the order of `RuntimeModule::getPrograms`.
  std::vector<ProgramRun> programs;
  /// The inputs and outputs that do not carry the batch (all of a static
  /// module's), shared by every program.
  std::map<std::string, DeviceBuffer> shared;
  /// Caller-bound pointers of inputs and outputs.
  std::map<std::string, CUdeviceptr> external;
  /// A chunked run's batched inputs and outputs at the whole batch size.
  std::map<std::string, DeviceBuffer> staging;
  int64_t batch = 0;
  std::vector<BatchChunk> chunks;
  /// Whether the run goes through chunks; else program `direct` runs the
  /// whole batch on the caller's buffers.
  bool chunked = false;
  size_t direct = 0;
  DeviceBuffer workspace;
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

  bool isInputOrOutput(const ModuleBuffer &buffer) const {
    return buffer.kind == ModuleBuffer::Kind::Input ||
           buffer.kind == ModuleBuffer::Kind::Output;
  }

  size_t programOf(int64_t size) const {
    for (size_t i = 0; i < programs.size(); ++i)
      if (programs[i].program->batch == size)
        return i;
    return 0;
  }

  /// Where input or output `name` lives for the caller, at the current
  /// batch size.
  CUdeviceptr userPointer(const std::string &name) const {
    auto bound = external.find(name);
    if (bound != external.end())
      return bound->second;
    if (!module.isBatched(name)) {
      auto it = shared.find(name);
      return it == shared.end() ? 0 : it->second.get();
    }
    if (chunked) {
      auto it = staging.find(name);
      return it == staging.end() ? 0 : it->second.get();
    }
    return programs[direct].own(name);
  }

  /// The memory buffer `name` of `run`'s program is bound to.
  CUdeviceptr pointer(const ProgramRun &run, const std::string &name) const {
    const ModuleBuffer *buffer = run.program->findBuffer(name);
    if (!buffer)
      return 0;
    const std::string &owner =
        buffer->kind == ModuleBuffer::Kind::Alias ? buffer->aliasOf : name;
    const ModuleBuffer *target = run.program->findBuffer(owner);
    if (!target || !isInputOrOutput(*target))
      return run.own(owner);
    // A chunk's batched inputs and outputs are the program's own, copied
    // in and out; a whole batch runs on the caller's.
    if (module.isBatched(owner) && (chunked || &run != &programs[direct]))
      return run.own(owner);
    return userPointer(owner);
  }

  /// The program whose temporaries a read of buffer `name` sees.
  const ProgramRun &lastProgram() const {
    return programs[chunked ? programOf(chunks.back().size) : direct];
  }

  /// Bytes per sample of batched input or output `name`.
  size_t sampleBytes(const std::string &name) const {
    return size_t(module.findBuffer(name)->tensor.getBytes().value_or(0) /
                  module.batch);
  }

  Status bindSteps();
  Status enqueueProgram(const ProgramRun &run, CUstream stream) const;
  Status enqueueChunks(CUstream stream) const;
  Status enqueueAll(CUstream stream) const {
    return chunked ? enqueueChunks(stream)
                   : enqueueProgram(programs[direct], stream);
  }
  Status capture(CUstream stream);
};

Status ModuleRunner::Impl::bindSteps() {
  for (ProgramRun &run : programs) {
    const ModuleProgram &program = *run.program;
    for (size_t i = 0; i < run.steps.size(); ++i) {
      const ModuleStep &step = program.steps[i];
      RunStep &bound = run.steps[i];
      if (step.kind == ModuleStep::Kind::Copy) {
        bound.from = pointer(run, step.from);
        bound.to = pointer(run, step.to);
        continue;
      }
      const ModulePlan &plan = program.plans[step.plan];
      std::map<std::string, CUdeviceptr> pointers;
      for (size_t k = 0; k < plan.inputs.size(); ++k)
        pointers[plan.inputs[k].name] = pointer(run, step.inputs[k]);
      for (size_t k = 0; k < plan.outputs.size(); ++k)
        pointers[plan.outputs[k].name] = pointer(run, step.outputs[k]);
      if (Status status = bound.plan->bind(pointers); !status.isOk())
        return status.withContext("step " + std::to_string(i));
    }
  }
  return Status::success();
}

Status ModuleRunner::Impl::enqueueProgram(const ProgramRun &run,
                                          CUstream stream) const {
  const CudaDriver &driver = api();
  const ModuleProgram &program = *run.program;
  for (size_t i = 0; i < run.steps.size(); ++i) {
    const RunStep &step = run.steps[i];
    Status status =
        step.kind == ModuleStep::Kind::Copy
            ? driver.check(driver.cuMemcpyDtoDAsync(step.to, step.from,
                                                    step.bytes, stream),
                           "cuMemcpyDtoDAsync")
            : step.plan->enqueue(stream);
    if (!status.isOk())
      return status.withContext(
          "step " + std::to_string(i) + " (@" +
          (step.plan ? program.plans[program.steps[i].plan].function
                     : std::string("copy")) +
          ")" +
          (module.dynamicBatch
               ? " of the program of batch " + std::to_string(program.batch)
               : std::string()));
  }
  return Status::success();
}

Status ModuleRunner::Impl::enqueueChunks(CUstream stream) const {
  const CudaDriver &driver = api();
  for (const BatchChunk &chunk : chunks) {
    const ProgramRun &run = programs[programOf(chunk.size)];
    for (const std::string &name : module.dynamicBatch->inputs) {
      size_t perSample = sampleBytes(name);
      CUdeviceptr to = run.own(name);
      size_t bytes = size_t(chunk.count) * perSample;
      if (Status status = driver.check(
              driver.cuMemcpyDtoDAsync(
                  to, userPointer(name) + size_t(chunk.start) * perSample,
                  bytes, stream),
              "cuMemcpyDtoDAsync(input '" + name + "')");
          !status.isOk())
        return status;
      // A padded chunk's other samples are zeros: valid indices, finite
      // values; their results are dropped.
      if (chunk.count < chunk.size)
        if (Status status = driver.check(
                driver.cuMemsetD8Async(
                    to + bytes, 0, size_t(chunk.size - chunk.count) * perSample,
                    stream),
                "cuMemsetD8Async(input '" + name + "')");
            !status.isOk())
          return status;
    }
    if (Status status = enqueueProgram(run, stream); !status.isOk())
      return status;
    for (const std::string &name : module.dynamicBatch->outputs) {
      size_t perSample = sampleBytes(name);
      if (Status status = driver.check(
              driver.cuMemcpyDtoDAsync(
                  userPointer(name) + size_t(chunk.start) * perSample,
                  run.own(name), size_t(chunk.count) * perSample, stream),
              "cuMemcpyDtoDAsync(output '" + name + "')");
          !status.isOk())
        return status;
    }
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
  Status enqueued = enqueueAll(stream);
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

/// Loads the plan steps of `run`'s program; `prefix` starts its load notes.
static Status loadProgram(ModuleRunner::Impl &impl, ProgramRun &run,
                          const ModuleRunnerOptions &options,
                          const std::string &prefix) {
  const ModuleProgram &program = *run.program;
  // Resolve each plan once; instantiate it per step.
  std::vector<std::optional<std::pair<KernelPlan, std::vector<SourceBinary>>>>
      resolved(program.plans.size());
  std::set<size_t> noted;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const ModuleStep &step = program.steps[i];
    RunStep bound;
    bound.kind = step.kind;
    if (step.kind == ModuleStep::Kind::Copy) {
      bound.bytes =
          size_t(program.findBuffer(step.from)->tensor.getBytes().value_or(0));
      run.steps.push_back(std::move(bound));
      continue;
    }
    const ModulePlan &plan = program.plans[step.plan];
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
    auto created = BoundPlan::create(
        *impl.context, plan.getTask(), resolved[step.plan]->first,
        resolved[step.plan]->second, &impl.workspace);
    if (!created)
      return created.status().withContext("step " + std::to_string(i) + " (@" +
                                          plan.function + ")");
    if (noted.insert(step.plan).second)
      for (const std::string &note : (*created)->getLoadNotes())
        impl.notes.push_back(prefix + "@" + plan.function + ": " + note);
    bound.plan = std::move(*created);
    run.steps.push_back(std::move(bound));
  }
  return Status::success();
}

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

  for (const ModuleProgram *program : mod.getPrograms()) {
    ProgramRun run;
    run.program = program;
    for (const ModuleBuffer &buffer : program->buffers) {
      if (buffer.kind == ModuleBuffer::Kind::Alias)
        continue;
      bool shared =
          impl->isInputOrOutput(buffer) && !mod.isBatched(buffer.tensor.name);
      if (shared && impl->shared.count(buffer.tensor.name))
        continue;
      auto allocated =
          DeviceBuffer::allocate(context, buffer.tensor.getBytes().value_or(0));
      if (!allocated)
        return allocated.status().withContext("buffer '" + buffer.tensor.name +
                                              "'");
      if (buffer.kind == ModuleBuffer::Kind::Constant && !buffer.data.empty())
        if (Status status = api.check(
                api.cuMemcpyHtoD(allocated->get(), buffer.data.data(),
                                 buffer.data.size()),
                "cuMemcpyHtoD(constant '" + buffer.tensor.name + "')");
            !status.isOk())
          return status;
      (shared ? impl->shared : run.buffers)
          .emplace(buffer.tensor.name, std::move(*allocated));
    }
    impl->programs.push_back(std::move(run));
  }
  for (ProgramRun &run : impl->programs) {
    std::string prefix =
        mod.dynamicBatch ? "batch " + std::to_string(run.program->batch) + ": "
                         : std::string();
    if (Status status = loadProgram(*impl, run, options, prefix);
        !status.isOk())
      return mod.dynamicBatch
                 ? status.withContext("the program of batch " +
                                      std::to_string(run.program->batch))
                 : status;
  }
  impl->batch = mod.batch;
  if (mod.dynamicBatch)
    impl->chunks = {{mod.batch, 0, mod.batch}};
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
  auto count = [](const ProgramRun &run) {
    size_t launches = 0;
    for (const RunStep &step : run.steps)
      launches += step.plan ? step.plan->getNumSteps() : 1;
    return launches;
  };
  if (!impl->chunked)
    return count(impl->programs[impl->direct]);
  size_t launches = 0;
  const DynamicBatch &dynamic = *impl->module.dynamicBatch;
  for (const BatchChunk &chunk : impl->chunks)
    launches += count(impl->programs[impl->programOf(chunk.size)]) +
                dynamic.inputs.size() * (chunk.count < chunk.size ? 2 : 1) +
                dynamic.outputs.size();
  return launches;
}

int64_t ModuleRunner::getBatch() const { return impl->batch; }

const std::vector<BatchChunk> &ModuleRunner::getChunks() const {
  return impl->chunks;
}

Result<TensorSpec> ModuleRunner::getTensor(std::string_view name) const {
  return impl->module.getTensorAtBatch(name, impl->batch);
}

Status ModuleRunner::setBatch(int64_t batch) {
  const RuntimeModule &module = impl->module;
  if (Status status = module.checkBatch(batch); !status.isOk())
    return status;
  if (batch == impl->batch)
    return Status::success();
  std::vector<BatchChunk> chunks =
      planBatchChunks(batch, module.getBatchSizes());
  bool chunked = chunks.size() != 1 || chunks[0].count != chunks[0].size;
  if (Status status = impl->context->makeCurrent(); !status.isOk())
    return status;
  std::map<std::string, DeviceBuffer> staging;
  if (chunked)
    for (const std::vector<std::string> *list :
         {&module.dynamicBatch->inputs, &module.dynamicBatch->outputs})
      for (const std::string &name : *list) {
        auto tensor = module.getTensorAtBatch(name, batch);
        if (!tensor)
          return tensor.status();
        auto allocated = DeviceBuffer::allocate(*impl->context,
                                                tensor->getBytes().value_or(0));
        if (!allocated)
          return allocated.status().withContext("'" + name + "' at batch " +
                                                std::to_string(batch));
        staging.emplace(name, std::move(*allocated));
      }
  for (const std::vector<std::string> *list :
       {&module.dynamicBatch->inputs, &module.dynamicBatch->outputs})
    for (const std::string &name : *list)
      impl->external.erase(name);
  impl->staging = std::move(staging);
  impl->chunks = std::move(chunks);
  impl->chunked = chunked;
  impl->direct = chunked ? 0 : impl->programOf(batch);
  impl->batch = batch;
  impl->dropGraph();
  return impl->bindSteps();
}

/// The bytes of input or output `name` at `runner`'s batch size.
static Result<int64_t> bytesOf(const ModuleRunner &runner,
                               std::string_view name) {
  auto tensor = runner.getTensor(name);
  if (!tensor)
    return tensor.status();
  return tensor->getBytes().value_or(0);
}

Status ModuleRunner::setInput(std::string_view name, const void *data,
                              size_t size) {
  const ModuleBuffer *buffer = impl->module.findBuffer(name);
  if (!buffer || buffer->kind != ModuleBuffer::Kind::Input)
    return invalid("the module has no input '" + std::string(name) + "'");
  auto bytes = bytesOf(*this, name);
  if (!bytes)
    return bytes.status();
  if (int64_t(size) != *bytes)
    return invalid("input '" + std::string(name) + "' takes " +
                   std::to_string(*bytes) + " bytes" +
                   (impl->module.isBatched(name)
                        ? " at batch " + std::to_string(impl->batch)
                        : std::string()) +
                   ", got " + std::to_string(size));
  if (Status status = impl->context->makeCurrent(); !status.isOk())
    return status;
  const CudaDriver &api = impl->api();
  if (!size)
    return Status::success();
  return api.check(
      api.cuMemcpyHtoD(impl->userPointer(std::string(name)), data, size),
      "cuMemcpyHtoD(input '" + std::string(name) + "')");
}

Result<std::string> ModuleRunner::readBuffer(std::string_view name) const {
  const ModuleBuffer *buffer = impl->module.findBuffer(name);
  const ProgramRun &last = impl->lastProgram();
  const ModuleBuffer *own = last.program->findBuffer(name);
  if (!buffer && !own)
    return invalid("the module has no buffer '" + std::string(name) + "'");
  bool io = buffer && impl->isInputOrOutput(*buffer);
  int64_t size = 0;
  if (io) {
    auto bytes = bytesOf(*this, name);
    if (!bytes)
      return bytes.status();
    size = *bytes;
  } else {
    size = own ? own->tensor.getBytes().value_or(0) : 0;
  }
  if (Status status = impl->context->makeCurrent(); !status.isOk())
    return status;
  const CudaDriver &api = impl->api();
  if (Status status = api.check(api.cuCtxSynchronize(), "cuCtxSynchronize");
      !status.isOk())
    return status;
  CUdeviceptr from = io ? impl->userPointer(std::string(name))
                        : impl->pointer(last, std::string(name));
  std::string bytes(size_t(size), '\0');
  if (!bytes.empty())
    if (Status status =
            api.check(api.cuMemcpyDtoH(bytes.data(), from, bytes.size()),
                      "cuMemcpyDtoH('" + std::string(name) + "')");
        !status.isOk())
      return status;
  return bytes;
}

Status ModuleRunner::bindBuffer(std::string_view name, CUdeviceptr pointer) {
  const ModuleBuffer *buffer = impl->module.findBuffer(name);
  if (!buffer || !impl->isInputOrOutput(*buffer))
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
  const ModuleBuffer *buffer = impl->module.findBuffer(name);
  if (buffer && impl->isInputOrOutput(*buffer))
    return impl->userPointer(std::string(name));
  return impl->pointer(impl->lastProgram(), std::string(name));
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
    return impl->enqueueAll(stream);
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
