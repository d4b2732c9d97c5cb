//===- PoolingKernel.cpp - Sliding-window pooling kernels -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "PoolingKernel.h"

#include "LinearForm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/AffineExprVisitor.h"

using namespace mlir;
using namespace mlir::kopt;

namespace {
/// An affine expression as coefficients of the loops plus a constant.
struct Linear {
  SmallVector<int64_t> coeffs;
  int64_t offset = 0;
};
} // namespace

static std::optional<Linear> getLinear(AffineExpr expr, unsigned numLoops) {
  Linear linear;
  linear.coeffs.assign(numLoops, 0);
  if (!addLinearForm(expr, 1, linear.coeffs, linear.offset))
    return std::nullopt;
  return linear;
}

/// Whether `map` reads some dimension through a window: an index adding a
/// parallel loop and a reduction loop.
static bool readsThroughWindow(linalg::GenericOp op, AffineMap map) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (AffineExpr result : map.getResults()) {
    std::optional<Linear> linear = getLinear(result, op.getNumLoops());
    if (!linear)
      continue;
    bool parallel = false, reduction = false;
    for (auto [loop, coeff] : llvm::enumerate(linear->coeffs))
      if (coeff != 0)
        (iterators[loop] == utils::IteratorType::reduction ? reduction
                                                           : parallel) = true;
    if (parallel && reduction)
      return true;
  }
  return false;
}

linalg::GenericOp mlir::kopt::findPoolingOp(func::FuncOp group) {
  linalg::GenericOp found;
  for (auto generic : group.getBody().front().getOps<linalg::GenericOp>()) {
    if (generic.getNumReductionLoops() == 0)
      continue;
    // The body reads one input, through the window (a convolution reads
    // its filter too).
    SmallVector<OpOperand *> read;
    for (OpOperand *input : generic.getDpsInputOperands())
      if (generic.payloadUsesValueFromOperand(input))
        read.push_back(input);
    if (read.size() != 1 ||
        !readsThroughWindow(generic,
                            generic.getMatchingIndexingMap(read.front())))
      continue;
    if (found)
      return nullptr;
    found = generic;
  }
  return found;
}

/// Whether `op` folds two values with an associative and commutative op
/// the sliding kernel may regroup (columns first, then rows).
static bool isRegroupableCombiner(Operation *op) {
  return isa<arith::AddFOp, arith::MaximumFOp, arith::MaxNumFOp,
             arith::MinimumFOp, arith::MinNumFOp, arith::AddIOp, arith::MaxSIOp,
             arith::MinSIOp, arith::MaxUIOp, arith::MinUIOp>(op);
}

bool mlir::kopt::slidesDownColumns(const PoolingWindow &window) {
  linalg::GenericOp op = window.op;
  return window.slideDim + 2 ==
         cast<ShapedType>(op->getResult(0).getType()).getRank();
}

