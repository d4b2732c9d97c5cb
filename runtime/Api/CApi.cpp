//===- CApi.cpp - libkoptrt's C entry points --------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each entry point checks its pointers, runs the C++ runtime inside a guard
// that turns any exception into KOPT_INTERNAL, and records a failure's
// message for koptGetLastError in a thread-local string.
//
//===----------------------------------------------------------------------===//

#include "kopt-c/Runtime.h"

#include "kopt/Runtime/Cuda/BoundPlan.h"
#include "kopt/Runtime/KernelLookup.h"
#include "kopt/Runtime/ModuleRunner.h"

#include <exception>
#include <mutex>
#include <new>

using namespace kopt::runtime;

struct KoptDevice {
  std::unique_ptr<CudaContext> context;
  std::string arch;
};

struct KoptKernelDb {
  std::unique_ptr<SqliteKernelDatabase> database;
  std::mutex mutex;
};

struct KoptKernel {
  KoptDevice *device = nullptr;
  KernelChoice choice;
  std::string info;
  std::mutex mutex;
  /// The plan prepared for the shapes of `task`.
  KernelTask task;
  std::unique_ptr<BoundPlan> bound;
};

/// What KoptBatchInfo points at, kept with the module.
struct BatchInfoStorage {
  std::vector<int64_t> sizes;
  std::vector<const char *> inputs, outputs;
  std::string reason;

  void fill(const RuntimeModule &module) {
    sizes = module.getBatchSizes();
    if (!module.dynamicBatch)
      return;
    for (const std::string &name : module.dynamicBatch->inputs)
      inputs.push_back(name.c_str());
    for (const std::string &name : module.dynamicBatch->outputs)
      outputs.push_back(name.c_str());
    reason = module.dynamicBatch->reason;
  }

  KoptBatchInfo describe(const RuntimeModule &module, int64_t batch) const {
    KoptBatchInfo info = {};
    info.reason = reason.c_str();
    if (!module.dynamicBatch)
      return info;
    info.dynamic = 1;
    info.independent = module.dynamicBatch->independent ? 1 : 0;
    info.batch = batch;
    info.numSizes = sizes.size();
    info.sizes = sizes.data();
    info.numBatchedInputs = inputs.size();
    info.batchedInputs = inputs.data();
    info.numBatchedOutputs = outputs.size();
    info.batchedOutputs = outputs.data();
    return info;
  }
};

struct KoptModule {
  KoptDevice *device = nullptr;
  std::unique_ptr<ModuleRunner> runner;
  std::string info;
  BatchInfoStorage batch;
  /// The inputs and outputs at the batch size in effect, kept for
  /// KoptTensorInfo::name.
  mutable std::vector<TensorSpec> tensors;
};

struct KoptModuleFile {
  RuntimeModule module;
  BatchInfoStorage batch;
};

static thread_local std::string lastError;

static KoptStatus toCode(StatusCode code) {
  switch (code) {
  case StatusCode::Ok:
    return KOPT_OK;
  case StatusCode::InvalidArgument:
    return KOPT_INVALID_ARGUMENT;
  case StatusCode::OutOfRange:
    return KOPT_OUT_OF_RANGE;
  case StatusCode::Unsupported:
    return KOPT_UNSUPPORTED;
  case StatusCode::IoError:
  case StatusCode::Closed:
    return KOPT_IO_ERROR;
  case StatusCode::Unavailable:
    return KOPT_UNAVAILABLE;
  case StatusCode::Internal:
    return KOPT_INTERNAL;
  }
  return KOPT_INTERNAL;
}

static KoptStatus fail(KoptStatus code, std::string message) {
  lastError = std::move(message);
  return code;
}

static KoptStatus report(const Status &status) {
  if (status.isOk())
    return KOPT_OK;
  return fail(toCode(status.code()), status.message());
}

/// Runs `body`, turning exceptions (out of memory, say) into a status.
template <typename Body>
static KoptStatus guarded(Body &&body) {
  lastError.clear();
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(KOPT_INTERNAL, "out of host memory");
  } catch (const std::exception &error) {
    return fail(KOPT_INTERNAL, std::string("internal error: ") + error.what());
  } catch (...) {
    return fail(KOPT_INTERNAL, "internal error: unknown exception");
  }
}

static KoptStatus nullArgument(const char *function, const char *argument) {
  return fail(KOPT_INVALID_ARGUMENT,
              std::string(function) + ": '" + argument + "' is NULL");
}

