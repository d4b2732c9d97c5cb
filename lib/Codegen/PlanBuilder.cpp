//===- PlanBuilder.cpp - Assemble a KernelPlan from generated ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/PlanBuilder.h"

#include "DeadResults.h"
#include "SoftmaxForm.h"

#include "kopt/Analysis/OpClassification.h"
#include "kopt/Codegen/Identifier.h"
#include "kopt/Codegen/LibraryCalls.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Support/DebugStringHelper.h"

using namespace mlir;
using namespace mlir::kopt;

bool mlir::kopt::isInlinedOp(Operation *op) {
  return isCheapToClone(op) ||
         isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op);
}

/// Named ops that library calls may take; everything else is generalised.
static bool keepsNamedForm(Operation *op) {
  return isa<linalg::GenericOp, linalg::FillOp>(op) || isLibraryCandidate(op);
}

/// True if `value` is a fill of a zero constant.
static bool isZeroFill(Value value) {
  auto fill = value.getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

/// Rewrites `op` (one result, accumulating into `init`) to accumulate into a
/// zero-filled tensor, and adds `init` to its result afterwards.
static LogicalResult splitAccumulator(IRRewriter &rewriter,
                                      linalg::LinalgOp op) {
  if (op->getNumResults() != 1)
    return failure();
  OpOperand *initOperand = op.getDpsInitOperand(0);
  Value init = initOperand->get();
  auto type = cast<RankedTensorType>(init.getType());
  if (!isa<FloatType>(type.getElementType()))
    return failure();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                        type.getElementType());
  Value zero = arith::ConstantOp::create(
      rewriter, loc, rewriter.getFloatAttr(type.getElementType(), 0.0));
  Value zeros = linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
  rewriter.modifyOpInPlace(op, [&] { initOperand->set(zeros); });

  rewriter.setInsertionPointAfter(op);
  Value result = op->getResult(0);
  AffineMap identity = rewriter.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  auto add = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{result, init},
      ValueRange{empty}, ArrayRef<AffineMap>{identity, identity, identity},
      iterators, [](OpBuilder &b, Location bodyLoc, ValueRange args) {
        Value sum = arith::AddFOp::create(b, bodyLoc, args[0], args[1]);
        linalg::YieldOp::create(b, bodyLoc, sum);
      });
  rewriter.replaceAllUsesExcept(result, add.getResult(0), add);
  return success();
}

llvm::Expected<PreparedGroup> mlir::kopt::prepareGroup(func::FuncOp func) {
  PreparedGroup prepared;
  OpBuilder builder(func.getContext());
  prepared.module = ModuleOp::create(func.getLoc());
  prepared.func = cast<func::FuncOp>(func->clone());
  prepared.module->push_back(prepared.func);

  IRRewriter rewriter(func.getContext());
  SmallVector<linalg::SoftmaxOp> softmaxes;
  prepared.func.walk([&](linalg::SoftmaxOp op) { softmaxes.push_back(op); });
  for (auto [id, op] : llvm::enumerate(softmaxes)) {
    Operation *previous = op->getPrevNode();
    rewriter.setInsertionPoint(op);
    FailureOr<SmallVector<Value>> results = op.decomposeOperation(rewriter);
    if (failed(results))
      return llvm::createStringError("cannot decompose linalg.softmax");
    // Tag the parts, so that the baseline can still run one softmax as one
    // kernel, as eager frameworks do.
    Operation *part = previous ? previous->getNextNode()
                               : &prepared.func.getBody().front().front();
    for (; part != op.getOperation(); part = part->getNextNode())
      if (!isInlinedOp(part))
        part->setAttr(kSoftmaxPartAttrName, rewriter.getI64IntegerAttr(id));
    rewriter.replaceOp(op, *results);
  }
  // Reductions that compute an index nobody reads lose it, and softmaxes
  // written out op by op are tagged like linalg.softmax's parts.
  removeUnusedResults(prepared.func);
  tagWrittenOutSoftmaxes(prepared.func, softmaxes.size());

  // Library calls start from a zero accumulator: a matmul or convolution
  // accumulating into a tensor (a broadcast bias, say) becomes one into
  // zeros followed by an elementwise add of that tensor.
  SmallVector<linalg::LinalgOp> accumulating;
  prepared.func.walk([&](linalg::LinalgOp op) {
    if (isLibraryCandidate(op) && !isZeroFill(op.getDpsInits()[0]))
      accumulating.push_back(op);
  });
  for (linalg::LinalgOp op : accumulating)
    if (failed(splitAccumulator(rewriter, op)))
      return llvm::createStringError(
          "cannot split the accumulator of '%s'",
          op->getName().getStringRef().str().c_str());

  SmallVector<linalg::LinalgOp> named;
  prepared.func.walk([&](linalg::LinalgOp op) {
    if (!keepsNamedForm(op))
      named.push_back(op);
  });
  for (linalg::LinalgOp op : named) {
    rewriter.setInsertionPoint(op);
    if (failed(linalg::generalizeNamedOp(rewriter, op)))
      return llvm::createStringError(
          "cannot generalise '%s'", op->getName().getStringRef().str().c_str());
  }
  return prepared;
}

