//===- main.cpp - A program built against an installed kopt -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reads a model graph, plans its fusion groups with kopt's passes and prints
// the module and how many groups were outlined. It uses the installed
// headers only: registration (kopt/InitAll.h), model loading
// (kopt/Support/ModelLoader.h) and the TableGen pass declarations
// (passes/Passes.h). Exits non-zero if no group was outlined.
//
//===----------------------------------------------------------------------===//

#include "kopt/InitAll.h"
#include "kopt/Support/ModelLoader.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: kopt-consumer FILE.mlir\n";
    return 2;
  }
  DialectRegistry registry;
  kopt::registerAllDialects(registry);
  kopt::registerKoptPassesAndPipelines();
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  auto module = kopt::loadModelGraph(argv[1], context, sourceMgr);
  if (!module) {
    llvm::errs() << "kopt-consumer: " << llvm::toString(module.takeError())
                 << "\n";
    return 1;
  }

  // The pipeline registered by name, as a driver reading a pipeline string
  // would find it...
  if (!PassPipelineInfo::lookup("kopt-fusion-planning")) {
    llvm::errs() << "kopt-consumer: kopt-fusion-planning is not registered\n";
    return 1;
  }
  // ...and the same passes built from the TableGen declarations.
  PassManager pm(&context);
  kopt::FormFusionGroupsPassOptions options;
  options.emitRemarks = false;
  pm.addNestedPass<func::FuncOp>(kopt::createFormFusionGroupsPass(options));
  pm.addPass(kopt::createOutlineFusionGroupsPass());
  if (failed(pm.run(**module)))
    return 1;

  unsigned outlined = 0;
  for (auto func : (*module)->getOps<func::FuncOp>())
    if (func->hasAttr("kopt.key"))
      ++outlined;
  (*module)->print(llvm::outs());
  llvm::outs() << "\nkopt-consumer: " << outlined << " fusion group"
               << (outlined == 1 ? "" : "s") << " outlined\n";
  return outlined ? 0 : 1;
}
