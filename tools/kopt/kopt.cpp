//===- kopt.cpp - The kopt driver -------------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The user-facing driver. `kopt analyze` finds fusion groups and reports what
// fusing them can gain; later commands tune, compile and manage the kernel
// database.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

#include <csignal>

/// Parses the command line and runs the command it names.
static int runCommand(int argc, char **argv) {
  // The LLVM libraries register hundreds of backend options at the top level;
  // keep them working but out of `kopt --help`, which then lists only the
  // commands and the generic options.
  llvm::cl::HideUnrelatedOptions(
      llvm::ArrayRef<const llvm::cl::OptionCategory *>());
  if (argc > 1 && llvm::StringRef(argv[1]) == "db")
    return mlir::kopt::runDbCommand(argc, argv);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "kopt: a compiler-integrated kernel autotuner\n\n"
      "  kopt analyze FILE... [--json]   find fusion groups and their cost\n"
      "  kopt plan FILE... [--emit-dir DIR] [--compile] [--run]\n"
      "                                  generate baseline and built-in "
      "kernel plans\n"
      "  kopt propose FILE... --provider=KIND --emit-dir DIR\n"
      "                                  ask a language model for fused "
      "kernels\n"
      "  kopt compile FILE -o OUT --db DB  tune (or look up) every group and "
      "write\n"
      "                                  the rewritten graph\n"
      "  kopt warm FILES|DIRS --db DB    tune the distinct groups of many "
      "graphs\n"
      "  kopt serve-worker --db URL      claim queued tuning jobs and tune "
      "them on\n"
      "                                  this machine's GPUs "
      "(docs/Fleet.md)\n"
      "  kopt check-module FILE M.kmod  run a runtime module with kopt-run and "
      "compare\n"
      "                                  it with the fp64 reference "
      "interpreter\n"
      "  kopt db COMMAND --db DB         list, show, export, import, verify, "
      "prune,\n"
      "                                  stats, revalidate or queue of a "
      "kernel database\n\n"
      "Run 'kopt <command> --help' for a command's options.\n");
  if (mlir::kopt::isAnalyzeCommandSelected())
    return mlir::kopt::runAnalyzeCommand();
  if (mlir::kopt::isPlanCommandSelected())
    return mlir::kopt::runPlanCommand();
  if (mlir::kopt::isProposeCommandSelected())
    return mlir::kopt::runProposeCommand();
  if (mlir::kopt::isCompileCommandSelected())
    return mlir::kopt::runCompileCommand();
  if (mlir::kopt::isWarmCommandSelected())
    return mlir::kopt::runWarmCommand();
  if (mlir::kopt::isCheckModuleCommandSelected())
    return mlir::kopt::runCheckModuleCommand();
  if (mlir::kopt::isServeWorkerCommandSelected())
    return mlir::kopt::runServeWorkerCommand();
  llvm::WithColor::error(llvm::errs(), "kopt")
      << "no command given; try 'kopt --help'\n";
  return 2;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // Under a file size limit (ulimit -f), a write beyond it then fails with an
  // error (a database transaction rolls back, an output file is not
  // written) instead of killing kopt.
  std::signal(SIGXFSZ, SIG_IGN);
  int status = runCommand(argc, argv);
  // A failed write to stdout (a full disk, /dev/full) is an error line, not
  // the abort raw_fd_ostream's destructor would give.
  llvm::outs().flush();
  if (std::error_code error = llvm::outs().error()) {
    llvm::outs().clear_error();
    llvm::WithColor::error(llvm::errs(), "kopt")
        << "cannot write to standard output: " << error.message() << "\n";
    return status ? status : 1;
  }
  return status;
}
