//===- Commands.h - The kopt driver's subcommands ---------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each subcommand lives in its own file, which declares its llvm::cl
// SubCommand and options next to its implementation.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TOOLS_KOPT_COMMANDS_H
#define KOPT_TOOLS_KOPT_COMMANDS_H

namespace mlir::kopt {

/// True when `kopt analyze` was given on the command line.
bool isAnalyzeCommandSelected();
/// Runs `kopt analyze`; returns the process exit code.
int runAnalyzeCommand();

/// True when `kopt plan` was given on the command line.
bool isPlanCommandSelected();
/// Runs `kopt plan`; returns the process exit code.
int runPlanCommand();

/// True when `kopt propose` was given on the command line.
bool isProposeCommandSelected();
/// Runs `kopt propose`; returns the process exit code.
int runProposeCommand();

/// True when `kopt compile` was given on the command line.
bool isCompileCommandSelected();
/// Runs `kopt compile`; returns the process exit code.
int runCompileCommand();

/// True when `kopt warm` was given on the command line.
bool isWarmCommandSelected();
/// Runs `kopt warm`; returns the process exit code.
int runWarmCommand();

/// True when `kopt serve-worker` was given on the command line.
bool isServeWorkerCommandSelected();
/// Runs `kopt serve-worker`; returns the process exit code.
int runServeWorkerCommand();

/// True when `kopt check-module` was given on the command line.
bool isCheckModuleCommandSelected();
/// Runs `kopt check-module`; returns the process exit code.
int runCheckModuleCommand();

/// Runs `kopt db ...` from the unparsed `argc` and `argv` (whose `argv[1]` is
/// `db`): it has commands of its own and parses them itself. Returns the
/// process exit code.
int runDbCommand(int argc, char **argv);

} // namespace mlir::kopt

#endif // KOPT_TOOLS_KOPT_COMMANDS_H
