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
// - reduction and softmax groups: one row kernel, a block per row, every
//   reduction of the row computed by the block with warp shuffles and its
//   prologue and epilogue inlined; where the group sums squared deviations
//   from its rows' means, each variant also with that variance computed in
//   the mean's pass (OnePassMoments.h); a softmax over rows too long for
//   registers also as a cluster per row that reads the row once
//   (ClusterSoftmax.h);
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

#include "ClusterSoftmax.h"
#include "PoolingKernel.h"
#include "SoftmaxForm.h"
#include "SplitRowPasses.h"
#include "TiledRowVariants.h"

#include "kopt/Codegen/ConvForms.h"
#include "kopt/Codegen/LibraryCalls.h"
#include "kopt/Codegen/OnePassMoments.h"
#include "kopt/Codegen/PlanBuilder.h"
#include "kopt/Codegen/RuntimeStatus.h"
#include "kopt/Codegen/SharedRowKernel.h"
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

/// The values the task returns, in order, without repeats.
static SmallVector<Value> returnedValues(func::FuncOp func) {
  SmallVector<Value> values;
  for (Value value : func.getBody().front().getTerminator()->getOperands())
    if (!llvm::is_contained(values, value) && !isa<BlockArgument>(value))
      values.push_back(value);
  return values;
}

