//===- CompileAhead.h - Compiling the plans of later requests ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// An `evaluate` request may name plans that later requests of the same task
// will carry (`compile_ahead`, docs/EvaluatorProtocol.md). The worker
// compiles their sources with NVRTC on background threads into the
// runners' process-wide cache (`PlanRunner::precompile`) while it evaluates
// the request, so that the candidates' compiles all start before the first
// candidate runs, and a later request finds its plan compiled (or waits for
// the compile in flight).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TOOLS_KOPT_WORKER_COMPILEAHEAD_H
#define KOPT_TOOLS_KOPT_WORKER_COMPILEAHEAD_H

#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/TaskPlan.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kopt::runtime {

class CompileAhead {
public:
  /// Compiles for `arch` (`sm_90`) on at most `maxThreads` threads.
  CompileAhead(std::string arch, unsigned maxThreads);
  /// Drops what is queued and waits for the compiles in flight.
  ~CompileAhead();
  CompileAhead(const CompileAhead &) = delete;
  CompileAhead &operator=(const CompileAhead &) = delete;

  /// Queues the plans of `plans` that read as `kopt.plan/1`; the others
  /// are ignored (their request reports them).
  void add(const std::vector<json::Value> &plans);

private:
  void work();

  std::string arch;
  unsigned maxThreads;
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<KernelPlan> queue;
  std::vector<std::thread> threads;
  bool stopping = false;
};

} // namespace kopt::runtime

#endif // KOPT_TOOLS_KOPT_WORKER_COMPILEAHEAD_H
