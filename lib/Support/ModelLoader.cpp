//===- ModelLoader.cpp - Read and prepare a model graph ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Support/ModelLoader.h"
#include "kopt/Support/InputLimits.h"

#include "passes/Passes.h"

#include "mlir/Conversion/TosaToArith/TosaToArith.h"
#include "mlir/Conversion/TosaToLinalg/TosaToLinalg.h"
#include "mlir/Conversion/TosaToTensor/TosaToTensor.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::kopt;

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::kopt::parseModelBuffer(llvm::SourceMgr &sourceMgr, MLIRContext &context,
                             llvm::StringRef name) {
  llvm::StringRef text =
      sourceMgr.getMemoryBuffer(sourceMgr.getNumBuffers())->getBuffer();
  if (llvm::Error error = checkMlirNesting(text, name))
    return std::move(error);
  // The parser recurses once per level: give it a stack that fits the
  // nesting limit rather than whatever the calling thread has.
  OwningOpRef<ModuleOp> module;
  runOnParserStack([&] {
    module = parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  });
  if (!module)
    return llvm::createStringError("'%s' could not be parsed",
                                   name.str().c_str());
  return module;
}

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::kopt::loadModelGraph(llvm::StringRef path, MLIRContext &context,
                           llvm::SourceMgr &sourceMgr) {
  auto buffer = readInputFile(path);
  if (!buffer)
    return buffer.takeError();
  if ((*buffer)->getBuffer().trim().empty())
    return llvm::createStringError("'%s' is empty: nothing to work on",
                                   path.str().c_str());
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  auto module = parseModelBuffer(sourceMgr, context, path);
  if (!module)
    return module.takeError();
  if ((*module)->getBody()->empty())
    return llvm::createStringError(
        "'%s' holds an empty module: nothing to work on", path.str().c_str());
  return module;
}

bool mlir::kopt::containsTosa(ModuleOp module) {
  bool found = false;
  module.walk([&](Operation *op) {
    if (isa_and_nonnull<tosa::TosaDialect>(op->getDialect()))
      found = true;
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found;
}

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
