//===- TestUtils.h - Helpers shared by kopt's unit tests --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_UNIT_TESTUTILS_H
#define KOPT_TEST_UNIT_TESTUTILS_H

#include "kopt/InitAll.h"
#include "kopt/Support/ModelLoader.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/SourceMgr.h"

#include "gtest/gtest.h"

namespace mlir::kopt::testing {

/// A context with every dialect kopt reads loaded.
inline std::unique_ptr<MLIRContext> makeContext() {
  DialectRegistry registry;
  registerAllDialects(registry);
  auto context = std::make_unique<MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

/// Parses `source`; fails the test on a parse error.
inline OwningOpRef<ModuleOp> parse(MLIRContext &context, StringRef source) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  EXPECT_TRUE(module) << "failed to parse:\n" << source.str();
  return module;
}

/// The first function of `module`.
inline func::FuncOp firstFunction(ModuleOp module) {
  return *module.getOps<func::FuncOp>().begin();
}

/// Loads `relativePath` under the source tree and plans its fusion groups.
inline OwningOpRef<ModuleOp> loadPlanned(MLIRContext &context,
                                         llvm::StringRef relativePath) {
  std::string path = std::string(KOPT_SOURCE_DIR) + "/" + relativePath.str();
  llvm::SourceMgr sourceMgr;
  auto module = loadModelGraph(path, context, sourceMgr);
  if (!module) {
    ADD_FAILURE() << path << ": " << llvm::toString(module.takeError());
    return {};
  }
  if (failed(prepareModelGraph(module->get()))) {
    ADD_FAILURE() << path << ": fusion planning failed";
    return {};
  }
  return std::move(*module);
}

/// The outlined group functions of `module`.
inline SmallVector<func::FuncOp> groupFunctions(ModuleOp module) {
  SmallVector<func::FuncOp> groups;
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    if (func->hasAttr("kopt.fusion_group"))
      groups.push_back(func);
  return groups;
}

} // namespace mlir::kopt::testing

#endif // KOPT_TEST_UNIT_TESTUTILS_H
