//===- PseudoCode.cpp - A fusion group as plain loops -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The prompt gives the group twice: as MLIR, which is the semantics, and as
// plain loops, which a model reads more reliably. Every linalg op (named or
// generic) becomes its loop nest over the iteration space, with each body
// operation on its own line; softmax, fills, empty tensors, constants and
// reshapes get one line each. Names follow the kernel ABI: the function's
// arguments are `in0, in1, ...`, its results `out0, ...`, the rest `t1,
// t2, ...`.
//
//===----------------------------------------------------------------------===//

#include "kopt/LLM/LlmProposer.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::kopt;

namespace {

class PseudoCodePrinter {
public:
  explicit PseudoCodePrinter(llvm::raw_ostream &os) : os(os) {}

  void print(func::FuncOp func);

private:
  std::string nameOf(Value value);
  std::string typeOf(Type type);
  std::string indexExpr(AffineMap map, llvm::ArrayRef<std::string> dims);
  void printLinalg(linalg::LinalgOp op);
  std::string printBodyOp(Operation &op, llvm::DenseMap<Value, std::string> &n);

  llvm::raw_ostream &os;
  llvm::DenseMap<Value, std::string> names;
  unsigned nextTemporary = 1;
};

} // namespace

std::string PseudoCodePrinter::nameOf(Value value) {
  auto it = names.find(value);
  if (it != names.end())
    return it->second;
  std::string name = "t" + std::to_string(nextTemporary++);
  names[value] = name;
  return name;
}

std::string PseudoCodePrinter::typeOf(Type type) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  if (auto shaped = dyn_cast<ShapedType>(type)) {
    stream << shaped.getElementType() << "[";
    llvm::interleave(
        shaped.getShape(), stream, [&](int64_t size) { stream << size; }, "x");
    stream << "]";
  } else {
    stream << type;
  }
  return text;
}

std::string PseudoCodePrinter::indexExpr(AffineMap map,
                                         llvm::ArrayRef<std::string> dims) {
  std::vector<std::string> parts;
  for (AffineExpr expr : map.getResults()) {
    std::string text;
    llvm::raw_string_ostream stream(text);
    expr.print(stream);
    // AffineExpr prints dims as d0, d1, ...: the loop names already.
    parts.push_back(text);
  }
  return "[" + llvm::join(parts, ", ") + "]";
}

/// The infix operator of a binary arith op, or "".
static llvm::StringRef getInfix(Operation &op) {
  if (isa<arith::AddFOp, arith::AddIOp>(op))
    return "+";
  if (isa<arith::SubFOp, arith::SubIOp>(op))
    return "-";
  if (isa<arith::MulFOp, arith::MulIOp>(op))
    return "*";
  if (isa<arith::DivFOp, arith::DivSIOp, arith::DivUIOp>(op))
    return "/";
  if (isa<arith::RemFOp, arith::RemSIOp, arith::RemUIOp>(op))
    return "%";
  if (isa<arith::AndIOp>(op))
    return "&";
  if (isa<arith::OrIOp>(op))
    return "|";
  if (isa<arith::XOrIOp>(op))
    return "^";
  return "";
}