#define KOPT_REQUIRE(argument)                                                 \
  if (!(argument))                                                             \
  return nullArgument(__func__, #argument)

static ElementType toElementType(KoptElementType type, bool &ok) {
  ok = true;
  switch (type) {
  case KOPT_F16:
    return ElementType::F16;
  case KOPT_BF16:
    return ElementType::BF16;
  case KOPT_F32:
    return ElementType::F32;
  case KOPT_F64:
    return ElementType::F64;
  case KOPT_I1:
    return ElementType::I1;
  case KOPT_I8:
    return ElementType::I8;
  case KOPT_I16:
    return ElementType::I16;
  case KOPT_I32:
    return ElementType::I32;
  case KOPT_I64:
    return ElementType::I64;
  }
  ok = false;
  return ElementType::F32;
}

static KoptElementType fromElementType(ElementType type) {
  switch (type) {
  case ElementType::F16:
    return KOPT_F16;
  case ElementType::BF16:
    return KOPT_BF16;
  case ElementType::F32:
    return KOPT_F32;
  case ElementType::F64:
    return KOPT_F64;
  case ElementType::I1:
    return KOPT_I1;
  case ElementType::I8:
    return KOPT_I8;
  case ElementType::I16:
    return KOPT_I16;
  case ElementType::I32:
    return KOPT_I32;
  case ElementType::I64:
    return KOPT_I64;
  }
  return KOPT_F32;
}

static std::string joinLines(const std::vector<std::string> &lines) {
  std::string text;
  for (const std::string &line : lines)
    text += line + "\n";
  return text;
}

//===----------------------------------------------------------------------===//
// Status and device
//===----------------------------------------------------------------------===//

const char *koptGetLastError(void) { return lastError.c_str(); }

const char *koptStatusName(KoptStatus status) {
  switch (status) {
  case KOPT_OK:
    return "ok";
  case KOPT_INVALID_ARGUMENT:
    return "invalid-argument";
  case KOPT_OUT_OF_RANGE:
    return "out-of-range";
  case KOPT_UNSUPPORTED:
    return "unsupported";
  case KOPT_IO_ERROR:
    return "io-error";
  case KOPT_UNAVAILABLE:
    return "unavailable";
  case KOPT_INTERNAL:
    return "internal";
  }
  return "unknown";
}

KoptStatus koptDeviceCreate(int ordinal, KoptDevice **outDevice) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(outDevice);
    auto context = CudaContext::create(ordinal);
    if (!context)
      return report(context.status());
    auto device = std::make_unique<KoptDevice>();
    device->arch = (*context)->getDeviceInfo().getArch();
    device->context = std::move(*context);
    *outDevice = device.release();
    return KOPT_OK;
  });
}

void koptDeviceDestroy(KoptDevice *device) { delete device; }

KoptStatus koptDeviceGetArch(const KoptDevice *device, const char **outArch) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(device);
    KOPT_REQUIRE(outArch);
    *outArch = device->arch.c_str();
    return KOPT_OK;
  });
}

KoptStatus koptDeviceGetStream(const KoptDevice *device, void **outStream) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(device);
    KOPT_REQUIRE(outStream);
    *outStream = device->context->getStream();
    return KOPT_OK;
  });
}

KoptStatus koptDeviceSynchronize(KoptDevice *device) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(device);
    if (Status status = device->context->makeCurrent(); !status.isOk())
      return report(status);
    const CudaDriver &api = device->context->getDriver();
    return report(api.check(api.cuCtxSynchronize(), "cuCtxSynchronize"));
  });
}

//===----------------------------------------------------------------------===//
// Kernel database and kernels
//===----------------------------------------------------------------------===//

KoptStatus koptKernelDbOpen(const char *path, KoptKernelDb **outDb) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(path);
    KOPT_REQUIRE(outDb);
    SqliteOpenOptions options;
    options.readOnly = true;
    options.create = false;
    auto database = SqliteKernelDatabase::open(path, options);
    if (!database)
      return report(database.status());
    auto db = std::make_unique<KoptKernelDb>();
    db->database = std::move(*database);
    *outDb = db.release();
    return KOPT_OK;
  });
}

void koptKernelDbClose(KoptKernelDb *db) { delete db; }

