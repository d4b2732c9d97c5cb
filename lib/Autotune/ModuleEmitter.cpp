//===- ModuleEmitter.cpp - Runtime modules from tuned graphs ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Works on a clone of the tagged graph: tags every compute op still outside
// a group as a group of one and outlines them with the usual pass, then walks
// the entry function once in order, giving each SSA value a buffer and each
// call a step. A returned value that a call produced becomes an output
// buffer in place, and so does a returned view of one (the call's result
// then views the output); any other returned value (an argument, a
// constant, a value returned twice) is copied into its output.
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/ModuleEmitter.h"

#include "kopt/Analysis/EntryFunction.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Analysis/GroupReport.h"
#include "kopt/Autotune/Autotuner.h"
#include "kopt/Codegen/KernelTask.h"
#include "kopt/Codegen/Proposers.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/AsmParser/AsmParserState.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <map>
#include <set>

using namespace mlir;
using namespace mlir::kopt;

namespace rt = ::kopt::runtime;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// `%name` without its `%` when usable as a tensor name, else "".
static std::string usableName(llvm::SMRange range) {
  StringRef text(range.Start.getPointer(),
                 range.End.getPointer() - range.Start.getPointer());
  if (!text.consume_front("%") || text.empty() || llvm::isDigit(text.front()))
    return "";
  bool usable = llvm::all_of(
      text, [](char c) { return llvm::isAlnum(c) || c == '_' || c == '.'; });
  return usable ? text.str() : "";
}

SourceNames mlir::kopt::readSourceNames(llvm::StringRef path,
                                        llvm::StringRef function,
                                        unsigned numArguments,
                                        unsigned numResults,
                                        const DialectRegistry &dialects) {
  SourceNames names;
  for (unsigned i = 0; i < numArguments; ++i)
    names.arguments.push_back("arg" + std::to_string(i));
  for (unsigned i = 0; i < numResults; ++i)
    names.results.push_back("out" + std::to_string(i));
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return names;
  MLIRContext context(dialects);
  // Parse errors were reported when the graph was loaded; stay quiet here.
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  Block block;
  AsmParserState state;
  ParserConfig config(&context);
  if (failed(parseAsmSourceFile(sourceMgr, &block, config, &state)))
    return names;
  func::FuncOp found;
  block.walk([&](func::FuncOp func) {
    if (func.getSymName() == function && !func.isExternal())
      found = func;
  });
  if (!found || found.getNumArguments() != numArguments ||
      found.getFunctionType().getNumResults() != numResults)
    return names;
  std::set<std::string> seen;
  auto take = [&](std::string name, std::string &slot) {
    if (!name.empty() && seen.insert(name).second)
      slot = name;
  };
  Block &entry = found.getBody().front();
  if (const AsmParserState::BlockDefinition *definition =
          state.getBlockDef(&entry))
    for (unsigned i = 0; i < numArguments && i < definition->arguments.size();
         ++i)
      take(usableName(definition->arguments[i].loc), names.arguments[i]);
  Operation *terminator = entry.getTerminator();
  for (unsigned i = 0;
       terminator && i < numResults && i < terminator->getNumOperands(); ++i) {
    auto result = dyn_cast<OpResult>(terminator->getOperand(i));
    const AsmParserState::OperationDefinition *definition =
        result ? state.getOpDef(result.getOwner()) : nullptr;
    if (!definition || result.getOwner()->getNumResults() != 1)
      continue;
    for (const auto &group : definition->resultGroups)
      take(usableName(group.definition.loc), names.results[i]);
  }
  return names;
}

