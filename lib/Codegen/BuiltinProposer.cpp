//===- BuiltinProposer.cpp - Fused kernels from templates -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The embedded default proposer. By group kind:
//
// - elementwise and pooling groups: one pointwise kernel per output shape,
//   every producer inlined (a pooling op's pad read with bounds checks),
//   16-byte vector accesses where the innermost dimension allows;
// - reduction and softmax groups: the row kernels of BuiltinRows.cpp (a
//   block per row, several rows a block, rows in shared memory over a
//   block, a cluster or a group of blocks, split rows, a softmax per
//   cluster, and one-pass twins of the groups that sum squared deviations
//   from their rows' means);
// - contraction and convolution groups: the GEMM (cuBLASLt) or convolution
//   (cuDNN, a zero pad of the input as its own padding), then one pointwise
//   kernel for the rest of the chain (bias, activation, residual, pooling);
//   a GEMM whose group is elementwise in
//   its product also as one 3xTF32 tensor-core kernel with the group fused
//   (TensorCoreGemm.h); an NCHW convolution likewise as a 3xTF32
//   implicit GEMM on wgmma (WgmmaConv.h), with the group fused or before
//   the group's sliding-window pooling kernels; a convolution with a small
//   window (depthwise, few channels per group) also as pointwise kernels
//   that sum the window in each thread, epilogue included;
// - pooling, alone or after a convolution: besides the pointwise kernels,
//   sliding-window kernels whose threads compute several neighbouring
//   outputs each, reading the input their windows share once
//   (PoolingKernel.h).
//
// Each template yields several variants (block size, vector width) for the
// evaluator to time.
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/Proposers.h"

#include "BuiltinPlans.h"
#include "BuiltinRows.h"
#include "PoolingKernel.h"

#include "kopt/Codegen/ConvForms.h"
#include "kopt/Codegen/LibraryCalls.h"
#include "kopt/Codegen/PlanBuilder.h"
#include "kopt/Codegen/RuntimeStatus.h"
#include "kopt/Codegen/TensorCoreGemm.h"
#include "kopt/Codegen/TensorMoves.h"
#include "kopt/Codegen/WgmmaConv.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::builtins;

namespace {
struct PointwiseVariant {
  unsigned blockSize;
  unsigned vectorWidth;
  std::string name() const {
    return "bs" + std::to_string(blockSize) + "_v" +
           std::to_string(vectorWidth);
  }
};
} // namespace

/// Block sizes and vector widths worth trying for outputs of `type` whose
/// innermost dimension is `innermost`.
static std::vector<PointwiseVariant> pointwiseVariants(ElementType type,
                                                       int64_t innermost) {
  unsigned widest = getMaxVectorWidth(type, innermost);
  std::vector<PointwiseVariant> variants;
  for (unsigned blockSize : {128u, 256u, 512u}) {
    variants.push_back({blockSize, widest});
    if (widest > 1)
      variants.push_back({blockSize, 1});
  }
  return variants;
}

namespace {
struct PoolingVariant {
  PoolingWindow window;
  unsigned blockSize;
  unsigned outputsPerThread;
  /// Set for a warp or tile kernel (generateWarpPoolingKernel,
  /// generateTiledPoolingKernel): the window along rows, `window` the one
  /// down columns, `outputsPerThread` the rows a warp or tile takes.
  std::optional<PoolingWindow> rowWindow = std::nullopt;
  /// Set for a tile kernel: the tile's output columns, at most.
  int64_t tileColumns = 0;
  std::string name() const {
    if (tileColumns)
      return "pool_tile" + std::to_string(outputsPerThread) + "x" +
             std::to_string(tileColumns) + "_bs" + std::to_string(blockSize);
    return (rowWindow                   ? "pool_warp"
            : rowWindow                 ? "pool_warp"
            : slidesDownColumns(window) ? "pool_col"
                                        : "pool_w") +
           std::to_string(outputsPerThread) + "_bs" + std::to_string(blockSize);
  }
};
} // namespace

