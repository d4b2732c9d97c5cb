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
// Evaluation is demand-driven and works on batches of elements:
// `gather(node, indices)` reads an argument through its ReferenceInput,
// recomputes the elements of an elementwise generic from its operands' elements
// (gathered in turn), and looks up or computes once a memoised element. A
// body's `tensor.extract` gathers the elements it reads in the same way, for a
// whole batch of loop points at once, each index clamped into its dimension.
// For a generic whose output maps are projected permutations of all its
// parallel dimensions, an output element fixes the parallel loop point; the
// body then runs over every reduction point in loop order, its operands
// gathered a block of reduction points at a time, and the element of every
// result at that point is memoised. Other generics are evaluated whole, once. A
// softmax element reads the maximum and the sum of its row, memoised per row.
// `evaluateAll` instead computes every node whole, in order, into a dense
// array (ReferenceDense.cpp), giving every element the same operations; the
// two modes check each other in the tests. Each reduction accumulates in loop
// order whatever the batching and the threads, so every value is the same bit
// for bit. Errors found while evaluating (an out-of-bounds access) are recorded
// in the thread's Frame and returned by the caller.
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
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
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
  node.id = tensors.size() - 1;
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

  // Kernels do not check assertions (a remark says so); nor does the
  // reference, which computes what they compute. The ops that only compute
  // their conditions (shape checks) are skipped with them.
  llvm::DenseSet<Operation *> onlyAsserted;
  for (Operation &op : llvm::reverse(block))
    if (isa<cf::AssertOp>(op) ||
        (op.getNumResults() > 0 && !op.use_empty() &&
         llvm::all_of(op.getUsers(), [&](Operation *user) {
           return onlyAsserted.contains(user);
         })))
      onlyAsserted.insert(&op);

  for (Operation &op : block) {
    if (onlyAsserted.contains(&op))
      continue;
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
      run(program, program.slots.data(), nullptr);
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

bool TensorNode::isMemoised() const {
  if (kind == Kind::Softmax)
    return true;
  return kind == Kind::Generic && !generic->isElementwise();
}

void ReferenceInterpreter::Impl::begin(
    ArrayRef<const ReferenceInput *> newInputs, bool dense) {
  inputs.assign(newInputs.begin(), newInputs.end());
  for (TensorNode &node : tensors) {
    node.data = nullptr;
    node.storage = std::vector<double>();
    if (node.kind == TensorNode::Kind::Generic ||
        node.kind == TensorNode::Kind::Softmax)
      node.cache.reset(dense, node.numElements);
  }
  for (GenericNode &node : generics)
    node.evaluated = false;
}

Frame ReferenceInterpreter::Impl::makeFrame() const {
  Frame frame;
  for (const GenericNode &node : generics)
    frame.slots.push_back(node.body.slots);
  return frame;
}

double ReferenceInterpreter::Impl::valueAt(Frame &frame, TensorNode *node,
                                           int64_t index) {
  double value;
  gather(frame, node, ArrayRef<int64_t>(index), &value);
  return value;
}

void ReferenceInterpreter::Impl::gather(Frame &frame, TensorNode *node,
                                        ArrayRef<int64_t> indices,
                                        double *values) {
  if (node->data) {
    for (auto [i, index] : llvm::enumerate(indices))
      values[i] = node->data[index];
    return;
  }
  switch (node->kind) {
  case TensorNode::Kind::Input:
    inputs[node->inputIndex]->read(indices, values);
    return;
  case TensorNode::Kind::Constant:
    for (auto [i, index] : llvm::enumerate(indices))
      values[i] = node->constant[index];
    return;
  case TensorNode::Kind::Scalar:
    std::fill(values, values + indices.size(), node->scalar);
    return;
  case TensorNode::Kind::Alias:
    gather(frame, node->source, indices, values);
    return;
  case TensorNode::Kind::Place:
  case TensorNode::Kind::Slice:
    gatherMoved(frame, node, indices, values);
    return;
  case TensorNode::Kind::Softmax:
    gatherSoftmax(frame, node, indices, values);
    return;
  case TensorNode::Kind::Generic:
    break;
  }
  if (node->generic->isElementwise()) {
    gatherElementwise(frame, *node->generic, node->resultIndex, indices,
                      values);
    return;
  }
  // Memoised elements; neighbours often repeat (a row's statistics).
  for (auto [i, index] : llvm::enumerate(indices))
    values[i] = i > 0 && index == indices[i - 1]
                    ? values[i - 1]
                    : memoisedAt(frame, node, index);
}

double ReferenceInterpreter::Impl::memoisedAt(Frame &frame, TensorNode *node,
                                              int64_t index) {
  Cache &cache = node->cache;
  double value = 0.0;
  if (cache.lookup(index, value))
    return value;
  auto compute = [&] {
    if (!node->generic->lazy)
      computeGenericWhole(frame, *node->generic);
    else
      computeGenericPoint(frame, *node->generic, node->resultIndex, index);
  };
  if (cache.dense) {
    compute();
  } else if (cache.claim(index, [&] { return cache.sparse.count(index); })) {
    compute();
    cache.release(index);
  }
  if (!cache.lookup(index, value)) {
    frame.fail("internal error: element not computed");
    return std::nan("");
  }
  return value;
}

std::optional<std::pair<TensorNode *, int64_t>>
ReferenceInterpreter::Impl::locateMoved(const TensorNode *node, int64_t index) {
  if (node->kind == TensorNode::Kind::Slice) {
    const PlacedNode &window = node->pieces.front();
    int64_t sourceIndex = 0;
    for (size_t j = 0; j < window.offsets.size(); ++j) {
      int64_t dim = window.sourceDims[j];
      int64_t coord =
          dim < 0 ? 0 : (index / node->strides[dim]) % node->shape[dim];
      sourceIndex += (window.offsets[j] + coord * window.strides[j]) *
                     node->source->strides[j];
    }
    return std::make_pair(node->source, sourceIndex);
  }
  // Place: the first piece that covers the element gives it.
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
      return std::make_pair(piece.source, sourceIndex);
  }
  if (node->source)
    return std::make_pair(node->source, index);
  return std::nullopt; // The padding value.
}

