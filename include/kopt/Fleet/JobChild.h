//===- JobChild.h - One attempt at a job, in a child process ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt serve-worker` compiles and tunes each job in a child process (the
// same binary with `--run-job=FILE --job-outcome=FILE`), so a job that
// crashes or hangs the compiler costs the child only. The worker writes the
// job (`{"id", "task_key", "task"}`) to a temporary file, the child reads
// it, and writes its outcome (`{"error": ..., "how": ...}`) to another; both
// sides of that exchange live here.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_FLEET_JOBCHILD_H
#define KOPT_FLEET_JOBCHILD_H

#include "kopt/Runtime/TuningQueue.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::kopt {

/// What one attempt at a job came to.
struct JobResult {
  /// The child finished: `error` is empty when the job is done.
  bool finished = false;
  /// Why the job failed (finished) or why the attempt did not finish.
  std::string error;
  /// How a done job was done (`tuned`, `hit`, ...).
  std::string how;
};

/// How the worker starts the child for one job.
struct JobChildCommand {
  /// The program's path and the arguments before the job's
  /// (`kopt serve-worker`).
  std::vector<std::string> program;
  /// The arguments after `--run-job=FILE --job-outcome=FILE`.
  std::vector<std::string> arguments;
  /// `NAME=VALUE` entries added to the child's environment.
  std::vector<std::string> environment;
  /// Seconds the child may run before it is killed (0: no limit).
  unsigned timeoutSeconds = 0;
};

/// Runs one attempt at `job` in a child process started as `command` says,
/// with the job and outcome files (temporary, removed afterwards) appended
/// to `command.program`. An attempt whose child crashed, hung, failed or
/// wrote no outcome is not `finished`, and its `error` says why.
JobResult runJobInChildProcess(const ::kopt::runtime::TuningJob &job,
                               const JobChildCommand &command);

/// In the child: the job in the job file at `path`.
llvm::Expected<::kopt::runtime::TuningJob> readJobFile(llvm::StringRef path);

/// In the child: writes the outcome `error` (empty: done) and `how` to the
/// outcome file at `path`.
llvm::Error writeJobOutcome(llvm::StringRef path, llvm::StringRef error,
                            llvm::StringRef how);

} // namespace mlir::kopt

#endif // KOPT_FLEET_JOBCHILD_H