/// Outputs per thread and block sizes worth trying for each of `windows`:
/// along a row, 4 or 8; down a column, where a thread's loads of a window
/// row are shared by the rows after it, 8 or 16. A 2-D window of stride 1
/// along both (its two windows come in pairs) also as warps sliding down
/// 16 or 32 rows of 32 columns (`pool_warp<R>_bs<B>`), each input row
/// read once and its window folded by warp shuffles, and as blocks staging
/// tiles of R x C outputs' input in shared memory (`pool_tile<R>x<C>_bs<C>`).
static std::vector<PoolingVariant>
poolingVariants(llvm::ArrayRef<PoolingWindow> windows) {
  std::vector<PoolingVariant> variants;
  const PoolingWindow *down = nullptr, *along = nullptr;
  for (const PoolingWindow &window : windows)
    (slidesDownColumns(window) ? down : along) = &window;
  if (down && along && down->stride == 1 && down->dilation == 1 &&
      along->stride == 1 && along->dilation == 1) {
    ArrayRef<int64_t> shape =
        cast<ShapedType>(down->op->getResult(0).getType()).getShape();
    for (unsigned rows : {16u, 32u})
      if (shape[shape.size() - 2] >= rows && shape.back() >= 32)
        variants.push_back({*down, 128, rows, *along});
    // Tiles of 8 or 16 rows by 128 columns, or 8 by 256, where rows have
    // as many outputs: small blocks (many resident an SM) keep the most
    // loads in flight (bench/results/2026-12-04-h200-suite-real-pool-tiles.md).
    struct Tile {
      unsigned rows;
      int64_t columns;
    };
    for (Tile tile : {Tile{8, 128}, Tile{16, 128}, Tile{8, 256}})
      if (shape[shape.size() - 2] >= tile.rows && shape.back() >= tile.columns)
        variants.push_back(
            {*down, unsigned(tile.columns), tile.rows, *along, tile.columns});
  }
  for (const PoolingWindow &window : windows) {
    int64_t extent = cast<ShapedType>(window.op->getResult(0).getType())
                         .getShape()[window.slideDim];
    unsigned fewest = slidesDownColumns(window) ? 8 : 4;
    for (unsigned outputs : {fewest, 2 * fewest})
      for (unsigned blockSize : {128u, 256u})
        if (extent >= outputs)
          variants.push_back({window, blockSize, outputs});
  }
  return variants;
}

/// The group's pool, when every one of `values` has its shape (so that a
/// sliding-window kernel computes them from it elementwise): its window
/// along the innermost dimension and along the one before it, those that
/// fit; a remark saying why neither does in `remarks` when the group pools
/// but not so.
static std::vector<PoolingWindow>
findSlidingPool(func::FuncOp group, llvm::ArrayRef<Value> values,
                std::vector<std::string> &remarks) {
  linalg::GenericOp op = findPoolingOp(group);
  if (!op || values.empty())
    return {};
  Type type = op.getResult(0).getType();
  if (!llvm::all_of(values, [&](Value v) { return v.getType() == type; })) {
    remarks.push_back("builtin pool_*: pooling: the group's outputs differ in "
                      "shape from the pool");
    return {};
  }
  unsigned rank = cast<ShapedType>(type).getRank();
  std::vector<PoolingWindow> windows;
  std::string reasons;
  for (unsigned slideDim = rank; slideDim-- > 0 && slideDim + 2 >= rank;) {
    auto window = matchPoolingWindow(op, slideDim);
    if (window) {
      windows.push_back(*window);
      continue;
    }
    reasons +=
        (reasons.empty() ? "" : "; ") + llvm::toString(window.takeError());
  }
  if (windows.empty())
    remarks.push_back("builtin pool_*: " + reasons);
  return windows;
}

/// Emits one sliding-window pooling kernel computing `values`.
static llvm::Error emitPooling(PlanBuilder &builder, MLIRContext *context,
                               llvm::ArrayRef<Value> values,
                               const PoolingVariant &variant,
                               llvm::StringRef comment) {
  std::vector<KernelOutput> outputs;
  for (Value value : values)
    outputs.push_back(builder.outputFor(value));
  std::string entry = builder.entryName("pool");
  auto kernel = [&]() -> llvm::Expected<GeneratedKernel> {
    if (variant.tileColumns) {
      TiledPoolingOptions options;
      options.blockSize = variant.blockSize;
      options.tileRows = variant.outputsPerThread;
      options.maxTileColumns = variant.tileColumns;
      return generateTiledPoolingKernel(context, entry, comment, outputs,
                                        builder.leafFn(), variant.window,
                                        *variant.rowWindow, options);
    }
    if (variant.rowWindow) {
      WarpPoolingOptions options;
      options.blockSize = variant.blockSize;
      options.rowsPerWarp = variant.outputsPerThread;
      return generateWarpPoolingKernel(context, entry, comment, outputs,
                                       builder.leafFn(), variant.window,
                                       *variant.rowWindow, options);
    }
    PoolingOptions options;
    options.blockSize = variant.blockSize;
    options.outputsPerThread = variant.outputsPerThread;
    return generatePoolingKernel(context, entry, comment, outputs,
                                 builder.leafFn(), variant.window, options);
  }();
  if (!kernel)
    return kernel.takeError();
  builder.addKernel(*kernel, comment);
  return llvm::Error::success();
}