void ReferenceInterpreter::Impl::gatherMoved(Frame &frame, TensorNode *node,
                                             ArrayRef<int64_t> indices,
                                             double *values) {
  for (auto [i, index] : llvm::enumerate(indices)) {
    auto located = locateMoved(node, index);
    values[i] = node->scalar;
    if (located)
      gather(frame, located->first, ArrayRef<int64_t>(located->second),
             &values[i]);
  }
}

int64_t ReferenceInterpreter::Impl::softmaxRowBase(const TensorNode *node,
                                                   int64_t index) {
  int64_t stride = node->strides[node->dimension];
  return index - ((index / stride) % node->shape[node->dimension]) * stride;
}

void ReferenceInterpreter::Impl::gatherSoftmax(Frame &frame, TensorNode *node,
                                               ArrayRef<int64_t> indices,
                                               double *values) {
  // Each element is exp(x - max) / sum, as its row computed it.
  gather(frame, node->source, indices, values);
  int64_t lastBase = -1;
  std::pair<double, double> row;
  for (auto [i, index] : llvm::enumerate(indices)) {
    int64_t base = softmaxRowBase(node, index);
    if (base != lastBase)
      row = softmaxRow(frame, node, base);
    lastBase = base;
    values[i] = std::exp(values[i] - row.first) / row.second;
  }
}

std::pair<double, double>
ReferenceInterpreter::Impl::softmaxRow(Frame &frame, TensorNode *node,
                                       int64_t base) {
  Cache &cache = node->cache;
  auto find = [&](std::pair<double, double> &row) {
    auto it = cache.rows.find(base);
    if (it == cache.rows.end())
      return false;
    row = it->second;
    return true;
  };
  std::pair<double, double> row;
  if (!cache.claim(base, [&] { return find(row); }))
    return row;
  int64_t stride = node->strides[node->dimension];
  int64_t size = node->shape[node->dimension];
  std::vector<double> values(size);
  std::vector<int64_t> indices;
  for (int64_t start = 0; start < size; start += kBlockSize) {
    int64_t count = std::min(kBlockSize, size - start);
    indices.resize(count);
    for (int64_t k = 0; k < count; ++k)
      indices[k] = base + (start + k) * stride;
    gather(frame, node->source, indices, values.data() + start);
  }
  double maximum = -std::numeric_limits<double>::infinity();
  for (double value : values)
    maximum = std::max(maximum, value);
  double sum = 0.0;
  for (double value : values)
    sum += std::exp(value - maximum);
  row = {maximum, sum};
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    cache.rows[base] = row;
  }
  cache.release(base);
  return row;
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

