//===- KoptPassPlugin.cpp - kopt's passes for mlir-opt ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The pass plugin: a shared library that an MLIR tool loads with
// `--load-pass-plugin`, after which kopt's passes and pipelines can be named
// in `--pass-pipeline`:
//
//   mlir-opt --load-pass-plugin=KoptPassPlugin.so \
//     --pass-pipeline='builtin.module(kopt-fusion-planning)' model.mlir
//
// It registers passes only. The dialects they read and create (func, arith,
// math, linalg, tensor, tosa) must already be registered by the host, as
// `mlir-opt` does for every upstream dialect. The plugin links the host's
// shared libMLIR, so the host and the plugin share one copy of MLIR's pass,
// dialect and TypeID registries.
//
//===----------------------------------------------------------------------===//

#include "kopt/InitAll.h"

#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK ::mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "KoptPassPlugin", LLVM_VERSION_STRING,
          []() { mlir::kopt::registerKoptPassesAndPipelines(); }};
}