/// Emits pointwise kernels computing `values`, one per distinct shape.
static llvm::Error emitPointwise(PlanBuilder &builder, MLIRContext *context,
                                 llvm::ArrayRef<Value> values,
                                 const PointwiseVariant &variant,
                                 llvm::StringRef comment) {
  std::map<std::vector<int64_t>, std::vector<KernelOutput>> byShape;
  std::vector<std::vector<int64_t>> order;
  for (Value value : values) {
    KernelOutput output = builder.outputFor(value);
    if (!byShape.count(output.shape))
      order.push_back(output.shape);
    byShape[output.shape].push_back(output);
  }
  for (const std::vector<int64_t> &shape : order) {
    PointwiseOptions options;
    options.blockSize = variant.blockSize;
    options.vectorWidth = variant.vectorWidth;
    auto kernel =
        generatePointwiseKernel(context, builder.entryName("fused"), comment,
                                byShape[shape], builder.leafFn(), options);
    if (!kernel)
      return kernel.takeError();
    builder.addKernel(*kernel, comment);
  }
  return llvm::Error::success();
}

SmallVector<Value> builtins::returnedValues(func::FuncOp func) {
  SmallVector<Value> values;
  for (Value value : func.getBody().front().getTerminator()->getOperands())
    if (!llvm::is_contained(values, value) && !isa<BlockArgument>(value))
      values.push_back(value);
  return values;
}

std::vector<KernelOutput> builtins::returnedOutputs(PlanBuilder &builder,
                                                    func::FuncOp func) {
  std::vector<KernelOutput> outputs;
  for (Value value : returnedValues(func))
    outputs.push_back(builder.outputFor(value));
  return outputs;
}

std::string builtins::describeGroup(func::FuncOp func) {
  std::string text = "fused:";
  for (Operation &op : func.getBody().front().without_terminator())
    if (!isInlinedOp(&op))
      text += " " + describeOpForCode(&op);
  return text;
}

bool mlir::kopt::addBuiltinPlan(Proposal &proposal, KernelPlan plan,
                                const KernelTask &task, llvm::Error error) {
  if (!error)
    error = toLlvmError(verifyPlan(plan, task));
  if (error) {
    proposal.remarks.push_back("builtin " + plan.variant + ": " +
                               llvm::toString(std::move(error)));
    return false;
  }
  proposal.plans.push_back(std::move(plan));
  return true;
}

void builtins::addPlan(Proposal &proposal, PlanBuilder &builder,
                       const KernelTask &task, func::FuncOp group,
                       llvm::Error error, llvm::StringRef arithmetic,
                       llvm::StringRef arch) {
  if (!error)
    error = builder.finishOutputs(group.getContext());
  KernelPlan plan = builder.take();
  if (!arithmetic.empty())
    plan.arithmetic = arithmetic.str();
  if (!arch.empty())
    plan.arch = arch.str();
  addBuiltinPlan(proposal, std::move(plan), task, std::move(error));
}

/// The single user of `value`, when it has exactly one and `value` is not a
/// task output.
static linalg::GenericOp getOnlyUser(Value value, func::FuncOp group) {
  if (!value.hasOneUse() || llvm::is_contained(returnedValues(group), value))
    return nullptr;
  return dyn_cast<linalg::GenericOp>(*value.getUsers().begin());
}

/// The yielded value's defining op, for a single-result generic whose body
/// is that op and the yield.
static Operation *getSingleBodyOp(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (op.getNumResults() != 1 || body.getOperations().size() != 2 ||
      op.getNumReductionLoops() != 0)
    return nullptr;
  return body.getTerminator()->getOperand(0).getDefiningOp();
}

namespace {
/// The part of a GEMM's epilogue cuBLASLt can run: a bias over the N
/// columns, then a ReLU.
struct GemmEpilogue {
  /// None for a product only scaled.
  Value bias;
  bool relu = false;
  /// The constant the product is multiplied by first (cuBLASLt's alpha).
  double scale = 1.0;
  /// The last value the epilogue computes.
  Value result;
};
} // namespace

