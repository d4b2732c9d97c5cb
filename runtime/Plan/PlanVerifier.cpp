//===- PlanVerifier.cpp - Launch expressions and plan checks ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Grid/block expressions are parsed by recursive descent, straight from the
// text, each time they are evaluated: they are short, and evaluating them is
// part of preparing a plan, never of running it.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/PlanVerifier.h"

#include "kopt/Runtime/ConvLayout.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

using namespace kopt::runtime;

/// Whitespace as the plan format knows it.
static bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
         c == '\r';
}
static bool isDigit(char c) { return c >= '0' && c <= '9'; }
static bool isIdentifierChar(char c) {
  return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         c == '_';
}

/// `text` without leading and trailing whitespace.
static std::string trim(std::string_view text) {
  while (!text.empty() && isSpace(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && isSpace(text.back()))
    text.remove_suffix(1);
  return std::string(text);
}

static Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

//===----------------------------------------------------------------------===//
// Launch expressions
//===----------------------------------------------------------------------===//

namespace {
/// Recursive-descent evaluator for grid/block expressions.
class ExpressionParser {
public:
  ExpressionParser(std::string_view text,
                   const std::map<std::string, TensorSpec> &tensors)
      : text(text), rest(text), tensors(tensors) {}

  Result<int64_t> parse() {
    auto value = parseSum();
    if (!value)
      return value;
    skipSpace();
    if (!rest.empty())
      return fail("unexpected '" + std::string(rest) + "'");
    return value;
  }

private:
  Status fail(const std::string &why) {
    return invalid("in expression '" + std::string(text) + "': " + why);
  }
  void skipSpace() {
    while (!rest.empty() && isSpace(rest.front()))
      rest.remove_prefix(1);
  }
  bool consume(std::string_view token) {
    skipSpace();
    if (rest.substr(0, token.size()) != token)
      return false;
    rest.remove_prefix(token.size());
    return true;
  }

  Result<int64_t> parseSum() {
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

  Result<int64_t> parseProduct() {
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

  Result<std::vector<std::string>> parseCallArguments() {
    if (!consume("("))
      return fail("expected '('");
    std::vector<std::string> args;
    int depth = 0;
    std::string current;
    skipSpace();
    while (!rest.empty()) {
      char c = rest.front();
      rest.remove_prefix(1);
      if (c == '(')
        ++depth;
      if (c == ')' && depth-- == 0) {
        args.push_back(trim(current));
        return args;
      }
      if (c == ',' && depth == 0) {
        args.push_back(trim(current));
        current.clear();
        continue;
      }
      current += c;
    }
    return fail("missing ')'");
  }

  Result<const TensorSpec *> lookupTensor(const std::string &name) {
    auto it = tensors.find(name);
    if (it == tensors.end())
      return fail("unknown tensor '" + name + "'");
    return &it->second;
  }

  Result<int64_t> parseAtom() {
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
    if (!rest.empty() && isDigit(rest.front())) {
      size_t length = 0;
      while (length < rest.size() && isDigit(rest[length]))
        ++length;
      int64_t value = 0;
      auto [end, error] = std::from_chars(rest.data(), rest.data() + length,
                                          value, /*base=*/10);
      if (error != std::errc() || end != rest.data() + length)
        return fail("bad integer");
      rest.remove_prefix(length);
      return value;
    }
    size_t length = 0;
    while (length < rest.size() && isIdentifierChar(rest[length]))
      ++length;
    std::string name(rest.substr(0, length));
    rest.remove_prefix(length);
    if (name.empty())
      return fail("expected a number, '(' or a function");
    auto args = parseCallArguments();
    if (!args)
      return args.status();
    if (name == "numel" || name == "dim") {
      if (args->size() != (name == "numel" ? 1u : 2u))
        return fail(name + " takes " +
                    (name == "numel" ? "1 argument" : "2 arguments"));
      auto tensor = lookupTensor((*args)[0]);
      if (!tensor)
        return tensor.status();
      if (name == "numel") {
        std::optional<int64_t> count = (*tensor)->getNumElements();
        if (!count)
          return fail("numel(" + (*args)[0] + ") overflows int64");
        return *count;
      }
      auto index = ExpressionParser((*args)[1], tensors).parse();
      if (!index)
        return index;
      if (*index < 0 || *index >= int64_t((*tensor)->shape.size()))
        return fail("dim index out of range");
      return (*tensor)->shape[*index];
    }
    if (name == "cdiv" || name == "min" || name == "max") {
      if (args->size() != 2)
        return fail(name + " takes 2 arguments");
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
    return fail("unknown function '" + name + "'");
  }

  std::string_view text;
  std::string_view rest;
  const std::map<std::string, TensorSpec> &tensors;
};
} // namespace

Result<int64_t> kopt::runtime::evaluatePlanExpression(
    std::string_view expression,
    const std::map<std::string, TensorSpec> &tensors) {
  return ExpressionParser(expression, tensors).parse();
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

bool kopt::runtime::isScalarLiteral(std::string_view arg) {
  for (std::string_view prefix : {"i32:", "i64:", "f32:", "f64:"})
    if (arg.substr(0, prefix.size()) == prefix)
      return true;
  return false;
}

Status kopt::runtime::verifyPlan(const KernelPlan &plan,
                                 const KernelTask &task) {
  std::map<std::string, TensorSpec> tensors;
  for (const std::vector<TensorSpec> *list :
       {&task.inputs, &task.outputs, &plan.temporaries})
    for (const TensorSpec &tensor : *list)
      if (!tensors.emplace(tensor.name, tensor).second)
        return invalid("tensor name '" + tensor.name + "' is used twice");

  if (!isArithmeticAllowed(task.precision, plan.arithmetic))
    return invalid("the plan computes in " + plan.arithmetic +
                   " arithmetic, which the precision policy '" +
                   task.precision + "' does not allow");

  if (!isValidPlanArch(plan.arch))
    return invalid("plan architecture '" + plan.arch +
                   "' is not an architecture-specific target such as sm_90a");

  std::set<std::string> sources;
  for (const KernelSource &source : plan.sources)
    if (!sources.insert(source.id).second)
      return invalid("source id '" + source.id + "' is used twice");

  auto checkTensor = [&](const std::string &name,
                         const std::string &what) -> Status {
    if (!tensors.count(name))
      return invalid(what + " refers to unknown tensor '" + name + "'");
    return Status::success();
  };

  for (size_t index = 0; index < plan.steps.size(); ++index) {
    const PlanStep &step = plan.steps[index];
    std::string where = "step " + std::to_string(index);
    switch (step.kind) {
    case PlanStep::Kind::Launch: {
      const LaunchStep &launch = step.launch;
      if (!sources.count(launch.source))
        return invalid(where + ": unknown source '" + launch.source + "'");
      if (launch.entry.empty())
        return invalid(where + ": no entry name");
      if (launch.cluster < 1 || launch.cluster > 16)
        return invalid(where + ": cluster of " +
                       std::to_string(launch.cluster) +
                       " blocks out of range (1 to 16)");
      int64_t threads = 1;
      for (int axis = 0; axis < 3; ++axis) {
        auto grid = evaluatePlanExpression(launch.grid[axis], tensors);
        if (!grid)
          return grid.status();
        auto block = evaluatePlanExpression(launch.block[axis], tensors);
        if (!block)
          return block.status();
        int64_t gridLimit = axis == 0 ? (int64_t(1) << 31) - 1 : 65535;
        if (*grid < 1 || *grid > gridLimit || *block < 1)
          return invalid(where + ": grid/block size out of range on axis " +
                         std::to_string(axis) + " (" + std::to_string(*grid) +
                         ", " + std::to_string(*block) + ")");
        threads *= *block;
        if (launch.cooperative && axis > 0 && *grid != 1)
          return invalid(where + ": a cooperative launch's grid is " +
                         "one-dimensional (size " + std::to_string(*grid) +
                         " on axis " + std::to_string(axis) + ")");
        if (axis == 0 && *grid % launch.cluster != 0)
          return invalid(where + ": grid size " + std::to_string(*grid) +
                         " is not a multiple of the cluster of " +
                         std::to_string(launch.cluster) + " blocks");
      }
      if (threads > 1024)
        return invalid(where + ": " + std::to_string(threads) +
                       " threads per block (max 1024)");
      if (launch.sharedBytes < 0 || launch.sharedBytes > 227 * 1024)
        return invalid(where + ": dynamic shared memory " +
                       std::to_string(launch.sharedBytes) + " out of range");
      for (const std::string &arg : launch.args)
        if (!isScalarLiteral(arg))
          if (Status status = checkTensor(arg, where); !status.isOk())
            return status;
      break;
    }
    case PlanStep::Kind::Gemm: {
      const GemmStep &gemm = step.gemm;
      for (const std::string &name : {gemm.a, gemm.b, gemm.c})
        if (Status status = checkTensor(name, where); !status.isOk())
          return status;
      if (!gemm.bias.empty())
        if (Status status = checkTensor(gemm.bias, where); !status.isOk())
          return status;
      auto count = [&](const std::string &name) {
        return tensors.at(name).getNumElements();
      };
      if (gemm.batch < 1 || gemm.m < 1 || gemm.n < 1 || gemm.k < 1)
        return invalid(where + ": GEMM sizes must be positive");
      if (count(gemm.a) != gemm.batch * gemm.m * gemm.k ||
          count(gemm.b) != gemm.batch * gemm.k * gemm.n ||
          count(gemm.c) != gemm.batch * gemm.m * gemm.n ||
          (!gemm.bias.empty() && count(gemm.bias) != gemm.n))
        return invalid(where + ": GEMM sizes do not match its tensors");
      if (gemm.activation != "none" && gemm.activation != "relu" &&
          gemm.activation != "gelu")
        return invalid(where + ": unknown GEMM activation '" + gemm.activation +
                       "'");
      // cuBLASLt takes the scale as its fp32 alpha.
      if (!std::isfinite(gemm.scale) ||
          std::abs(gemm.scale) > double(std::numeric_limits<float>::max()))
        return invalid(where + ": the GEMM's scale must be a finite fp32 "
                               "number");
      break;
    }
    case PlanStep::Kind::Conv: {
      const ConvStep &conv = step.conv;
      for (const std::string &name : {conv.input, conv.filter, conv.output})
        if (Status status = checkTensor(name, where); !status.isOk())
          return status;
      Result<ConvProblem> problem =
          describeConv(conv, tensors.at(conv.input), tensors.at(conv.filter),
                       tensors.at(conv.output));
      if (!problem)
        return invalid(where + ": " + problem.status().message());
      break;
    }
    }
  }
  return Status::success();
}

Status kopt::runtime::verifyStoredPlan(const KernelPlan &plan,
                                       const KernelTask &task) {
  if (plan.taskKey != task.key)
    return invalid("the plan is for task '" + plan.taskKey + "', not '" +
                   task.key + "'");
  if (Status status = verifyPlan(plan, task); !status.isOk())
    return status;
  std::set<std::string> written;
  for (const PlanStep &step : plan.steps) {
    switch (step.kind) {
    case PlanStep::Kind::Launch:
      written.insert(step.launch.args.begin(), step.launch.args.end());
      break;
    case PlanStep::Kind::Gemm:
      written.insert(step.gemm.c);
      break;
    case PlanStep::Kind::Conv:
      written.insert(step.conv.output);
      break;
    }
  }
  for (const TensorSpec &output : task.outputs)
    if (!written.count(output.name))
      return invalid("no step of the plan writes output '" + output.name + "'");
  return Status::success();
}
