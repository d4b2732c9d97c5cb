//===- ModelLoader.h - Read and prepare a model graph -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every kopt command starts the same way: read a file, parse it with
// diagnostics that point at file:line:col, and refuse what cannot be worked
// on. Lowering TOSA and planning fusion groups come next, from the passes
// (passes/Passes.h, `prepareModelGraph`).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_SUPPORT_MODELLOADER_H
#define KOPT_SUPPORT_MODELLOADER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/SourceMgr.h"

namespace mlir::kopt {

/// Parses the newest buffer of `sourceMgr` (named `name` in errors) as a
/// module, after checking its nesting (`checkMlirNesting`), on a thread with
/// the parser's stack (`runOnParserStack`); dense resource attributes
/// (`dense_resource<...>`) whose blobs the file holds become dense elements.
/// Parse and verification errors
/// are reported through the diagnostic handler of `context` and returned as
/// an error too.
llvm::Expected<OwningOpRef<ModuleOp>>
parseModelBuffer(llvm::SourceMgr &sourceMgr, MLIRContext &context,
                 llvm::StringRef name);

/// Reads `path` into `sourceMgr` and parses it as a module. Returns an error
/// for a missing, unreadable or directory path, anything but a regular file,
/// a file over the input size limit (`readInputFile`), nesting deeper than
/// `kMaxMlirNesting`, or an empty file; parse and
/// verification errors are reported through the diagnostic handler of
/// `context` (with file:line:col) and returned as an error too.
llvm::Expected<OwningOpRef<ModuleOp>>
loadModelGraph(llvm::StringRef path, MLIRContext &context,
               llvm::SourceMgr &sourceMgr);

/// Returns true if `module` holds any TOSA op.
bool containsTosa(ModuleOp module);

} // namespace mlir::kopt

#endif // KOPT_SUPPORT_MODELLOADER_H
