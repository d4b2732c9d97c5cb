//===- RuntimeModule.cpp - Reading and writing .kmod files ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The file is `KOPTMOD\0`, the header's length as a little-endian uint64,
// the JSON header, zero padding to a multiple of 64 bytes, then the data
// section. A blob in the header is `{"offset", "bytes", "hash"}`: its place
// in the data section (a multiple of 64) and the FNV-1a hash the kernel
// database also uses for binaries.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/RuntimeModule.h"

#include "kopt/Runtime/PlanVerifier.h"

#include "Support/FieldReader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace kopt::runtime;

static constexpr char kMagic[8] = {'K', 'O', 'P', 'T', 'M', 'O', 'D', '\0'};
static constexpr size_t kAlignment = 64;

static Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

static size_t alignUp(size_t value) {
  return (value + kAlignment - 1) / kAlignment * kAlignment;
}

const char *kopt::runtime::stringifyBufferKind(ModuleBuffer::Kind kind) {
  switch (kind) {
  case ModuleBuffer::Kind::Input:
    return "input";
  case ModuleBuffer::Kind::Output:
    return "output";
  case ModuleBuffer::Kind::Constant:
    return "constant";
  case ModuleBuffer::Kind::Temporary:
    return "temporary";
  case ModuleBuffer::Kind::Alias:
    return "alias";
  }
  return "temporary";
}

static std::optional<ModuleBuffer::Kind> parseBufferKind(std::string_view s) {
  for (auto kind : {ModuleBuffer::Kind::Input, ModuleBuffer::Kind::Output,
                    ModuleBuffer::Kind::Constant, ModuleBuffer::Kind::Temporary,
                    ModuleBuffer::Kind::Alias})
    if (s == stringifyBufferKind(kind))
      return kind;
  return std::nullopt;
}

KernelTask ModulePlan::getTask() const {
  KernelTask task;
  task.key = key;
  task.name = function;
  task.inputs = inputs;
  task.outputs = outputs;
  task.tolerance = tolerance;
  return task;
}

