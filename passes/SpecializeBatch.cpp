//===- SpecializeBatch.cpp - A static size for a dynamic batch --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A graph exported with a dynamic batch (`torch.export.Dim`) has `?` as the
// outermost dimension of its inputs, and carries the size through
// `tensor.dim`, index arithmetic (`affine.apply`, `arith.divsi`) and shape
// checks (`arith.cmpi` feeding `cf.assert`). The pass gives every such
// argument the static size `batch`, casts it back to the dynamic type the
// body expects, and lets the canonicalisations of the ops involved push the
// static shape through: a cast folds into its users (linalg ops infer their
// other shapes from it), `tensor.dim` of a static tensor is a constant, the
// index arithmetic and the checks fold. Only the entry's top-level ops (and
// the ops the patterns create) are rewritten: the bodies of linalg ops stay
// as written. The results lose their casts last, and the function's type
// follows.
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/EntryFunction.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "kopt-specialize-batch"

namespace mlir::kopt {
#define GEN_PASS_DEF_SPECIALIZEBATCHPASS
#include "passes/Passes.h.inc"

namespace {
struct SpecializeBatchPass final
    : impl::SpecializeBatchPassBase<SpecializeBatchPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

namespace {
/// Reads through a cast to a less static type: `tensor.extract` takes the
/// cast's source directly (torch-mlir's broadcasts are gathers from a
/// tensor the body captures, which no upstream pattern looks into).
struct ExtractThroughCast final : OpRewritePattern<tensor::CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::CastOp cast,
                                PatternRewriter &rewriter) const override {
    if (!tensor::canFoldIntoConsumerOp(cast))
      return rewriter.notifyMatchFailure(cast, "not a cast to a less static "
                                               "type");
    bool changed = false;
    for (OpOperand &use : llvm::make_early_inc_range(cast->getUses())) {
      auto extract = dyn_cast<tensor::ExtractOp>(use.getOwner());
      if (!extract)
        continue;
      rewriter.modifyOpInPlace(extract, [&] {
        extract.getTensorMutable().assign(cast.getSource());
      });
      changed = true;
    }
    return success(changed);
  }
};
} // namespace

/// The canonicalisations that carry static shapes through a torch-mlir
/// graph: those of the tensor and linalg dialects (casts folded into
/// destination-style ops, static shapes inferred for linalg ops), of the
/// tensor ops that take sizes, of `affine.apply` and of `cf.assert` (a
/// check that folds to true goes away). Folding does the rest.
static void populateShapePatterns(RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  for (StringRef name : {"tensor", "linalg"})
    if (Dialect *dialect = context->getLoadedDialect(name))
      dialect->getCanonicalizationPatterns(patterns);
  tensor::CastOp::getCanonicalizationPatterns(patterns, context);
  tensor::DimOp::getCanonicalizationPatterns(patterns, context);
  tensor::EmptyOp::getCanonicalizationPatterns(patterns, context);
  tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
  tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
  tensor::PadOp::getCanonicalizationPatterns(patterns, context);
  tensor::ExtractSliceOp::getCanonicalizationPatterns(patterns, context);
  tensor::InsertSliceOp::getCanonicalizationPatterns(patterns, context);
  tensor::ConcatOp::getCanonicalizationPatterns(patterns, context);
  affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
  cf::AssertOp::getCanonicalizationPatterns(patterns, context);
  patterns.add<ExtractThroughCast>(context);
}

/// The name an argument goes by in messages: `#N`.
static std::string describeArgument(unsigned index) {
  return "argument #" + std::to_string(index);
}

void SpecializeBatchPass::runOnOperation() {
  ModuleOp module = getOperation();
  int64_t size = batch;
  if (size < 1) {
    module.emitError() << "kopt-specialize-batch: the batch must be "
                          "positive, not "
                       << size;
    return signalPassFailure();
  }
  auto entry = findEntryFunction(module);
  if (!entry) {
    module.emitError() << llvm::toString(entry.takeError());
    return signalPassFailure();
  }
  func::FuncOp func = *entry;
  Block &body = func.getBody().front();

  // The arguments: static types, and a cast back for the body.
  OpBuilder builder = OpBuilder::atBlockBegin(&body);
  SmallVector<Type> argumentTypes;
  bool specialised = false;
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.hasStaticShape()) {
      if (!type && isa<TensorType>(arg.getType())) {
        func.emitError() << describeArgument(arg.getArgNumber())
                         << " is an unranked tensor; kopt specialises only "
                            "a dynamic batch (the outermost dimension)";
        return signalPassFailure();
      }
      argumentTypes.push_back(arg.getType());
      continue;
    }
    for (int64_t dim = 1; dim < type.getRank(); ++dim)
      if (type.isDynamicDim(dim)) {
        func.emitError() << describeArgument(arg.getArgNumber()) << " (" << type
                         << ") has a dynamic dimension " << dim
                         << "; kopt specialises only a dynamic batch (the "
                            "outermost dimension)";
        return signalPassFailure();
      }
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = size;
    auto staticType = type.clone(shape);
    auto cast = tensor::CastOp::create(builder, arg.getLoc(), type, arg);
    arg.replaceAllUsesExcept(cast, cast);
    arg.setType(staticType);
    argumentTypes.push_back(staticType);
    specialised = true;
  }
  if (!specialised)
    return;
  func.setType(builder.getFunctionType(argumentTypes, func.getResultTypes()));

  RewritePatternSet patterns(&getContext());
  populateShapePatterns(patterns);
  FrozenRewritePatternSet frozen(std::move(patterns));
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  if (failed(applyOpPatternsGreedily(ops, frozen, config))) {
    func.emitError() << "the shapes did not settle at batch " << size;
    return signalPassFailure();
  }

  // A shape check that folded to false fails at this size.
  for (auto check : llvm::make_early_inc_range(body.getOps<cf::AssertOp>())) {
    if (matchPattern(check.getArg(), m_Zero())) {
      check.emitError() << "the graph's shape check \"" << check.getMsg()
                        << "\" fails at batch " << size;
      return signalPassFailure();
    }
  }

  // The results: drop the casts back to dynamic types.
  Operation *terminator = body.getTerminator();
  for (OpOperand &operand : terminator->getOpOperands())
    if (auto cast = operand.get().getDefiningOp<tensor::CastOp>())
      if (cast.getSource().getType().hasStaticShape())
        operand.set(cast.getSource());
  func.setType(
      builder.getFunctionType(argumentTypes, terminator->getOperandTypes()));

  // Nothing may stay dynamic: the static pipeline takes it from here.
  WalkResult walk = func.walk([&](Operation *op) {
    for (Type type : op->getResultTypes()) {
      auto shaped = dyn_cast<ShapedType>(type);
      if (!shaped || shaped.hasStaticShape())
        continue;
      if (op->use_empty() && isa<tensor::CastOp>(op))
        continue;
      op->emitError() << "'" << op->getName() << "' keeps the dynamic shape "
                      << type << " at batch " << size;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return signalPassFailure();
  // Casts left without users (at the results) go.
  for (auto cast : llvm::make_early_inc_range(body.getOps<tensor::CastOp>()))
    if (cast->use_empty())
      cast->erase();
}

} // namespace mlir::kopt