/// The vector `value` broadcasts when it is a broadcast of a 1-D tensor
/// along its last dimension to every row (`linalg.broadcast`, or a generic
/// that yields its input read at the last loop); a null value otherwise.
static Value getRowBroadcastSource(Value value) {
  Operation *op = value.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!op || !type || type.getRank() < 2)
    return Value();
  int64_t rank = type.getRank();
  if (auto broadcast = dyn_cast<linalg::BroadcastOp>(op)) {
    SmallVector<int64_t> expected =
        llvm::to_vector(llvm::seq<int64_t>(0, rank - 1));
    return llvm::to_vector(broadcast.getDimensions()) == expected
               ? broadcast.getInput()
               : Value();
  }
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() != 0)
    return Value();
  Block &body = generic.getRegion().front();
  AffineMap in = generic.getMatchingIndexingMap(generic.getDpsInputOperand(0));
  AffineMap out = generic.getMatchingIndexingMap(generic.getDpsInitOperand(0));
  if (body.getOperations().size() != 1 ||
      body.getTerminator()->getOperand(0) != body.getArgument(0) ||
      !out.isIdentity() || in.getNumResults() != 1 ||
      in.getResult(0) != getAffineDimExpr(rank - 1, generic.getContext()))
    return Value();
  return generic.getDpsInputOperand(0)->get();
}

static std::optional<GemmEpilogue> matchGemmEpilogue(Operation *anchor,
                                                     func::FuncOp group) {
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(anchor))
    return std::nullopt;
  Value product = anchor->getResult(0);
  linalg::GenericOp add = getOnlyUser(product, group);
  if (!add || add.getNumDpsInputs() != 2 || add.getNumResults() != 1 ||
      add.getNumReductionLoops() != 0)
    return std::nullopt;
  // The body yields x + bias, or max(x + bias, 0); constants aside, nothing
  // else.
  Block &addBody = add.getRegion().front();
  Operation *yielded = addBody.getTerminator()->getOperand(0).getDefiningOp();
  bool fusedRelu = false;
  Operation *addOp = yielded;
  if (yielded && isa<arith::MaximumFOp, arith::MaxNumFOp>(yielded)) {
    Value lhs = yielded->getOperand(0), rhs = yielded->getOperand(1);
    Value other = matchPattern(rhs, m_AnyZeroFloat())   ? lhs
                  : matchPattern(lhs, m_AnyZeroFloat()) ? rhs
                                                        : Value();
    addOp = other ? other.getDefiningOp() : nullptr;
    fusedRelu = true;
  }
  if (!addOp || !isa<arith::AddFOp>(addOp) ||
      llvm::any_of(addBody.without_terminator(), [&](Operation &op) {
        return &op != addOp && &op != yielded && !isa<arith::ConstantOp>(op);
      }))
    return std::nullopt;
  // One operand is the product at the identity map, the other a vector
  // indexed by the last (N) loop only.
  GemmEpilogue epilogue;
  unsigned rank = add.getNumLoops();
  for (OpOperand *input : add.getDpsInputOperands()) {
    AffineMap map = add.getMatchingIndexingMap(input);
    if (input->get() == product) {
      if (!map.isIdentity())
        return std::nullopt;
      continue;
    }
    // The bias read along N, or a broadcast of it over the rows (the
    // matmul accumulated into it, prepareGroup split it off).
    if (Value vector = getRowBroadcastSource(input->get());
        vector && map.isIdentity()) {
      epilogue.bias = vector;
      continue;
    }
    if (map.getNumResults() != 1 ||
        map.getResult(0) != getAffineDimExpr(rank - 1, add.getContext()))
      return std::nullopt;
    epilogue.bias = input->get();
  }
  Block &body = add.getRegion().front();
  if (!epilogue.bias || addOp->getOperand(0) == addOp->getOperand(1) ||
      !llvm::all_of(addOp->getOperands(), [&](Value v) {
        return isa<BlockArgument>(v) &&
               cast<BlockArgument>(v).getOwner() == &body &&
               cast<BlockArgument>(v).getArgNumber() < 2;
      }))
    return std::nullopt;
  epilogue.result = add.getResult(0);
  epilogue.relu = fusedRelu;

  // max(x, 0) right after: cuBLASLt's RELU_BIAS.
  linalg::GenericOp relu =
      fusedRelu ? nullptr : getOnlyUser(epilogue.result, group);
  if (relu) {
    Operation *maxOp = getSingleBodyOp(relu);
    if (maxOp && relu.getNumDpsInputs() == 1 &&
        relu.getMatchingIndexingMap(relu.getDpsInputOperand(0)).isIdentity() &&
        isa<arith::MaximumFOp, arith::MaxNumFOp>(maxOp) &&
        llvm::any_of(maxOp->getOperands(), [](Value v) {
          return matchPattern(v, m_AnyZeroFloat());
        })) {
      epilogue.relu = true;
      epilogue.result = relu.getResult(0);
    }
  }
  return epilogue;
}