/// The bytes of a dense constant, row-major in its element type.
static llvm::Expected<std::string> getConstantBytes(DenseElementsAttr attr) {
  Type element = attr.getElementType();
  std::string bytes;
  auto append = [&](const llvm::APInt &bits, unsigned width) {
    uint64_t word = bits.getZExtValue();
    for (unsigned b = 0; b < width; ++b)
      bytes.push_back(char((word >> (8 * b)) & 0xff));
  };
  if (auto floatType = dyn_cast<FloatType>(element)) {
    unsigned width = floatType.getWidth() / 8;
    for (const llvm::APFloat &value : attr.getValues<llvm::APFloat>())
      append(value.bitcastToAPInt(), width);
    return bytes;
  }
  if (auto intType = dyn_cast<IntegerType>(element)) {
    unsigned width = std::max(1u, intType.getWidth() / 8);
    for (const llvm::APInt &value : attr.getValues<llvm::APInt>())
      append(value, width);
    return bytes;
  }
  return makeError("a constant of unsupported element type");
}

/// `op`'s location as `file:line:col`, else as MLIR prints it.
static std::string printLoc(Operation *op) {
  if (std::string text = formatLocation(op->getLoc()); !text.empty())
    return text;
  std::string text;
  llvm::raw_string_ostream os(text);
  op->getLoc().print(os);
  return text;
}

namespace {
/// Builds the module while walking the entry function.
class Emitter {
public:
  Emitter(const ModuleEmitOptions &options,
          llvm::ArrayRef<GroupOutcome> outcomes, llvm::raw_ostream &notes)
      : options(options), notes(notes) {
    for (const GroupOutcome &outcome : outcomes)
      if (outcome.chosen)
        chosenOf[outcome.function] = &*outcome.chosen;
  }

  llvm::Expected<rt::RuntimeModule> run(ModuleOp module, func::FuncOp entry);

private:
  std::string addBuffer(rt::TensorSpec tensor, rt::ModuleBuffer::Kind kind,
                        std::string aliasOf = "", std::string data = "");
  llvm::Expected<ChosenPlan> getChosen(func::FuncOp func);
  llvm::Expected<size_t> getPlan(ModuleOp module, StringRef callee);
  llvm::Error addBinaries(rt::ModulePlan &plan);
  llvm::Expected<rt::TensorSpec> specOf(Value value, const std::string &name);
  rt::ModuleBuffer *findBuffer(const std::string &name);
  bool promoteToOutput(const std::string &name);

  const ModuleEmitOptions &options;
  /// The autotuner's choices, by group function.
  std::map<std::string, const ChosenPlan *> chosenOf;
  llvm::raw_ostream &notes;
  rt::RuntimeModule result;
  llvm::DenseMap<Value, std::string> bufferOf;
  std::map<std::string, size_t> planOf;
  unsigned temporaries = 0, constants = 0, aliases = 0;
};
} // namespace

std::string Emitter::addBuffer(rt::TensorSpec tensor,
                               rt::ModuleBuffer::Kind kind, std::string aliasOf,
                               std::string data) {
  rt::ModuleBuffer buffer;
  buffer.tensor = std::move(tensor);
  buffer.kind = kind;
  buffer.aliasOf = std::move(aliasOf);
  buffer.data = std::move(data);
  result.buffers.push_back(std::move(buffer));
  return result.buffers.back().tensor.name;
}

rt::ModuleBuffer *Emitter::findBuffer(const std::string &name) {
  for (rt::ModuleBuffer &buffer : result.buffers)
    if (buffer.tensor.name == name)
      return &buffer;
  return nullptr;
}

/// Makes the returned buffer `name` an output without a copy when it can:
/// a step's own result becomes the output in place; a view of a step's
/// result becomes the output, and the result (and its other views) views
/// the output's bytes. Returns false when a copy is needed.
bool Emitter::promoteToOutput(const std::string &name) {
  rt::ModuleBuffer *buffer = findBuffer(name);
  if (!buffer)
    return false;
  if (buffer->kind == rt::ModuleBuffer::Kind::Temporary) {
    buffer->kind = rt::ModuleBuffer::Kind::Output;
    result.outputs.push_back(name);
    return true;
  }
  if (buffer->kind != rt::ModuleBuffer::Kind::Alias)
    return false;
  std::string root = buffer->aliasOf;
  rt::ModuleBuffer *rootBuffer = findBuffer(root);
  if (!rootBuffer || rootBuffer->kind != rt::ModuleBuffer::Kind::Temporary)
    return false;
  for (rt::ModuleBuffer &other : result.buffers)
    if (other.kind == rt::ModuleBuffer::Kind::Alias && other.aliasOf == root)
      other.aliasOf = name;
  rootBuffer->kind = rt::ModuleBuffer::Kind::Alias;
  rootBuffer->aliasOf = name;
  buffer->kind = rt::ModuleBuffer::Kind::Output;
  buffer->aliasOf.clear();
  result.outputs.push_back(name);
  return true;
}

