//===- BaselineProposer.cpp - One kernel or library call per ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The lowering a compiler emits without kopt, and the reference every
// candidate is checked against and timed against:
//
// - matrix products on f32 with a zero accumulator (matmul, batch_matmul,
//   contraction-shaped generics): cuBLASLt, an operand transposed in its
//   indexing map or by a transpose op taken with cuBLASLt's transpose
//   flag, as eager frameworks run nn.Linear (no transpose kernel);
// - convolutions on f32 with a zero accumulator, in a layout a conv step
//   takes (1-D to 3-D, grouped, depthwise): cuDNN;
// - a reduction with an associative combiner: a row kernel (a block per
//   output element, warp shuffles), as a tuned library reduction would;
//   over a non-innermost dimension, a tiled row kernel (neighbouring
//   threads on neighbouring outputs, a few threads splitting each one,
//   and several blocks each column when there are few outputs); few long
//   rows split over several blocks each;
// - every other op: a pointwise kernel, vectorised to 16-byte accesses
//   where the innermost dimension allows;
// - linalg.softmax: one row kernel, as eager frameworks run it (rows too
//   long to keep in registers in two passes, with the online normaliser);
// - tensor.pad, extract_slice, insert_slice and concat: a pointwise kernel
//   writing the result; but a pad that only convolutions and pooling read
//   (its group took it in, docs/FusionGroups.md) is never written: cuDNN
//   applies zero padding itself, and the kernel of a pooling op reads the
//   unpadded tensor with bounds checks, as eager frameworks do.
//
// Constants, fills, reshapes and widening casts (extf) are folded into
// their users, as any compiler would.
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/Proposers.h"

#include "OnlineSoftmax.h"
#include "SoftmaxForm.h"
#include "TiledRowVariants.h"

#include "kopt/Analysis/OpClassification.h"
#include "kopt/Codegen/ConvForms.h"
#include "kopt/Codegen/GemmForms.h"
#include "kopt/Codegen/LibraryCalls.h"
#include "kopt/Codegen/PlanBuilder.h"
#include "kopt/Codegen/TensorMoves.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Support/DebugStringHelper.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kopt;

/// True if no step needs `op`'s result in memory: a pad that every user
/// either reads as its cuDNN padding (isFoldedIntoConvs) or computes in a
/// kernel of its own, which reads the pad's source with bounds checks
/// (TensorEmitter). A pad a task returns, or a library call reads, is
/// written.
static bool isPadReadInPlace(Operation *op) {
  if (!isa<tensor::PadOp>(op) || op->getResult(0).use_empty())
    return false;
  if (isFoldedIntoConvs(op))
    return true;
  return llvm::all_of(op->getResult(0).getUsers(), [](Operation *user) {
    return isa<linalg::LinalgOp>(user) && !isLibraryCandidate(user);
  });
}

/// True if `op` only widens its input elementwise (isWideningCast: torch's
/// casts to f64 before a norm's statistics) and every user computes it in
/// a kernel of its own: the cast
/// folds into its users, as any compiler's would, instead of writing a
/// tensor twice the input's size. The widening is exact, so each user
/// computes the same values. A cast a library call reads, or a task
/// returns, is written.
static bool isWideningCastFoldedIntoUsers(Operation *op) {
  if (!isWideningCast(op))
    return false;
  Value result = op->getResult(0);
  return !result.use_empty() &&
         llvm::all_of(result.getUsers(), [](Operation *user) {
           return isa<linalg::GenericOp>(user) && !isLibraryCandidate(user);
         });
}

