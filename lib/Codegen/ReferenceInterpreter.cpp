//===- ReferenceInterpreter.cpp - fp64 reference of a group -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `create` clones the function, generalises its named linalg ops to
// linalg.generic, and turns each tensor value into a node that knows how to
// produce one element: a function argument, a constant, a reshape of another
// node, a padded node, a softmax, or a result of a linalg.generic. Each
// generic body is compiled into a flat list of instructions over a slot array
// of doubles, with values captured from outside the body folded to constants.
//
// Evaluation is demand-driven: `valueAt(node, index)` returns a cached element
// or computes it. For a generic whose output maps are projected permutations
// of all its parallel dimensions, an output element fixes the parallel loop
// point; the body then runs over every reduction point in loop order, reading
// operands through `valueAt`, and the element of every result at that point
// is cached. Other generics are evaluated whole, once. A softmax element
// computes and caches its whole row. `evaluateAll` instead evaluates every
// generic whole, in loop-nest order, so the two modes check each other. Errors
// found while evaluating (an out-of-bounds access) are recorded and returned by
// the caller.
//
// This file builds the graph of tensor nodes and evaluates every kind but
// linalg.generic (ReferenceGeneric.cpp); ReferenceInstructions.cpp compiles
// and runs the scalar instructions; ReferenceInterpreterImpl.h holds what
// they share.
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/ReferenceInterpreter.h"

#include "ReferenceInterpreterImpl.h"

#include "kopt/Codegen/TensorMoves.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Support/DebugStringHelper.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::reference;

//===----------------------------------------------------------------------===//
// Building the graph
//===----------------------------------------------------------------------===//

static SmallVector<int64_t> getStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

llvm::Expected<TensorNode *>
ReferenceInterpreter::Impl::newTensor(Value value, TensorNode::Kind kind) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return makeError("value of type " + mlir::debugString(value.getType()) +
                     " is not a statically shaped tensor");
  TensorNode &node = tensors.emplace_back();
  node.kind = kind;
  node.shape.assign(type.getShape().begin(), type.getShape().end());
  node.strides = getStrides(node.shape);
  node.numElements = type.getNumElements();
  nodeOf[value] = &node;
  return &node;
}

llvm::Expected<TensorNode *>
ReferenceInterpreter::Impl::getNode(Value value, Operation *user) {
  auto it = nodeOf.find(value);
  if (it == nodeOf.end())
    return makeError("tensor operand of " + describe(user) +
                     " is not produced by a supported operation");
  return it->second;
}