KoptStatus koptKernelDbLookup(KoptKernelDb *db, KoptDevice *device,
                              const char *taskKey, const char *precision,
                              KoptKernel **outKernel) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(db);
    KOPT_REQUIRE(device);
    KOPT_REQUIRE(taskKey);
    KOPT_REQUIRE(outKernel);
    std::string policy = precision ? precision : "fp32";
    Result<KernelChoice> choice = [&] {
      std::lock_guard<std::mutex> lock(db->mutex);
      return findKernelForArch(*db->database, taskKey, device->arch, policy);
    }();
    if (!choice)
      return report(choice.status());
    auto kernel = std::make_unique<KoptKernel>();
    kernel->device = device;
    kernel->info = choice->note + "\n";
    kernel->choice = std::move(*choice);
    *outKernel = kernel.release();
    return KOPT_OK;
  });
}

void koptKernelDestroy(KoptKernel *kernel) { delete kernel; }

KoptStatus koptKernelGetLoadInfo(const KoptKernel *kernel,
                                 const char **outInfo) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(kernel);
    KOPT_REQUIRE(outInfo);
    *outInfo = kernel->info.c_str();
    return KOPT_OK;
  });
}

/// The task tensors `prefix0, prefix1, ...` of `tensors`.
static Status describeTensors(const KoptTensor *tensors, size_t count,
                              const char *prefix,
                              std::vector<TensorSpec> &specs) {
  for (size_t i = 0; i < count; ++i) {
    std::string name = prefix + std::to_string(i);
    const KoptTensor &tensor = tensors[i];
    bool known = false;
    TensorSpec spec;
    spec.name = name;
    spec.elementType = toElementType(tensor.elementType, known);
    if (!known)
      return Status::error(StatusCode::InvalidArgument,
                           name + ": unknown element type " +
                               std::to_string(int(tensor.elementType)));
    if (tensor.rank < 0 || tensor.rank > KOPT_MAX_RANK)
      return Status::error(StatusCode::OutOfRange,
                           name + ": rank " + std::to_string(tensor.rank) +
                               " is not within 0.." +
                               std::to_string(KOPT_MAX_RANK));
    for (int d = 0; d < tensor.rank; ++d) {
      if (tensor.shape[d] < 0)
        return Status::error(StatusCode::InvalidArgument,
                             name + ": a negative dimension");
      spec.shape.push_back(tensor.shape[d]);
    }
    if (!tensor.data)
      return Status::error(StatusCode::InvalidArgument,
                           name + ": a null device pointer");
    specs.push_back(std::move(spec));
  }
  return Status::success();
}

KoptStatus koptKernelLaunch(KoptKernel *kernel, void *stream,
                            const KoptTensor *inputs, size_t numInputs,
                            const KoptTensor *outputs, size_t numOutputs) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(kernel);
    if (numInputs)
      KOPT_REQUIRE(inputs);
    if (numOutputs)
      KOPT_REQUIRE(outputs);
    KernelTask task;
    task.key = kernel->choice.record.taskKey;
    task.name = "kernel";
    if (Status status = describeTensors(inputs, numInputs, "in", task.inputs);
        !status.isOk())
      return report(status);
    if (Status status =
            describeTensors(outputs, numOutputs, "out", task.outputs);
        !status.isOk())
      return report(status);
    std::lock_guard<std::mutex> lock(kernel->mutex);
    const CudaContext &context = *kernel->device->context;
    if (!kernel->bound || task.inputs != kernel->task.inputs ||
        task.outputs != kernel->task.outputs) {
      kernel->bound.reset();
      auto bound = BoundPlan::create(context, task, kernel->choice.plan,
                                     kernel->choice.binaries);
      if (!bound)
        return report(bound.status());
      kernel->bound = std::move(*bound);
      kernel->task = task;
      kernel->info =
          kernel->choice.note + "\n" + joinLines(kernel->bound->getLoadNotes());
    }
    std::map<std::string, CUdeviceptr> pointers;
    for (size_t i = 0; i < numInputs; ++i)
      pointers["in" + std::to_string(i)] = inputs[i].data;
    for (size_t i = 0; i < numOutputs; ++i)
      pointers["out" + std::to_string(i)] = outputs[i].data;
    if (Status status = kernel->bound->bind(pointers); !status.isOk())
      return report(status);
    if (Status status = context.makeCurrent(); !status.isOk())
      return report(status);
    CUstream cuStream =
        stream ? static_cast<CUstream>(stream) : context.getStream();
    return report(kernel->bound->enqueue(cuStream));
  });
}

//===----------------------------------------------------------------------===//
// Modules
//===----------------------------------------------------------------------===//

