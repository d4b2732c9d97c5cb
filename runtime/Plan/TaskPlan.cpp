//===- TaskPlan.cpp - KernelTask and KernelPlan for the runtime -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reads and writes the documents of docs/KernelPlan.md: the one JSON
// implementation, which the compiler (lib/Codegen) also goes through. Strict:
// a field present with the wrong type is an error rather than a default.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/TaskPlan.h"

#include "kopt/Runtime/ConvLayout.h"

#include "Support/FieldReader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

using namespace kopt::runtime;

static constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

//===----------------------------------------------------------------------===//
// Element types and tensors
//===----------------------------------------------------------------------===//

namespace {
struct ElementTypeName {
  ElementType type;
  const char *name;
  int64_t bytes;
};
} // namespace

static const ElementTypeName kElementTypes[] = {
    {ElementType::F16, "f16", 2}, {ElementType::BF16, "bf16", 2},
    {ElementType::F32, "f32", 4}, {ElementType::F64, "f64", 8},
    {ElementType::I1, "i1", 1},   {ElementType::I8, "i8", 1},
    {ElementType::I16, "i16", 2}, {ElementType::I32, "i32", 4},
    {ElementType::I64, "i64", 8},
};

const char *kopt::runtime::stringifyElementType(ElementType type) {
  for (const ElementTypeName &entry : kElementTypes)
    if (entry.type == type)
      return entry.name;
  return "?";
}

std::optional<ElementType>
kopt::runtime::parseElementType(std::string_view text) {
  for (const ElementTypeName &entry : kElementTypes)
    if (text == entry.name)
      return entry.type;
  return std::nullopt;
}

int64_t kopt::runtime::getElementBytes(ElementType type) {
  for (const ElementTypeName &entry : kElementTypes)
    if (entry.type == type)
      return entry.bytes;
  return 0;
}

std::optional<int64_t> TensorSpec::getNumElements() const {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || (dim != 0 && count > kMaxInt64 / dim))
      return std::nullopt;
    count *= dim;
  }
  return count;
}

std::optional<int64_t> TensorSpec::getBytes() const {
  std::optional<int64_t> count = getNumElements();
  int64_t bytes = getElementBytes(elementType);
  if (!count || *count > kMaxInt64 / bytes)
    return std::nullopt;
  return *count * bytes;
}

bool kopt::runtime::isKnownPrecision(std::string_view precision) {
  return precision == "fp32" || precision == "fp32-ieee" ||
         precision == "tf32" || precision == "bf16";
}

bool kopt::runtime::isKnownArithmetic(std::string_view arithmetic) {
  return arithmetic == "fp32" || arithmetic == "3xtf32";
}

bool kopt::runtime::isArithmeticAllowed(std::string_view precision,
                                        std::string_view arithmetic) {
  return isKnownArithmetic(arithmetic) &&
         (precision != "fp32-ieee" || arithmetic == "fp32");
}

