//===- kopt-opt.cpp - mlir-opt with kopt's passes ---------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The driver lit tests use: the dialects kopt reads, kopt's passes and the
// upstream passes they are tested with. A named input gets kopt's bounds
// first (a regular file, within the size and nesting limits), and MlirOptMain
// runs on a thread with the parser's stack
// (include/kopt/Support/InputLimits.h).
//
//===----------------------------------------------------------------------===//

#include "kopt/InitAll.h"
#include "kopt/Support/InputLimits.h"
#include "passes/AutotunePass.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/WithColor.h"

using namespace mlir::kopt;

/// Applies kopt's bounds on input to `path` (stdin is read by MlirOptMain).
static llvm::Error checkInput(llvm::StringRef path) {
  if (path == "-")
    return llvm::Error::success();
  auto buffer = readInputFile(path);
  if (!buffer)
    return buffer.takeError();
  return checkMlirNesting((*buffer)->getBuffer(), path);
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  registerAllPasses();
  registerKoptAutotunePasses();
  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "kopt optimizer driver\n", registry);
  if (llvm::Error error = checkInput(inputFile)) {
    llvm::WithColor::error(llvm::errs(), "kopt")
        << llvm::toString(std::move(error)) << "\n";
    return 1;
  }
  mlir::LogicalResult result = mlir::failure();
  runOnParserStack([&] {
    result = mlir::MlirOptMain(argc, argv, inputFile, outputFile, registry);
  });
  return mlir::asMainReturnCode(result);
}
