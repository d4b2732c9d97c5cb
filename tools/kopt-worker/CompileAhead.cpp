//===- CompileAhead.cpp - Compiling the plans of later requests -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "CompileAhead.h"

#include "kopt/Runtime/Cuda/PlanRunner.h"

#include <algorithm>

using namespace kopt::runtime;

CompileAhead::CompileAhead(std::string arch, unsigned maxThreads)
    : arch(std::move(arch)), maxThreads(std::max(1u, maxThreads)) {}

CompileAhead::~CompileAhead() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
    queue.clear();
  }
  ready.notify_all();
  for (std::thread &thread : threads)
    thread.join();
}

void CompileAhead::add(const std::vector<json::Value> &plans) {
  std::lock_guard<std::mutex> lock(mutex);
  for (const json::Value &value : plans) {
    Result<KernelPlan> plan = kernelPlanFromJson(value);
    if (!plan)
      continue;
    queue.push_back(std::move(*plan));
    if (threads.size() < maxThreads && threads.size() < queue.size())
      threads.emplace_back([this] { work(); });
  }
  ready.notify_all();
}

void CompileAhead::work() {
  while (true) {
    KernelPlan plan;
    {
      std::unique_lock<std::mutex> lock(mutex);
      ready.wait(lock, [&] { return stopping || !queue.empty(); });
      if (stopping)
        return;
      plan = std::move(queue.front());
      queue.pop_front();
    }
    // The engine creates the runner with these options (Engine.h); a
    // failure shows, with its log, when the request that carries the plan
    // compiles it again.
    PlanRunnerOptions options;
    PlanRunner::precompile(arch, plan, options).ignore();
  }
}
