//===- LeaseKeeper.h - Renew the lease of the job in hand -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// While `kopt serve-worker` works on a job, a thread of its own renews the
// job's lease every third of the lease, from a connection of its own, so a
// live worker keeps its job however long tuning takes (docs/Fleet.md).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_FLEET_LEASEKEEPER_H
#define KOPT_FLEET_LEASEKEEPER_H

#include "kopt/Runtime/TuningQueue.h"

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace mlir::kopt {

/// Renews the lease of the job in hand from a connection of its own.
class LeaseKeeper {
public:
  /// Starts the thread that renews through `queue` for `leaseSeconds`, every
  /// third of that (at least every second).
  LeaseKeeper(std::unique_ptr<::kopt::runtime::TuningQueue> queue,
              int64_t leaseSeconds);
  /// Stops the thread.
  ~LeaseKeeper();

  /// Keeps `job`'s lease from now on (std::nullopt: none).
  void hold(std::optional<::kopt::runtime::TuningJob> job);

private:
  void run();

  std::unique_ptr<::kopt::runtime::TuningQueue> queue;
  int64_t lease;
  std::mutex mutex;
  std::condition_variable wake;
  std::optional<::kopt::runtime::TuningJob> held;
  bool stopping = false;
  std::thread thread;
};

} // namespace mlir::kopt

#endif // KOPT_FLEET_LEASEKEEPER_H