llvm::Expected<PoolingWindow>
mlir::kopt::matchPoolingWindow(linalg::GenericOp op, unsigned slideDim) {
  auto fail = [](const char *reason) {
    return llvm::createStringError(llvm::Twine("pooling: ") + reason);
  };
  if (op.getNumResults() != 1 || op.getNumDpsInits() != 1)
    return fail("not a single-result reduction");
  auto resultType = cast<RankedTensorType>(op.getResult(0).getType());
  unsigned rank = resultType.getRank();
  unsigned numLoops = op.getNumLoops();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (rank == 0 || !resultType.hasStaticShape() ||
      op.getMatchingIndexingMap(op.getDpsInitOperand(0)) !=
          AffineMap::getMultiDimIdentityMap(numLoops, op.getContext())
              .getMajorSubMap(rank) ||
      !llvm::all_of(llvm::seq(0u, numLoops), [&](unsigned loop) {
        return (iterators[loop] == utils::IteratorType::reduction) ==
               (loop >= rank);
      }))
    return fail("the output is not indexed by the parallel loops in order, "
                "reduction loops last");

  // The body folds the window's element into the accumulator, nothing else.
  Block &body = op.getRegion().front();
  PoolingWindow window;
  window.op = op;
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (!op.payloadUsesValueFromOperand(input))
      continue;
    if (window.input)
      return fail("the body reads more than one input");
    window.input = input;
  }
  if (!window.input)
    return fail("the body reads no input");
  Operation *combiner =
      body.getOperations().size() == 2
          ? body.getTerminator()->getOperand(0).getDefiningOp()
          : nullptr;
  Value element = body.getArgument(window.input->getOperandNumber());
  Value acc = body.getArgument(op.getNumDpsInputs());
  if (!combiner || !isRegroupableCombiner(combiner) ||
      !((combiner->getOperand(0) == element &&
         combiner->getOperand(1) == acc) ||
        (combiner->getOperand(0) == acc && combiner->getOperand(1) == element)))
    return fail("the body is not one max, min or sum of the window's element "
                "and the accumulator");
  if (element.getType() != acc.getType())
    return fail("the window's elements and the result differ in type");

  // The window slides along the output's dimension `slideDim`: one index of
  // the input adds it (times the stride) and one reduction loop (times the
  // dilation); no other index reads either.
  const char *slideName =
      slideDim + 1 == rank ? "innermost" : "second innermost";
  auto failAlong = [&](const char *what) {
    return llvm::createStringError(llvm::Twine("pooling: ") + what + " the " +
                                   slideName + " dimension");
  };
  if (slideDim >= rank || slideDim + 2 < rank)
    return failAlong("no window slides along");
  AffineMap map = op.getMatchingIndexingMap(window.input);
  window.slideDim = slideDim;
  std::optional<unsigned> slideResult;
  for (auto [position, result] : llvm::enumerate(map.getResults())) {
    std::optional<Linear> linear = getLinear(result, numLoops);
    if (!linear)
      return fail("an input index is not linear in the loops");
    if (linear->coeffs[slideDim] == 0)
      continue;
    if (slideResult)
      return failAlong("two input indices move with the output along");
    slideResult = position;
  }
  if (!slideResult)
    return failAlong("the window does not slide along");
  Linear along = *getLinear(map.getResult(*slideResult), numLoops);
  window.stride = along.coeffs[slideDim];
  for (unsigned loop = rank; loop < numLoops; ++loop) {
    if (along.coeffs[loop] == 0)
      continue;
    if (window.dilation != 1 || window.slideLoop != 0)
      return failAlong("two window loops move along");
    window.slideLoop = loop;
    window.dilation = along.coeffs[loop];
  }
  for (unsigned loop = 0; loop < rank; ++loop)
    if (loop != slideDim && along.coeffs[loop] != 0)
      return failAlong("another output moves the input index along");
  if (window.slideLoop == 0 || window.stride < 1 || window.dilation < 1)
    return failAlong("the window does not slide along");
  for (auto [position, result] : llvm::enumerate(map.getResults()))
    if (position != *slideResult &&
        getLinear(result, numLoops)->coeffs[window.slideLoop] != 0)
      return fail("the sliding window loop reads two input indices");
  // Every reduction loop moves the read, or the fold would repeat elements.
  for (unsigned loop = rank; loop < numLoops; ++loop)
    if (!map.isFunctionOfDim(loop))
      return fail("a reduction loop does not move the window");
  window.size = op.getStaticLoopRanges()[window.slideLoop];
  return window;
}

namespace {
/// Emits one sliding-window pooling kernel.
class PoolingKernelEmitter {
public:
  PoolingKernelEmitter(MLIRContext *context, CodeWriter &body,
                       TensorEmitter &emitter, const PoolingWindow &window,
                       unsigned outputsPerThread)
      : context(context), body(body), emitter(emitter), window(window),
        op(window.op), lanes(outputsPerThread),
        rank(cast<RankedTensorType>(op.getResult(0).getType()).getRank()) {}

  /// The pool's value at each of the thread's outputs, bound in `emitter`.
  llvm::Error emitPool();

  /// The index of the thread's output `lane`.
  SmallVector<AffineExpr> outputIndex(unsigned lane) const {
    SmallVector<AffineExpr> index;
    for (unsigned d = 0; d < rank; ++d)
      index.push_back(getAffineDimExpr(d, context));
    index[window.slideDim] = index[window.slideDim] + lane;
    return index;
  }

private:
  llvm::Expected<std::string> combine(llvm::StringRef element,
                                      llvm::StringRef acc);
  SmallVector<AffineExpr> inputIndex(llvm::ArrayRef<int64_t> windowPoint,
                                     int64_t column);