llvm::Expected<rt::TensorSpec> Emitter::specOf(Value value,
                                               const std::string &name) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  std::optional<ElementType> element =
      type ? getElementType(type.getElementType()) : std::nullopt;
  if (!type || !type.hasStaticShape() || !element) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << value.getType();
    return makeError("a value of type " + text +
                     " (runtime modules hold static tensors of kopt's "
                     "element types)");
  }
  rt::TensorSpec spec;
  spec.name = name;
  spec.elementType = *element;
  spec.shape.assign(type.getShape().begin(), type.getShape().end());
  return spec;
}

llvm::Error Emitter::addBinaries(rt::ModulePlan &plan) {
  if (options.arch.empty())
    return llvm::Error::success();
  auto arch = rt::getCompileArch(*plan.plan, options.arch);
  if (!arch)
    return makeError("@" + plan.function + ": " + arch.status().message());
  for (const rt::KernelSource &source : plan.plan->sources) {
    rt::NvrtcOptions nvrtc;
    nvrtc.extra = plan.plan->compileOptions;
    auto compiled =
        rt::compileCuda(source.code, source.id + ".cu", *arch, nvrtc);
    if (!compiled)
      return makeError("@" + plan.function + ", source '" + source.id +
                       "': " + compiled.status().message());
    plan.binaries.push_back({source.id, *arch, compiled->cubin, compiled->ptx});
  }
  return llvm::Error::success();
}

llvm::Expected<ChosenPlan> Emitter::getChosen(func::FuncOp func) {
  auto chosen = chosenOf.find(func.getSymName().str());
  if (chosen != chosenOf.end())
    return *chosen->second;
  // A group the autotuner did not see: an op outside the fusion groups.
  auto planName = func->getAttrOfType<StringAttr>(kPlanAttrName);
  if (planName && !planName.getValue().starts_with("baseline/"))
    return makeError("@" + func.getSymName() + " is tagged with plan '" +
                     planName.getValue() +
                     "', which no outcome of the autotuner's carries");
  auto task = buildKernelTask(func);
  if (!task)
    return task.takeError();
  auto baseline = proposeBaseline(func, *task);
  if (!baseline)
    return baseline.takeError();
  ChosenPlan result;
  result.task = std::move(*task);
  result.plan = std::move(*baseline);
  return result;
}

llvm::Expected<size_t> Emitter::getPlan(ModuleOp module, StringRef callee) {
  auto found = planOf.find(callee.str());
  if (found != planOf.end())
    return found->second;
  auto func = module.lookupSymbol<func::FuncOp>(callee);
  if (!func || !func->hasAttr(kFusionGroupAttrName))
    return makeError("call of @" + callee +
                     ", which is not a fusion group of kopt's");
  auto chosen = getChosen(func);
  if (!chosen)
    return chosen.takeError();
  rt::ModulePlan plan;
  plan.key = chosen->task.key;
  plan.function = callee.str();
  plan.inputs = chosen->task.inputs;
  plan.outputs = chosen->task.outputs;
  plan.tolerance = chosen->task.tolerance;
  plan.planName = chosen->plan.proposer + "/" + chosen->plan.variant;
  plan.planHash = rt::hashBytes(rt::json::write(rt::toJson(chosen->plan)));
  if (chosen->storedFor && options.byReference) {
    plan.reference = *chosen->storedFor;
  } else {
    plan.plan = std::move(chosen->plan);
    // The record's binaries, when they are for the target; else build.
    if (!chosen->binaries.empty() &&
        chosen->binaries.front().arch == options.arch)
      plan.binaries = std::move(chosen->binaries);
    else if (llvm::Error error = addBinaries(plan))
      return std::move(error);
  }
  notes << "  @" << callee << ": " << plan.planName
        << (plan.reference ? " (by reference)" : "") << "\n";
  result.plans.push_back(std::move(plan));
  planOf[callee.str()] = result.plans.size() - 1;
  return result.plans.size() - 1;
}

