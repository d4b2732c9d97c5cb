//===- LeaseKeeper.cpp - Renew the lease of the job in hand -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Fleet/LeaseKeeper.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>

using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

LeaseKeeper::LeaseKeeper(std::unique_ptr<rt::TuningQueue> queue,
                         int64_t leaseSeconds)
    : queue(std::move(queue)), lease(leaseSeconds), thread([this] { run(); }) {}

LeaseKeeper::~LeaseKeeper() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  thread.join();
}

void LeaseKeeper::hold(std::optional<rt::TuningJob> job) {
  std::lock_guard<std::mutex> lock(mutex);
  held = std::move(job);
}

void LeaseKeeper::run() {
  std::unique_lock<std::mutex> lock(mutex);
  auto interval =
      std::chrono::milliseconds(std::max<int64_t>(1000, lease * 1000 / 3));
  while (!wake.wait_for(lock, interval, [&] { return stopping; })) {
    if (!held)
      continue;
    auto renewed = queue->renew(*held, lease);
    if (!renewed)
      llvm::errs() << "kopt serve-worker: cannot renew the lease of job "
                   << held->id << ": " << renewed.status().message() << "\n";
    else if (!*renewed)
      llvm::errs() << "kopt serve-worker: job " << held->id
                   << " is no longer ours (its lease expired)\n";
  }
}
