//===- kopt-opt.cpp - mlir-opt with kopt's passes ---------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The driver lit tests use: the dialects kopt reads, kopt's passes and the
// upstream passes they are tested with.
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/AutotunePass.h"
#include "kopt/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::kopt::registerAllDialects(registry);
  mlir::kopt::registerAllPasses();
  mlir::kopt::registerKoptAutotunePasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "kopt optimizer driver\n", registry));
}
