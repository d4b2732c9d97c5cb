//===- Passes.cpp - kopt's pipelines ----------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The pipelines kopt builds from its passes and upstream's, their
// registration, and the preparation every kopt command runs on a model
// graph.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "kopt/Analysis/EntryFunction.h"
#include "kopt/InitAll.h"
#include "kopt/Support/ModelLoader.h"

#include "mlir/Conversion/TosaToArith/TosaToArith.h"
#include "mlir/Conversion/TosaToLinalg/TosaToLinalg.h"
#include "mlir/Conversion/TosaToTensor/TosaToTensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::kopt;

void mlir::kopt::addTosaLoweringPasses(OpPassManager &pm) {
  TosaToLinalgOptions options;
  TosaToLinalgNamedOptions namedOptions;
  namedOptions.preferConv2DKernelLayoutHWCF = true;
  tosa::addTosaToLinalgPasses(pm, options, namedOptions);
  pm.addNestedPass<func::FuncOp>(createTosaToTensorPass());
  pm.addNestedPass<func::FuncOp>(createTosaToArithPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::kopt::addFusionPlanningPasses(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(createFoldTensorCastsPass());
  pm.addNestedPass<func::FuncOp>(createFoldConstantGathersPass());
  pm.addNestedPass<func::FuncOp>(createAlignReductionDomainsPass());
  pm.addNestedPass<func::FuncOp>(createCollapseBeforeTransposePass());
  pm.addNestedPass<func::FuncOp>(createFormFusionGroupsPass());
  pm.addPass(createOutlineFusionGroupsPass());
}

LogicalResult mlir::kopt::prepareModelGraph(ModuleOp module) {
  PassManager pm(module.getContext());
  if (containsTosa(module))
    addTosaLoweringPasses(pm);
  addFusionPlanningPasses(pm);
  if (failed(pm.run(module)))
    return failure();
  if (containsTosa(module)) {
    Operation *left = nullptr;
    module.walk([&](Operation *op) {
      if (isa_and_nonnull<tosa::TosaDialect>(op->getDialect()))
        left = op;
    });
    // Ops the upstream lowering cannot take stay TOSA: say so rather than
    // silently leaving them out of every group.
    left->emitRemark("kopt: TOSA op left after lowering to linalg; it is not "
                     "tuned");
  }
  return success();
}

llvm::Error mlir::kopt::prepareRuntimeModuleGraph(ModuleOp module) {
  auto entry = findEntryFunction(module);
  if (!entry)
    return entry.takeError();
  dropAssertions(*entry);
  auto tagged = tagSingletonGroups(*entry);
  if (!tagged)
    return tagged.takeError();
  if (!*tagged)
    return llvm::Error::success();
  PassManager pm(module.getContext());
  pm.addPass(createOutlineFusionGroupsPass());
  if (failed(pm.run(module)))
    return llvm::createStringError(
        "outlining the ops outside the fusion groups failed");
  return llvm::Error::success();
}

llvm::Error mlir::kopt::prepareReferenceGraph(ModuleOp module, int64_t batch) {
  if (containsTosa(module)) {
    PassManager pm(module.getContext());
    addTosaLoweringPasses(pm);
    if (failed(pm.run(module)))
      return llvm::createStringError("lowering TOSA failed");
  }
  if (batch > 0) {
    PassManager pm(module.getContext());
    SpecializeBatchPassOptions options;
    options.batch = batch;
    pm.addPass(createSpecializeBatchPass(options));
    if (failed(pm.run(module)))
      return llvm::createStringError("specialising the graph to batch " +
                                     std::to_string(batch) + " failed");
  }
  // The interpreter, like the groups, needs static shapes everywhere.
  PassManager pm(module.getContext());
  pm.addNestedPass<func::FuncOp>(createFoldTensorCastsPass());
  if (failed(pm.run(module)))
    return llvm::createStringError("folding the graph's tensor casts failed");
  return llvm::Error::success();
}

void mlir::kopt::registerKoptPassesAndPipelines() {
  registerKoptPasses();
  PassPipelineRegistration<>(
      "kopt-tosa-to-linalg",
      "Lower TOSA to linalg on tensors the way kopt does before planning",
      [](OpPassManager &pm) { addTosaLoweringPasses(pm); });
  PassPipelineRegistration<>(
      "kopt-fusion-planning",
      "Form fusion groups and outline each into a keyed private function",
      [](OpPassManager &pm) { addFusionPlanningPasses(pm); });
}