llvm::Expected<rt::RuntimeModule> Emitter::run(ModuleOp module,
                                               func::FuncOp entry) {
  result.name = entry.getSymName().str();
  result.producer = "kopt 0.1.0";
  result.arch = options.arch;
  Block &body = entry.getBody().front();
  SourceNames source = readSourceNames(
      options.sourcePath, entry.getSymName(), body.getNumArguments(),
      entry.getFunctionType().getNumResults(),
      entry->getContext()->getDialectRegistry());
  const std::vector<std::string> &names = source.arguments;
  for (auto [index, arg] : llvm::enumerate(body.getArguments())) {
    auto spec = specOf(arg, names[index]);
    if (!spec)
      return makeError("argument " + llvm::Twine(index) + ": " +
                       llvm::toString(spec.takeError()));
    bufferOf[arg] = addBuffer(*spec, rt::ModuleBuffer::Kind::Input);
    result.inputs.push_back(names[index]);
  }
  auto rootOf = [&](const std::string &name) {
    const rt::ModuleBuffer *buffer = result.findBuffer(name);
    return buffer->kind == rt::ModuleBuffer::Kind::Alias ? buffer->aliasOf
                                                         : name;
  };
  for (Operation &op : body) {
    auto where = [&](llvm::Error error) {
      return makeError("'" + op.getName().getStringRef() + "' at " +
                       printLoc(&op) + ": " + llvm::toString(std::move(error)));
    };
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!dense || op.use_empty())
        continue;
      std::string name = "const" + std::to_string(constants++);
      auto spec = specOf(constant, name);
      if (!spec)
        return where(spec.takeError());
      auto bytes = getConstantBytes(dense);
      if (!bytes)
        return where(bytes.takeError());
      bufferOf[constant] = addBuffer(*spec, rt::ModuleBuffer::Kind::Constant,
                                     "", std::move(*bytes));
      continue;
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp,
            tensor::ReshapeOp>(op)) {
      std::string name = "view" + std::to_string(aliases++);
      auto spec = specOf(op.getResult(0), name);
      if (!spec)
        return where(spec.takeError());
      auto source = bufferOf.find(op.getOperand(0));
      if (source == bufferOf.end())
        return makeError("'" + op.getName().getStringRef() + "' at " +
                         printLoc(&op) +
                         " of a value the module does not hold");
      bufferOf[op.getResult(0)] = addBuffer(
          *spec, rt::ModuleBuffer::Kind::Alias, rootOf(source->second));
      continue;
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto planIndex = getPlan(module, call.getCallee());
      if (!planIndex)
        return makeError("the group at " + printLoc(call) + ": " +
                         llvm::toString(planIndex.takeError()));
      rt::ModuleStep step;
      step.plan = *planIndex;
      for (auto [number, operand] : llvm::enumerate(call.getOperands())) {
        auto it = bufferOf.find(operand);
        if (it == bufferOf.end()) {
          std::string madeBy;
          if (Operation *producer = operand.getDefiningOp())
            madeBy = ", made by '" + producer->getName().getStringRef().str() +
                     "' at " + printLoc(producer);
          return makeError("call of @" + call.getCallee() + ": operand #" +
                           llvm::Twine(number) + madeBy +
                           ", is a value the module does not hold (a scalar, "
                           "a constant kopt cannot read, or an op outside the "
                           "groups)");
        }
        step.inputs.push_back(it->second);
      }
      for (Value value : call.getResults()) {
        std::string name = "t" + std::to_string(temporaries++);
        auto spec = specOf(value, name);
        if (!spec)
          return where(spec.takeError());
        bufferOf[value] = addBuffer(*spec, rt::ModuleBuffer::Kind::Temporary);
        step.outputs.push_back(name);
      }
      result.steps.push_back(std::move(step));
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
        auto it = bufferOf.find(value);
        if (it == bufferOf.end())
          return makeError("result " + llvm::Twine(index) +
                           " is not a value the module holds");
        std::string outputName = "out" + std::to_string(index);
        if (promoteToOutput(it->second))
          continue;
        auto spec = specOf(value, outputName);
        if (!spec)
          return where(spec.takeError());
        addBuffer(*spec, rt::ModuleBuffer::Kind::Output);
        rt::ModuleStep copy;
        copy.kind = rt::ModuleStep::Kind::Copy;
        copy.from = it->second;
        copy.to = outputName;
        result.steps.push_back(std::move(copy));
        result.outputs.push_back(outputName);
      }
      continue;
    }
    if (op.use_empty() && isa<tensor::EmptyOp, arith::ConstantOp>(op))
      continue;
    if (op.use_empty())
      continue;
    return makeError("op '" + op.getName().getStringRef() + "' at " +
                     printLoc(&op) +
                     " outside the fusion groups has no runtime form");
  }
  // Output buffers promoted in place keep their `t` names; give every
  // output its `out<N>` name.
  std::map<std::string, std::string> renamed;
  for (auto [index, name] : llvm::enumerate(result.outputs)) {
    const std::string &wanted = source.results[index];
    if (name != wanted)
      renamed[name] = wanted;
    name = wanted;
  }
  auto rename = [&](std::string &name) {
    auto it = renamed.find(name);
    if (it != renamed.end())
      name = it->second;
  };
  for (rt::ModuleBuffer &buffer : result.buffers) {
    rename(buffer.tensor.name);
    rename(buffer.aliasOf);
  }
  for (rt::ModuleStep &step : result.steps) {
    for (std::string &name : step.inputs)
      rename(name);
    for (std::string &name : step.outputs)
      rename(name);
    rename(step.from);
    rename(step.to);
  }
  if (rt::Status status = result.verify(); !status.isOk())
    return makeError("the module does not verify: " + status.message());
  return std::move(result);
}

