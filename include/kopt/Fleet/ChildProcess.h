//===- ChildProcess.h - Run a child under a time limit ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt serve-worker` compiles each job in a child process, so a job that
// crashes or hangs the compiler costs the child, never the worker. The
// child runs in a process group of its own: a terminal's Ctrl-C reaches only
// the worker (which lets the job finish), and a timeout kills the child with
// everything it started.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_FLEET_CHILDPROCESS_H
#define KOPT_FLEET_CHILDPROCESS_H

#include <string>
#include <vector>

namespace mlir::kopt {

/// How a child process ended.
struct ChildExit {
  enum class Kind {
    /// It exited; `code` is its exit status.
    Exited,
    /// A signal killed it; `code` is the signal.
    Signalled,
    /// It ran past its time limit and was killed.
    TimedOut,
    /// It could not be started; `detail` says why.
    NotStarted,
  };
  Kind kind = Kind::NotStarted;
  int code = 0;
  std::string detail;

  /// True when it exited with status 0.
  bool succeeded() const { return kind == Kind::Exited && code == 0; }
  /// What happened, for a job's error: "crashed (Segmentation fault)".
  std::string describe(unsigned timeoutSeconds) const;
};

/// Runs `argv` (`argv[0]`: the program's path) with this process's
/// environment plus `extraEnvironment` (`NAME=VALUE` entries), in a new
/// process group, and waits for it. After `timeoutSeconds` (0: no limit)
/// its process group is killed with SIGKILL.
ChildExit runChildProcess(const std::vector<std::string> &argv,
                          const std::vector<std::string> &extraEnvironment,
                          unsigned timeoutSeconds);

/// In the child: asks the kernel to kill this process when its parent dies,
/// so a worker killed outright leaves no compile running. Linux only; a
/// no-op elsewhere.
void dieWithParent();

} // namespace mlir::kopt

#endif // KOPT_FLEET_CHILDPROCESS_H