PlanBuilder::PlanBuilder(const KernelTask &task, func::FuncOp func,
                         llvm::StringRef proposer, llvm::StringRef variant)
    : task(task), func(func) {
  plan.taskKey = task.key;
  plan.proposer = proposer.str();
  plan.variant = variant.str();
  plan.sources.push_back({"main", getKernelPreamble().str()});
}

std::string PlanBuilder::materialize(Value value) {
  auto it = names.find(value);
  if (it != names.end())
    return it->second;
  std::string name;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    name = task.inputs[arg.getArgNumber()].name;
  } else {
    auto returnOp =
        cast<func::ReturnOp>(func.getBody().front().getTerminator());
    for (auto [index, operand] : llvm::enumerate(returnOp.getOperands()))
      if (operand == value) {
        name = task.outputs[index].name;
        break;
      }
    if (name.empty()) {
      name = "tmp" + std::to_string(temporaries++);
      auto type = cast<RankedTensorType>(value.getType());
      TensorSpec spec;
      spec.name = name;
      spec.elementType = *getElementType(type.getElementType());
      spec.shape.assign(type.getShape().begin(), type.getShape().end());
      plan.temporaries.push_back(spec);
    }
  }
  names[value] = name;
  return name;
}

std::string PlanBuilder::findBuffer(Value value) const {
  auto it = names.find(value);
  if (it != names.end() && written.contains(value))
    return it->second;
  if (auto arg = dyn_cast<BlockArgument>(value))
    return task.inputs[arg.getArgNumber()].name;
  if (Operation *op = value.getDefiningOp())
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
      return findBuffer(op->getOperand(0));
  return "";
}

static std::vector<int64_t> shapeOf(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return {type.getShape().begin(), type.getShape().end()};
}

TensorEmitter::LeafFn PlanBuilder::leafFn() const {
  return [this](Value value) -> std::optional<LeafTensor> {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      const TensorSpec &input = task.inputs[arg.getArgNumber()];
      return LeafTensor{input.name, input.elementType, input.shape};
    }
    auto it = names.find(value);
    if (it == names.end() || !written.contains(value))
      return std::nullopt;
    auto type = cast<RankedTensorType>(value.getType());
    return LeafTensor{it->second, *getElementType(type.getElementType()),
                      shapeOf(value)};
  };
}

KernelOutput PlanBuilder::outputFor(Value value) {
  KernelOutput output;
  output.value = value;
  output.param = materialize(value);
  auto type = cast<RankedTensorType>(value.getType());
  output.elementType = *getElementType(type.getElementType());
  output.shape = shapeOf(value);
  return output;
}

void PlanBuilder::addKernel(const GeneratedKernel &kernel,
                            llvm::StringRef comment) {
  plan.sources.front().code += "\n" + kernel.code;
  addLaunch(kernel, comment);
}

void PlanBuilder::addLaunch(const GeneratedKernel &kernel,
                            llvm::StringRef comment) {
  PlanStep step;
  step.kind = PlanStep::Kind::Launch;
  step.comment = comment.str();
  step.launch.source = "main";
  step.launch.entry = kernel.entry;
  step.launch.grid = kernel.grid;
  step.launch.block = kernel.block;
  step.launch.args = kernel.args;
  step.launch.sharedBytes = kernel.sharedBytes;
  step.launch.cluster = kernel.cluster;
  step.launch.cooperative = kernel.cooperative;
  plan.steps.push_back(std::move(step));
  // The kernel's outputs now hold data later steps may read.
  for (auto &[value, name] : names)
    if (llvm::is_contained(kernel.args, name))
      written.insert(value);
}

llvm::Error PlanBuilder::finishOutputs(MLIRContext *context) {
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [index, operand] : llvm::enumerate(returnOp.getOperands())) {
    const std::string &name = task.outputs[index].name;
    auto it = names.find(operand);
    if (it != names.end() && it->second == name && written.contains(operand))
      continue;
    // Compute the output from what is in memory (a copy or re-indexing).
    KernelOutput output;
    output.value = operand;
    output.param = name;
    output.elementType = task.outputs[index].elementType;
    output.shape = task.outputs[index].shape;
    PointwiseOptions options;
    options.vectorWidth = getMaxVectorWidth(
        output.elementType, output.shape.empty() ? 1 : output.shape.back());
    auto kernel =
        generatePointwiseKernel(context, entryName("copy_out"),
                                "writes " + name, {output}, leafFn(), options);
    if (!kernel)
      return kernel.takeError();
    addKernel(*kernel, "writes task output " + name);
  }
  return llvm::Error::success();
}

std::string PlanBuilder::entryName(llvm::StringRef what) {
  // The group's function name may be any string; the entry must be C.
  return sanitizeIdentifier(task.name) + "_" + what.str() + "_" +
         std::to_string(kernels++);
}

void PlanBuilder::addStep(PlanStep step, llvm::ArrayRef<Value> writes) {
  plan.steps.push_back(std::move(step));
  for (Value value : writes)
    written.insert(value);
}

KernelPlan PlanBuilder::take() { return std::move(plan); }