bool kopt::runtime::isValidPlanArch(std::string_view arch) {
  if (arch.empty())
    return true;
  if (arch.size() < 5 || arch.substr(0, 3) != "sm_" || arch.back() != 'a')
    return false;
  std::string_view number = arch.substr(3, arch.size() - 4);
  return std::all_of(number.begin(), number.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

Result<std::string>
kopt::runtime::getCompileArch(const KernelPlan &plan,
                              const std::string &deviceArch) {
  if (plan.arch.empty())
    return deviceArch;
  if (!isValidPlanArch(plan.arch))
    return Status::error(StatusCode::InvalidArgument,
                         "plan architecture '" + plan.arch +
                             "' is not an architecture-specific target");
  if (plan.arch.substr(0, plan.arch.size() - 1) != deviceArch &&
      plan.arch != deviceArch)
    return Status::error(StatusCode::Unsupported,
                         "the plan needs " + plan.arch + ", which " +
                             deviceArch + " does not run");
  return plan.arch;
}

bool TensorSpec::operator==(const TensorSpec &other) const {
  return name == other.name && elementType == other.elementType &&
         shape == other.shape;
}

Result<TensorSpec> kopt::runtime::tensorSpecFromJson(const json::Value &value) {
  FieldReader read(value, "tensor");
  TensorSpec tensor;
  tensor.name = read.string("name");
  std::string element = read.string("element_type");
  const json::Value *shape = read.array("shape");
  if (!read.isOk())
    return read.status();
  std::string where = "tensor '" + tensor.name + "'";
  if (tensor.name.empty())
    return Status::error(StatusCode::InvalidArgument,
                         where + ": the name is empty");
  std::optional<ElementType> type = parseElementType(element);
  if (!type)
    return Status::error(StatusCode::InvalidArgument,
                         where + ": unknown element type '" + element + "'");
  tensor.elementType = *type;
  for (size_t i = 0, e = shape->size(); i < e; ++i) {
    std::optional<int64_t> dim = shape->at(i).getInteger();
    if (!dim || *dim < 0)
      return Status::error(StatusCode::InvalidArgument,
                           where + ": dimension " + std::to_string(i) +
                               " is not a non-negative integer");
    tensor.shape.push_back(*dim);
  }
  if (!tensor.getBytes())
    return Status::error(StatusCode::OutOfRange,
                         where + ": the size overflows 64 bits");
  return tensor;
}

json::Value kopt::runtime::toJson(const TensorSpec &tensor) {
  json::Value shape = json::Value::array();
  for (int64_t dim : tensor.shape)
    shape.push(dim);
  json::Value object = json::Value::object();
  object.set("name", tensor.name);
  object.set("element_type", stringifyElementType(tensor.elementType));
  object.set("shape", std::move(shape));
  return object;
}

/// Reads the array of tensors `field` of `read`'s object into `list`.
static Status readTensors(FieldReader &read, std::string_view field,
                          bool required, std::vector<TensorSpec> &list) {
  // A missing or mistyped field is left in `read` for the caller to report.
  const json::Value *array = read.array(field, required);
  if (!read.isOk() || !array)
    return Status::success();
  for (size_t i = 0, e = array->size(); i < e; ++i) {
    Result<TensorSpec> tensor = tensorSpecFromJson(array->at(i));
    if (!tensor)
      return tensor.status().withContext(std::string(field) + "[" +
                                         std::to_string(i) + "]");
    list.push_back(std::move(*tensor));
  }
  return Status::success();
}

/// Checks that `object` declares schema `<kind>/<version>`.
static Status checkSchema(const json::Value &object, const std::string &kind,
                          int64_t version) {
  std::string expected = kind + "/" + std::to_string(version);
  const json::Value *schema = object.find("schema");
  if (!schema)
    return Status::error(StatusCode::InvalidArgument,
                         "missing 'schema' (expected '" + expected + "')");
  const std::string *text = schema->getString();
  if (!text || *text != expected)
    return Status::error(StatusCode::Unsupported,
                         "schema " + (text ? "'" + *text + "'" : "value") +
                             " is not supported (this kopt reads '" + expected +
                             "')");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// KernelTask
//===----------------------------------------------------------------------===//

const TensorSpec *KernelTask::findTensor(std::string_view name) const {
  for (const std::vector<TensorSpec> *list : {&inputs, &outputs})
    for (const TensorSpec &tensor : *list)
      if (tensor.name == name)
        return &tensor;
  return nullptr;
}

Result<KernelTask> kopt::runtime::kernelTaskFromJson(const json::Value &value) {
  if (!value.isObject())
    return Status::error(StatusCode::InvalidArgument,
                         "task: expected a JSON object");
  if (Status status =
          checkSchema(value, "kopt.task", KernelTask::kSchemaVersion);
      !status.isOk())
    return status.withContext("task");
  FieldReader read(value, "task");
  KernelTask task;
  task.key = read.string("key");
  task.mlir = read.string("mlir");
  task.name = read.string("name", /*required=*/false);
  task.kind = read.string("kind", /*required=*/false);
  if (value.find("precision"))
    task.precision = read.string("precision");
  if (const json::Value *tolerance = read.object("tolerance", false)) {
    FieldReader readTolerance(*tolerance, "task: tolerance");
    task.tolerance.relative =
        readTolerance.number("relative", task.tolerance.relative);
    task.tolerance.absolute =
        readTolerance.number("absolute", task.tolerance.absolute);
    if (!readTolerance.isOk())
      return readTolerance.status();
    if (!(task.tolerance.relative >= 0) || !(task.tolerance.absolute >= 0))
      return Status::error(StatusCode::InvalidArgument,
                           "task: tolerances must be non-negative");
  }
  if (Status status = readTensors(read, "inputs", true, task.inputs);
      !status.isOk())
    return status.withContext("task");
  if (Status status = readTensors(read, "outputs", true, task.outputs);
      !status.isOk())
    return status.withContext("task");
  if (!read.isOk())
    return read.status();
  if (task.key.empty())
    return Status::error(StatusCode::InvalidArgument, "task: 'key' is empty");
  if (task.outputs.empty())
    return Status::error(StatusCode::InvalidArgument, "task: no outputs");
  std::vector<std::string> names;
  for (const std::vector<TensorSpec> *list : {&task.inputs, &task.outputs})
    for (const TensorSpec &tensor : *list) {
      for (const std::string &name : names)
        if (name == tensor.name)
          return Status::error(StatusCode::InvalidArgument,
                               "task: tensor name '" + name +
                                   "' is used twice");
      names.push_back(tensor.name);
    }
  return task;
}

json::Value kopt::runtime::toJson(const KernelTask &task) {
  json::Value inputs = json::Value::array(), outputs = json::Value::array();
  for (const TensorSpec &tensor : task.inputs)
    inputs.push(toJson(tensor));
  for (const TensorSpec &tensor : task.outputs)
    outputs.push(toJson(tensor));
  json::Value tolerance = json::Value::object();
  tolerance.set("relative", task.tolerance.relative);
  tolerance.set("absolute", task.tolerance.absolute);
  json::Value object = json::Value::object();
  object.set("schema",
             "kopt.task/" + std::to_string(KernelTask::kSchemaVersion));
  object.set("key", task.key);
  object.set("name", task.name);
  object.set("kind", task.kind);
  object.set("inputs", std::move(inputs));
  object.set("outputs", std::move(outputs));
  object.set("tolerance", std::move(tolerance));
  object.set("precision", task.precision);
  object.set("mlir", task.mlir);
  return object;
}

//===----------------------------------------------------------------------===//
// KernelPlan
//===----------------------------------------------------------------------===//

unsigned KernelPlan::countLaunches() const {
  unsigned count = 0;
  for (const PlanStep &step : steps)
    if (step.kind == PlanStep::Kind::Launch)
      ++count;
  return count;
}

const KernelSource *KernelPlan::findSource(std::string_view id) const {
  for (const KernelSource &source : sources)
    if (source.id == id)
      return &source;
  return nullptr;
}

/// Reads `field` (strides or dilations): `count` positive integers.
static void readSizes(FieldReader &read, std::string_view field, size_t count,
                      std::vector<int64_t> &sizes) {
  const json::Value *items = read.array(field);
  if (!items)
    return;
  if (items->size() != count)
    return read.fail("'" + std::string(field) + "' needs " +
                     std::to_string(count) + " entries");
  sizes.clear();
  for (size_t i = 0; i < count; ++i) {
    std::optional<int64_t> number = items->at(i).getInteger();
    if (!number || *number < 1)
      return read.fail("'" + std::string(field) +
                       "' entries must be positive integers");
    sizes.push_back(*number);
  }
}

/// Reads a conv step's `padding`: `count` integers of at least 0.
static void readPadding(FieldReader &read, size_t count,
                        std::vector<int64_t> &padding) {
  const json::Value *items = read.array("padding");
  if (!items)
    return;
  if (items->size() != count)
    return read.fail("'padding' needs " + std::to_string(count) + " entries");
  padding.clear();
  for (size_t i = 0; i < count; ++i) {
    std::optional<int64_t> number = items->at(i).getInteger();
    if (!number || *number < 0)
      return read.fail("'padding' entries must be integers of at least 0");
    padding.push_back(*number);
  }
}

/// Reads step `index` of a plan.
static Result<PlanStep> planStepFromJson(const json::Value &value,
                                         size_t index) {
  FieldReader read(value, "plan: step " + std::to_string(index));
  PlanStep step;
  step.comment = read.string("comment", /*required=*/false);
  std::string kind = read.string("kind");
  if (!read.isOk())
    return read.status();
  if (kind == "launch") {
    step.kind = PlanStep::Kind::Launch;
    LaunchStep &launch = step.launch;
    launch.source = read.string("source");
    launch.entry = read.string("entry");
    std::vector<std::string> grid = read.strings("grid", true, true);
    std::vector<std::string> block = read.strings("block", true, true);
    if (read.isOk() && (grid.size() != 3 || block.size() != 3))
      read.fail("'grid' and 'block' need 3 entries each");
    if (read.isOk()) {
      std::copy(grid.begin(), grid.end(), launch.grid.begin());
      std::copy(block.begin(), block.end(), launch.block.begin());
    }
    launch.sharedBytes =
        read.integer("shared_bytes", 0, 0, std::numeric_limits<int32_t>::max());
    launch.cluster = read.integer("cluster", 1, 1, 16);
    launch.cooperative = read.boolean("cooperative", false);
    launch.args = read.strings("args", true, false);
  } else if (kind == "gemm") {
    step.kind = PlanStep::Kind::Gemm;
    GemmStep &gemm = step.gemm;
    gemm.a = read.string("a");
    gemm.b = read.string("b");
    gemm.c = read.string("c");
    gemm.bias = read.string("bias", /*required=*/false);
    gemm.batch = read.integer("batch", 1, 1, kMaxInt64);
    gemm.m = read.integer("m", 0, 1, kMaxInt64, /*required=*/true);
    gemm.n = read.integer("n", 0, 1, kMaxInt64, /*required=*/true);
    gemm.k = read.integer("k", 0, 1, kMaxInt64, /*required=*/true);
    gemm.transposeA = read.boolean("transpose_a", false);
    gemm.transposeB = read.boolean("transpose_b", false);
    if (value.find("activation"))
      gemm.activation = read.string("activation");
    if (read.isOk() && gemm.activation != "none" && gemm.activation != "relu" &&
        gemm.activation != "gelu")
      read.fail("unknown activation '" + gemm.activation + "'");
    gemm.scale = read.number("scale", 1.0);
    if (read.isOk() && !std::isfinite(gemm.scale))
      read.fail("scale must be finite");
  } else if (kind == "conv") {
    step.kind = PlanStep::Kind::Conv;
    ConvStep &conv = step.conv;
    conv.input = read.string("input");
    conv.filter = read.string("filter");
    conv.output = read.string("output");
    conv.layout = read.string("layout");
    const ConvLayout *layout = findConvLayout(conv.layout);
    if (read.isOk() && !layout)
      read.fail("unknown layout '" + conv.layout + "'");
    if (read.isOk()) {
      readSizes(read, "strides", layout->spatial.size(), conv.strides);
      readSizes(read, "dilations", layout->spatial.size(), conv.dilations);
      // Absent in plans without padding (and those written before it).
      if (value.find("padding"))
        readPadding(read, layout->spatial.size(), conv.padding);
    }
    // Absent in plans written before grouped layouts existed.
    conv.groups = read.integer("groups", 1, 1, kMaxInt64);
  } else {
    read.fail("unknown kind '" + kind + "' (expected launch, gemm or conv)");
  }
  if (!read.isOk())
    return read.status();
  return step;
}

Result<KernelPlan> kopt::runtime::kernelPlanFromJson(const json::Value &value) {
  if (!value.isObject())
    return Status::error(StatusCode::InvalidArgument,
                         "plan: expected a JSON object");
  if (Status status =
          checkSchema(value, "kopt.plan", KernelPlan::kSchemaVersion);
      !status.isOk())
    return status.withContext("plan");
  FieldReader read(value, "plan");
  KernelPlan plan;
  plan.taskKey = read.string("task_key");
  plan.proposer = read.string("proposer");
  plan.variant = read.string("variant", /*required=*/false);
  plan.compileOptions = read.strings("compile_options", /*required=*/false);
  if (value.find("arithmetic"))
    plan.arithmetic = read.string("arithmetic");
  if (read.isOk() && !isKnownArithmetic(plan.arithmetic))
    read.fail("unknown arithmetic '" + plan.arithmetic +
              "' (expected fp32 or 3xtf32)");
  if (read.isOk() && value.find("arch")) {
    plan.arch = read.string("arch");
    if (read.isOk() && (plan.arch.empty() || !isValidPlanArch(plan.arch)))
      read.fail("arch '" + plan.arch +
                "' is not an architecture-specific target such as sm_90a");
  }
  if (Status status = readTensors(read, "temporaries", false, plan.temporaries);
      !status.isOk())
    return status.withContext("plan");
  const json::Value *sources = read.array("sources", /*required=*/false);
  const json::Value *steps = read.array("steps");
  if (!read.isOk())
    return read.status();
  if (sources)
    for (size_t i = 0, e = sources->size(); i < e; ++i) {
      FieldReader readSource(sources->at(i),
                             "plan: source " + std::to_string(i));
      KernelSource source;
      source.id = readSource.string("id");
      source.code = readSource.string("code");
      if (!readSource.isOk())
        return readSource.status();
      if (plan.findSource(source.id))
        return Status::error(StatusCode::InvalidArgument,
                             "plan: source id '" + source.id +
                                 "' is used twice");
      plan.sources.push_back(std::move(source));
    }
  for (size_t i = 0, e = steps->size(); i < e; ++i) {
    Result<PlanStep> step = planStepFromJson(steps->at(i), i);
    if (!step)
      return step.status();
    if (step->kind == PlanStep::Kind::Launch &&
        !plan.findSource(step->launch.source))
      return Status::error(StatusCode::InvalidArgument,
                           "plan: step " + std::to_string(i) +
                               ": unknown source '" + step->launch.source +
                               "'");
    plan.steps.push_back(std::move(*step));
  }
  if (plan.steps.empty())
    return Status::error(StatusCode::InvalidArgument, "plan: no steps");
  return plan;
}

/// Writes a list of strings.
static json::Value toJsonArray(const std::vector<std::string> &items) {
  json::Value array = json::Value::array();
  for (const std::string &item : items)
    array.push(item);
  return array;
}

/// Writes one plan step with the compiler's field names.
static json::Value stepToJson(const PlanStep &step) {
  json::Value object = json::Value::object();
  object.set("comment", step.comment);
  switch (step.kind) {
  case PlanStep::Kind::Launch: {
    const LaunchStep &launch = step.launch;
    object.set("kind", "launch");
    object.set("source", launch.source);
    object.set("entry", launch.entry);
    object.set("grid", toJsonArray({launch.grid.begin(), launch.grid.end()}));
    object.set("block",
               toJsonArray({launch.block.begin(), launch.block.end()}));
    object.set("shared_bytes", launch.sharedBytes);
    // Only where set, so plans without clusters keep their content hash.
    if (launch.cluster != 1)
      object.set("cluster", launch.cluster);
    if (launch.cooperative)
      object.set("cooperative", true);
    object.set("args", toJsonArray(launch.args));
    break;
  }
  case PlanStep::Kind::Gemm: {
    const GemmStep &gemm = step.gemm;
    object.set("kind", "gemm");
    object.set("a", gemm.a);
    object.set("b", gemm.b);
    object.set("c", gemm.c);
    object.set("bias", gemm.bias);
    object.set("batch", gemm.batch);
    object.set("m", gemm.m);
    object.set("n", gemm.n);
    object.set("k", gemm.k);
    object.set("transpose_a", gemm.transposeA);
    object.set("transpose_b", gemm.transposeB);
    object.set("activation", gemm.activation);
    if (gemm.scale != 1.0)
      object.set("scale", gemm.scale);
    break;
  }
  case PlanStep::Kind::Conv: {
    const ConvStep &conv = step.conv;
    object.set("kind", "conv");
    object.set("input", conv.input);
    object.set("filter", conv.filter);
    object.set("output", conv.output);
    object.set("layout", conv.layout);
    json::Value strides = json::Value::array();
    json::Value dilations = json::Value::array();
    for (int64_t stride : conv.strides)
      strides.push(stride);
    for (int64_t dilation : conv.dilations)
      dilations.push(dilation);
    object.set("strides", std::move(strides));
    object.set("dilations", std::move(dilations));
    // Written only where there is padding, so that unpadded plans read and
    // write as they did before padding existed.
    if (!conv.padding.empty()) {
      json::Value padding = json::Value::array();
      for (int64_t size : conv.padding)
        padding.push(size);
      object.set("padding", std::move(padding));
    }
    // Written only where it says something, so that ungrouped plans read
    // and write as they did before groups existed.
    if (conv.groups != 1)
      object.set("groups", conv.groups);
    break;
  }
  }
  return object;
}

json::Value kopt::runtime::toJson(const KernelPlan &plan) {
  json::Value temporaries = json::Value::array();
  for (const TensorSpec &tensor : plan.temporaries)
    temporaries.push(toJson(tensor));
  json::Value sources = json::Value::array();
  for (const KernelSource &source : plan.sources) {
    json::Value object = json::Value::object();
    object.set("id", source.id);
    object.set("code", source.code);
    sources.push(std::move(object));
  }
  json::Value steps = json::Value::array();
  for (const PlanStep &step : plan.steps)
    steps.push(stepToJson(step));
  json::Value object = json::Value::object();
  object.set("schema",
             "kopt.plan/" + std::to_string(KernelPlan::kSchemaVersion));
  object.set("task_key", plan.taskKey);
  object.set("proposer", plan.proposer);
  object.set("variant", plan.variant);
  object.set("temporaries", std::move(temporaries));
  object.set("sources", std::move(sources));
  object.set("steps", std::move(steps));
  object.set("compile_options", toJsonArray(plan.compileOptions));
  // Written only where it says something, so that fp32 plans read and
  // write (and hash) as they did before the field existed.
  if (plan.arithmetic != "fp32")
    object.set("arithmetic", plan.arithmetic);
  if (!plan.arch.empty())
    object.set("arch", plan.arch);
  return object;
}