  MLIRContext *context;
  CodeWriter &body;
  TensorEmitter &emitter;
  const PoolingWindow &window;
  /// The pooling op (its accessors are not const).
  linalg::GenericOp op;
  unsigned lanes;
  unsigned rank;
};
} // namespace

llvm::Expected<std::string> mlir::kopt::combineInto(CodeWriter &body,
                                                    const PoolingWindow &window,
                                                    llvm::StringRef element,
                                                    llvm::StringRef acc) {
  linalg::GenericOp op = window.op;
  Block &block = op.getRegion().front();
  SmallVector<std::string> args;
  for (BlockArgument arg : block.getArguments())
    args.push_back(arg.getArgNumber() == window.input->getOperandNumber()
                       ? element.str()
                   : arg.getArgNumber() == op.getNumDpsInputs() ? acc.str()
                                                                : "0");
  BodyEmitter bodyEmitter(body);
  auto yielded =
      bodyEmitter.emit(block, args, [](unsigned) { return std::string("0"); });
  if (!yielded)
    return yielded.takeError();
  return yielded->front();
}

llvm::Expected<std::string>
PoolingKernelEmitter::combine(llvm::StringRef element, llvm::StringRef acc) {
  return combineInto(body, window, element, acc);
}

SmallVector<AffineExpr>
PoolingKernelEmitter::inputIndex(llvm::ArrayRef<int64_t> windowPoint,
                                 int64_t column) {
  // Kernel dimensions are the output's indices, the sliding one's the
  // thread's first output. The window loops are fixed; the sliding one reads
  // `column` past the first output's window.
  unsigned numLoops = op.getNumLoops();
  SmallVector<AffineExpr> loops;
  for (unsigned loop = 0; loop < numLoops; ++loop)
    loops.push_back(
        loop < rank ? getAffineDimExpr(loop, context)
                    : getAffineConstantExpr(windowPoint[loop - rank], context));
  AffineMap map = op.getMatchingIndexingMap(window.input);
  SmallVector<AffineExpr> index;
  for (AffineExpr result : map.getResults()) {
    AffineExpr expr = result.replaceDimsAndSymbols(loops, {});
    if (result.isFunctionOfDim(window.slideDim))
      expr = expr + column;
    index.push_back(simplifyAffineExpr(expr, rank, 0));
  }
  return index;
}

llvm::Error PoolingKernelEmitter::emitPool() {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned numLoops = op.getNumLoops();
  // Columns are offsets along the sliding dimension from the first output's
  // window; those some output's window reads.
  int64_t span =
      (lanes - 1) * window.stride + (window.size - 1) * window.dilation + 1;
  std::vector<bool> read(span, false);
  for (unsigned lane = 0; lane < lanes; ++lane)
    for (int64_t k = 0; k < window.size; ++k)
      read[lane * window.stride + k * window.dilation] = true;
  int64_t columns = llvm::count(read, true);
  // The other window loops' points (the rows of a 2-D window), in loop
  // order; the sliding loop stays at 0.
  int64_t points = 1;
  for (unsigned loop = rank; loop < numLoops; ++loop)
    if (loop != window.slideLoop)
      points *= ranges[loop];
  if (points * columns > kMaxPoolingLoads)
    return llvm::createStringError(
        "pooling: %lld loads per thread, more than %lld",
        (long long)(points * columns), (long long)kMaxPoolingLoads);

  auto type =
      getCudaScalarType(getElementTypeOrSelf(op.getResult(0).getType()));
  if (!type)
    return type.takeError();
  // Each column folded over the window's rows.
  std::vector<std::string> folded(span);
  SmallVector<int64_t> point(numLoops - rank, 0);
  for (int64_t p = 0; p < points; ++p) {
    int64_t rest = p;
    for (unsigned loop = numLoops; loop-- > rank;) {
      if (loop == window.slideLoop)
        continue;
      point[loop - rank] = rest % ranges[loop];
      rest /= ranges[loop];
    }
    for (int64_t column = 0; column < span; ++column) {
      if (!read[column])
        continue;
      auto element =
          emitter.valueAt(window.input->get(), inputIndex(point, column));
      if (!element)
        return element.takeError();
      if (p == 0) {
        folded[column] = body.fresh("col");
        body.line(*type + " " + folded[column] + " = " + *element + ";");
        continue;
      }
      auto value = combine(*element, folded[column]);
      if (!value)
        return value.takeError();
      body.line(folded[column] + " = " + *value + ";");
    }
  }
  // Each output folds its window's columns into its initial value.
  for (unsigned lane = 0; lane < lanes; ++lane) {
    SmallVector<AffineExpr> index = outputIndex(lane);
    auto init = emitter.valueAt(op.getDpsInitOperand(0)->get(), index);
    if (!init)
      return init.takeError();
    std::string acc = body.fresh("pool");
    body.line(*type + " " + acc + " = " + *init + ";");
    for (int64_t k = 0; k < window.size; ++k) {
      auto value =
          combine(folded[lane * window.stride + k * window.dilation], acc);
      if (!value)
        return value.takeError();
      body.line(acc + " = " + *value + ";");
    }
    emitter.bind(op.getResult(0), index, acc);
  }
  return llvm::Error::success();
}