/// Emits one generic op as its own kernel.
static llvm::Error emitGenericOp(PlanBuilder &builder, linalg::GenericOp op) {
  MLIRContext *context = op.getContext();
  std::vector<KernelOutput> outputs;
  for (Value result : op->getResults())
    outputs.push_back(builder.outputFor(result));
  std::string description = describeOpForCode(op);

  // A single-output reduction with a known combiner: one block per output
  // element, the reduction loops spread over the block.
  int64_t rows = 1, length = 1;
  for (auto [range, iterator] :
       llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray()))
    (iterator == utils::IteratorType::reduction ? length : rows) *= range;
  // Short reductions (pooling windows) stay sequential in one thread.
  if (op.getNumReductionLoops() > 0 && op.getNumResults() == 1 &&
      length >= 32 && hasAssociativeCombiner(op)) {
    // Over a non-innermost dimension: neighbouring threads on neighbouring
    // outputs, so that loads coalesce (TiledRowKernel.h); with few outputs
    // and long columns, each column split over several blocks, then the
    // partial results combined.
    std::optional<RowSpace> space = getRowSpace(op);
    if (space && space->inner > 1) {
      TiledRowOptions options;
      options.layout = getBaselineColumnLayout(*space);
      int64_t split = getColumnSplit(*space, options.layout);
      if (split > 1) {
        std::vector<PartialBuffer> partials;
        std::string prefix = builder.entryName("reduce");
        auto kernels = generateSplitTiledRowKernels(
            context, prefix, description, outputs, builder.leafFn(), *space,
            options.layout, split,
            [&](unsigned k) { return prefix + "_part" + std::to_string(k); },
            partials);
        if (kernels) {
          for (const PartialBuffer &partial : partials)
            builder.declareTemporary(
                {partial.param, partial.elementType, partial.shape});
          for (const GeneratedKernel &kernel : *kernels)
            builder.addKernel(kernel, description);
          return llvm::Error::success();
        }
        llvm::consumeError(kernels.takeError());
      }
      auto kernel = generateTiledRowKernel(context, builder.entryName("reduce"),
                                           description, outputs,
                                           builder.leafFn(), *space, options);
      if (kernel) {
        builder.addKernel(*kernel, description);
        return llvm::Error::success();
      }
      llvm::consumeError(kernel.takeError());
    }
    unsigned threads = length <= 64 ? 32 : length <= 1024 ? 128 : 256;
    // Few long rows: each row split over several blocks, as a library
    // reduction does when the outputs alone would leave the GPU idle.
    if (space && space->inner == 1 && rows < 256 && length >= 8192) {
      int64_t chunks = std::clamp<int64_t>((1024 + rows - 1) / rows, 2, 64);
      std::vector<PartialBuffer> partials;
      std::string prefix = builder.entryName("reduce");
      auto kernels = generateSplitRowKernels(
          context, prefix, description, outputs, builder.leafFn(), rows, length,
          threads, chunks,
          [&](unsigned k) { return prefix + "_part" + std::to_string(k); },
          partials);
      if (kernels) {
        for (const PartialBuffer &partial : partials)
          builder.declareTemporary(
              {partial.param, partial.elementType, partial.shape});
        for (const GeneratedKernel &kernel : *kernels)
          builder.addKernel(kernel, description);
        return llvm::Error::success();
      }
      llvm::consumeError(kernels.takeError());
    }
    auto kernel =
        generateRowKernel(context, builder.entryName("reduce"), description,
                          outputs, builder.leafFn(), rows, length, threads);
    if (kernel) {
      builder.addKernel(*kernel, description);
      return llvm::Error::success();
    }
    llvm::consumeError(kernel.takeError());
  }

  // Pointwise, grouped by output shape (multi-result ops share one).
  PointwiseOptions options;
  options.blockSize = 256;
  options.vectorWidth = 16;
  auto kernel =
      generatePointwiseKernel(context, builder.entryName("op"), description,
                              outputs, builder.leafFn(), options);
  if (!kernel)
    return kernel.takeError();
  builder.addKernel(*kernel, description);
  return llvm::Error::success();
}

