//===- RuntimeInterop.cpp - Compiler structs to runtime structs -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/RuntimeInterop.h"

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

llvm::Error mlir::kopt::toLlvmError(const rt::Status &status) {
  if (status.isOk())
    return llvm::Error::success();
  return llvm::createStringError(status.message());
}