/// A product multiplied by a constant and nothing else, perhaps through a
/// reshape (attention's scores scaled by 1/sqrt(d) after the heads are
/// split again): cuBLASLt's alpha. A division counts when its constant is
/// a power of two, whose reciprocal is exact, so that the library call
/// rounds as the division would.
static std::optional<GemmEpilogue> matchGemmScale(Operation *anchor,
                                                  func::FuncOp group) {
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(anchor))
    return std::nullopt;
  Value product = anchor->getResult(0);
  while (product.hasOneUse() &&
         !llvm::is_contained(returnedValues(group), product) &&
         isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(
             *product.getUsers().begin()))
    product = product.getUsers().begin()->getResult(0);
  linalg::GenericOp scale = getOnlyUser(product, group);
  // The body: the multiplication or division, perhaps after a truncf of
  // the constant (torch-mlir writes 1/sqrt(d) as an f64 constant truncated
  // in the body), and the yield.
  Operation *op = nullptr;
  if (scale && scale.getNumResults() == 1 &&
      scale.getNumReductionLoops() == 0) {
    Block &body = scale.getRegion().front();
    op = body.getTerminator()->getOperand(0).getDefiningOp();
    if (op && llvm::any_of(body.without_terminator(), [&](Operation &other) {
          return &other != op && !isa<arith::TruncFOp>(other);
        }))
      op = nullptr;
  }
  if (!op || op->getBlock() != &scale.getRegion().front() ||
      scale.getNumDpsInputs() != 1 ||
      !scale.getMatchingIndexingMap(scale.getDpsInputOperand(0)).isIdentity() ||
      !scale.getMatchingIndexingMap(scale.getDpsInitOperand(0)).isIdentity() ||
      scale.getDpsInputs()[0] != product ||
      !isa<arith::MulFOp, arith::DivFOp>(op))
    return std::nullopt;
  Block &body = scale.getRegion().front();
  auto constantOf = [](Value value) -> std::optional<double> {
    FloatAttr attr;
    if (auto trunc = value.getDefiningOp<arith::TruncFOp>()) {
      // f64 to f32, rounded to nearest as truncf rounds by default.
      if (trunc.getRoundingmodeAttr() || !trunc.getType().isF32() ||
          !matchPattern(trunc.getIn(), m_Constant(&attr)))
        return std::nullopt;
      return double(float(attr.getValueAsDouble()));
    }
    if (!matchPattern(value, m_Constant(&attr)))
      return std::nullopt;
    return attr.getValueAsDouble();
  };
  std::optional<double> factor;
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (isa<arith::MulFOp>(op)) {
    if (lhs == body.getArgument(0))
      factor = constantOf(rhs);
    else if (rhs == body.getArgument(0))
      factor = constantOf(lhs);
  } else if (lhs == body.getArgument(0)) {
    std::optional<double> divisor = constantOf(rhs);
    int exponent = 0;
    if (divisor && *divisor != 0 && std::isfinite(*divisor) &&
        std::abs(std::frexp(*divisor, &exponent)) == 0.5)
      factor = 1.0 / *divisor;
  }
  if (!factor || !std::isfinite(*factor))
    return std::nullopt;
  GemmEpilogue epilogue;
  epilogue.scale = *factor;
  epilogue.result = scale.getResult(0);
  return epilogue;
}