static std::string describeGroup(func::FuncOp func) {
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

/// Finishes, checks and adds a plan; a failure becomes a remark.
static void addPlan(Proposal &proposal, PlanBuilder &builder,
                    const KernelTask &task, func::FuncOp group,
                    llvm::Error error, llvm::StringRef arithmetic = "",
                    llvm::StringRef arch = "") {
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

/// Dynamic shared memory a block of the `smem_*` variants holds its part
/// of the row in.
constexpr int64_t kSharedRowBytes = 200 * 1024;
/// Two blocks of this much fit an SM's 228 KB with their reserved 1 KB.
constexpr int64_t kHalfSmBytes = 112 * 1024;
/// About the blocks that fill a GPU a few times over.
constexpr int64_t kFillBlocks = 1024;
/// The SMs the forms that size their grid to the device assume (the H100's
/// and H200's 132).
constexpr int64_t kAssumedSms = 132;

/// Rows too few for a block each to fill the GPU, and long enough to split.
static bool isFewLongRows(int64_t rows, int64_t length) {
  return rows < kFillBlocks && length >= 8192;
}

/// Rows longer than the widest block's registers hold: a block per row
/// reads them again in every pass.
static bool isBeyondBlockRegisters(int64_t length) {
  return length > 1024 * int64_t(getRowCacheBudget(1024));
}

/// Few long rows that a block each would serve worst: fewer than two an SM,
/// or each beyond a block's registers.
static bool isSpreadFirst(int64_t rows, int64_t length) {
  return isFewLongRows(rows, length) &&
         (rows < 2 * kAssumedSms || isBeyondBlockRegisters(length));
}

static void proposeSplitRows(Proposal &proposal, func::FuncOp group,
                             const KernelTask &task, int64_t rows,
                             int64_t length, llvm::StringRef tag);
static void proposeBatchedSplitRows(Proposal &proposal, func::FuncOp group,
                                    const KernelTask &task, int64_t rows,
                                    int64_t length, llvm::StringRef tag);
static void proposePipelinedSplitRows(Proposal &proposal, func::FuncOp group,
                                      const KernelTask &task, int64_t rows,
                                      int64_t length, llvm::StringRef tag);

/// Variant `name` of the family `tag` names (none when empty): the tag after
/// the name's first part, `rows_bs256` of family `w` is `rows_w_bs256`.
static std::string variantName(llvm::StringRef name, llvm::StringRef tag) {
  if (tag.empty())
    return name.str();
  auto [first, rest] = name.split('_');
  return (first + "_" + tag + (rest.empty() ? "" : "_") + rest).str();
}

/// Declares the plan temporaries that hold split rows' partial results.
static void declarePartials(PlanBuilder &builder,
                            llvm::ArrayRef<PartialBuffer> partials) {
  for (const PartialBuffer &partial : partials)
    builder.declareTemporary(
        {partial.param, partial.elementType, partial.shape});
}

/// Several rows per block (TiledRowKernel.h): short rows, and reductions
/// over non-innermost dimensions.
static void proposeTiledRows(Proposal &proposal, func::FuncOp group,
                             const KernelTask &task, const RowSpace &space,
                             llvm::StringRef tag) {
  std::string comment = describeGroup(group);
  for (const TiledRowVariant &variant : getTiledRowVariants(space)) {
    PlanBuilder builder(task, group, "builtin", variantName(variant.name, tag));
    std::vector<KernelOutput> outputs;
    for (Value value : returnedValues(group))
      outputs.push_back(builder.outputFor(value));
    std::vector<PartialBuffer> partials;
    llvm::Expected<std::vector<GeneratedKernel>> kernels =
        std::vector<GeneratedKernel>();
    if (variant.split > 1) {
      kernels = generateSplitTiledRowKernels(
          group.getContext(), builder.entryName("split"), comment, outputs,
          builder.leafFn(), space, variant.options.layout, variant.split,
          [](unsigned k) { return "rowpart" + std::to_string(k); }, partials);
    } else if (auto kernel = generateTiledRowKernel(
                   group.getContext(), builder.entryName("rows"), comment,
                   outputs, builder.leafFn(), space, variant.options)) {
      kernels->push_back(std::move(*kernel));
    } else {
      kernels = kernel.takeError();
    }
    if (!kernels) {
      addPlan(proposal, builder, task, group, kernels.takeError());
      return;
    }
    declarePartials(builder, partials);
    for (const GeneratedKernel &kernel : *kernels)
      builder.addKernel(kernel, comment);
    addPlan(proposal, builder, task, group, llvm::Error::success());
  }
}

/// Rows too long for one block's registers: the row kept in shared memory,
/// a block per row or split over a thread-block cluster (SharedRowKernel.h),
/// so that it is read from DRAM once. Variants `smem_c<C>_bs<B>`: the
/// smallest cluster whose blocks hold the row, and twice as many blocks;
/// where a portable cluster's blocks would hold more than half an SM's
/// shared memory each, also clusters of 16 (non-portable), whose halves
/// of that let two blocks share an SM, one loading while the other
/// computes and stores. Each also as `_async`: the row copied with
/// `cp.async` (every copy in flight at once) and stored 16 bytes a time.
static void proposeSharedRows(Proposal &proposal, func::FuncOp group,
                              const KernelTask &task, int64_t rows,
                              int64_t length, llvm::StringRef tag) {
  constexpr int64_t kBytes = kSharedRowBytes;
  if (!isBeyondBlockRegisters(length))
    return;
  std::vector<unsigned> clusters;
  for (unsigned blocks : {1u, 2u, 4u, 8u})
    if (getSharedRowRange(length, blocks) * 4 <= kBytes && clusters.size() < 2)
      clusters.push_back(blocks);
  if (getSharedRowRange(length, 8) * 4 > kHalfSmBytes &&
      getSharedRowRange(length, 16) * 4 <= kBytes)
    clusters.push_back(16);
  std::string comment = describeGroup(group);
  for (bool async : {false, true})
    for (unsigned blocks : clusters)
      for (unsigned threads : {512u, 1024u}) {
        // Copies need no threads to hold them in flight: the widest block
        // only, but for the clusters of 16 whose blocks share SMs.
        if (async && threads < 1024 && blocks <= 8)
          continue;
        PlanBuilder builder(task, group, "builtin",
                            variantName("smem_c" + std::to_string(blocks) +
                                            "_bs" + std::to_string(threads) +
                                            (async ? "_async" : ""),
                                        tag));
        std::vector<KernelOutput> outputs;
        for (Value value : returnedValues(group))
          outputs.push_back(builder.outputFor(value));
        SharedRowOptions options;
        options.blockSize = threads;
        options.clusterSize = blocks;
        options.sharedBytes = kBytes;
        options.asyncCopies = async;
        options.vectorStores = async;
        if (blocks > 8 && getSharedRowRange(length, blocks) * 4 <= kHalfSmBytes)
          options.minBlocksPerSM = 2;
        auto kernel = generateSharedRowKernel(
            group.getContext(), builder.entryName("rows"), comment, outputs,
            builder.leafFn(), rows, length, options);
        if (!kernel) {
          addPlan(proposal, builder, task, group, kernel.takeError());
          return;
        }
        builder.addKernel(*kernel, comment);
        addPlan(proposal, builder, task, group, llvm::Error::success());
      }
}

/// How a group kernel's blocks hold their ranges (SharedRowOptions).
enum class GroupBuffers { One, Two, Registers };

/// Threads and 16-byte register groups of each of a `_rg` group kernel's
/// threads: 128 KB of a block's range, half the registers of a thread
/// (127 KB a block for a LayerNorm over 4M elements on 132 SMs).
constexpr unsigned kRegisterRowThreads = 512;
constexpr unsigned kRegisterRowVectors = 16;

/// Rows too long for a block's shared memory, each split over a group of
/// blocks that keep it in shared memory, the grid being what the device
/// holds at once (SharedRowKernel.h, generateGroupRowKernels): the row is
/// read from DRAM once however long it is, where a cluster's shared memory
/// holds at most 16 blocks' share. Variants `group<G>_bs1024`: the three
/// largest numbers of groups whose blocks hold their ranges on a device of
/// kAssumedSms SMs (a LayerNorm over 4M elements: one group of all the
/// SMs), at most one group a row; `group<G>_db_bs1024` the same with two
/// buffers, the next row's range copied into one while the block works on
/// the other (SharedRowOptions::doubleBuffer), where half the shared memory
/// holds a block's range; `group<G>_rg_bs512` with one buffer copied into
/// registers before the next row's range lands in it
/// (SharedRowOptions::registerVectors), where half the shared memory does
/// not hold a block's range and the registers do.
static void proposeGroupRows(Proposal &proposal, func::FuncOp group,
                             const KernelTask &task, int64_t rows,
                             int64_t length, llvm::StringRef tag,
                             GroupBuffers buffers) {
  if (length * 4 <= kSharedRowBytes || length % 4 != 0)
    return;
  std::vector<unsigned> counts;
  for (unsigned groups : {16u, 12u, 11u, 8u, 6u, 4u, 3u, 2u, 1u}) {
    int64_t blocks = kAssumedSms / groups;
    int64_t bytes = ((length + blocks - 1) / blocks + 3) / 4 * 4 * 4;
    bool fits = bytes <= kSharedRowBytes;
    if (buffers == GroupBuffers::Two)
      fits = bytes <= kSharedRowBytes / 2;
    if (buffers == GroupBuffers::Registers)
      fits = fits && bytes > kSharedRowBytes / 2 &&
             bytes <= int64_t(kRegisterRowThreads) * kRegisterRowVectors * 16;
    if (groups <= rows && fits && counts.size() < 3)
      counts.push_back(groups);
  }
  std::string comment = describeGroup(group);
  for (unsigned groups : counts) {
    bool registers = buffers == GroupBuffers::Registers;
    const char *form = buffers == GroupBuffers::Two ? "_db"
                       : registers                  ? "_rg"
                                                    : "";
    unsigned threads = registers ? kRegisterRowThreads : 1024;
    PlanBuilder builder(task, group, "builtin",
                        variantName("group" + std::to_string(groups) + form +
                                        "_bs" + std::to_string(threads),
                                    tag));
    std::vector<KernelOutput> outputs;
    for (Value value : returnedValues(group))
      outputs.push_back(builder.outputFor(value));
    SharedRowOptions options;
    options.blockSize = threads;
    options.sharedBytes = kSharedRowBytes;
    options.asyncCopies = true;
    options.vectorStores = true;
    options.gridGroups = groups;
    options.doubleBuffer = buffers == GroupBuffers::Two;
    options.registerVectors = registers ? kRegisterRowVectors : 0;
    auto kernels = generateGroupRowKernels(
        group.getContext(), builder.entryName("group"), comment, outputs,
        builder.leafFn(), rows, length, options);
    if (!kernels) {
      addPlan(proposal, builder, task, group, kernels.takeError());
      return;
    }
    builder.declareTemporary({kernels->slots.param, kernels->slots.elementType,
                              kernels->slots.shape});
    for (const GeneratedKernel &kernel : kernels->kernels)
      builder.addKernel(kernel, comment);
    addPlan(proposal, builder, task, group, llvm::Error::success());
  }
}

/// A group that is one softmax over long contiguous f32 rows as a cluster
/// per row, the row read once and its statistics folded while it lands
/// (ClusterSoftmax.h). Variants `softmax_c<C>[_r<R>]_bs<B>`: the smallest
/// cluster whose blocks hold the row and twice as many blocks, and clusters
/// of 16 (non-portable) where their halves of the row let two blocks share
/// an SM; each also taking 4 consecutive rows in turn where there are rows
/// enough (on the H200, 2 rows a cluster were never faster than 1 or 4) or
/// keeping the exponentials (`softmax_c<C>_ex_bs512`); and resident
/// clusters claiming rows (`softmax_c<C>_claim[_ex]_bs512`).
static void proposeClusterSoftmax(Proposal &proposal, func::FuncOp group,
                                  const KernelTask &task) {
  SmallVector<Operation *> ops;
  for (Operation &op : group.getBody().front().without_terminator())
    if (!isInlinedOp(&op))
      ops.push_back(&op);
  if (ops.empty() || !ops.front()->hasAttr(kSoftmaxPartAttrName))
    return;
  std::optional<SoftmaxParts> softmax = findSoftmaxParts(ops.front(), ops);
  SmallVector<Value> returned = returnedValues(group);
  if (!softmax || softmax->ops.size() != ops.size() ||
      !softmax->contiguousInput || returned.size() != 1 ||
      returned.front() != softmax->result ||
      !isBeyondBlockRegisters(softmax->length))
    return;
  int64_t length = softmax->length;
  auto shareBytes = [&](unsigned blocks) { return length / blocks * 4; };
  std::vector<unsigned> clusters;
  for (unsigned blocks : {1u, 2u, 4u, 8u})
    if (length % (4 * blocks) == 0 && shareBytes(blocks) <= kSharedRowBytes &&
        clusters.size() < 2)
      clusters.push_back(blocks);
  if (length % 64 == 0 && shareBytes(16) <= kHalfSmBytes &&
      shareBytes(8) > kHalfSmBytes)
    clusters.push_back(16);
  // Rows a cluster takes in turn, the block sizes each is tried with, and
  // whether the exponentials are kept (`_ex`, ClusterSoftmaxOptions).
  struct Form {
    int64_t perCluster;
    unsigned threads;
    bool keep;
  };
  std::vector<Form> forms = {
      {1, 512, false}, {1, 1024, false}, {4, 512, false}, {1, 512, true}};
  std::string comment = describeGroup(group);
  for (unsigned blocks : clusters)
    for (auto [perCluster, threads, keep] : forms) {
      if (softmax->rows % perCluster != 0 ||
          (perCluster > 1 && softmax->rows < 8 * perCluster))
        continue;
      PlanBuilder builder(
          task, group, "builtin",
          "softmax_c" + std::to_string(blocks) +
              (perCluster > 1 ? "_r" + std::to_string(perCluster) : "") +
              (keep ? "_ex" : "") + "_bs" + std::to_string(threads));
      ClusterSoftmaxOptions options;
      options.clusterSize = blocks;
      options.blockSize = threads;
      options.rowsPerCluster = perCluster;
      options.keepExponentials = keep;
      if (shareBytes(blocks) <= kHalfSmBytes && threads <= 512)
        options.minBlocksPerSM = 2;
      // The rows are read straight from a plan tensor: an input computed
      // in the group (inlined into its readers) has none.
      std::string input = builder.findBuffer(softmax->contiguousInput);
      if (input.empty())
        return;
      KernelOutput output = builder.outputFor(softmax->result);
      auto kernel = generateClusterSoftmaxKernel(
          builder.entryName("softmax"), comment, input, output.param,
          softmax->rows, length, options, kSharedRowBytes);
      if (!kernel) {
        addPlan(proposal, builder, task, group, kernel.takeError());
        continue;
      }
      builder.addKernel(*kernel, comment);
      addPlan(proposal, builder, task, group, llvm::Error::success());
    }
  // Resident clusters claiming rows (`softmax_c<C>_claim[_ex]_bs512`): the
  // grid cut at launch to the clusters the device holds, for the smallest
  // cluster whose blocks hold the row, where there are rows enough for
  // every cluster to take several. On the H200 (512 rows of 393,216) the
  // first took 458 us against softmax_c8_bs512's 466 (one run, 2026-12-05,
  // then named `_claim_np`).
  if (clusters.empty() || clusters.front() < 2 || softmax->rows < 64)
    return;
  unsigned blocks = clusters.front();
  // Each with the exponentials taken twice (as the row lands and as it is
  // written) and once, kept in shared memory (`_ex`).
  for (bool keep : {false, true}) {
    PlanBuilder builder(task, group, "builtin",
                        "softmax_c" + std::to_string(blocks) + "_claim" +
                            (keep ? "_ex" : "") + "_bs512");
    ClusterSoftmaxOptions options;
    options.clusterSize = blocks;
    options.blockSize = 512;
    options.keepExponentials = keep;
    std::string input = builder.findBuffer(softmax->contiguousInput);
    if (input.empty())
      return;
    KernelOutput output = builder.outputFor(softmax->result);
    auto kernels = generateClaimingSoftmaxKernels(
        builder.entryName("softmax"), comment, input, output.param,
        softmax->rows, length, options, kSharedRowBytes);
    if (!kernels) {
      addPlan(proposal, builder, task, group, kernels.takeError());
      continue;
    }
    builder.declareTemporary({kernels->counter.param,
                              kernels->counter.elementType,
                              kernels->counter.shape});
    for (const GeneratedKernel &kernel : kernels->kernels)
      builder.addKernel(kernel, comment);
    addPlan(proposal, builder, task, group, llvm::Error::success());
  }
}

/// A block per row, of each size up to twice the row, each reading the row
/// from memory in every pass (L1/L2 serve the later ones) or once into
/// registers when a thread's share fits the register budget (`_reg`).
static void proposeBlockRows(Proposal &proposal, func::FuncOp group,
                             const KernelTask &task, int64_t rows,
                             int64_t length, llvm::StringRef tag) {
  std::string comment = describeGroup(group);
  std::vector<std::pair<unsigned, bool>> variants;
  for (unsigned threads : {64u, 128u, 256u, 512u, 1024u}) {
    // More threads than twice the row leaves most of them idle.
    if (threads > 64 && threads > 2 * length)
      continue;
    variants.push_back({threads, false});
    if ((length + threads - 1) / threads <= getRowCacheBudget(threads))
      variants.push_back({threads, true});
  }
  for (auto [threads, cached] : variants) {
    PlanBuilder builder(task, group, "builtin",
                        variantName("rows_bs" + std::to_string(threads) +
                                        (cached ? "_reg" : ""),
                                    tag));
    std::vector<KernelOutput> outputs;
    for (Value value : returnedValues(group))
      outputs.push_back(builder.outputFor(value));
    auto kernel =
        generateRowKernel(group.getContext(), builder.entryName("rows"),
                          comment, outputs, builder.leafFn(), rows, length,
                          threads, cached ? getRowCacheBudget(threads) : 0);
    if (!kernel) {
      addPlan(proposal, builder, task, group, kernel.takeError());
      return;
    }
    builder.addKernel(*kernel, comment);
    addPlan(proposal, builder, task, group, llvm::Error::success());
  }
}

/// Appends the families' plans in turn, the first of each, then the second
/// of each, and so on, and their remarks.
static void appendInTurn(Proposal &proposal,
                         llvm::MutableArrayRef<Proposal> families) {
  for (size_t i = 0;; ++i) {
    bool any = false;
    for (Proposal &family : families)
      if (i < family.plans.size()) {
        proposal.plans.push_back(std::move(family.plans[i]));
        any = true;
      }
    if (!any)
      break;
  }
  for (Proposal &family : families)
    llvm::append_range(proposal.remarks, family.remarks);
}

static void proposeRows(Proposal &proposal, func::FuncOp group,
                        const KernelTask &task, linalg::GenericOp anchor,
                        llvm::StringRef tag) {
  // Over a non-innermost dimension, a block per row would read each row
  // with a stride: only column layouts.
  std::optional<RowSpace> space = getRowSpace(anchor);
  if (space && space->inner > 1) {
    proposeTiledRows(proposal, group, task, *space, tag);
    return;
  }
  int64_t rows = 1, length = 1;
  for (auto [range, iterator] :
       llvm::zip(anchor.getStaticLoopRanges(), anchor.getIteratorTypesArray()))
    (iterator == utils::IteratorType::reduction ? length : rows) *= range;
  if (!isSpreadFirst(rows, length)) {
    proposeBlockRows(proposal, group, task, rows, length, tag);
    if (space)
      proposeTiledRows(proposal, group, task, *space, tag);
    proposeSharedRows(proposal, group, task, rows, length, tag);
    proposeGroupRows(proposal, group, task, rows, length, tag,
                     GroupBuffers::Two);
    proposeGroupRows(proposal, group, task, rows, length, tag,
                     GroupBuffers::Registers);
    proposeGroupRows(proposal, group, task, rows, length, tag,
                     GroupBuffers::One);
    proposePipelinedSplitRows(proposal, group, task, rows, length, tag);
    proposeSplitRows(proposal, group, task, rows, length, tag);
    return;
  }
  // Few long rows: a block per row leaves most of the GPU idle or reads the
  // row again in every pass, so the forms that spread a row over blocks
  // come first, in turn, because a round's candidates are capped
  // (--max-candidates): on the H200 a GroupNorm over 64 rows of 2M lost its
  // best plan (split16_w_bs256, 408 us) behind sixteen others and tuned to
  // group3_w_bs1024 (472 us).
  Proposal families[5];
  proposeSharedRows(families[0], group, task, rows, length, tag);
  proposePipelinedSplitRows(families[1], group, task, rows, length, tag);
  proposeSplitRows(families[2], group, task, rows, length, tag);
  proposeGroupRows(families[3], group, task, rows, length, tag,
                   GroupBuffers::Two);
  proposeGroupRows(families[3], group, task, rows, length, tag,
                   GroupBuffers::Registers);
  proposeGroupRows(families[4], group, task, rows, length, tag,
                   GroupBuffers::One);
  appendInTurn(proposal, families);
  proposeBlockRows(proposal, group, task, rows, length, tag);
  if (space)
    proposeTiledRows(proposal, group, task, *space, tag);
}

/// Split rows whose inputs do not fit the L2 cache (50 MB on the H100 and
/// H200) a batch of rows at a time: each kernel of the split form is
/// launched once per batch, so that the later kernels of a batch read its
/// rows from L2 and the rows go through DRAM once for reading, once for
/// writing. Variants `split<S>_b<R>_bs<B>`: R rows a batch, the most whose
/// f32 rows fill at most 32 MB, and half as many.
static void proposeBatchedSplitRows(Proposal &proposal, func::FuncOp group,
                                    const KernelTask &task, int64_t rows,
                                    int64_t length, llvm::StringRef tag) {
  constexpr int64_t kBatchBytes = 32 << 20;
  int64_t rowBytes = length * 4;
  int64_t most = std::min(rows - 1, kBatchBytes / rowBytes);
  // Rows a cluster's shared memory holds are read once already (smem_*).
  if (rows * rowBytes <= 2 * kBatchBytes || most < 1 ||
      getSharedRowRange(length, 16) * 4 <= kSharedRowBytes)
    return;
  std::vector<int64_t> batches = {most};
  if (most / 2 >= 1)
    batches.push_back(most / 2);
  std::string comment = describeGroup(group);
  for (int64_t batch : batches) {
    // A launch's blocks fill the GPU with the batch alone.
    int64_t chunks = std::clamp<int64_t>(kFillBlocks / batch, 2, 1024);
    for (unsigned threads : {256u, 512u}) {
      if (batch != most && threads != 512)
        continue;
      PlanBuilder builder(task, group, "builtin",
                          variantName("split" + std::to_string(chunks) + "_b" +
                                          std::to_string(batch) + "_bs" +
                                          std::to_string(threads),
                                      tag));
      std::vector<KernelOutput> outputs;
      for (Value value : returnedValues(group))
        outputs.push_back(builder.outputFor(value));
      std::vector<PartialBuffer> partials;
      SplitRowBatching batching;
      batching.rows = batch;
      auto kernels = generateSplitRowKernels(
          group.getContext(), builder.entryName("split"), comment, outputs,
          builder.leafFn(), rows, length, threads, chunks,
          [](unsigned k) { return "rowpart" + std::to_string(k); }, partials,
          batching);
      if (!kernels) {
        addPlan(proposal, builder, task, group, kernels.takeError());
        return;
      }
      declarePartials(builder, partials);
      for (int64_t first = 0; first < rows; first += batch)
        for (GeneratedKernel kernel : *kernels) {
          kernel.args.back() = "i64:" + std::to_string(first);
          kernel.grid[0] =
              std::to_string(std::min(batch, rows - first) * chunks);
          std::string what =
              comment + " (rows " + std::to_string(first) + " to " +
              std::to_string(std::min(first + batch, rows) - 1) + ")";
          if (first == 0)
            builder.addKernel(kernel, what);
          else
            builder.addLaunch(kernel, what);
        }
      addPlan(proposal, builder, task, group, llvm::Error::success());
    }
  }
}

/// Few long rows: each row split over several blocks, so that the GPU
/// fills (a layernorm of 16 rows of 4M elements gets about 1024 blocks, not
/// 16). One kernel per row-wide reduction plus one for the outputs.
static void proposeSplitRows(Proposal &proposal, func::FuncOp group,
                             const KernelTask &task, int64_t rows,
                             int64_t length, llvm::StringRef tag) {
  if (!isFewLongRows(rows, length))
    return;
  int64_t chunks = std::clamp<int64_t>((kFillBlocks + rows - 1) / rows, 2, 64);
  std::string comment = describeGroup(group);
  for (unsigned threads : {256u, 512u}) {
    PlanBuilder builder(task, group, "builtin",
                        variantName("split" + std::to_string(chunks) + "_bs" +
                                        std::to_string(threads),
                                    tag));
    std::vector<KernelOutput> outputs;
    for (Value value : returnedValues(group))
      outputs.push_back(builder.outputFor(value));
    std::vector<PartialBuffer> partials;
    auto kernels = generateSplitRowKernels(
        group.getContext(), builder.entryName("split"), comment, outputs,
        builder.leafFn(), rows, length, threads, chunks,
        [](unsigned k) { return "rowpart" + std::to_string(k); }, partials);
    if (!kernels) {
      addPlan(proposal, builder, task, group, kernels.takeError());
      return;
    }
    declarePartials(builder, partials);
    for (const GeneratedKernel &kernel : *kernels)
      builder.addKernel(kernel, comment);
    addPlan(proposal, builder, task, group, llvm::Error::success());
  }
  proposeBatchedSplitRows(proposal, group, task, rows, length, tag);
}

/// Few long rows split as in proposeSplitRows, every pass in one kernel
/// whose blocks take a pass of a chunk of a row in ticket order, a row's
/// later passes some steps behind its first
/// (generatePipelinedSplitRowKernels): they read the row from L2, so that
/// DRAM reads it once, where the split kernels read it from DRAM in every
/// pass, where the rows do not fit half of L2 (25 MB of the H200's 50).
/// Chunks of 16K elements (64 KB of f32); variants
/// `pipe<S>_l<L>_bs512`: a lag of one step, and a lag of as many steps as
/// the blocks an H200 holds at once (four of 512 threads an SM) take, so
/// that a row's pass is mostly done before its next starts, where the rows
/// between fit half of L2.
static void proposePipelinedSplitRows(Proposal &proposal, func::FuncOp group,
                                      const KernelTask &task, int64_t rows,
                                      int64_t length, llvm::StringRef tag) {
  constexpr unsigned kThreads = 512;
  constexpr int64_t kChunkElements = 16384;
  constexpr int64_t kResidentBlocks = 4 * kAssumedSms;
  constexpr int64_t kHalfL2Bytes = 25 << 20;
  // Rows that fit half of L2 are read from it by the split kernels' later
  // passes already.
  if (!isFewLongRows(rows, length) || rows * length * 4 <= kHalfL2Bytes)
    return;
  int64_t chunks = std::clamp<int64_t>(
      (length + kChunkElements - 1) / kChunkElements, 2, 1024);
  auto partialName = [](unsigned k) { return "rowpart" + std::to_string(k); };
  // The passes (a level of reductions each, then the outputs), from a plan
  // of the split not kept.
  int64_t passes = 0;
  {
    PlanBuilder probe(task, group, "builtin", "pipe");
    std::vector<KernelOutput> outputs;
    for (Value value : returnedValues(group))
      outputs.push_back(probe.outputFor(value));
    auto plan = planSplitRows(group.getContext(), outputs, probe.leafFn(), rows,
                              length, kThreads, chunks, partialName);
    if (!plan) {
      llvm::consumeError(plan.takeError());
      return;
    }
    passes = plan->levels.size() + 1;
  }
  std::vector<int64_t> lags = {1};
  // Past the rows, a lag only adds empty tickets.
  int64_t lag = std::min(rows, (kResidentBlocks + passes * chunks - 1) /
                                   (passes * chunks));
  if (lag > 1 && lag * (passes - 1) * length * 4 <= kHalfL2Bytes)
    lags.push_back(lag);
  std::string comment = describeGroup(group);
  for (int64_t lag : lags) {
    PlanBuilder builder(task, group, "builtin",
                        variantName("pipe" + std::to_string(chunks) + "_l" +
                                        std::to_string(lag) + "_bs" +
                                        std::to_string(kThreads),
                                    tag));
    std::vector<KernelOutput> outputs;
    for (Value value : returnedValues(group))
      outputs.push_back(builder.outputFor(value));
    std::vector<PartialBuffer> partials;
    auto kernels = generatePipelinedSplitRowKernels(
        group.getContext(), builder.entryName("pipe"), comment, outputs,
        builder.leafFn(), rows, length, kThreads, chunks, lag, partialName,
        partials);
    if (!kernels) {
      addPlan(proposal, builder, task, group, kernels.takeError());
      return;
    }
    declarePartials(builder, partials);
    declarePartials(builder, {kernels->counters});
    for (const GeneratedKernel &kernel : kernels->kernels)
      builder.addKernel(kernel, comment);
    addPlan(proposal, builder, task, group, llvm::Error::success());
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

/// The reduction a row kernel's layout follows: the group's first that
/// threads can split and no library call takes.
static linalg::GenericOp findRowAnchor(func::FuncOp group) {
  for (auto generic : group.getBody().front().getOps<linalg::GenericOp>())
    if (!isLibraryCandidate(generic) && generic.getNumReductionLoops() > 0 &&
        hasAssociativeCombiner(generic))
      return generic;
  return nullptr;
}

/// The one-pass twins of a row group's plans (OnePassMoments.h): where the
/// group sums squared deviations from its rows' means, the same variants of
/// the group rewritten to get them in the mean's pass, named with `_w`
/// (`split16_w_bs512`). Each twin comes right before its plan, so that a
/// round's cap (--max-candidates) keeps both or the twin, which reads the
/// rows once less.
static void proposeOnePassTwins(Proposal &proposal, func::FuncOp group,
                                const KernelTask &task) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(group.getLoc());
  auto twin = cast<func::FuncOp>(group->clone());
  module->push_back(twin);
  linalg::GenericOp anchor;
  if (rewriteOnePassMoments(twin) == 0 || !(anchor = findRowAnchor(twin)))
    return;
  Proposal twins;
  proposeRows(twins, twin, task, anchor, "w");
  std::vector<KernelPlan> plans;
  std::vector<bool> placed(twins.plans.size());
  for (KernelPlan &plan : proposal.plans) {
    std::string name = variantName(plan.variant, "w");
    for (auto [i, twinPlan] : llvm::enumerate(twins.plans))
      if (!placed[i] && twinPlan.variant == name) {
        plans.push_back(std::move(twinPlan));
        placed[i] = true;
        break;
      }
    plans.push_back(std::move(plan));
  }
  for (auto [i, twinPlan] : llvm::enumerate(twins.plans))
    if (!placed[i])
      plans.push_back(std::move(twinPlan));
  proposal.plans = std::move(plans);
  llvm::append_range(proposal.remarks, twins.remarks);
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