KoptStatus koptModuleLoad(KoptDevice *device, const char *path,
                          KoptKernelDb *db, KoptModule **outModule) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(device);
    KOPT_REQUIRE(path);
    KOPT_REQUIRE(outModule);
    auto loaded = loadRuntimeModule(path);
    if (!loaded)
      return report(loaded.status());
    ModuleRunnerOptions options;
    std::unique_lock<std::mutex> lock;
    if (db) {
      lock = std::unique_lock<std::mutex>(db->mutex);
      options.database = db->database.get();
    }
    auto runner =
        ModuleRunner::create(*device->context, std::move(*loaded), options);
    if (!runner)
      return report(runner.status());
    auto module = std::make_unique<KoptModule>();
    module->device = device;
    module->runner = std::move(*runner);
    module->info = joinLines(module->runner->getLoadNotes());
    module->batch.fill(module->runner->getModule());
    *outModule = module.release();
    return KOPT_OK;
  });
}

void koptModuleDestroy(KoptModule *module) { delete module; }

KoptStatus koptModuleGetLoadInfo(const KoptModule *module,
                                 const char **outInfo) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(module);
    KOPT_REQUIRE(outInfo);
    *outInfo = module->info.c_str();
    return KOPT_OK;
  });
}

KoptStatus koptModuleGetNumInputs(const KoptModule *module, size_t *outCount) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(module);
    KOPT_REQUIRE(outCount);
    *outCount = module->runner->getModule().inputs.size();
    return KOPT_OK;
  });
}

KoptStatus koptModuleGetNumOutputs(const KoptModule *module, size_t *outCount) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(module);
    KOPT_REQUIRE(outCount);
    *outCount = module->runner->getModule().outputs.size();
    return KOPT_OK;
  });
}

/// Describes `tensor` into `outInfo`; its name must outlive the info.
static KoptStatus describeTensor(const TensorSpec &tensor,
                                 KoptTensorInfo *outInfo) {
  if (tensor.shape.size() > KOPT_MAX_RANK)
    return fail(KOPT_UNSUPPORTED, "tensor '" + tensor.name + "' has rank " +
                                      std::to_string(tensor.shape.size()));
  KoptTensorInfo info = {};
  info.name = tensor.name.c_str();
  info.elementType = fromElementType(tensor.elementType);
  info.rank = int32_t(tensor.shape.size());
  for (size_t d = 0; d < tensor.shape.size(); ++d)
    info.shape[d] = tensor.shape[d];
  info.bytes = uint64_t(tensor.getBytes().value_or(0));
  *outInfo = info;
  return KOPT_OK;
}

/// The name of input (output) `index`, or a failure.
static KoptStatus nameAt(const RuntimeModule &mod, bool input, size_t index,
                         const std::string **outName) {
  const std::vector<std::string> &names = input ? mod.inputs : mod.outputs;
  if (index >= names.size())
    return fail(KOPT_OUT_OF_RANGE, std::string("the module has ") +
                                       std::to_string(names.size()) +
                                       (input ? " inputs" : " outputs") +
                                       ", not " + std::to_string(index + 1));
  *outName = &names[index];
  return KOPT_OK;
}

static KoptStatus describe(const RuntimeModule &mod, bool input, size_t index,
                           KoptTensorInfo *outInfo) {
  const std::string *name = nullptr;
  if (KoptStatus status = nameAt(mod, input, index, &name); status != KOPT_OK)
    return status;
  return describeTensor(mod.findBuffer(*name)->tensor, outInfo);
}

/// Describes input (output) `index` of `module` at its batch size in
/// effect.
static KoptStatus describe(const KoptModule *module, bool input, size_t index,
                           KoptTensorInfo *outInfo) {
  const RuntimeModule &mod = module->runner->getModule();
  const std::string *name = nullptr;
  if (KoptStatus status = nameAt(mod, input, index, &name); status != KOPT_OK)
    return status;
  auto tensor = module->runner->getTensor(*name);
  if (!tensor)
    return report(tensor.status());
  // The name is set once, so that names handed out earlier stay valid.
  module->tensors.resize(mod.inputs.size() + mod.outputs.size());
  TensorSpec &kept = module->tensors[input ? index : mod.inputs.size() + index];
  if (kept.name.empty())
    kept.name = tensor->name;
  kept.elementType = tensor->elementType;
  kept.shape = tensor->shape;
  return describeTensor(kept, outInfo);
}