const ModuleBuffer *ModuleProgram::findBuffer(std::string_view name) const {
  for (const ModuleBuffer &buffer : buffers)
    if (buffer.tensor.name == name)
      return &buffer;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

/// Checks that `names` are buffers matching `specs` (shape and type).
static Status checkBindings(const ModuleProgram &module,
                            const std::vector<std::string> &names,
                            const std::vector<TensorSpec> &specs,
                            const std::string &where, const char *what) {
  if (names.size() != specs.size())
    return invalid(where + ": the plan takes " + std::to_string(specs.size()) +
                   " " + what + ", the step binds " +
                   std::to_string(names.size()));
  for (size_t i = 0; i < names.size(); ++i) {
    const ModuleBuffer *buffer = module.findBuffer(names[i]);
    if (!buffer)
      return invalid(where + ": no buffer '" + names[i] + "'");
    const TensorSpec &spec = specs[i];
    if (buffer->tensor.elementType != spec.elementType ||
        buffer->tensor.shape != spec.shape)
      return invalid(where + ": buffer '" + names[i] +
                     "' does not match the plan's " + what + " '" + spec.name +
                     "' (shape or element type)");
  }
  return Status::success();
}

Status ModuleProgram::verify() const {
  std::set<std::string> names;
  for (const ModuleBuffer &buffer : buffers) {
    const std::string &name = buffer.tensor.name;
    std::string where = "buffer '" + name + "'";
    if (name.empty())
      return invalid("a buffer has no name");
    if (!names.insert(name).second)
      return invalid(where + " is declared twice");
    std::optional<int64_t> bytes = buffer.tensor.getBytes();
    if (!bytes)
      return Status::error(StatusCode::OutOfRange, where + " is too large");
    if (buffer.kind == ModuleBuffer::Kind::Constant &&
        int64_t(buffer.data.size()) != *bytes)
      return invalid(where + ": a constant of " + std::to_string(*bytes) +
                     " bytes holds " + std::to_string(buffer.data.size()));
    if (buffer.kind != ModuleBuffer::Kind::Constant && !buffer.data.empty())
      return invalid(where + ": only constants hold data");
    if (buffer.kind == ModuleBuffer::Kind::Alias) {
      const ModuleBuffer *target = findBuffer(buffer.aliasOf);
      if (!target || target->kind == ModuleBuffer::Kind::Alias)
        return invalid(where + ": aliases '" + buffer.aliasOf +
                       "', which is not a buffer of its own");
      if (target->tensor.getBytes() != bytes)
        return invalid(where + ": its size differs from '" + buffer.aliasOf +
                       "'");
    }
  }
  auto checkList = [&](const std::vector<std::string> &list,
                       ModuleBuffer::Kind kind, const char *what) -> Status {
    std::set<std::string> seen;
    for (const std::string &name : list) {
      const ModuleBuffer *buffer = findBuffer(name);
      if (!buffer || buffer->kind != kind)
        return invalid(std::string(what) + " '" + name + "' is not an " +
                       stringifyBufferKind(kind) + " buffer");
      if (!seen.insert(name).second)
        return invalid(std::string(what) + " '" + name + "' is listed twice");
    }
    return Status::success();
  };
  if (Status status = checkList(inputs, ModuleBuffer::Kind::Input, "input");
      !status.isOk())
    return status;
  if (Status status = checkList(outputs, ModuleBuffer::Kind::Output, "output");
      !status.isOk())
    return status;
  for (const ModuleBuffer &buffer : buffers) {
    const std::vector<std::string> *list =
        buffer.kind == ModuleBuffer::Kind::Input    ? &inputs
        : buffer.kind == ModuleBuffer::Kind::Output ? &outputs
                                                    : nullptr;
    if (list && std::find(list->begin(), list->end(), buffer.tensor.name) ==
                    list->end())
      return invalid("buffer '" + buffer.tensor.name + "' is an " +
                     stringifyBufferKind(buffer.kind) +
                     " but not listed as one");
  }
  for (size_t i = 0; i < plans.size(); ++i) {
    const ModulePlan &plan = plans[i];
    std::string where =
        "plan " + std::to_string(i) + " (" + plan.function + ")";
    if (plan.plan.has_value() == plan.reference.has_value())
      return invalid(where + ": needs either an inline plan or a reference");
    if (plan.plan)
      if (Status status = verifyPlan(*plan.plan, plan.getTask());
          !status.isOk())
        return status.withContext(where);
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const ModuleStep &step = steps[i];
    std::string where = "step " + std::to_string(i);
    if (step.kind == ModuleStep::Kind::Copy) {
      const ModuleBuffer *from = findBuffer(step.from);
      const ModuleBuffer *to = findBuffer(step.to);
      if (!from || !to)
        return invalid(where + ": copies between unknown buffers '" +
                       step.from + "' and '" + step.to + "'");
      if (from->tensor.getBytes() != to->tensor.getBytes())
        return invalid(where + ": copies between buffers of different sizes");
      continue;
    }
    if (step.plan >= plans.size())
      return invalid(where + ": no plan " + std::to_string(step.plan));
    const ModulePlan &plan = plans[step.plan];
    if (Status status =
            checkBindings(*this, step.inputs, plan.inputs, where, "inputs");
        !status.isOk())
      return status;
    if (Status status =
            checkBindings(*this, step.outputs, plan.outputs, where, "outputs");
        !status.isOk())
      return status;
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Dynamic batch
//===----------------------------------------------------------------------===//

std::vector<const ModuleProgram *> RuntimeModule::getPrograms() const {
  std::vector<const ModuleProgram *> programs = {this};
  for (const ModuleProgram &program : specializations)
    programs.push_back(&program);
  return programs;
}

std::vector<int64_t> RuntimeModule::getBatchSizes() const {
  std::vector<int64_t> sizes;
  if (!dynamicBatch)
    return sizes;
  for (const ModuleProgram *program : getPrograms())
    sizes.push_back(program->batch);
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

const ModuleProgram *RuntimeModule::findProgram(int64_t size) const {
  for (const ModuleProgram *program : getPrograms())
    if (program->batch == size)
      return program;
  return nullptr;
}

bool RuntimeModule::isBatched(std::string_view name) const {
  if (!dynamicBatch)
    return false;
  for (const std::vector<std::string> *list :
       {&dynamicBatch->inputs, &dynamicBatch->outputs})
    if (std::find(list->begin(), list->end(), name) != list->end())
      return true;
  return false;
}

Result<TensorSpec> RuntimeModule::getTensorAtBatch(std::string_view name,
                                                   int64_t size) const {
  const ModuleBuffer *buffer = findBuffer(name);
  if (!buffer || (buffer->kind != ModuleBuffer::Kind::Input &&
                  buffer->kind != ModuleBuffer::Kind::Output))
    return invalid("the module has no input or output '" + std::string(name) +
                   "'");
  TensorSpec tensor = buffer->tensor;
  if (!isBatched(name))
    return tensor;
  if (size < 1)
    return invalid("the batch size must be positive, not " +
                   std::to_string(size));
  // Verified: the outermost dimension is the batch times a constant.
  int64_t perSample = tensor.shape[0] / batch;
  if (perSample > 0 && size > INT64_MAX / perSample)
    return Status::error(StatusCode::OutOfRange,
                         "batch " + std::to_string(size) + " is too large");
  tensor.shape[0] = perSample * size;
  if (!tensor.getBytes())
    return Status::error(StatusCode::OutOfRange,
                         "input or output '" + std::string(name) +
                             "' is too large at batch " + std::to_string(size));
  return tensor;
}

static std::string joinSizes(const std::vector<int64_t> &sizes) {
  std::string text;
  for (size_t i = 0; i < sizes.size(); ++i)
    text += (i == 0                  ? ""
             : i + 1 == sizes.size() ? " and "
                                     : ", ") +
            std::to_string(sizes[i]);
  return text;
}

Status RuntimeModule::checkBatch(int64_t size) const {
  if (!dynamicBatch)
    return invalid("the module's shapes are static: it has no batch size to "
                   "set");
  if (size < 1)
    return invalid("the batch size must be positive, not " +
                   std::to_string(size));
  if (findProgram(size) || dynamicBatch->independent)
    return Status::success();
  return invalid("batch " + std::to_string(size) +
                 ": the module was tuned for batch " +
                 joinSizes(getBatchSizes()) +
                 " only, and runs other sizes only when its samples are "
                 "independent, which the compiler could not prove (" +
                 dynamicBatch->reason + ")");
}

/// Checks that the programs of a dynamic-batch module agree on their
/// inputs and outputs.
static Status verifyPrograms(const RuntimeModule &module) {
  const DynamicBatch &dynamic = *module.dynamicBatch;
  std::set<int64_t> sizes;
  for (const ModuleProgram *program : module.getPrograms()) {
    if (program->batch < 1)
      return invalid("a program of a dynamic-batch module has batch " +
                     std::to_string(program->batch));
    if (!sizes.insert(program->batch).second)
      return invalid("two programs for batch " +
                     std::to_string(program->batch));
  }
  auto checkNames = [&](const std::vector<std::string> &batched,
                        const std::vector<std::string> &all,
                        const char *what) -> Status {
    std::set<std::string> seen;
    for (const std::string &name : batched) {
      if (std::find(all.begin(), all.end(), name) == all.end())
        return invalid(std::string("the batched ") + what + " '" + name +
                       "' is not one of the module's");
      if (!seen.insert(name).second)
        return invalid(std::string("the batched ") + what + " '" + name +
                       "' is listed twice");
    }
    return Status::success();
  };
  if (Status status = checkNames(dynamic.inputs, module.inputs, "input");
      !status.isOk())
    return status;
  if (Status status = checkNames(dynamic.outputs, module.outputs, "output");
      !status.isOk())
    return status;
  for (const ModuleProgram *program : module.getPrograms()) {
    std::string where =
        "the program of batch " + std::to_string(program->batch);
    if (program->inputs != module.inputs || program->outputs != module.outputs)
      return invalid(where + " has other inputs or outputs than the first");
    for (const std::vector<std::string> *list :
         {&module.inputs, &module.outputs})
      for (const std::string &name : *list) {
        const TensorSpec &first = module.findBuffer(name)->tensor;
        const TensorSpec &own = program->findBuffer(name)->tensor;
        std::string at = where + ": '" + name + "'";
        if (own.elementType != first.elementType ||
            own.shape.size() != first.shape.size())
          return invalid(at + " differs in element type or rank");
        if (!module.isBatched(name)) {
          if (own.shape != first.shape)
            return invalid(at + " does not carry the batch but differs in "
                                "shape");
          continue;
        }
        if (own.shape.empty() || own.shape[0] % program->batch != 0 ||
            first.shape[0] % module.batch != 0 ||
            own.shape[0] / program->batch != first.shape[0] / module.batch ||
            !std::equal(own.shape.begin() + 1, own.shape.end(),
                        first.shape.begin() + 1))
          return invalid(at + " carries the batch, but its shape does not "
                              "scale with the batch size in its outermost "
                              "dimension alone");
      }
  }
  return Status::success();
}

Status RuntimeModule::verify() const {
  for (const ModuleProgram *program : getPrograms())
    if (Status status = program->verify(); !status.isOk())
      return program == this || !dynamicBatch
                 ? status
                 : status.withContext("the program of batch " +
                                      std::to_string(program->batch));
  if (!dynamicBatch) {
    if (batch != 0 || !specializations.empty())
      return invalid("a batch size or specialisations, but no dynamic batch");
    return Status::success();
  }
  return verifyPrograms(*this);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {
/// Lays out blobs in the data section.
struct BlobWriter {
  std::string data;
  /// Where each distinct blob went: equal bytes are stored once (the
  /// programs of a dynamic batch share constants and binaries).
  std::map<std::string, int64_t> offsets;

  json::Value add(const std::string &bytes) {
    auto [at, added] = offsets.emplace(bytes, 0);
    if (added) {
      data.resize(alignUp(data.size()), '\0');
      at->second = int64_t(data.size());
      data += bytes;
    }
    json::Value blob = json::Value::object();
    blob.set("offset", at->second);
    blob.set("bytes", int64_t(bytes.size()));
    blob.set("hash", hashBytes(bytes));
    return blob;
  }
};
} // namespace

static json::Value tensorList(const std::vector<TensorSpec> &tensors) {
  json::Value list = json::Value::array();
  for (const TensorSpec &tensor : tensors)
    list.push(toJson(tensor));
  return list;
}

static json::Value stringList(const std::vector<std::string> &strings) {
  json::Value list = json::Value::array();
  for (const std::string &item : strings)
    list.push(item);
  return list;
}

/// Writes `program`'s buffers, inputs, outputs, plans and steps into
/// `header`.
static void writeProgram(const ModuleProgram &program, BlobWriter &blobs,
                         json::Value &header) {
  json::Value buffers = json::Value::array();
  for (const ModuleBuffer &buffer : program.buffers) {
    json::Value item = toJson(buffer.tensor);
    item.set("kind", stringifyBufferKind(buffer.kind));
    if (buffer.kind == ModuleBuffer::Kind::Alias)
      item.set("alias_of", buffer.aliasOf);
    if (buffer.kind == ModuleBuffer::Kind::Constant)
      item.set("data", blobs.add(buffer.data));
    buffers.push(std::move(item));
  }
  header.set("buffers", std::move(buffers));
  header.set("inputs", stringList(program.inputs));
  header.set("outputs", stringList(program.outputs));
  json::Value plans = json::Value::array();
  for (const ModulePlan &plan : program.plans) {
    json::Value item = json::Value::object();
    item.set("key", plan.key);
    item.set("function", plan.function);
    item.set("plan_name", plan.planName);
    item.set("plan_hash", plan.planHash);
    item.set("inputs", tensorList(plan.inputs));
    item.set("outputs", tensorList(plan.outputs));
    json::Value tolerance = json::Value::object();
    tolerance.set("relative", plan.tolerance.relative);
    tolerance.set("absolute", plan.tolerance.absolute);
    item.set("tolerance", std::move(tolerance));
    if (plan.plan)
      item.set("plan", toJson(*plan.plan));
    if (plan.reference)
      item.set("reference", toJson(*plan.reference));
    json::Value binaries = json::Value::array();
    for (const SourceBinary &binary : plan.binaries) {
      json::Value entry = json::Value::object();
      entry.set("source", binary.source);
      entry.set("arch", binary.arch);
      if (!binary.cubin.empty())
        entry.set("cubin", blobs.add(binary.cubin));
      if (!binary.ptx.empty())
        entry.set("ptx", blobs.add(binary.ptx));
      binaries.push(std::move(entry));
    }
    item.set("binaries", std::move(binaries));
    plans.push(std::move(item));
  }
  header.set("plans", std::move(plans));
  json::Value steps = json::Value::array();
  for (const ModuleStep &step : program.steps) {
    json::Value item = json::Value::object();
    if (step.kind == ModuleStep::Kind::Copy) {
      item.set("kind", "copy");
      item.set("from", step.from);
      item.set("to", step.to);
    } else {
      item.set("kind", "plan");
      item.set("plan", int64_t(step.plan));
      item.set("inputs", stringList(step.inputs));
      item.set("outputs", stringList(step.outputs));
    }
    steps.push(std::move(item));
  }
  header.set("steps", std::move(steps));
}

std::string kopt::runtime::writeRuntimeModule(const RuntimeModule &module) {
  BlobWriter blobs;
  json::Value header = json::Value::object();
  header.set("schema", RuntimeModule::kSchema);
  header.set("name", module.name);
  header.set("producer", module.producer);
  header.set("arch", module.arch);
  writeProgram(module, blobs, header);
  if (module.dynamicBatch) {
    const DynamicBatch &dynamic = *module.dynamicBatch;
    header.set("batch", module.batch);
    json::Value info = json::Value::object();
    info.set("independent", dynamic.independent);
    if (!dynamic.independent)
      info.set("reason", dynamic.reason);
    info.set("inputs", stringList(dynamic.inputs));
    info.set("outputs", stringList(dynamic.outputs));
    header.set("dynamic_batch", std::move(info));
    json::Value programs = json::Value::array();
    for (const ModuleProgram &program : module.specializations) {
      json::Value item = json::Value::object();
      item.set("batch", program.batch);
      writeProgram(program, blobs, item);
      programs.push(std::move(item));
    }
    header.set("specializations", std::move(programs));
  }

  std::string text = json::write(header);
  std::string file(kMagic, sizeof(kMagic));
  uint64_t length = text.size();
  for (int i = 0; i < 8; ++i)
    file.push_back(char((length >> (8 * i)) & 0xff));
  file += text;
  file.resize(alignUp(file.size()), '\0');
  file += blobs.data;
  return file;
}

Status kopt::runtime::saveRuntimeModule(const RuntimeModule &module,
                                        const std::string &path,
                                        const ProtectedFiles &protect) {
  return writeOutputFile(path, writeRuntimeModule(module), protect);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {
/// Resolves blobs against the data section.
struct BlobReader {
  std::string_view data;

  Result<std::string> get(const json::Value *blob, const std::string &where) {
    if (!blob)
      return std::string();
    FieldReader read(*blob, where);
    int64_t offset = read.integer("offset", 0, 0, INT64_MAX, true);
    int64_t bytes = read.integer("bytes", 0, 0, INT64_MAX, true);
    std::string hash = read.string("hash");
    if (!read.isOk())
      return read.status();
    if (uint64_t(offset) > data.size() ||
        uint64_t(bytes) > data.size() - uint64_t(offset))
      return invalid(where + ": the blob lies outside the file (truncated?)");
    std::string value(data.substr(size_t(offset), size_t(bytes)));
    if (hashBytes(value) != hash)
      return invalid(where + ": the blob does not match its hash (damaged)");
    return value;
  }
};
} // namespace

static Result<std::vector<TensorSpec>> readTensors(const json::Value *list,
                                                   const std::string &where) {
  std::vector<TensorSpec> tensors;
  for (size_t i = 0; list && i < list->size(); ++i) {
    auto tensor = tensorSpecFromJson(list->at(i));
    if (!tensor)
      return tensor.status().withContext(where);
    tensors.push_back(std::move(*tensor));
  }
  return tensors;
}

static Result<ModulePlan> readPlan(const json::Value &value, BlobReader &blobs,
                                   const std::string &where) {
  FieldReader read(value, where);
  ModulePlan plan;
  plan.key = read.string("key");
  plan.function = read.string("function");
  plan.planName = read.string("plan_name", false);
  plan.planHash = read.string("plan_hash", false);
  const json::Value *inputs = read.array("inputs");
  const json::Value *outputs = read.array("outputs");
  const json::Value *tolerance = read.object("tolerance", false);
  const json::Value *inlinePlan = read.object("plan", false);
  const json::Value *reference = read.object("reference", false);
  const json::Value *binaries = read.array("binaries", false);
  if (!read.isOk())
    return read.status();
  auto inputSpecs = readTensors(inputs, where + ": inputs");
  if (!inputSpecs)
    return inputSpecs.status();
  plan.inputs = std::move(*inputSpecs);
  auto outputSpecs = readTensors(outputs, where + ": outputs");
  if (!outputSpecs)
    return outputSpecs.status();
  plan.outputs = std::move(*outputSpecs);
  if (tolerance) {
    FieldReader bounds(*tolerance, where + ": tolerance");
    plan.tolerance.relative =
        bounds.number("relative", plan.tolerance.relative);
    plan.tolerance.absolute =
        bounds.number("absolute", plan.tolerance.absolute);
    if (!bounds.isOk())
      return bounds.status();
  }
  if (inlinePlan) {
    auto parsed = kernelPlanFromJson(*inlinePlan);
    if (!parsed)
      return parsed.status().withContext(where);
    plan.plan = std::move(*parsed);
  }
  if (reference) {
    auto fingerprint = deviceFingerprintFromJson(*reference);
    if (!fingerprint)
      return fingerprint.status().withContext(where + ": reference");
    plan.reference = std::move(*fingerprint);
  }
  for (size_t i = 0; binaries && i < binaries->size(); ++i) {
    std::string at = where + ": binary " + std::to_string(i);
    FieldReader entry(binaries->at(i), at);
    SourceBinary binary;
    binary.source = entry.string("source");
    binary.arch = entry.string("arch");
    const json::Value *cubin = entry.object("cubin", false);
    const json::Value *ptx = entry.object("ptx", false);
    if (!entry.isOk())
      return entry.status();
    auto cubinBytes = blobs.get(cubin, at + ": cubin");
    if (!cubinBytes)
      return cubinBytes.status();
    auto ptxBytes = blobs.get(ptx, at + ": ptx");
    if (!ptxBytes)
      return ptxBytes.status();
    binary.cubin = std::move(*cubinBytes);
    binary.ptx = std::move(*ptxBytes);
    plan.binaries.push_back(std::move(binary));
  }
  return plan;
}

static Result<ModuleStep> readStep(const json::Value &value,
                                   const std::string &where) {
  FieldReader read(value, where);
  ModuleStep step;
  std::string kind = read.string("kind");
  if (kind == "copy") {
    step.kind = ModuleStep::Kind::Copy;
    step.from = read.string("from");
    step.to = read.string("to");
  } else if (kind == "plan") {
    step.plan = size_t(read.integer("plan", 0, 0, INT32_MAX, true));
    step.inputs = read.strings("inputs");
    step.outputs = read.strings("outputs");
  } else if (read.isOk()) {
    read.fail("unknown step kind '" + kind + "'");
  }
  if (!read.isOk())
    return read.status();
  return step;
}

/// Reads the buffers, inputs, outputs, plans and steps of `value` into
/// `program`.
static Status readProgram(const json::Value &value, BlobReader &blobs,
                          const std::string &where, ModuleProgram &program) {
  FieldReader read(value, where);
  const json::Value *buffers = read.array("buffers");
  program.inputs = read.strings("inputs");
  program.outputs = read.strings("outputs");
  const json::Value *plans = read.array("plans");
  const json::Value *steps = read.array("steps");
  if (!read.isOk())
    return read.status();
  for (size_t i = 0; i < buffers->size(); ++i) {
    std::string at = where + ": buffer " + std::to_string(i);
    auto tensor = tensorSpecFromJson(buffers->at(i));
    if (!tensor)
      return tensor.status().withContext(at);
    FieldReader entry(buffers->at(i), at);
    ModuleBuffer buffer;
    buffer.tensor = std::move(*tensor);
    std::string kind = entry.string("kind");
    buffer.aliasOf = entry.string("alias_of", false);
    const json::Value *data = entry.object("data", false);
    if (!entry.isOk())
      return entry.status();
    std::optional<ModuleBuffer::Kind> parsed = parseBufferKind(kind);
    if (!parsed)
      return invalid(at + ": unknown kind '" + kind + "'");
    buffer.kind = *parsed;
    auto bytes = blobs.get(data, at + ": data");
    if (!bytes)
      return bytes.status();
    buffer.data = std::move(*bytes);
    program.buffers.push_back(std::move(buffer));
  }
  for (size_t i = 0; i < plans->size(); ++i) {
    auto plan =
        readPlan(plans->at(i), blobs, where + ": plan " + std::to_string(i));
    if (!plan)
      return plan.status();
    program.plans.push_back(std::move(*plan));
  }
  for (size_t i = 0; i < steps->size(); ++i) {
    auto step = readStep(steps->at(i), where + ": step " + std::to_string(i));
    if (!step)
      return step.status();
    program.steps.push_back(std::move(*step));
  }
  return Status::success();
}

Result<RuntimeModule> kopt::runtime::readRuntimeModule(std::string_view bytes,
                                                       std::string_view name) {
  std::string where(name);
  if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    return invalid(where + ": not a kopt runtime module (no KOPTMOD magic)");
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= uint64_t(uint8_t(bytes[8 + i])) << (8 * i);
  if (length > bytes.size() - 16)
    return invalid(where + ": the header is cut short (truncated file?)");
  auto header = json::parse(bytes.substr(16, size_t(length)));
  if (!header)
    return header.status().withContext(where + ": header");
  size_t dataStart = alignUp(16 + size_t(length));
  BlobReader blobs{bytes.size() >= dataStart ? bytes.substr(dataStart)
                                             : std::string_view()};

  FieldReader read(*header, where);
  std::string schema = read.string("schema");
  if (read.isOk() && schema != RuntimeModule::kSchema)
    return Status::error(StatusCode::Unsupported, where + ": schema '" +
                                                      schema + "' is not " +
                                                      RuntimeModule::kSchema);
  RuntimeModule module;
  module.name = read.string("name");
  module.producer = read.string("producer", false);
  module.arch = read.string("arch", false);
  const json::Value *dynamic = read.object("dynamic_batch", false);
  const json::Value *specializations = read.array("specializations", false);
  if (dynamic)
    module.batch = read.integer("batch", 0, 1, INT64_MAX, true);
  if (!read.isOk())
    return read.status();
  if (Status status = readProgram(*header, blobs, where, module);
      !status.isOk())
    return status;
  if (dynamic) {
    FieldReader info(*dynamic, where + ": dynamic_batch");
    DynamicBatch batch;
    batch.independent = info.boolean("independent", false, true);
    batch.reason = info.string("reason", !batch.independent);
    batch.inputs = info.strings("inputs");
    batch.outputs = info.strings("outputs");
    if (!info.isOk())
      return info.status();
    module.dynamicBatch = std::move(batch);
  } else if (specializations) {
    return invalid(where + ": specializations without a dynamic_batch");
  }
  for (size_t i = 0; specializations && i < specializations->size(); ++i) {
    std::string at = where + ": specialization " + std::to_string(i);
    FieldReader entry(specializations->at(i), at);
    ModuleProgram program;
    program.batch = entry.integer("batch", 0, 1, INT64_MAX, true);
    if (!entry.isOk())
      return entry.status();
    if (Status status = readProgram(specializations->at(i), blobs, at, program);
        !status.isOk())
      return status;
    module.specializations.push_back(std::move(program));
  }
  if (Status status = module.verify(); !status.isOk())
    return status.withContext(where);
  return module;
}

Result<RuntimeModule>
kopt::runtime::loadRuntimeModule(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(StatusCode::IoError,
                         "cannot open runtime module '" + path + "'");
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad())
    return Status::error(StatusCode::IoError, "cannot read '" + path + "'");
  return readRuntimeModule(contents.str(), path);
}
