//===- KernelPlan.cpp - How to compute a task on a GPU ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/KernelPlan.h"

#include "kopt/Codegen/RuntimeInterop.h"
#include "kopt/Runtime/PlanVerifier.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::kopt;

unsigned KernelPlan::countLaunches() const {
  return llvm::count_if(steps, [](const PlanStep &step) {
    return step.kind == PlanStep::Kind::Launch;
  });
}

//===----------------------------------------------------------------------===//
// Launch expressions and verification
//===----------------------------------------------------------------------===//

// Both live in the runtime (kopt/Runtime/PlanVerifier.h), which the plan
// runner and the evaluator worker call without LLVM; these convert.

llvm::Expected<int64_t> mlir::kopt::evaluatePlanExpression(
    llvm::StringRef expression,
    const std::map<std::string, TensorSpec> &tensors) {
  std::map<std::string, ::kopt::runtime::TensorSpec> converted;
  for (const auto &[name, tensor] : tensors)
    converted.emplace(name, toRuntime(tensor));
  return toExpected(::kopt::runtime::evaluatePlanExpression(
      std::string_view(expression.data(), expression.size()), converted));
}

llvm::Error mlir::kopt::verifyPlan(const KernelPlan &plan,
                                   const KernelTask &task) {
  return toLlvmError(
      ::kopt::runtime::verifyPlan(toRuntime(plan), toRuntime(task)));
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

static llvm::json::Array toJsonArray(const std::array<std::string, 3> &dims) {
  return llvm::json::Array{dims[0], dims[1], dims[2]};
}

static llvm::json::Value toJson(const PlanStep &step) {
  llvm::json::Object object{{"comment", step.comment}};
  switch (step.kind) {
  case PlanStep::Kind::Launch: {
    const LaunchStep &launch = step.launch;
    llvm::json::Array args;
    for (const std::string &arg : launch.args)
      args.push_back(arg);
    object["kind"] = "launch";
    object["source"] = launch.source;
    object["entry"] = launch.entry;
    object["grid"] = toJsonArray(launch.grid);
    object["block"] = toJsonArray(launch.block);
    object["shared_bytes"] = launch.sharedBytes;
    object["args"] = std::move(args);
    break;
  }
  case PlanStep::Kind::Gemm: {
    const GemmStep &gemm = step.gemm;
    object["kind"] = "gemm";
    object["a"] = gemm.a;
    object["b"] = gemm.b;
    object["c"] = gemm.c;
    object["bias"] = gemm.bias;
    object["batch"] = gemm.batch;
    object["m"] = gemm.m;
    object["n"] = gemm.n;
    object["k"] = gemm.k;
    object["transpose_a"] = gemm.transposeA;
    object["transpose_b"] = gemm.transposeB;
    object["activation"] = gemm.activation;
    break;
  }
  case PlanStep::Kind::Conv: {
    const ConvStep &conv = step.conv;
    object["kind"] = "conv";
    object["input"] = conv.input;
    object["filter"] = conv.filter;
    object["output"] = conv.output;
    object["layout"] = conv.layout;
    object["strides"] = llvm::json::Array{conv.strides[0], conv.strides[1]};
    object["dilations"] =
        llvm::json::Array{conv.dilations[0], conv.dilations[1]};
    break;
  }
  }
  return object;
}

llvm::json::Value mlir::kopt::toJson(const KernelPlan &plan) {
  llvm::json::Array temporaries, sources, steps, options;
  for (const TensorSpec &tensor : plan.temporaries)
    temporaries.push_back(toJson(tensor));
  for (const KernelSource &source : plan.sources)
    sources.push_back(
        llvm::json::Object{{"id", source.id}, {"code", source.code}});
  for (const PlanStep &step : plan.steps)
    steps.push_back(::toJson(step));
  for (const std::string &option : plan.compileOptions)
    options.push_back(option);
  return llvm::json::Object{
      {"schema", "kopt.plan/" + std::to_string(KernelPlan::kSchemaVersion)},
      {"task_key", plan.taskKey},
      {"proposer", plan.proposer},
      {"variant", plan.variant},
      {"temporaries", std::move(temporaries)},
      {"sources", std::move(sources)},
      {"steps", std::move(steps)},
      {"compile_options", std::move(options)}};
}

namespace {
/// Reads fields of one JSON object, remembering the first error.
class FieldReader {
public:
  FieldReader(const llvm::json::Object &object, std::string where)
      : object(object), where(std::move(where)) {}

  std::string string(llvm::StringRef name, bool required = true) {
    if (auto value = object.getString(name))
      return value->str();
    if (required)
      note("missing string '" + name.str() + "'");
    return "";
  }
  int64_t integer(llvm::StringRef name, int64_t fallback) {
    if (const llvm::json::Value *value = object.get(name)) {
      if (auto number = value->getAsInteger())
        return *number;
      note("'" + name.str() + "' is not an integer");
    }
    return fallback;
  }
  bool boolean(llvm::StringRef name) {
    return object.getBoolean(name).value_or(false);
  }
  std::vector<std::string> strings(llvm::StringRef name) {
    std::vector<std::string> result;
    if (const llvm::json::Array *array = object.getArray(name))
      for (const llvm::json::Value &value : *array) {
        if (auto text = value.getAsString())
          result.push_back(text->str());
        else if (auto number = value.getAsInteger())
          result.push_back(std::to_string(*number));
        else
          note("'" + name.str() + "' holds a non-string");
      }
    return result;
  }
  llvm::Error error() {
    if (problem.empty())
      return llvm::Error::success();
    return llvm::createStringError("%s: %s", where.c_str(), problem.c_str());
  }

private:
  void note(const std::string &why) {
    if (problem.empty())
      problem = why;
  }
  const llvm::json::Object &object;
  std::string where;
  std::string problem;
};
} // namespace

static llvm::Expected<PlanStep> planStepFromJson(const llvm::json::Value &value,
                                                 unsigned index) {
  std::string where = "step " + std::to_string(index);
  const llvm::json::Object *object = value.getAsObject();
  if (!object)
    return llvm::createStringError("%s: expected an object", where.c_str());
  FieldReader read(*object, where);
  PlanStep step;
  step.comment = read.string("comment", /*required=*/false);
  std::string kind = read.string("kind");
  if (kind == "launch") {
    step.kind = PlanStep::Kind::Launch;
    step.launch.source = read.string("source");
    step.launch.entry = read.string("entry");
    std::vector<std::string> grid = read.strings("grid");
    std::vector<std::string> block = read.strings("block");
    if (grid.size() != 3 || block.size() != 3)
      return llvm::createStringError("%s: grid and block need 3 entries",
                                     where.c_str());
    std::copy(grid.begin(), grid.end(), step.launch.grid.begin());
    std::copy(block.begin(), block.end(), step.launch.block.begin());
    step.launch.sharedBytes = read.integer("shared_bytes", 0);
    step.launch.args = read.strings("args");
  } else if (kind == "gemm") {
    step.kind = PlanStep::Kind::Gemm;
    GemmStep &gemm = step.gemm;
    gemm.a = read.string("a");
    gemm.b = read.string("b");
    gemm.c = read.string("c");
    gemm.bias = read.string("bias", /*required=*/false);
    gemm.batch = read.integer("batch", 1);
    gemm.m = read.integer("m", 0);
    gemm.n = read.integer("n", 0);
    gemm.k = read.integer("k", 0);
    gemm.transposeA = read.boolean("transpose_a");
    gemm.transposeB = read.boolean("transpose_b");
    gemm.activation = read.string("activation", /*required=*/false);
    if (gemm.activation.empty())
      gemm.activation = "none";
  } else if (kind == "conv") {
    step.kind = PlanStep::Kind::Conv;
    ConvStep &conv = step.conv;
    conv.input = read.string("input");
    conv.filter = read.string("filter");
    conv.output = read.string("output");
    conv.layout = read.string("layout");
    std::vector<std::string> strides = read.strings("strides");
    std::vector<std::string> dilations = read.strings("dilations");
    if (strides.size() != 2 || dilations.size() != 2)
      return llvm::createStringError("%s: strides and dilations need 2 entries",
                                     where.c_str());
    for (int i = 0; i < 2; ++i)
      if (llvm::StringRef(strides[i]).getAsInteger(10, conv.strides[i]) ||
          llvm::StringRef(dilations[i]).getAsInteger(10, conv.dilations[i]))
        return llvm::createStringError("%s: strides and dilations must be "
                                       "integers",
                                       where.c_str());
  } else {
    return llvm::createStringError("%s: unknown kind '%s'", where.c_str(),
                                   kind.c_str());
  }
  if (llvm::Error error = read.error())
    return std::move(error);
  return step;
}

llvm::Expected<KernelPlan>
mlir::kopt::kernelPlanFromJson(const llvm::json::Value &value) {
  const llvm::json::Object *object = value.getAsObject();
  if (!object)
    return llvm::createStringError("plan: expected a JSON object");
  auto schema = object->getString("schema");
  std::string expected =
      "kopt.plan/" + std::to_string(KernelPlan::kSchemaVersion);
  if (!schema || *schema != expected)
    return llvm::createStringError("plan: schema must be '%s'",
                                   expected.c_str());
  FieldReader read(*object, "plan");
  KernelPlan plan;
  plan.taskKey = read.string("task_key");
  plan.proposer = read.string("proposer");
  plan.variant = read.string("variant", /*required=*/false);
  plan.compileOptions = read.strings("compile_options");
  if (llvm::Error error = read.error())
    return std::move(error);
  if (const llvm::json::Array *array = object->getArray("temporaries"))
    for (const llvm::json::Value &entry : *array) {
      auto tensor = tensorSpecFromJson(entry);
      if (!tensor)
        return tensor.takeError();
      plan.temporaries.push_back(std::move(*tensor));
    }
  if (const llvm::json::Array *array = object->getArray("sources"))
    for (const llvm::json::Value &entry : *array) {
      const llvm::json::Object *source = entry.getAsObject();
      if (!source)
        return llvm::createStringError("plan: a source is not an object");
      FieldReader sourceRead(*source, "source");
      plan.sources.push_back(
          {sourceRead.string("id"), sourceRead.string("code")});
      if (llvm::Error error = sourceRead.error())
        return std::move(error);
    }
  if (const llvm::json::Array *array = object->getArray("steps"))
    for (auto [index, entry] : llvm::enumerate(*array)) {
      auto step = planStepFromJson(entry, index);
      if (!step)
        return step.takeError();
      plan.steps.push_back(std::move(*step));
    }
  return plan;
}