/// Writes the pads, slices and concatenations `anchor` reads that its
/// library call cannot read in place (a pad cuDNN cannot apply: asymmetric,
/// or not of zeros), each with a pointwise kernel, so that the call finds
/// them in memory. A pad the call folds (ConvForm::foldedPad) is not
/// written.
static llvm::Error materializeMovedOperands(PlanBuilder &builder,
                                            Operation *anchor) {
  std::optional<ConvForm> form = matchConvForm(anchor);
  auto linalgOp = dyn_cast<linalg::LinalgOp>(anchor);
  if (!linalgOp)
    return llvm::Error::success();
  for (Value operand : linalgOp.getDpsInputs()) {
    Operation *def = operand.getDefiningOp();
    if (!def || !isTensorMoveOp(def) || (form && form->foldedPad == def) ||
        !builder.findBuffer(operand).empty())
      continue;
    PointwiseOptions options;
    options.blockSize = 256;
    options.vectorWidth = 16;
    std::string name = def->getName().getStringRef().str();
    auto kernel = generatePointwiseKernel(
        anchor->getContext(), builder.entryName("move"), name,
        {builder.outputFor(operand)}, builder.leafFn(), options);
    if (!kernel)
      return kernel.takeError();
    builder.addKernel(*kernel, name);
  }
  return llvm::Error::success();
}

/// True when `anchor` is a GEMM doing at least 256 flops per byte the
/// pointwise epilogue computing `rest` moves (reading the product, writing
/// `rest`): its time is then at least 16 times the epilogue's on a GPU
/// that does 16 fp32 flops per byte of bandwidth (the H200: 67 TFLOP/s
/// over 4.3 TB/s), more where it does fewer.
static bool isEpilogueNegligible(Operation *anchor, ArrayRef<Value> rest) {
  std::optional<GemmForm> form = matchGemmForm(anchor);
  if (!form)
    return false;
  double flops = 2.0 * double(form->getBatch()) * double(form->m) *
                 double(form->n) * double(form->k);
  double bytes =
      4.0 * double(form->getBatch()) * double(form->m) * double(form->n);
  for (Value value : rest) {
    auto type = cast<ShapedType>(value.getType());
    bytes += double(type.getNumElements()) *
             double(std::max<unsigned>(1, type.getElementTypeBitWidth() / 8));
  }
  return flops >= 256.0 * bytes;
}

/// A group that pools after an NCHW convolution the wgmma kernel is offered
/// for (offersWgmmaConv): per wgmma configuration and sliding-window
/// pooling variant of 128 threads, the kernel writing the convolution, then
/// the rest of the group as the pooling kernels, bias and activation
/// applied as they read. Only 128 threads: each variant costs the
/// convolution's full evaluation, and the block size matters little. (A
/// group without a pool gets the kernel with the whole group fused,
/// proposeTensorCoreConvs.)
static void proposeWgmmaConvPools(Proposal &proposal, func::FuncOp group,
                                  const KernelTask &task, Operation *anchor) {
  std::optional<WgmmaConvShape> shape = offersWgmmaConv(anchor, task);
  if (!shape)
    return;
  MLIRContext *context = group.getContext();
  Value conv = anchor->getResult(0);
  SmallVector<Value> rest;
  for (Value value : returnedValues(group))
    if (value != conv)
      rest.push_back(value);
  // Why a pool does not fit is the library plans' remark to make.
  std::vector<std::string> remarks;
  std::vector<PoolingVariant> pools =
      poolingVariants(findSlidingPool(group, rest, remarks));
  std::string comment = describeGroup(group) + " (epilogue)";
  std::string what = "3xTF32 implicit-GEMM convolution on wgmma (sm_90a): " +
                     describeOpForCode(anchor);
  for (const WgmmaGemmConfig &config : getWgmmaGemmConfigs(shape->features))
    for (const PoolingVariant &pooling : pools) {
      if (pooling.blockSize != 128)
        continue;
      PlanBuilder builder(task, group, "builtin",
                          getWgmmaConvName(config) + "_" + pooling.name());
      llvm::Error error = [&]() -> llvm::Error {
        auto operands = getConvOperands(builder, anchor);
        if (!operands)
          return operands.takeError();
        auto kernel = generateWgmmaConv(
            context, builder.entryName("conv"), what, anchor, *operands,
            {builder.outputFor(conv)}, builder.leafFn(), config);
        if (!kernel)
          return kernel.takeError();
        builder.addKernel(*kernel, what);
        return emitPooling(builder, context, rest, pooling, comment);
      }();
      addPlan(proposal, builder, task, group, std::move(error),
              kTensorCoreArithmetic, kWgmmaArch);
    }
}