std::string
PseudoCodePrinter::printBodyOp(Operation &op,
                               llvm::DenseMap<Value, std::string> &local) {
  auto operand = [&](unsigned i) -> std::string {
    Value value = op.getOperand(i);
    auto it = local.find(value);
    if (it != local.end())
      return it->second;
    if (auto constant = value.getDefiningOp<arith::ConstantOp>()) {
      std::string text;
      llvm::raw_string_ostream stream(text);
      constant.getValue().print(stream, /*elideType=*/true);
      return text;
    }
    return nameOf(value);
  };
  std::string expr;
  if (llvm::StringRef infix = getInfix(op); !infix.empty()) {
    expr = operand(0) + " " + infix.str() + " " + operand(1);
  } else if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    expr = "cmpf " + arith::stringifyCmpFPredicate(cmp.getPredicate()).str() +
           "(" + operand(0) + ", " + operand(1) + ")";
  } else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    expr = "cmpi " + arith::stringifyCmpIPredicate(cmp.getPredicate()).str() +
           "(" + operand(0) + ", " + operand(1) + ")";
  } else if (isa<arith::SelectOp>(op)) {
    expr = operand(0) + " ? " + operand(1) + " : " + operand(2);
  } else if (isa<arith::NegFOp>(op)) {
    expr = "-" + operand(0);
  } else if (isa<tensor::ExtractOp>(op)) {
    // A gather: kopt's kernels clamp each index into the tensor.
    std::vector<std::string> indices;
    for (unsigned i = 1; i < op.getNumOperands(); ++i)
      indices.push_back(operand(i));
    expr = operand(0) + "[" + llvm::join(indices, ", ") +
           "] (indices clamped into the tensor)";
  } else {
    // Calls: math.exp(x), arith.maximumf(a, b), arith.extf(x) to f64, ...
    std::vector<std::string> args;
    for (unsigned i = 0; i < op.getNumOperands(); ++i)
      args.push_back(operand(i));
    expr =
        op.getName().getStringRef().str() + "(" + llvm::join(args, ", ") + ")";
    if (op.getNumResults() == 1 && op.getNumOperands() == 1 &&
        op.getOperand(0).getType() != op.getResult(0).getType())
      expr += " as " + typeOf(op.getResult(0).getType());
  }
  return expr;
}

void PseudoCodePrinter::printLinalg(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  std::vector<std::string> dims;
  for (unsigned d = 0; d < ranges.size(); ++d)
    dims.push_back("d" + std::to_string(d));

  // Each result starts as a copy of its init tensor (unless that is
  // uninitialised) and the loops update it in place.
  std::vector<std::string> results;
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    Value init = op.getDpsInitOperand(i)->get();
    std::string text = nameOf(op->getResult(i)) + ": " + typeOf(init.getType());
    if (!init.getDefiningOp<tensor::EmptyOp>())
      text += ", starting as a copy of " + nameOf(init);
    results.push_back(text);
  }
  os << llvm::join(results, "; ") << " = " << op->getName().getStringRef()
     << ":\n";
  std::string indent = "  ";
  for (unsigned d = 0; d < ranges.size(); ++d) {
    os << indent << "for d" << d << " in 0.." << ranges[d] << " ("
       << (iterators[d] == utils::IteratorType::reduction ? "reduction"
                                                          : "parallel")
       << "):\n";
    indent += "  ";
  }
  Block *body = op.getBlock();
  llvm::DenseMap<Value, std::string> local;
  unsigned numInputs = op.getNumDpsInputs();
  for (BlockArgument arg : body->getArguments()) {
    unsigned index = arg.getArgNumber();
    OpOperand *operand = op.getMatchingOpOperand(arg);
    // An output's argument is the result's running value.
    Value tensor =
        index < numInputs ? operand->get() : op->getResult(index - numInputs);
    std::string source = nameOf(tensor);
    if (isa<ShapedType>(operand->get().getType()))
      source += indexExpr(maps[index], dims);
    local[arg] = source;
  }
  unsigned nextLocal = 0;
  for (Operation &bodyOp : body->getOperations()) {
    if (auto yield = dyn_cast<linalg::YieldOp>(bodyOp)) {
      for (unsigned i = 0; i < yield.getNumOperands(); ++i) {
        auto it = local.find(yield.getOperand(i));
        os << indent << nameOf(op->getResult(i))
           << indexExpr(maps[numInputs + i], dims) << " = "
           << (it != local.end() ? it->second : nameOf(yield.getOperand(i)))
           << "\n";
      }
      continue;
    }
    std::string expr = printBodyOp(bodyOp, local);
    if (isa<arith::ConstantOp>(bodyOp))
      continue; // Inlined where used.
    for (Value result : bodyOp.getResults()) {
      std::string name = "v" + std::to_string(nextLocal++);
      local[result] = name;
      os << indent << name << " = " << expr << "\n";
    }
  }
}