llvm::Error ReferenceInterpreter::Impl::build(func::FuncOp original) {
  module = ModuleOp::create(original.getLoc());
  auto func = cast<func::FuncOp>(original->clone());
  module->push_back(func);
  std::string funcName = "@" + func.getSymName().str();
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return makeError("function " + funcName + " must have a single block");

  // Generalise named linalg ops (everything but generic and fill; softmax is
  // not a structured op and is interpreted directly).
  SmallVector<linalg::LinalgOp> named;
  func.walk([&](linalg::LinalgOp op) {
    if (!isa<linalg::GenericOp, linalg::FillOp>(op))
      named.push_back(op);
  });
  IRRewriter rewriter(func.getContext());
  for (linalg::LinalgOp op : named) {
    std::string name = describe(op);
    rewriter.setInsertionPoint(op);
    if (failed(linalg::generalizeNamedOp(rewriter, op)))
      return makeError("cannot generalise " + name + " in " + funcName);
  }

  Block &block = func.getBody().front();
  for (BlockArgument arg : block.getArguments()) {
    auto node = newTensor(arg, TensorNode::Kind::Input);
    if (!node)
      return makeError("argument #" + Twine(arg.getArgNumber()) + " of " +
                       funcName + ": " + llvm::toString(node.takeError()));
    (*node)->inputIndex = arg.getArgNumber();
    inputNodes.push_back(*node);
  }

  for (Operation &op : block) {
    auto withContext = [&](llvm::Error err) {
      return makeError(llvm::toString(std::move(err)) + " (in " + funcName +
                       ")");
    };
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value operand : ret.getOperands()) {
        auto node = getNode(operand, &op);
        if (!node)
          return withContext(node.takeError());
        outputNodes.push_back(*node);
      }
      continue;
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      if (!isa<ShapedType>(constant.getType())) {
        std::optional<double> value =
            ProgramBuilder::getScalarAttrValue(constant.getValue());
        if (!value)
          return withContext(makeError("unsupported constant"));
        scalars[constant] = *value;
        continue;
      }
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!dense)
        return withContext(
            makeError("unsupported tensor constant (only dense elements)"));
      auto node = newTensor(constant, TensorNode::Kind::Constant);
      if (!node)
        return withContext(node.takeError());
      bool isBool = dense.getElementType().isInteger(1);
      if (isa<FloatType>(dense.getElementType())) {
        for (const APFloat &v : dense.getValues<APFloat>()) {
          APFloat d = v;
          bool losesInfo = false;
          d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                    &losesInfo);
          (*node)->constant.push_back(d.convertToDouble());
        }
      } else if (dense.getElementType().isIntOrIndex()) {
        for (const APInt &v : dense.getValues<APInt>())
          (*node)->constant.push_back(
              isBool ? (v.isZero() ? 0.0 : 1.0)
                     : static_cast<double>(v.getSExtValue()));
      } else {
        return withContext(makeError("unsupported tensor constant type"));
      }
      if (dense.isSplat() && !(*node)->constant.empty()) {
        (*node)->kind = TensorNode::Kind::Scalar;
        (*node)->scalar = (*node)->constant.front();
        (*node)->constant.clear();
      }
      continue;
    }
    if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
      auto node = newTensor(empty, TensorNode::Kind::Scalar);
      if (!node)
        return withContext(node.takeError());
      continue;
    }
    if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      auto it = scalars.find(fill.getInputs()[0]);
      if (it == scalars.end())
        return withContext(makeError("fill value of " + describe(&op) +
                                     " is not known before evaluation"));
      if (fill->getNumResults() != 1)
        return withContext(makeError(describe(&op) + " on a buffer"));
      auto node = newTensor(fill->getResult(0), TensorNode::Kind::Scalar);
      if (!node)
        return withContext(node.takeError());
      (*node)->scalar = it->second;
      continue;
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(
            op)) {
      // Row-major reshapes keep every element's linear index.
      auto source = getNode(op.getOperand(0), &op);
      if (!source)
        return withContext(source.takeError());
      auto node = newTensor(op.getResult(0), TensorNode::Kind::Alias);
      if (!node)
        return withContext(node.takeError());
      if ((*node)->numElements != (*source)->numElements)
        return withContext(makeError("reshape changes the element count"));
      (*node)->source = *source;
      continue;
    }
    if (isPlacementOp(&op)) {
      auto placement = getPlacement(&op);
      if (!placement)
        return withContext(placement.takeError());
      auto node = newTensor(op.getResult(0), TensorNode::Kind::Place);
      if (!node)
        return withContext(node.takeError());
      for (const PlacedTensor &piece : placement->pieces) {
        auto source = getNode(piece.source, &op);
        if (!source)
          return withContext(source.takeError());
        (*node)->pieces.push_back(
            {*source, piece.offsets, piece.strides, piece.sourceDims});
      }
      if (Value fallback = placement->fallback) {
        auto source = getNode(fallback, &op);
        if (!source)
          return withContext(source.takeError());
        (*node)->source = *source;
      }
      if (Value padding = placement->padding) {
        if (auto constant = padding.getDefiningOp<arith::ConstantOp>())
          if (std::optional<double> value =
                  ProgramBuilder::getScalarAttrValue(constant.getValue()))
            scalars[padding] = *value;
        auto it = scalars.find(padding);
        if (it == scalars.end())
          return withContext(
              makeError(describe(&op) + " without a constant padding value"));
        (*node)->scalar = it->second;
      }
      continue;
    }
    if (isa<tensor::ExtractSliceOp>(op)) {
      auto read = getSliceRead(&op);
      if (!read)
        return withContext(read.takeError());
      auto source = getNode(read->source, &op);
      if (!source)
        return withContext(source.takeError());
      auto node = newTensor(op.getResult(0), TensorNode::Kind::Slice);
      if (!node)
        return withContext(node.takeError());
      (*node)->source = *source;
      (*node)->pieces.push_back(
          {*source, read->offsets, read->strides, read->resultDims});
      continue;
    }
    if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op)) {
      auto source = getNode(softmax.getInput(), &op);
      if (!source)
        return withContext(source.takeError());
      if (softmax->getNumResults() != 1)
        return withContext(makeError(describe(&op) + " on a buffer"));
      auto node = newTensor(softmax->getResult(0), TensorNode::Kind::Softmax);
      if (!node)
        return withContext(node.takeError());
      (*node)->source = *source;
      (*node)->dimension = softmax.getDimension();
      if ((*node)->dimension < 0 ||
          (*node)->dimension >= static_cast<int64_t>((*node)->shape.size()))
        return withContext(makeError("softmax dimension out of range"));
      continue;
    }
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (!generic.hasPureTensorSemantics())
        return withContext(makeError(describe(&op) + " on buffers"));
      if (llvm::Error err = addGeneric(generic))
        return withContext(std::move(err));
      continue;
    }
    // Scalar arith and math ops outside any body are folded now.
    if (op.getNumResults() == 1 &&
        !isa<ShapedType>(op.getResult(0).getType()) &&
        getOpcode(op.getName().getStringRef()) != Opcode::Unknown &&
        !isa<linalg::IndexOp>(op)) {
      Program program;
      ProgramBuilder builder(program, scalars);
      if (llvm::Error err = builder.addOp(&op))
        return withContext(std::move(err));
      run(program, nullptr);
      scalars[op.getResult(0)] = program.slots[program.instrs.back().result];
      continue;
    }
    return withContext(makeError("unsupported operation " + describe(&op)));
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