static void proposeLibraryAnchored(Proposal &proposal, func::FuncOp group,
                                   const KernelTask &task, Operation *anchor,
                                   bool useEpilogue) {
  MLIRContext *context = group.getContext();
  std::optional<GemmEpilogue> epilogue;
  if (useEpilogue) {
    epilogue = matchGemmEpilogue(anchor, group);
    if (!epilogue)
      epilogue = matchGemmScale(anchor, group);
    if (!epilogue)
      return;
  }
  // The value the library call leaves in memory.
  Value produced = epilogue ? epilogue->result : anchor->getResult(0);
  SmallVector<Value> rest;
  for (Value value : returnedValues(group))
    if (value != produced)
      rest.push_back(value);
  auto shape = cast<ShapedType>(anchor->getResult(0).getType()).getShape();
  // The rest of the group as pointwise kernels, or, where it ends in a pool
  // (ReLU and max-pool after a convolution), first as sliding-window
  // pooling kernels.
  struct RestVariant {
    std::string name;
    PointwiseVariant pointwise{256, 1};
    std::optional<PoolingVariant> pooling;
  };
  std::vector<RestVariant> variants;
  if (!epilogue)
    for (const PoolingVariant &variant :
         poolingVariants(findSlidingPool(group, rest, proposal.remarks)))
      variants.push_back({variant.name(), {}, variant});
  if (rest.empty()) {
    variants.push_back({"", {256, 1}, std::nullopt});
  } else {
    std::vector<PointwiseVariant> pointwise =
        pointwiseVariants(ElementType::F32, shape.back());
    // Where the product's arithmetic dwarfs the epilogue's traffic, the
    // pointwise kernel's variants differ by a few percent of the plan's
    // time at most, and each would cost a candidate a full evaluation of
    // the product: the first only.
    if (isEpilogueNegligible(anchor, rest))
      pointwise.resize(1);
    for (const PointwiseVariant &variant : pointwise)
      variants.push_back({variant.name(), variant, std::nullopt});
  }
  std::string comment = describeGroup(group);
  std::string prefix = epilogue ? "gemm_epilogue" : "library";
  for (const RestVariant &variant : variants) {
    std::string name =
        variant.name.empty() ? prefix : prefix + "_" + variant.name;
    PlanBuilder builder(task, group, "builtin", name);
    if (llvm::Error error = materializeMovedOperands(builder, anchor)) {
      addPlan(proposal, builder, task, group, std::move(error));
      return;
    }
    std::optional<LibraryStep> library = buildLibraryCall(anchor, builder);
    if (!library) {
      if (!epilogue)
        proposal.remarks.push_back(
            "builtin: " + describeOpForCode(anchor) +
            " does not fit a library call (needs f32 operands in the default "
            "layout and a zero accumulator); baseline only");
      return;
    }
    if (epilogue) {
      // cuBLASLt scales the product, adds the bias (and applies the ReLU)
      // as it writes C.
      GemmStep &gemm = library->step.gemm;
      if (epilogue->bias) {
        gemm.bias = builder.findBuffer(epilogue->bias);
        if (gemm.bias.empty())
          return;
        library->step.comment += epilogue->relu ? " with bias and ReLU epilogue"
                                                : " with bias epilogue";
      } else {
        llvm::raw_string_ostream(library->step.comment)
            << " scaled by " << llvm::format("%g", epilogue->scale);
      }
      gemm.activation = epilogue->relu ? "relu" : "none";
      gemm.scale = epilogue->scale;
      gemm.c = builder.materialize(epilogue->result);
      library->writes = {epilogue->result};
    }
    builder.addStep(library->step, library->writes);
    llvm::Error error =
        rest.empty() ? llvm::Error::success()
        : variant.pooling
            ? emitPooling(builder, context, rest, *variant.pooling,
                          comment + " (epilogue)")
            : emitPointwise(builder, context, rest, variant.pointwise,
                            comment + " (epilogue)");
    addPlan(proposal, builder, task, group, std::move(error));
  }
}

/// One pointwise kernel per output shape with every producer inlined, in
/// each variant of block size and vector width; variant names start with
/// `prefix`.
static void proposePointwise(Proposal &proposal, func::FuncOp group,
                             const KernelTask &task, llvm::StringRef prefix) {
  SmallVector<Value> outputs = returnedValues(group);
  if (outputs.empty())
    return;
  auto type = cast<ShapedType>(outputs.front().getType());
  int64_t innermost = type.getRank() ? type.getShape().back() : 1;
  std::string comment = describeGroup(group);
  for (const PointwiseVariant &variant :
       pointwiseVariants(*getElementType(type.getElementType()), innermost)) {
    PlanBuilder builder(task, group, "builtin", prefix.str() + variant.name());
    llvm::Error error =
        emitPointwise(builder, group.getContext(), outputs, variant, comment);
    addPlan(proposal, builder, task, group, std::move(error));
  }
}