void mlir::kopt::declareOuterIndices(CodeWriter &code,
                                     const TensorEmitter &emitter,
                                     llvm::ArrayRef<std::string> names,
                                     llvm::ArrayRef<int64_t> shape,
                                     unsigned count) {
  int outermost = count;
  for (unsigned d = 0; d < count; ++d)
    if (emitter.usesDim(d)) {
      outermost = d;
      break;
    }
  for (int d = int(count) - 1; d >= outermost; --d) {
    if (d == 0) {
      code.line("const long long " + names[d] + " = rest;");
      continue;
    }
    if (emitter.usesDim(d))
      code.line("const long long " + names[d] + " = rest % " +
                std::to_string(shape[d]) + "LL;");
    if (d > outermost)
      code.line("rest /= " + std::to_string(shape[d]) + "LL;");
  }
}

llvm::Error mlir::kopt::checkPoolOutputs(llvm::ArrayRef<KernelOutput> outputs,
                                         llvm::ArrayRef<int64_t> shape) {
  if (outputs.empty())
    return llvm::createStringError("a kernel needs an output");
  for (const KernelOutput &output : outputs)
    if (llvm::ArrayRef<int64_t>(output.shape) != shape)
      return llvm::createStringError(
          "pooling: an output differs in shape from the pool");
  return llvm::Error::success();
}

llvm::Error mlir::kopt::checkStrideOneWindows(const PoolingWindow &rows,
                                              const PoolingWindow &columns,
                                              llvm::StringRef kernels) {
  linalg::GenericOp op = rows.op;
  unsigned rank = cast<ShapedType>(op.getResult(0).getType()).getRank();
  if (columns.op != op || rank < 2 || rows.slideDim != rank - 2 ||
      columns.slideDim != rank - 1 || op.getNumLoops() != rank + 2)
    return llvm::createStringError(
        "pooling: " + kernels +
        " only a 2-D window over the two innermost dimensions");
  if (rows.stride != 1 || rows.dilation != 1 || columns.stride != 1 ||
      columns.dilation != 1)
    return llvm::createStringError("pooling: " + kernels +
                                   " only windows of stride 1 and dilation 1");
  return llvm::Error::success();
}

llvm::Error mlir::kopt::emitPoolOutputRow(
    CodeWriter &body, TensorEmitter &emitter, const PoolingWindow &rows,
    llvm::ArrayRef<std::string> folded, int64_t out, int64_t width,
    llvm::ArrayRef<KernelOutput> outputs, llvm::StringRef computeType) {
  linalg::GenericOp op = rows.op;
  MLIRContext *context = op.getContext();
  unsigned rank = cast<ShapedType>(op.getResult(0).getType()).getRank();
  SmallVector<AffineExpr> index;
  for (unsigned d = 0; d < rank; ++d)
    index.push_back(getAffineDimExpr(d, context));
  index[rank - 2] = index[rank - 2] + out;
  auto init = emitter.valueAt(op.getDpsInitOperand(0)->get(), index);
  if (!init)
    return init.takeError();
  std::string pool = body.fresh("pool");
  body.line(computeType.str() + " " + pool + " = " + *init + ";");
  for (int64_t k = 0; k < rows.size; ++k) {
    auto value = combineInto(body, rows, folded[out + k], pool);
    if (!value)
      return value.takeError();
    body.line(pool + " = " + *value + ";");
  }
  emitter.bind(op.getResult(0), index, pool);
  for (const KernelOutput &output : outputs) {
    auto value = emitter.valueAt(output.value, index);
    if (!value)
      return value.takeError();
    body.line(output.param + "[base + " + std::to_string(out * width) +
              "LL] = " + convertFromCompute(output.elementType, *value) + ";");
  }
  return llvm::Error::success();
}