llvm::Error
ReferenceInterpreter::Impl::begin(ArrayRef<std::vector<double>> newInputs,
                                  bool dense) {
  if (newInputs.size() != inputNodes.size())
    return makeError("expected " + Twine(inputNodes.size()) + " inputs, got " +
                     Twine(newInputs.size()));
  for (auto [i, node] : llvm::enumerate(inputNodes))
    if (static_cast<int64_t>(newInputs[i].size()) != node->numElements)
      return makeError("input #" + Twine(i) + " has " +
                       Twine(newInputs[i].size()) + " elements, expected " +
                       Twine(node->numElements));
  inputs = newInputs;
  error.clear();
  for (TensorNode &node : tensors)
    if (node.kind == TensorNode::Kind::Generic ||
        node.kind == TensorNode::Kind::Softmax)
      node.cache.reset(dense, node.numElements);
  for (GenericNode &node : generics)
    node.evaluated = false;
  return llvm::Error::success();
}

double ReferenceInterpreter::Impl::valueAt(TensorNode *node, int64_t index) {
  switch (node->kind) {
  case TensorNode::Kind::Input:
    return inputs[node->inputIndex][index];
  case TensorNode::Kind::Constant:
    return node->constant[index];
  case TensorNode::Kind::Scalar:
    return node->scalar;
  case TensorNode::Kind::Alias:
    return valueAt(node->source, index);
  case TensorNode::Kind::Place: {
    // The first piece that covers the element gives it.
    for (const PlacedNode &piece : node->pieces) {
      int64_t sourceIndex = 0;
      bool covered = true;
      for (size_t i = 0; i < node->shape.size() && covered; ++i) {
        int64_t shifted =
            (index / node->strides[i]) % node->shape[i] - piece.offsets[i];
        int64_t dim = piece.sourceDims[i];
        if (dim < 0) {
          covered = shifted == 0;
          continue;
        }
        int64_t coord = shifted / piece.strides[i];
        covered = shifted >= 0 && shifted % piece.strides[i] == 0 &&
                  coord < piece.source->shape[dim];
        sourceIndex += coord * piece.source->strides[dim];
      }
      if (covered)
        return valueAt(piece.source, sourceIndex);
    }
    return node->source ? valueAt(node->source, index) : node->scalar;
  }
  case TensorNode::Kind::Slice: {
    const PlacedNode &window = node->pieces.front();
    int64_t sourceIndex = 0;
    for (size_t j = 0; j < window.offsets.size(); ++j) {
      int64_t dim = window.sourceDims[j];
      int64_t coord =
          dim < 0 ? 0 : (index / node->strides[dim]) % node->shape[dim];
      sourceIndex += (window.offsets[j] + coord * window.strides[j]) *
                     node->source->strides[j];
    }
    return valueAt(node->source, sourceIndex);
  }
  case TensorNode::Kind::Generic:
  case TensorNode::Kind::Softmax:
    break;
  }
  double value;
  if (node->cache.lookup(index, value))
    return value;
  if (node->kind == TensorNode::Kind::Softmax)
    computeSoftmaxRow(node, index);
  else
    computeGenericPoint(*node->generic, node->resultIndex, index);
  if (!node->cache.lookup(index, value)) {
    fail("internal error: element not computed");
    return std::nan("");
  }
  return value;
}