KoptStatus koptModuleGetInputInfo(const KoptModule *module, size_t index,
                                  KoptTensorInfo *outInfo) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(module);
    KOPT_REQUIRE(outInfo);
    return describe(module, true, index, outInfo);
  });
}

KoptStatus koptModuleGetOutputInfo(const KoptModule *module, size_t index,
                                   KoptTensorInfo *outInfo) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(module);
    KOPT_REQUIRE(outInfo);
    return describe(module, false, index, outInfo);
  });
}

KoptStatus koptModuleGetBatchInfo(const KoptModule *module,
                                  KoptBatchInfo *outInfo) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(module);
    KOPT_REQUIRE(outInfo);
    *outInfo = module->batch.describe(module->runner->getModule(),
                                      module->runner->getBatch());
    return KOPT_OK;
  });
}

KoptStatus koptModuleSetBatch(KoptModule *module, int64_t batch) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(module);
    return report(module->runner->setBatch(batch));
  });
}

KoptStatus koptModuleSetInput(KoptModule *module, const char *name,
                              const void *data, size_t bytes) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(module);
    KOPT_REQUIRE(name);
    if (bytes)
      KOPT_REQUIRE(data);
    return report(module->runner->setInput(name, data, bytes));
  });
}

KoptStatus koptModuleGetOutput(KoptModule *module, const char *name, void *data,
                               size_t bytes) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(module);
    KOPT_REQUIRE(name);
    if (bytes)
      KOPT_REQUIRE(data);
    auto contents = module->runner->readBuffer(name);
    if (!contents)
      return report(contents.status());
    if (contents->size() != bytes)
      return fail(KOPT_INVALID_ARGUMENT, std::string("'") + name + "' holds " +
                                             std::to_string(contents->size()) +
                                             " bytes, not " +
                                             std::to_string(bytes));
    std::copy(contents->begin(), contents->end(), static_cast<char *>(data));
    return KOPT_OK;
  });
}

KoptStatus koptModuleBindBuffer(KoptModule *module, const char *name,
                                uint64_t pointer) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(module);
    KOPT_REQUIRE(name);
    return report(module->runner->bindBuffer(name, CUdeviceptr(pointer)));
  });
}

KoptStatus koptModuleSetGraphCapture(KoptModule *module, int enable) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(module);
    module->runner->setUseGraph(enable != 0);
    return KOPT_OK;
  });
}

KoptStatus koptModuleRun(KoptModule *module, void *stream) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(module);
    return report(module->runner->enqueue(static_cast<CUstream>(stream)));
  });
}

//===----------------------------------------------------------------------===//
// Module files
//===----------------------------------------------------------------------===//

KoptStatus koptModuleFileOpen(const char *path, KoptModuleFile **outFile) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(path);
    KOPT_REQUIRE(outFile);
    auto loaded = loadRuntimeModule(path);
    if (!loaded)
      return report(loaded.status());
    auto file = std::make_unique<KoptModuleFile>();
    file->module = std::move(*loaded);
    file->batch.fill(file->module);
    *outFile = file.release();
    return KOPT_OK;
  });
}

void koptModuleFileClose(KoptModuleFile *file) { delete file; }

KoptStatus koptModuleFileGetNumInputs(const KoptModuleFile *file,
                                      size_t *outCount) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(file);
    KOPT_REQUIRE(outCount);
    *outCount = file->module.inputs.size();
    return KOPT_OK;
  });
}

KoptStatus koptModuleFileGetNumOutputs(const KoptModuleFile *file,
                                       size_t *outCount) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(file);
    KOPT_REQUIRE(outCount);
    *outCount = file->module.outputs.size();
    return KOPT_OK;
  });
}

KoptStatus koptModuleFileGetInputInfo(const KoptModuleFile *file, size_t index,
                                      KoptTensorInfo *outInfo) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(file);
    KOPT_REQUIRE(outInfo);
    return describe(file->module, true, index, outInfo);
  });
}

KoptStatus koptModuleFileGetOutputInfo(const KoptModuleFile *file, size_t index,
                                       KoptTensorInfo *outInfo) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(file);
    KOPT_REQUIRE(outInfo);
    return describe(file->module, false, index, outInfo);
  });
}

KoptStatus koptModuleFileGetBatchInfo(const KoptModuleFile *file,
                                      KoptBatchInfo *outInfo) {
  return guarded([&]() -> KoptStatus {
    KOPT_REQUIRE(file);
    KOPT_REQUIRE(outInfo);
    *outInfo = file->batch.describe(file->module, file->module.batch);
    return KOPT_OK;
  });
}
