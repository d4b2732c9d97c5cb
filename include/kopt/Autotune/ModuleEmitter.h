//===- ModuleEmitter.h - Runtime modules from tuned graphs ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt compile --emit-module`: turns a graph whose groups the autotuner has
// tagged into a runtime module (docs/RuntimeModule.md). Each group takes the
// plan the autotuner chose for it (GroupOutcome::chosen), with no second
// look-up; ops left outside the fusion groups become groups of one with
// baseline plans; constants go in with their bytes; reshapes become aliases.
// Inline plans carry their sources compiled for the target architecture:
// the database record's binaries when they are for it, else NVRTC's.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_AUTOTUNE_MODULEEMITTER_H
#define KOPT_AUTOTUNE_MODULEEMITTER_H

#include "kopt/Analysis/BatchIndependence.h"
#include "kopt/Analysis/EntryFunction.h"
#include "kopt/Autotune/Autotuner.h"
#include "kopt/Runtime/RuntimeModule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::kopt {

/// How a module is emitted.
struct ModuleEmitOptions {
  /// The architecture to build binaries for (`sm_90`); empty: none (the
  /// runtime compiles the sources when it loads the module).
  std::string arch;
  /// Refer to kernel database records instead of copying stored plans in.
  bool byReference = false;
  /// The graph's file, whose argument names become the input names.
  std::string sourcePath;
};

/// Names of a function's arguments and results as written in its file.
struct SourceNames {
  std::vector<std::string> arguments;
  std::vector<std::string> results;
};

/// The names of `function`'s arguments (`%x` gives `x`) and of the values
/// it returns (`return %y` gives `y`) as written in the file at `path`;
/// `arg<N>` and `out<N>` where the file has no usable, unique name. The
/// file is parsed again with `dialects`.
SourceNames readSourceNames(llvm::StringRef path, llvm::StringRef function,
                            unsigned numArguments, unsigned numResults,
                            const DialectRegistry &dialects);

/// Builds the runtime module of `module`, a copy of a graph the autotuner
/// has tagged in which every compute op is in an outlined group
/// (`prepareRuntimeModuleGraph`). A group takes the plan of its outcome in
/// `outcomes` (by function name); a group without one (an op outside the
/// fusion groups) takes its baseline, and fails when it is tagged with
/// another plan. Notes on what was done go to `notes`.
llvm::Expected<::kopt::runtime::RuntimeModule>
emitRuntimeModule(ModuleOp module, const ModuleEmitOptions &options,
                  llvm::ArrayRef<GroupOutcome> outcomes,
                  llvm::raw_ostream &notes);

/// The runtime module emitted for one tuned batch size of a graph with a
/// dynamic batch.
struct BatchProgram {
  int64_t batch = 0;
  ::kopt::runtime::RuntimeModule module;
};

/// Joins the modules emitted for the tuned batch sizes of a graph with a
/// dynamic batch into one module holding a program per size, the first
/// size's at the top (docs/RuntimeModule.md). `analysis` of the dynamic
/// graph says which inputs and outputs carry the batch and whether its
/// samples are independent. Fails when the programs disagree (the module
/// does not verify).
llvm::Expected<::kopt::runtime::RuntimeModule>
joinBatchPrograms(std::vector<BatchProgram> programs,
                  const BatchAnalysis &analysis);

} // namespace mlir::kopt

#endif // KOPT_AUTOTUNE_MODULEEMITTER_H