void ReferenceInterpreter::Impl::computeSoftmaxRow(TensorNode *node,
                                                   int64_t index) {
  int64_t dim = node->dimension;
  int64_t stride = node->strides[dim], size = node->shape[dim];
  int64_t base = index - ((index / stride) % size) * stride;
  std::vector<double> row(size);
  double maximum = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < size; ++k) {
    row[k] = valueAt(node->source, base + k * stride);
    maximum = std::max(maximum, row[k]);
  }
  double sum = 0.0;
  for (double &v : row) {
    v = std::exp(v - maximum);
    sum += v;
  }
  for (int64_t k = 0; k < size; ++k)
    node->cache.store(base + k * stride, row[k] / sum);
}

//===----------------------------------------------------------------------===//
// Public interface
//===----------------------------------------------------------------------===//

ReferenceInterpreter::ReferenceInterpreter(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}

ReferenceInterpreter::~ReferenceInterpreter() = default;

llvm::Expected<std::unique_ptr<ReferenceInterpreter>>
ReferenceInterpreter::create(func::FuncOp func) {
  auto impl = std::make_unique<Impl>();
  if (llvm::Error err = impl->build(func))
    return std::move(err);
  return std::unique_ptr<ReferenceInterpreter>(
      new ReferenceInterpreter(std::move(impl)));
}

unsigned ReferenceInterpreter::getNumInputs() const {
  return impl->inputNodes.size();
}
unsigned ReferenceInterpreter::getNumOutputs() const {
  return impl->outputNodes.size();
}
ArrayRef<int64_t> ReferenceInterpreter::getInputShape(unsigned index) const {
  return impl->inputNodes[index]->shape;
}
int64_t ReferenceInterpreter::getInputNumElements(unsigned index) const {
  return impl->inputNodes[index]->numElements;
}
int64_t ReferenceInterpreter::getOutputNumElements(unsigned index) const {
  return impl->outputNodes[index]->numElements;
}

/// Tensors up to this many elements get a dense cache in `evaluateAll`.
static constexpr int64_t kMaxDenseCacheElements = int64_t(1) << 24;

llvm::Expected<std::vector<std::vector<double>>>
ReferenceInterpreter::evaluateAll(ArrayRef<std::vector<double>> inputs) {
  bool dense = llvm::all_of(impl->tensors, [](const TensorNode &node) {
    return node.numElements <= kMaxDenseCacheElements;
  });
  if (llvm::Error err = impl->begin(inputs, dense))
    return std::move(err);
  impl->wholeOps = true;
  std::vector<std::vector<double>> outputs;
  for (TensorNode *node : impl->outputNodes) {
    std::vector<double> &values = outputs.emplace_back(node->numElements);
    for (int64_t i = 0; i < node->numElements; ++i)
      values[i] = impl->valueAt(node, i);
    if (!impl->error.empty())
      return makeError(impl->error);
  }
  return outputs;
}

llvm::Expected<std::vector<double>>
ReferenceInterpreter::evaluatePoints(ArrayRef<std::vector<double>> inputs,
                                     unsigned outputIndex,
                                     ArrayRef<int64_t> linearPoints) {
  if (outputIndex >= impl->outputNodes.size())
    return makeError("output #" + Twine(outputIndex) + " does not exist (" +
                     Twine(impl->outputNodes.size()) + " outputs)");
  TensorNode *node = impl->outputNodes[outputIndex];
  for (int64_t point : linearPoints)
    if (point < 0 || point >= node->numElements)
      return makeError("point " + Twine(point) +
                       " is out of range for output #" + Twine(outputIndex) +
                       " of " + Twine(node->numElements) + " elements");
  if (llvm::Error err = impl->begin(inputs, /*dense=*/false))
    return std::move(err);
  impl->wholeOps = false;
  std::vector<double> values;
  values.reserve(linearPoints.size());
  for (int64_t point : linearPoints) {
    values.push_back(impl->valueAt(node, point));
    if (!impl->error.empty())
      return makeError(impl->error);
  }
  return values;
}
