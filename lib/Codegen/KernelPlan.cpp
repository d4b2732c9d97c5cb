//===- KernelPlan.cpp - How to compute a task on a GPU ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/KernelPlan.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::kopt;

unsigned KernelPlan::countLaunches() const {
  return llvm::count_if(steps, [](const PlanStep &step) {
    return step.kind == PlanStep::Kind::Launch;
  });
}

//===----------------------------------------------------------------------===//
// Launch expressions
//===----------------------------------------------------------------------===//

namespace {
/// Recursive-descent evaluator for grid/block expressions.
class ExpressionParser {
public:
  ExpressionParser(llvm::StringRef text,
                   const std::map<std::string, TensorSpec> &tensors)
      : text(text), rest(text), tensors(tensors) {}

  llvm::Expected<int64_t> parse() {
    auto value = parseSum();
    if (!value)
      return value;
    skipSpace();
    if (!rest.empty())
      return fail("unexpected '" + rest.str() + "'");
    return value;
  }

private:
  llvm::Error fail(const std::string &why) {
    return llvm::createStringError("in expression '%s': %s", text.str().c_str(),
                                   why.c_str());
  }
  void skipSpace() { rest = rest.ltrim(); }
  bool consume(llvm::StringRef token) {
    skipSpace();
    return rest.consume_front(token);
  }

  llvm::Expected<int64_t> parseSum() {
    auto lhs = parseProduct();
    if (!lhs)
      return lhs;
    int64_t value = *lhs;
    while (true) {
      bool plus = consume("+");
      if (!plus && !consume("-"))
        return value;
      auto rhs = parseProduct();
      if (!rhs)
        return rhs;
      value = plus ? value + *rhs : value - *rhs;
    }
  }

  llvm::Expected<int64_t> parseProduct() {
    auto lhs = parseAtom();
    if (!lhs)
      return lhs;
    int64_t value = *lhs;
    while (true) {
      char op = 0;
      if (consume("*"))
        op = '*';
      else if (consume("/"))
        op = '/';
      else if (consume("%"))
        op = '%';
      else
        return value;
      auto rhs = parseAtom();
      if (!rhs)
        return rhs;
      if (op != '*' && *rhs == 0)
        return fail("division by zero");
      value = op == '*'   ? value * *rhs
              : op == '/' ? value / *rhs
                          : value % *rhs;
    }
  }

  llvm::Expected<std::vector<std::string>> parseCallArguments() {
    if (!consume("("))
      return fail("expected '('");
    std::vector<std::string> args;
    int depth = 0;
    std::string current;
    skipSpace();
    while (!rest.empty()) {
      char c = rest.front();
      rest = rest.drop_front();
      if (c == '(')
        ++depth;
      if (c == ')' && depth-- == 0) {
        args.push_back(llvm::StringRef(current).trim().str());
        return args;
      }
      if (c == ',' && depth == 0) {
        args.push_back(llvm::StringRef(current).trim().str());
        current.clear();
        continue;
      }
      current += c;
    }
    return fail("missing ')'");
  }

  llvm::Expected<const TensorSpec *> lookupTensor(const std::string &name) {
    auto it = tensors.find(name);
    if (it == tensors.end())
      return fail("unknown tensor '" + name + "'");
    return &it->second;
  }

  llvm::Expected<int64_t> parseAtom() {
    skipSpace();
    if (consume("(")) {
      auto value = parseSum();
      if (!value)
        return value;
      if (!consume(")"))
        return fail("missing ')'");
      return value;
    }
    if (consume("-")) {
      auto value = parseAtom();
      if (!value)
        return value;
      return -*value;
    }
    if (!rest.empty() && llvm::isDigit(rest.front())) {
      size_t length = rest.find_if_not(llvm::isDigit);
      int64_t value = 0;
      if (rest.take_front(length).getAsInteger(10, value))
        return fail("bad integer");
      rest = rest.drop_front(length);
      return value;
    }
    size_t length =
        rest.find_if_not([](char c) { return llvm::isAlnum(c) || c == '_'; });
    llvm::StringRef name = rest.take_front(length);
    rest = rest.drop_front(length);
    if (name.empty())
      return fail("expected a number, '(' or a function");
    auto args = parseCallArguments();
    if (!args)
      return args.takeError();
    if (name == "numel" || name == "dim") {
      if (args->size() != (name == "numel" ? 1u : 2u))
        return fail(name.str() + " takes " +
                    (name == "numel" ? "1 argument" : "2 arguments"));
      auto tensor = lookupTensor((*args)[0]);
      if (!tensor)
        return tensor.takeError();
      if (name == "numel")
        return (*tensor)->getNumElements();
      auto index = ExpressionParser((*args)[1], tensors).parse();
      if (!index)
        return index;
      if (*index < 0 || *index >= int64_t((*tensor)->shape.size()))
        return fail("dim index out of range");
      return (*tensor)->shape[*index];
    }
    if (name == "cdiv" || name == "min" || name == "max") {
      if (args->size() != 2)
        return fail(name.str() + " takes 2 arguments");
      auto a = ExpressionParser((*args)[0], tensors).parse();
      if (!a)
        return a;
      auto b = ExpressionParser((*args)[1], tensors).parse();
      if (!b)
        return b;
      if (name == "cdiv") {
        if (*b <= 0)
          return fail("cdiv by a non-positive number");
        return (*a + *b - 1) / *b;
      }
      return name == "min" ? std::min(*a, *b) : std::max(*a, *b);
    }
    return fail("unknown function '" + name.str() + "'");
  }