llvm::Expected<GeneratedKernel> mlir::kopt::generatePoolingKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const PoolingWindow &window, const PoolingOptions &options) {
  linalg::GenericOp op = window.op;
  auto type = cast<RankedTensorType>(op.getResult(0).getType());
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  unsigned rank = shape.size();
  unsigned slide = window.slideDim;
  if (slide >= rank || slide + 2 < rank)
    return llvm::createStringError(
        "pooling: the window slides along neither of the two innermost "
        "dimensions");
  // Along a column segment (the second innermost dimension), neighbouring
  // threads take neighbouring columns.
  bool columns = slidesDownColumns(window);
  int64_t extent = shape[slide];
  int64_t inner = columns ? shape.back() : 1;
  int64_t lanes = options.outputsPerThread;
  if (llvm::Error error = checkPoolOutputs(outputs, shape))
    return std::move(error);
  if (lanes < 1 || extent < lanes)
    return llvm::createStringError(
        "pooling: %lld outputs along the sliding dimension, fewer than %lld "
        "per thread",
        (long long)extent, (long long)lanes);
  int64_t groups = (extent + lanes - 1) / lanes;
  int64_t outer = 1;
  for (unsigned d = 0; d < slide; ++d)
    outer *= shape[d];

  std::vector<std::string> names;
  for (unsigned d = 0; d < rank; ++d)
    names.push_back("i" + std::to_string(d));
  names[slide] = columns ? "h0" : "w0";
  CodeWriter body;
  TensorEmitter emitter(context, body, names, leafOf);
  PoolingKernelEmitter pool(context, body, emitter, window, lanes);
  if (llvm::Error error = pool.emitPool())
    return std::move(error);
  std::vector<std::string> stores;
  for (unsigned lane = 0; lane < lanes; ++lane)
    for (const KernelOutput &output : outputs) {
      auto value = emitter.valueAt(output.value, pool.outputIndex(lane));
      if (!value)
        return value.takeError();
      stores.push_back(
          output.param + "[base + " + std::to_string(lane * inner) +
          "] = " + convertFromCompute(output.elementType, *value) + ";");
    }

  GeneratedKernel kernel;
  kernel.entry = entry.str();
  CodeWriter code;
  code.comment(comment);
  code.comment("sliding-window pooling: " + std::to_string(lanes) +
               (columns ? " outputs down a column per thread"
                        : " neighbouring outputs per thread"));
  code.line(printKernelSignature(entry, options.blockSize, emitter.getLeaves(),
                                 outputs, kernel.args) +
            " {");
  code.indent();
  int64_t threadCount = outer * groups * inner;
  std::string count = std::to_string(threadCount) + "LL";
  std::string last = std::to_string(extent - lanes) + "LL";
  code.line("for (long long t = (long long)blockIdx.x * blockDim.x + "
            "threadIdx.x; t < " +
            count + "; t += (long long)gridDim.x * blockDim.x) {");
  code.indent();
  std::string groupsText = std::to_string(groups) + "LL";
  std::string lanesText = std::to_string(lanes) + "LL";
  std::string extentText = std::to_string(extent) + "LL";
  // The last group along the sliding dimension ends at its end, overlapping
  // the one before when the extent is no multiple of the group.
  if (columns) {
    std::string innerText = std::to_string(inner) + "LL";
    code.line("const long long " + names.back() + " = t % " + innerText + ";");
    code.line("long long rest = t / " + innerText + ";");
    code.line("const long long first = (rest % " + groupsText + ") * " +
              lanesText + ";");
    code.line("rest /= " + groupsText + ";");
    code.line("const long long h0 = first < " + last + " ? first : " + last +
              ";");
    code.line("const long long base = (rest * " + extentText + " + h0) * " +
              innerText + " + " + names.back() + ";");
  } else {
    code.line("long long rest = t / " + groupsText + ";");
    code.line("const long long first = (t % " + groupsText + ") * " +
              lanesText + ";");
    code.line("const long long w0 = first < " + last + " ? first : " + last +
              ";");
    code.line("const long long base = rest * " + extentText + " + w0;");
  }
  declareOuterIndices(code, emitter, names, shape, slide);
  code.lines(body.str());
  for (const std::string &store : stores)
    code.line(store);
  code.dedent();
  code.line("}");
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  std::string threads = std::to_string(options.blockSize);
  kernel.grid = {"min(cdiv(" + std::to_string(threadCount) + ", " + threads +
                     "), " + std::to_string(options.maxBlocks) + ")",
                 "1", "1"};
  kernel.block = {threads, "1", "1"};
  return kernel;
}

