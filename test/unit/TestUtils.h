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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"

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

} // namespace mlir::kopt::testing

#endif // KOPT_TEST_UNIT_TESTUTILS_H