/// Emits the parts of the softmax `part` belongs to as one row kernel.
static llvm::Error emitSoftmax(PlanBuilder &builder, Operation *part,
                               llvm::ArrayRef<Operation *> ops,
                               llvm::DenseSet<Operation *> &done) {
  std::optional<SoftmaxParts> softmax = findSoftmaxParts(part, ops);
  if (!softmax)
    return llvm::createStringError("baseline: unexpected softmax form");
  done.insert(softmax->ops.begin(), softmax->ops.end());
  Value result = softmax->result;
  int64_t rows = softmax->rows, length = softmax->length;
  // As eager frameworks do: the row read once into registers, with more
  // threads for longer rows.
  unsigned threads = length <= 1024    ? 128
                     : length <= 4096  ? 256
                     : length <= 16384 ? 512
                                       : 1024;
  // A row longer than the block keeps in registers, read row-major from a
  // plan tensor: two passes with the online normaliser (OnlineSoftmax.h),
  // as eager frameworks run long rows, rather than three.
  std::string inputBuffer = softmax->contiguousInput
                                ? builder.findBuffer(softmax->contiguousInput)
                                : "";
  if (!inputBuffer.empty() &&
      length > int64_t(threads) * getRowCacheBudget(threads)) {
    KernelOutput output = builder.outputFor(result);
    builder.addKernel(generateOnlineSoftmaxKernel(
                          builder.entryName("softmax"), "linalg.softmax",
                          inputBuffer, output.param, rows, length, threads),
                      "linalg.softmax");
    return llvm::Error::success();
  }
  std::vector<KernelOutput> outputs = {builder.outputFor(result)};
  auto kernel =
      generateRowKernel(part->getContext(), builder.entryName("softmax"),
                        "linalg.softmax", outputs, builder.leafFn(), rows,
                        length, threads, getRowCacheBudget(threads));
  if (!kernel)
    return kernel.takeError();
  builder.addKernel(*kernel, "linalg.softmax");
  return llvm::Error::success();
}

llvm::Expected<KernelPlan> mlir::kopt::proposeBaseline(func::FuncOp func,
                                                       const KernelTask &task) {
  auto prepared = prepareGroup(func);
  if (!prepared)
    return prepared.takeError();
  func::FuncOp group = prepared->func;
  PlanBuilder builder(task, group, "baseline", "per-op");

  SmallVector<Operation *> ops;
  for (Operation &op : group.getBody().front().without_terminator())
    ops.push_back(&op);
  llvm::DenseSet<Operation *> done;
  for (Operation *op : ops) {
    if (isInlinedOp(op) || done.contains(op) || isFoldedIntoGemms(op) ||
        isPadReadInPlace(op) || isWideningCastFoldedIntoUsers(op))
      continue;
    if (op->hasAttr(kSoftmaxPartAttrName)) {
      if (llvm::Error error = emitSoftmax(builder, op, ops, done))
        return std::move(error);
      continue;
    }
    if (isTensorMoveOp(op)) {
      // A pad, slice or concatenation: a pointwise kernel writing its
      // result, each element read from where it comes from.
      PointwiseOptions options;
      options.blockSize = 256;
      options.vectorWidth = 16;
      auto kernel = generatePointwiseKernel(
          op->getContext(), builder.entryName("move"),
          op->getName().getStringRef().str(),
          {builder.outputFor(op->getResult(0))}, builder.leafFn(), options);
      if (!kernel)
        return llvm::createStringError(
            "baseline: %s: %s", op->getName().getStringRef().str().c_str(),
            llvm::toString(kernel.takeError()).c_str());
      builder.addKernel(*kernel, op->getName().getStringRef());
      continue;
    }
    if (auto step = buildLibraryCall(op, builder)) {
      builder.addStep(step->step, step->writes);
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(op);
    if (!generic) {
      // A named op no library call took: generate it like any other.
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      IRRewriter rewriter(op->getContext());
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::GenericOp> generalized =
          linalgOp ? linalg::generalizeNamedOp(rewriter, linalgOp)
                   : FailureOr<linalg::GenericOp>(failure());
      if (failed(generalized))
        return llvm::createStringError(
            "baseline: no code for '%s'",
            op->getName().getStringRef().str().c_str());
      generic = *generalized;
    }
    if (llvm::Error error = emitGenericOp(builder, generic))
      return llvm::createStringError("baseline: %s: %s",
                                     describeOpForCode(generic).c_str(),
                                     llvm::toString(std::move(error)).c_str());
  }
  if (llvm::Error error = builder.finishOutputs(group.getContext()))
    return std::move(error);
  return builder.take();
}
