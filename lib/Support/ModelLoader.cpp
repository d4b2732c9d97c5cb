//===- ModelLoader.cpp - Read and prepare a model graph ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Support/ModelLoader.h"
#include "kopt/Support/InputLimits.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Parser/Parser.h"

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