namespace {
/// An argument held in memory.
class VectorInput final : public ReferenceInput {
public:
  explicit VectorInput(const std::vector<double> &values) : values(values) {}
  void read(ArrayRef<int64_t> indices, double *out) const override {
    for (auto [i, index] : llvm::enumerate(indices))
      out[i] = values[index];
  }

private:
  const std::vector<double> &values;
};

/// Adapters for `inputs`, after checking their count and sizes.
llvm::Expected<std::vector<VectorInput>>
wrapInputs(ArrayRef<TensorNode *> inputNodes,
           ArrayRef<std::vector<double>> inputs) {
  if (inputs.size() != inputNodes.size())
    return makeError("expected " + Twine(inputNodes.size()) + " inputs, got " +
                     Twine(inputs.size()));
  std::vector<VectorInput> wrapped;
  for (auto [i, node] : llvm::enumerate(inputNodes)) {
    if (static_cast<int64_t>(inputs[i].size()) != node->numElements)
      return makeError("input #" + Twine(i) + " has " +
                       Twine(inputs[i].size()) + " elements, expected " +
                       Twine(node->numElements));
    wrapped.emplace_back(inputs[i]);
  }
  return wrapped;
}

std::vector<const ReferenceInput *>
pointersTo(const std::vector<VectorInput> &inputs) {
  std::vector<const ReferenceInput *> pointers;
  for (const VectorInput &input : inputs)
    pointers.push_back(&input);
  return pointers;
}
} // namespace

ReferenceInput::~ReferenceInput() = default;

llvm::Expected<std::vector<std::vector<double>>>
ReferenceInterpreter::evaluateAll(ArrayRef<std::vector<double>> inputs,
                                  unsigned numThreads) {
  auto wrapped = wrapInputs(impl->inputNodes, inputs);
  if (!wrapped)
    return wrapped.takeError();
  impl->begin(pointersTo(*wrapped), /*dense=*/false);
  std::vector<const double *> arguments;
  for (const std::vector<double> &input : inputs)
    arguments.push_back(input.data());
  std::string error = impl->evaluateDense(arguments, numThreads);
  std::vector<std::vector<double>> outputs;
  if (error.empty()) {
    // An output without elements of its own (a fill) is read as usual.
    Frame frame = impl->makeFrame();
    std::vector<int64_t> indices;
    for (TensorNode *node : impl->outputNodes) {
      std::vector<double> &values = outputs.emplace_back(node->numElements);
      for (int64_t start = 0; start < node->numElements; start += kBlockSize) {
        indices.resize(std::min(kBlockSize, node->numElements - start));
        for (auto [i, index] : llvm::enumerate(indices))
          index = start + int64_t(i);
        impl->gather(frame, node, indices, values.data() + start);
      }
    }
    error = frame.error;
  }
  impl->begin({}, /*dense=*/false);
  if (!error.empty())
    return makeError(error);
  return outputs;
}

llvm::Expected<std::vector<double>>
ReferenceInterpreter::evaluatePoints(ArrayRef<std::vector<double>> inputs,
                                     unsigned outputIndex,
                                     ArrayRef<int64_t> linearPoints) {
  auto wrapped = wrapInputs(impl->inputNodes, inputs);
  if (!wrapped)
    return wrapped.takeError();
  return evaluatePoints(pointersTo(*wrapped), outputIndex, linearPoints);
}

llvm::Expected<std::vector<double>> ReferenceInterpreter::evaluatePoints(
    ArrayRef<const ReferenceInput *> inputs, unsigned outputIndex,
    ArrayRef<int64_t> linearPoints, unsigned numThreads) {
  if (inputs.size() != impl->inputNodes.size())
    return makeError("expected " + Twine(impl->inputNodes.size()) +
                     " inputs, got " + Twine(inputs.size()));
  if (outputIndex >= impl->outputNodes.size())
    return makeError("output #" + Twine(outputIndex) + " does not exist (" +
                     Twine(impl->outputNodes.size()) + " outputs)");
  TensorNode *node = impl->outputNodes[outputIndex];
  for (int64_t point : linearPoints)
    if (point < 0 || point >= node->numElements)
      return makeError("point " + Twine(point) +
                       " is out of range for output #" + Twine(outputIndex) +
                       " of " + Twine(node->numElements) + " elements");
  impl->begin(inputs, /*dense=*/false);
  std::vector<double> values(linearPoints.size());
  std::string error =
      impl->evaluateInParallel(node, linearPoints, values.data(), numThreads);
  if (!error.empty())
    return makeError(error);
  return values;
}
