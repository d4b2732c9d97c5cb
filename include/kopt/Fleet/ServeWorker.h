//===- ServeWorker.h - The job loop of kopt serve-worker --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The loop of a fleet's GPU worker (docs/Fleet.md): claim a job from the
// tuning queue, hold its lease while one attempt at it runs, and then mark
// it done, fail it, or put it back. An attempt that did not finish (its
// compile child crashed or hung) is put back while the job has attempts
// left, and fails the job for good once it has had `maxAttempts`, so one
// poison job cannot stop a fleet. What runs an attempt, what holds the
// lease, the clock and the stop request come from the caller, so the loop
// is tested without a database, a child process or a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_FLEET_SERVEWORKER_H
#define KOPT_FLEET_SERVEWORKER_H

#include "kopt/Fleet/JobChild.h"
#include "kopt/Runtime/TuningQueue.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <optional>
#include <string>

namespace mlir::kopt {

/// What the worker claims and how long it goes on.
struct ServeWorkerOptions {
  /// The worker's name in the queue and in its messages.
  std::string name;
  /// The fingerprint hash of the device it tunes for.
  std::string fingerprintHash;
  /// The precision policy of the jobs it takes.
  std::string precision = "fp32";
  /// Seconds a claim lasts unless renewed.
  unsigned leaseSeconds = 300;
  /// Stop after this many jobs done, failed or lost (0: no limit).
  unsigned maxJobs = 0;
  /// Stop when no job can be claimed, instead of waiting for more.
  bool once = false;
  /// Seconds between looks at an empty queue.
  unsigned pollSeconds = 5;
  /// Attempts a job gets before it is failed for good (at least 1).
  unsigned maxAttempts = 3;
};

/// What the loop calls out to.
struct ServeWorkerHooks {
  /// Runs one attempt at a claimed job (`runJobInChildProcess`, in the
  /// tool).
  std::function<JobResult(const ::kopt::runtime::TuningJob &)> runJob;
  /// Called with the job in hand before its attempt and with std::nullopt
  /// after it (`LeaseKeeper::hold`); empty: nothing holds the lease.
  std::function<void(std::optional<::kopt::runtime::TuningJob>)> holdLease;
  /// True once the worker should stop (after the job in hand).
  std::function<bool()> stopRequested = [] { return false; };
  /// Seconds on a steady clock, for the time a job took.
  std::function<double()> now = getSteadySeconds;
  /// Waits a second while the queue is empty (may return early on a
  /// signal).
  std::function<void()> waitASecond = waitOneSecond;

  /// The system's steady clock, in seconds.
  static double getSteadySeconds();
  /// Sleeps one second, or less when a signal arrives.
  static void waitOneSecond();
};

/// What the loop did.
struct ServeWorkerCounts {
  unsigned done = 0;
  unsigned failed = 0;
  /// Jobs whose lease expired and that another worker took over.
  unsigned lost = 0;
  /// Attempts that did not finish, whose job went back to the queue.
  unsigned putBack = 0;
};

/// Claims jobs from `queue` and runs them through `hooks` until the queue is
/// empty (with `once`), `maxJobs` are finished or a stop is requested,
/// printing a line per claim and per outcome, and a last line with the
/// counts, to `os`. Fails, at once, when the queue does.
llvm::Expected<ServeWorkerCounts> serveJobs(::kopt::runtime::TuningQueue &queue,
                                            const ServeWorkerOptions &options,
                                            const ServeWorkerHooks &hooks,
                                            llvm::raw_ostream &os);

} // namespace mlir::kopt

#endif // KOPT_FLEET_SERVEWORKER_H
