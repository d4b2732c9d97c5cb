//===- GroupWalk.cpp - Visit every fusion group of model graphs -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "GroupWalk.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Support/ModelLoader.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::kopt;

bool mlir::kopt::walkGroups(const DialectRegistry &registry,
                            const std::vector<std::string> &paths,
                            llvm::raw_ostream &os, const GroupVisitor &visit) {
  bool allOk = true;
  for (const std::string &path : paths) {
    MLIRContext context(registry);
    context.printOpOnDiagnostic(false);
    llvm::SourceMgr sourceMgr;
    SourceMgrDiagnosticHandler handler(sourceMgr, &context, llvm::errs());
    auto module = loadModelGraph(path, context, sourceMgr);
    if (!module) {
      llvm::WithColor::error(llvm::errs(), "kopt")
          << llvm::toString(module.takeError()) << "\n";
      allOk = false;
      continue;
    }
    if (failed(prepareModelGraph(**module))) {
      allOk = false;
      continue;
    }
    os << path << "\n";
    for (auto func : (*module)->getOps<func::FuncOp>()) {
      if (!func->hasAttr(kFusionGroupAttrName))
        continue;
      auto task = buildKernelTask(func);
      if (!task) {
        func.emitRemark("kopt: no kernel task: ")
            << llvm::toString(task.takeError());
        continue;
      }
      os << "  @" << task->name << "  (" << task->kind << ", key "
         << llvm::StringRef(task->key).take_front(12) << ")\n";
      allOk &= visit(func, *task);
    }
  }
  return allOk;
}