void PseudoCodePrinter::print(func::FuncOp func) {
  for (BlockArgument arg : func.getArguments()) {
    names[arg] = "in" + std::to_string(arg.getArgNumber());
    os << "in" << arg.getArgNumber() << ": " << typeOf(arg.getType())
       << " (input)\n";
  }
  for (Operation &op : func.getBody().front().getOperations()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (unsigned i = 0; i < ret.getNumOperands(); ++i)
        os << "out" << i << " = " << nameOf(ret.getOperand(i)) << "  ("
           << typeOf(ret.getOperand(i).getType()) << ", output)\n";
      continue;
    }
    if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
      os << nameOf(empty.getResult()) << " = uninitialised "
         << typeOf(empty.getType()) << "\n";
      continue;
    }
    if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      std::string value;
      llvm::raw_string_ostream stream(value);
      if (auto constant =
              fill.getInputs()[0].getDefiningOp<arith::ConstantOp>())
        constant.getValue().print(stream, /*elideType=*/true);
      else
        stream << nameOf(fill.getInputs()[0]);
      os << nameOf(fill.getResult(0)) << " = " << typeOf(fill.getType(0))
         << " filled with " << value << "\n";
      continue;
    }
    if (auto pad = dyn_cast<tensor::PadOp>(op)) {
      // The padding value, when constant; the MLIR has the region.
      std::string value = "the pad's region";
      Attribute attr;
      if (Value padding = pad.getConstantPaddingValue();
          padding && matchPattern(padding, m_Constant(&attr))) {
        value.clear();
        llvm::raw_string_ostream stream(value);
        attr.print(stream, /*elideType=*/true);
      }
      auto join = [](llvm::ArrayRef<int64_t> sizes) {
        std::string text;
        llvm::raw_string_ostream stream(text);
        llvm::interleaveComma(sizes, stream);
        return text;
      };
      os << nameOf(pad.getResult()) << " = " << nameOf(pad.getSource())
         << " padded with " << value << ": [" << join(pad.getStaticLow())
         << "] before and [" << join(pad.getStaticHigh())
         << "] after each dimension  (" << typeOf(pad.getResultType()) << ")\n";
      continue;
    }
    if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op)) {
      os << nameOf(softmax.getResult()[0]) << " = softmax("
         << nameOf(softmax.getInput()) << ") along dimension "
         << softmax.getDimension()
         << ": exp(x - max) / sum(exp(x - max)) over that dimension\n";
      continue;
    }
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      printLinalg(linalgOp);
      continue;
    }
    if (isa<arith::ConstantOp>(op) && op.getNumResults() == 1 &&
        !isa<ShapedType>(op.getResult(0).getType())) {
      std::string text;
      llvm::raw_string_ostream stream(text);
      cast<arith::ConstantOp>(op).getValue().print(stream, true);
      names[op.getResult(0)] = text;
      continue;
    }
    // Reshapes, casts, dense constants: one line with the op's name.
    std::vector<std::string> operands;
    for (Value operand : op.getOperands())
      operands.push_back(nameOf(operand));
    std::vector<std::string> results;
    for (Value result : op.getResults())
      results.push_back(nameOf(result) + ": " + typeOf(result.getType()));
    os << llvm::join(results, ", ") << " = " << op.getName().getStringRef()
       << "(" << llvm::join(operands, ", ") << ")\n";
  }
}

std::string mlir::kopt::formatPseudoCode(llvm::StringRef mlirText) {
  DialectRegistry registry;
  registry.insert<arith::ArithDialect, cf::ControlFlowDialect,
                  func::FuncDialect, linalg::LinalgDialect, math::MathDialect,
                  tensor::TensorDialect>();
  MLIRContext context(registry);
  context.allowUnregisteredDialects(false);
  // A group the parser cannot read (a test's stand-in text) has no loops.
  context.getDiagEngine().registerHandler(
      [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(mlirText, ParserConfig(&context));
  if (!module)
    return "";
  func::FuncOp func;
  module->walk([&](func::FuncOp op) {
    if (!func && !op.isExternal())
      func = op;
  });
  if (!func || !func.getBody().hasOneBlock())
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  PseudoCodePrinter(os).print(func);
  return text;
}