/// A pooling group as one sliding-window pooling kernel (PoolingKernel.h),
/// in each variant of outputs per thread and block size.
static void proposeSlidingPool(Proposal &proposal, func::FuncOp group,
                               const KernelTask &task) {
  SmallVector<Value> outputs = returnedValues(group);
  std::string comment = describeGroup(group);
  for (const PoolingVariant &variant :
       poolingVariants(findSlidingPool(group, outputs, proposal.remarks))) {
    PlanBuilder builder(task, group, "builtin", variant.name());
    llvm::Error error =
        emitPooling(builder, group.getContext(), outputs, variant, comment);
    addPlan(proposal, builder, task, group, std::move(error));
  }
}

/// Products a convolution sums per output element at most for its direct
/// form: a 3x3 depthwise window takes 9, a 7x7 one 49.
constexpr int64_t kMaxDirectWindow = 64;

/// Convolutions with small windows (depthwise ones, few channels per
/// group): the whole group as pointwise kernels, the convolution summed by
/// each thread over its window and the epilogue applied before the one
/// store, so the convolution's output never goes through memory (variants
/// `direct_bs..._v...`). The library call's plans are already made:
/// `anchor` is generalised in place.
static void proposeDirectConvolution(Proposal &proposal, func::FuncOp group,
                                     const KernelTask &task,
                                     Operation *anchor) {
  auto conv = dyn_cast<linalg::LinalgOp>(anchor);
  if (!conv || !matchConvForm(anchor))
    return;
  int64_t window = 1;
  for (auto [range, iterator] :
       llvm::zip(conv.getStaticLoopRanges(), conv.getIteratorTypesArray()))
    if (iterator == utils::IteratorType::reduction)
      window *= range;
  if (window > kMaxDirectWindow)
    return;
  if (!isa<linalg::GenericOp>(anchor)) {
    IRRewriter rewriter(anchor->getContext());
    rewriter.setInsertionPoint(anchor);
    if (failed(linalg::generalizeNamedOp(rewriter, conv)))
      return;
  }
  proposePointwise(proposal, group, task, "direct_");
}

Proposal mlir::kopt::proposeBuiltin(func::FuncOp func, const KernelTask &task) {
  Proposal proposal;
  auto prepared = prepareGroup(func);
  if (!prepared) {
    proposal.remarks.push_back("builtin: " +
                               llvm::toString(prepared.takeError()));
    return proposal;
  }
  func::FuncOp group = prepared->func;

  Operation *libraryAnchor = nullptr;
  for (Operation &op : group.getBody().front().without_terminator())
    if (isLibraryCandidate(&op)) {
      libraryAnchor = &op;
      break;
    }
  linalg::GenericOp reduction = findRowAnchor(group);

  if (libraryAnchor) {
    // The tensor-core GEMMs first: a round's candidates are capped
    // (--max-candidates), and they are the likeliest winners.
    proposeTensorCoreGemms(proposal, group, task, libraryAnchor);
    proposeTensorCoreConvs(proposal, group, task, libraryAnchor);
    proposeWgmmaConvPools(proposal, group, task, libraryAnchor);
    proposeLibraryAnchored(proposal, group, task, libraryAnchor,
                           /*useEpilogue=*/false);
    proposeLibraryAnchored(proposal, group, task, libraryAnchor,
                           /*useEpilogue=*/true);
    proposeDirectConvolution(proposal, group, task, libraryAnchor);
    return proposal;
  }
  if ((task.kind == "reduction" || task.kind == "softmax") && reduction) {
    proposeClusterSoftmax(proposal, group, task);
    proposeRows(proposal, group, task, reduction, /*tag=*/"");
    proposeOnePassTwins(proposal, group, task);
    return proposal;
  }
  // Elementwise chains and pooling: everything inlined, pointwise; a pool
  // also with sliding windows, first.
  proposeSlidingPool(proposal, group, task);
  proposePointwise(proposal, group, task, "");
  if (proposal.plans.empty() && proposal.remarks.empty())
    proposal.remarks.push_back("builtin: no template fits this group");
  return proposal;
}
