//===- SigpipeGuard.h - Keep SIGPIPE out of one thread ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Shared by the worker client (writes to a worker's pipe) and the LLM
// providers (a command's stdin, an HTTP socket): a peer that goes away must
// give an error, never kill kopt. Header-only, POSIX.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_SUPPORT_SIGPIPEGUARD_H
#define KOPT_SUPPORT_SIGPIPEGUARD_H

#include <cerrno>
#include <csignal>
#include <ctime>

#include <pthread.h>

namespace mlir::kopt {

/// Blocks SIGPIPE in the calling thread while alive, and discards a SIGPIPE
/// raised meanwhile, so a write to a closed pipe or socket gives EPIPE and
/// nothing else; the process's signal dispositions stay untouched.
class SigpipeGuard {
public:
  SigpipeGuard() {
    sigemptyset(&pipeSet);
    sigaddset(&pipeSet, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    ::sigpending(&pending);
    wasPending = sigismember(&pending, SIGPIPE) == 1;
    ::pthread_sigmask(SIG_BLOCK, &pipeSet, &oldMask);
  }
  ~SigpipeGuard() {
    if (!wasPending) {
      sigset_t pending;
      sigemptyset(&pending);
      ::sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        timespec zero = {0, 0};
        while (::sigtimedwait(&pipeSet, nullptr, &zero) < 0 && errno == EINTR)
          ;
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &oldMask, nullptr);
  }
  SigpipeGuard(const SigpipeGuard &) = delete;
  SigpipeGuard &operator=(const SigpipeGuard &) = delete;

private:
  sigset_t pipeSet;
  sigset_t oldMask;
  bool wasPending = false;
};

} // namespace mlir::kopt

#endif // KOPT_SUPPORT_SIGPIPEGUARD_H