llvm::Expected<GeneratedKernel> mlir::kopt::generateWarpPoolingKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const PoolingWindow &rows, const PoolingWindow &columns,
    const WarpPoolingOptions &options) {
  linalg::GenericOp op = rows.op;
  auto type = cast<RankedTensorType>(op.getResult(0).getType());
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  unsigned rank = shape.size();
  int64_t rowsPerWarp = options.rowsPerWarp;
  if (llvm::Error error = checkStrideOneWindows(rows, columns, "warps slide"))
    return std::move(error);
  int64_t height = shape[rank - 2], width = shape[rank - 1];
  int64_t windowRows = rows.size, windowColumns = columns.size;
  if (height < rowsPerWarp || width < 32 || windowColumns > 33 ||
      rowsPerWarp < 1)
    return llvm::createStringError(
        "pooling: %lld x %lld outputs, fewer than a warp's %lld rows of 32",
        (long long)height, (long long)width, (long long)rowsPerWarp);
  if (llvm::Error error = checkPoolOutputs(outputs, shape))
    return std::move(error);
  auto computeType =
      getCudaScalarType(getElementTypeOrSelf(op.getResult(0).getType()));
  if (!computeType)
    return computeType.takeError();

  // Dimension `rank` is the column of a lane's extra read, past the
  // warp's 32.
  std::vector<std::string> names;
  for (unsigned d = 0; d < rank; ++d)
    names.push_back("i" + std::to_string(d));
  names[rank - 2] = "h0";
  names[rank - 1] = "w";
  names.push_back("wx");
  CodeWriter body;
  TensorEmitter emitter(context, body, names, leafOf);

  // The input index of window point (0, 0) for output row h0 + `row`, at
  // the lane's column or at its extra one.
  AffineMap map = op.getMatchingIndexingMap(rows.input);
  auto inputIndex = [&](int64_t row, bool extra) {
    SmallVector<AffineExpr> loops;
    for (unsigned loop = 0; loop < op.getNumLoops(); ++loop)
      loops.push_back(loop < rank ? getAffineDimExpr(loop, context)
                                  : getAffineConstantExpr(0, context));
    AffineExpr column = getAffineDimExpr(rank - 1, context);
    SmallVector<AffineExpr> index;
    for (AffineExpr result : map.getResults()) {
      AffineExpr expr = result.replaceDimsAndSymbols(loops, {});
      if (result.isFunctionOfDim(rank - 2))
        expr = expr + row;
      if (extra)
        expr = expr.replace(column, getAffineDimExpr(rank, context));
      index.push_back(simplifyAffineExpr(expr, rank + 1, 0));
    }
    return index;
  };

  // Every input row's reads first, so that all of a thread's loads are in
  // flight together (streamed row by row, each waited for before the
  // next was issued); then each row's window folded across the lanes,
  // and each output once its window's last row is folded.
  int64_t inputRows = rowsPerWarp + windowRows - 1;
  std::vector<std::string> reads, extras;
  for (int64_t row = 0; row < inputRows; ++row) {
    auto element = emitter.valueAt(rows.input->get(), inputIndex(row, false));
    if (!element)
      return element.takeError();
    reads.push_back(body.fresh("x"));
    body.line("const " + *computeType + " " + reads.back() + " = " + *element +
              ";");
    if (windowColumns > 1) {
      auto value = emitter.valueAt(rows.input->get(), inputIndex(row, true));
      if (!value)
        return value.takeError();
      extras.push_back(body.fresh("x"));
      body.line("const " + *computeType + " " + extras.back() + " = " + *value +
                ";");
    }
  }
  std::vector<std::string> folded;
  for (int64_t row = 0; row < inputRows; ++row) {
    const std::string &x = reads[row];
    std::string extra = windowColumns > 1 ? extras[row] : "";
    std::string acc = body.fresh("fold");
    body.line(*computeType + " " + acc + " = " + x + ";");
    for (int64_t k = 1; k < windowColumns; ++k) {
      std::string source = "(lane + " + std::to_string(k) + ") & 31";
      // Every lane shuffles both (a shuffle waits for the whole warp).
      std::string within = body.fresh("x"), past = body.fresh("x");
      std::string next = body.fresh("x");
      body.line("const " + *computeType + " " + within +
                " = __shfl_sync(0xffffffffu, " + x + ", " + source + ");");
      body.line("const " + *computeType + " " + past +
                " = __shfl_sync(0xffffffffu, " + extra + ", " + source + ");");
      body.line("const " + *computeType + " " + next + " = lane + " +
                std::to_string(k) + " < 32 ? " + within + " : " + past + ";");
      auto value = combineInto(body, columns, next, acc);
      if (!value)
        return value.takeError();
      body.line(acc + " = " + *value + ";");
    }
    folded.push_back(acc);
    int64_t out = row - (windowRows - 1);
    if (out < 0)
      continue;
    if (llvm::Error error = emitPoolOutputRow(body, emitter, rows, folded, out,
                                              width, outputs, *computeType))
      return std::move(error);
  }

  int64_t outer = 1;
  for (unsigned d = 0; d + 2 < rank; ++d)
    outer *= shape[d];
  int64_t rowTiles = (height + rowsPerWarp - 1) / rowsPerWarp;
  int64_t columnTiles = (width + 31) / 32;
  int64_t tiles = outer * rowTiles * columnTiles;
  GeneratedKernel kernel;
  kernel.entry = entry.str();
  CodeWriter code;
  code.comment(comment);
  code.comment("sliding-window pooling: a warp per 32 columns and " +
               std::to_string(rowsPerWarp) + " rows");
  code.line(printKernelSignature(entry, options.blockSize, emitter.getLeaves(),
                                 outputs, kernel.args) +
            " {");
  code.indent();
  code.line("const int lane = threadIdx.x & 31;");
  code.line("const long long warps = (long long)gridDim.x * (blockDim.x / "
            "32);");
  code.line("for (long long t = ((long long)blockIdx.x * blockDim.x + "
            "threadIdx.x) / 32; t < " +
            std::to_string(tiles) + "LL; t += warps) {");
  code.indent();
  std::string c = std::to_string(columnTiles) + "LL";
  std::string r = std::to_string(rowTiles) + "LL";
  code.line("const long long w0 = min((t % " + c + ") * 32LL, " +
            std::to_string(width - 32) + "LL);");
  code.line("const long long w = w0 + lane;");
  if (windowColumns > 1)
    code.line("const long long wx = w0 + 32 + min(lane, " +
              std::to_string(windowColumns - 2) + ");");
  code.line("long long rest = t / " + c + ";");
  code.line("const long long h0 = min((rest % " + r + ") * " +
            std::to_string(rowsPerWarp) + "LL, " +
            std::to_string(height - rowsPerWarp) + "LL);");
  code.line("rest /= " + r + ";");
  code.line("const long long base = (rest * " + std::to_string(height) +
            "LL + h0) * " + std::to_string(width) + "LL + w;");
  declareOuterIndices(code, emitter, names, shape, rank - 2);
  code.lines(body.str());
  code.dedent();
  code.line("}");
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  std::string threads = std::to_string(options.blockSize);
  kernel.grid = {"min(cdiv(" + std::to_string(tiles * 32) + ", " + threads +
                     "), " + std::to_string(options.maxBlocks) + ")",
                 "1", "1"};
  kernel.block = {threads, "1", "1"};
  return kernel;
}