  llvm::StringRef text;
  llvm::StringRef rest;
  const std::map<std::string, TensorSpec> &tensors;
};
} // namespace

llvm::Expected<int64_t> mlir::kopt::evaluatePlanExpression(
    llvm::StringRef expression,
    const std::map<std::string, TensorSpec> &tensors) {
  return ExpressionParser(expression, tensors).parse();
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

static bool isScalarLiteral(llvm::StringRef arg) {
  for (llvm::StringRef prefix : {"i32:", "i64:", "f32:", "f64:"})
    if (arg.starts_with(prefix))
      return true;
  return false;
}

llvm::Error mlir::kopt::verifyPlan(const KernelPlan &plan,
                                   const KernelTask &task) {
  std::map<std::string, TensorSpec> tensors;
  auto addTensor = [&](const TensorSpec &tensor) -> llvm::Error {
    if (!tensors.emplace(tensor.name, tensor).second)
      return llvm::createStringError("tensor name '%s' is used twice",
                                     tensor.name.c_str());
    return llvm::Error::success();
  };
  for (const std::vector<TensorSpec> *list :
       {&task.inputs, &task.outputs, &plan.temporaries})
    for (const TensorSpec &tensor : *list)
      if (llvm::Error error = addTensor(tensor))
        return error;

  llvm::StringSet<> sources;
  for (const KernelSource &source : plan.sources)
    if (!sources.insert(source.id).second)
      return llvm::createStringError("source id '%s' is used twice",
                                     source.id.c_str());

  auto checkTensor = [&](const std::string &name,
                         llvm::StringRef what) -> llvm::Error {
    if (!tensors.count(name))
      return llvm::createStringError("%s refers to unknown tensor '%s'",
                                     what.str().c_str(), name.c_str());
    return llvm::Error::success();
  };

  for (auto [index, step] : llvm::enumerate(plan.steps)) {
    std::string where = "step " + std::to_string(index);
    switch (step.kind) {
    case PlanStep::Kind::Launch: {
      const LaunchStep &launch = step.launch;
      if (!sources.contains(launch.source))
        return llvm::createStringError("%s: unknown source '%s'", where.c_str(),
                                       launch.source.c_str());
      if (launch.entry.empty())
        return llvm::createStringError("%s: no entry name", where.c_str());
      int64_t threads = 1;
      for (int axis = 0; axis < 3; ++axis) {
        auto grid = evaluatePlanExpression(launch.grid[axis], tensors);
        if (!grid)
          return grid.takeError();
        auto block = evaluatePlanExpression(launch.block[axis], tensors);
        if (!block)
          return block.takeError();
        int64_t gridLimit = axis == 0 ? (int64_t(1) << 31) - 1 : 65535;
        if (*grid < 1 || *grid > gridLimit || *block < 1)
          return llvm::createStringError(
              "%s: grid/block size out of range on axis %d (%lld, %lld)",
              where.c_str(), axis, (long long)*grid, (long long)*block);
        threads *= *block;
      }
      if (threads > 1024)
        return llvm::createStringError("%s: %lld threads per block (max 1024)",
                                       where.c_str(), (long long)threads);
      if (launch.sharedBytes < 0 || launch.sharedBytes > 227 * 1024)
        return llvm::createStringError("%s: dynamic shared memory %lld out of "
                                       "range",
                                       where.c_str(),
                                       (long long)launch.sharedBytes);
      for (const std::string &arg : launch.args)
        if (!isScalarLiteral(arg))
          if (llvm::Error error = checkTensor(arg, where))
            return error;
      break;
    }
    case PlanStep::Kind::Gemm: {
      const GemmStep &gemm = step.gemm;
      for (const std::string &name : {gemm.a, gemm.b, gemm.c})
        if (llvm::Error error = checkTensor(name, where))
          return error;
      if (!gemm.bias.empty())
        if (llvm::Error error = checkTensor(gemm.bias, where))
          return error;
      auto count = [&](const std::string &name) {
        return tensors.at(name).getNumElements();
      };
      if (gemm.batch < 1 || gemm.m < 1 || gemm.n < 1 || gemm.k < 1)
        return llvm::createStringError("%s: GEMM sizes must be positive",
                                       where.c_str());
      if (count(gemm.a) != gemm.batch * gemm.m * gemm.k ||
          count(gemm.b) != gemm.batch * gemm.k * gemm.n ||
          count(gemm.c) != gemm.batch * gemm.m * gemm.n ||
          (!gemm.bias.empty() && count(gemm.bias) != gemm.n))
        return llvm::createStringError(
            "%s: GEMM sizes do not match its tensors", where.c_str());
      if (!llvm::is_contained({"none", "relu", "gelu"}, gemm.activation))
        return llvm::createStringError("%s: unknown GEMM activation '%s'",
                                       where.c_str(), gemm.activation.c_str());
      break;
    }
    case PlanStep::Kind::Conv: {
      const ConvStep &conv = step.conv;
      for (const std::string &name : {conv.input, conv.filter, conv.output})
        if (llvm::Error error = checkTensor(name, where))
          return error;
      if (conv.layout != "nchw_fchw" && conv.layout != "nhwc_hwcf")
        return llvm::createStringError("%s: unknown conv layout '%s'",
                                       where.c_str(), conv.layout.c_str());
      for (const std::string &name : {conv.input, conv.filter, conv.output})
        if (tensors.at(name).shape.size() != 4)
          return llvm::createStringError("%s: conv tensors must be 4-D",
                                         where.c_str());
      break;
    }
    }
  }
  return llvm::Error::success();
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
