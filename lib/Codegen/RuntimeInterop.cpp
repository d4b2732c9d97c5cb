//===- RuntimeInterop.cpp - Compiler structs to runtime structs -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/RuntimeInterop.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::kopt;

namespace rt = ::kopt::runtime;

rt::ElementType mlir::kopt::toRuntime(ElementType type) {
  switch (type) {
  case ElementType::F16:
    return rt::ElementType::F16;
  case ElementType::BF16:
    return rt::ElementType::BF16;
  case ElementType::F32:
    return rt::ElementType::F32;
  case ElementType::F64:
    return rt::ElementType::F64;
  case ElementType::I1:
    return rt::ElementType::I1;
  case ElementType::I8:
    return rt::ElementType::I8;
  case ElementType::I16:
    return rt::ElementType::I16;
  case ElementType::I32:
    return rt::ElementType::I32;
  case ElementType::I64:
    return rt::ElementType::I64;
  }
  llvm_unreachable("unknown element type");
}

rt::TensorSpec mlir::kopt::toRuntime(const TensorSpec &tensor) {
  return rt::TensorSpec{tensor.name, toRuntime(tensor.elementType),
                        tensor.shape};
}

static std::vector<rt::TensorSpec>
toRuntime(const std::vector<TensorSpec> &tensors) {
  std::vector<rt::TensorSpec> converted;
  converted.reserve(tensors.size());
  for (const TensorSpec &tensor : tensors)
    converted.push_back(toRuntime(tensor));
  return converted;
}

rt::KernelTask mlir::kopt::toRuntime(const KernelTask &task) {
  rt::KernelTask converted;
  converted.key = task.key;
  converted.name = task.name;
  converted.kind = task.kind;
  converted.inputs = ::toRuntime(task.inputs);
  converted.outputs = ::toRuntime(task.outputs);
  converted.mlir = task.mlir;
  converted.tolerance.relative = task.tolerance.relative;
  converted.tolerance.absolute = task.tolerance.absolute;
  converted.precision = task.precision;
  return converted;
}

static rt::PlanStep toRuntime(const PlanStep &step) {
  rt::PlanStep converted;
  switch (step.kind) {
  case PlanStep::Kind::Launch:
    converted.kind = rt::PlanStep::Kind::Launch;
    break;
  case PlanStep::Kind::Gemm:
    converted.kind = rt::PlanStep::Kind::Gemm;
    break;
  case PlanStep::Kind::Conv:
    converted.kind = rt::PlanStep::Kind::Conv;
    break;
  }
  converted.comment = step.comment;
  const LaunchStep &launch = step.launch;
  converted.launch =
      rt::LaunchStep{launch.source, launch.entry,       launch.grid,
                     launch.block,  launch.sharedBytes, launch.args};
  const GemmStep &gemm = step.gemm;
  rt::GemmStep &toGemm = converted.gemm;
  toGemm.a = gemm.a;
  toGemm.b = gemm.b;
  toGemm.c = gemm.c;
  toGemm.bias = gemm.bias;
  toGemm.batch = gemm.batch;
  toGemm.m = gemm.m;
  toGemm.n = gemm.n;
  toGemm.k = gemm.k;
  toGemm.transposeA = gemm.transposeA;
  toGemm.transposeB = gemm.transposeB;
  toGemm.activation = gemm.activation;
  const ConvStep &conv = step.conv;
  converted.conv = rt::ConvStep{conv.input,  conv.filter,  conv.output,
                                conv.layout, conv.strides, conv.dilations};
  return converted;
}

rt::KernelPlan mlir::kopt::toRuntime(const KernelPlan &plan) {
  rt::KernelPlan converted;
  converted.taskKey = plan.taskKey;
  converted.proposer = plan.proposer;
  converted.variant = plan.variant;
  converted.temporaries = ::toRuntime(plan.temporaries);
  for (const KernelSource &source : plan.sources)
    converted.sources.push_back(rt::KernelSource{source.id, source.code});
  for (const PlanStep &step : plan.steps)
    converted.steps.push_back(::toRuntime(step));
  converted.compileOptions = plan.compileOptions;
  return converted;
}

rt::json::Value mlir::kopt::toRuntime(const llvm::json::Value &value) {
  switch (value.kind()) {
  case llvm::json::Value::Null:
    return nullptr;
  case llvm::json::Value::Boolean:
    return *value.getAsBoolean();
  case llvm::json::Value::Number:
    if (std::optional<int64_t> integer = value.getAsInteger())
      return *integer;
    if (std::optional<uint64_t> integer = value.getAsUINT64())
      return *integer;
    return *value.getAsNumber();
  case llvm::json::Value::String:
    return value.getAsString()->str();
  case llvm::json::Value::Array: {
    rt::json::Value array = rt::json::Value::array();
    for (const llvm::json::Value &item : *value.getAsArray())
      array.push(toRuntime(item));
    return array;
  }
  case llvm::json::Value::Object: {
    // llvm::json::Object is unordered; sort so the copy is deterministic.
    const llvm::json::Object &members = *value.getAsObject();
    std::vector<llvm::StringRef> keys;
    for (const auto &member : members)
      keys.push_back(member.first);
    llvm::sort(keys);
    rt::json::Value object = rt::json::Value::object();
    for (llvm::StringRef key : keys)
      object.set(std::string_view(key.data(), key.size()),
                 toRuntime(*members.get(key)));
    return object;
  }
  }
  llvm_unreachable("unknown JSON kind");
}