llvm::Expected<rt::RuntimeModule>
mlir::kopt::emitRuntimeModule(ModuleOp module, const ModuleEmitOptions &options,
                              llvm::ArrayRef<GroupOutcome> outcomes,
                              llvm::raw_ostream &notes) {
  auto entry = findEntryFunction(module);
  if (!entry)
    return entry.takeError();
  Emitter emitter(options, outcomes, notes);
  return emitter.run(module, *entry);
}

llvm::Expected<rt::RuntimeModule>
mlir::kopt::joinBatchPrograms(std::vector<BatchProgram> programs,
                              const BatchAnalysis &analysis) {
  if (programs.empty())
    return makeError("no batch size to join");
  rt::RuntimeModule result = std::move(programs.front().module);
  result.batch = programs.front().batch;
  rt::DynamicBatch dynamic;
  dynamic.independent = analysis.independent;
  dynamic.reason = analysis.reason;
  for (auto [index, name] : llvm::enumerate(result.inputs))
    if (index < analysis.arguments.size() && analysis.arguments[index])
      dynamic.inputs.push_back(name);
  for (auto [index, name] : llvm::enumerate(result.outputs))
    if (index < analysis.results.size() && analysis.results[index])
      dynamic.outputs.push_back(name);
  result.dynamicBatch = std::move(dynamic);
  for (BatchProgram &program : llvm::drop_begin(programs)) {
    rt::ModuleProgram &added = result.specializations.emplace_back();
    added = std::move(static_cast<rt::ModuleProgram &>(program.module));
    added.batch = program.batch;
  }
  if (rt::Status status = result.verify(); !status.isOk())
    return makeError("the programs of the batch sizes do not form one "
                     "module: " +
                     status.message());
  return std::move(result);
}
