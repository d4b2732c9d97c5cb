//===- TuneOptions.h - Options of kopt compile and kopt warm ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Both commands share the autotuner's options, so they are declared in one
// file (a cl::opt may belong to several subcommands, which must exist
// first).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TOOLS_KOPT_TUNEOPTIONS_H
#define KOPT_TOOLS_KOPT_TUNEOPTIONS_H

#include "kopt/Autotune/Autotuner.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::kopt {

/// What the command line of `kopt compile` or `kopt warm` asked for.
struct TuneCommandLine {
  AutotuneOptions autotune;
  std::vector<std::string> inputs;
  /// compile: the output file ("-" for stdout); warm: unused.
  std::string output;
  bool requireCacheHit = false;
  bool jsonReport = false;
  /// Print progress lines on stderr (text reports without --quiet).
  bool progress = true;
  /// The command's time budget in seconds (0: none), from its start: the
  /// command sets `autotune.deadline` from it.
  double budgetSeconds = 0;
  /// compile: the runtime module to write ("" for none), whether its tuned
  /// plans refer to the database, and the architecture of its binaries
  /// ("" for the target's, "none" for no binaries).
  std::string emitModule;
  bool moduleByReference = false;
  std::string moduleArch;
  /// compile: the batch sizes a graph with a dynamic batch is specialised
  /// and tuned for (`--tune-shapes batch=1,8`), ascending; empty when not
  /// given.
  std::vector<int64_t> tuneShapes;
};

/// Parses `--tune-shapes` text: `batch=` and a comma-separated list of
/// positive sizes. Returns them ascending, without repeats.
llvm::Expected<std::vector<int64_t>> parseTuneShapes(llvm::StringRef text);

/// The parsed options of the selected command, or an error for bad values.
llvm::Expected<TuneCommandLine> getCompileCommandLine();
llvm::Expected<TuneCommandLine> getWarmCommandLine();

} // namespace mlir::kopt

#endif // KOPT_TOOLS_KOPT_TUNEOPTIONS_H