ElementType mlir::kopt::fromRuntime(rt::ElementType type) {
  // Both spell element types as MLIR does.
  return *parseElementType(rt::stringifyElementType(type));
}

TensorSpec mlir::kopt::fromRuntime(const rt::TensorSpec &tensor) {
  return TensorSpec{tensor.name, fromRuntime(tensor.elementType), tensor.shape};
}

static std::vector<TensorSpec>
fromRuntime(const std::vector<rt::TensorSpec> &tensors) {
  std::vector<TensorSpec> converted;
  converted.reserve(tensors.size());
  for (const rt::TensorSpec &tensor : tensors)
    converted.push_back(fromRuntime(tensor));
  return converted;
}

KernelTask mlir::kopt::fromRuntime(const rt::KernelTask &task) {
  KernelTask converted;
  converted.key = task.key;
  converted.name = task.name;
  converted.kind = task.kind;
  converted.inputs = ::fromRuntime(task.inputs);
  converted.outputs = ::fromRuntime(task.outputs);
  converted.mlir = task.mlir;
  converted.tolerance.relative = task.tolerance.relative;
  converted.tolerance.absolute = task.tolerance.absolute;
  converted.precision = task.precision;
  return converted;
}

static PlanStep fromRuntime(const rt::PlanStep &step) {
  PlanStep converted;
  switch (step.kind) {
  case rt::PlanStep::Kind::Launch:
    converted.kind = PlanStep::Kind::Launch;
    break;
  case rt::PlanStep::Kind::Gemm:
    converted.kind = PlanStep::Kind::Gemm;
    break;
  case rt::PlanStep::Kind::Conv:
    converted.kind = PlanStep::Kind::Conv;
    break;
  }
  converted.comment = step.comment;
  const rt::LaunchStep &launch = step.launch;
  converted.launch = LaunchStep{launch.source, launch.entry,       launch.grid,
                                launch.block,  launch.sharedBytes, launch.args};
  const rt::GemmStep &gemm = step.gemm;
  GemmStep &toGemm = converted.gemm;
  toGemm.a = gemm.a;
  toGemm.b = gemm.b;
  toGemm.c = gemm.c;
  toGemm.bias = gemm.bias;
  toGemm.batch = gemm.batch;
  toGemm.m = gemm.m;
  toGemm.n = gemm.n;
  toGemm.k = gemm.k;
  toGemm.transposeA = gemm.transposeA;
  toGemm.transposeB = gemm.transposeB;
  toGemm.activation = gemm.activation;
  const rt::ConvStep &conv = step.conv;
  converted.conv = ConvStep{conv.input,  conv.filter,  conv.output,
                            conv.layout, conv.strides, conv.dilations};
  return converted;
}

KernelPlan mlir::kopt::fromRuntime(const rt::KernelPlan &plan) {
  KernelPlan converted;
  converted.taskKey = plan.taskKey;
  converted.proposer = plan.proposer;
  converted.variant = plan.variant;
  converted.temporaries = ::fromRuntime(plan.temporaries);
  for (const rt::KernelSource &source : plan.sources)
    converted.sources.push_back(KernelSource{source.id, source.code});
  for (const rt::PlanStep &step : plan.steps)
    converted.steps.push_back(::fromRuntime(step));
  converted.compileOptions = plan.compileOptions;
  return converted;
}

llvm::json::Value mlir::kopt::fromRuntime(const rt::json::Value &value) {
  switch (value.kind()) {
  case rt::json::Value::Kind::Null:
    return nullptr;
  case rt::json::Value::Kind::Bool:
    return *value.getBool();
  case rt::json::Value::Kind::Number:
    if (std::optional<int64_t> integer = value.getInteger())
      return *integer;
    return *value.getNumber();
  case rt::json::Value::Kind::String:
    return *value.getString();
  case rt::json::Value::Kind::Array: {
    llvm::json::Array array;
    for (size_t i = 0, e = value.size(); i < e; ++i)
      array.push_back(fromRuntime(value.at(i)));
    return array;
  }
  case rt::json::Value::Kind::Object: {
    llvm::json::Object object;
    for (size_t i = 0, e = value.size(); i < e; ++i)
      object[value.keyAt(i)] = fromRuntime(value.at(i));
    return object;
  }
  }
  llvm_unreachable("unknown JSON kind");
}

llvm::Error mlir::kopt::toLlvmError(const rt::Status &status) {
  if (status.isOk())
    return llvm::Error::success();
  return llvm::createStringError(status.message());
}
