//===- ChildProcess.cpp - Run a child under a time limit --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Fleet/ChildProcess.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

extern char **environ;

using namespace mlir::kopt;

std::string ChildExit::describe(unsigned timeoutSeconds) const {
  switch (kind) {
  case Kind::Exited:
    return "the compile child exited with status " + std::to_string(code);
  case Kind::Signalled:
    return std::string("the compile child crashed (") + ::strsignal(code) + ")";
  case Kind::TimedOut:
    return "the compile child ran past the job timeout of " +
           std::to_string(timeoutSeconds) + " s and was killed";
  case Kind::NotStarted:
    return "the compile child could not be started: " + detail;
  }
  return "the compile child failed";
}

ChildExit
mlir::kopt::runChildProcess(const std::vector<std::string> &argv,
                            const std::vector<std::string> &extraEnvironment,
                            unsigned timeoutSeconds) {
  ChildExit result;
  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<char *> environment;
  for (char **entry = environ; *entry; ++entry)
    environment.push_back(*entry);
  for (const std::string &entry : extraEnvironment)
    environment.push_back(const_cast<char *>(entry.c_str()));
  environment.push_back(nullptr);

  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  int error = ::posix_spawn(&pid, args[0], nullptr, &attributes, args.data(),
                            environment.data());
  posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    result.detail = std::strerror(error);
    return result;
  }

  // Poll rather than block, so the deadline needs no signal (SIGALRM would
  // reach any of the worker's threads).
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  int status = 0;
  while (true) {
    pid_t waited = ::waitpid(pid, &status, WNOHANG);
    if (waited == pid)
      break;
    if (waited < 0 && errno != EINTR) {
      result.detail = std::strerror(errno);
      return result;
    }
    if (timeoutSeconds && std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
      result.kind = ChildExit::Kind::TimedOut;
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (WIFSIGNALED(status)) {
    result.kind = ChildExit::Kind::Signalled;
    result.code = WTERMSIG(status);
  } else {
    result.kind = ChildExit::Kind::Exited;
    result.code = WEXITSTATUS(status);
  }
  return result;
}

void mlir::kopt::dieWithParent() {
#ifdef __linux__
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
}
