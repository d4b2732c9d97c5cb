//===- TuningQueue.h - Tuning jobs shared by a fleet ------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The tuning queue lives in the PostgreSQL kernel database, beside the
// records: machines without a GPU enqueue the tasks that miss, and GPU
// workers claim them (SELECT ... FOR UPDATE SKIP LOCKED) under a lease that
// they renew while they work. A job whose worker dies is claimed again once
// its lease has expired; a worker whose lease was taken over cannot finish
// the job. A job is tried a bounded number of times: a worker whose compile
// child crashed or hung puts it back (`release`), and a job whose attempts
// are spent when its claim lapses or fails again is failed for good. Times
// are the server's clock, so machines need not agree on theirs.
// docs/Fleet.md describes the set-up.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_TUNINGQUEUE_H
#define KOPT_RUNTIME_TUNINGQUEUE_H

#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/Status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kopt::runtime {

/// One task to tune, as the queue keeps it.
struct TuningJob {
  int64_t id = 0;
  std::string taskKey;
  /// The fingerprint hash of the device to tune for, or empty for any
  /// worker of the job's precision.
  std::string target;
  /// The precision policy (`fp32`, `tf32`, `bf16`).
  std::string precision = "fp32";
  /// The `kopt.task/1` document, the group's MLIR included.
  json::Value task;
  /// `queued`, `claimed`, `done` or `failed`.
  std::string state;
  /// The worker holding (or that last held) the job.
  std::string claimedBy;
  /// When the current claim lapses (seconds since the Unix epoch, server
  /// clock).
  int64_t leaseExpiresAt = 0;
  /// How many times the job was claimed; a claim's token.
  int64_t claims = 0;
  /// Claims since the job was last queued by hand (`retryFailed`) or
  /// enqueued: the attempts that count against the bound.
  int64_t attempts = 0;
  /// Why the job failed, when it did.
  std::string error;
  int64_t createdAt = 0;
  int64_t updatedAt = 0;
};

/// What `enqueue` did.
enum class EnqueueOutcome {
  /// A new job (or a done job whose record has gone) is queued.
  Queued,
  /// A job for the task is already queued, claimed or failed.
  AlreadyQueued,
  /// The database has a valid record for the task: nothing to tune.
  InDatabase,
};

/// Jobs of one worker, for `kopt db queue`.
struct QueueWorker {
  std::string name;
  size_t claimed = 0;
  size_t done = 0;
  size_t failed = 0;
  /// The last time it claimed or finished a job, server clock.
  int64_t lastSeen = 0;
};

/// Queue depth by state, and the workers.
struct QueueStats {
  size_t queued = 0;
  /// Claimed, under a live lease.
  size_t claimed = 0;
  /// Claimed, with the lease expired: the worker died or stalled.
  size_t expired = 0;
  size_t done = 0;
  size_t failed = 0;
  /// Claims beyond the first, over all jobs: work taken over.
  size_t reclaims = 0;
  std::vector<QueueWorker> workers;
  /// The server's clock.
  int64_t now = 0;
};

/// The tuning queue of one PostgreSQL database. One connection; use one
/// queue per thread.
class TuningQueue {
public:
  /// Connects to `url` (see `openKernelDatabase` for `fromCommandLine`) and
  /// creates kopt's tables when missing. A SQLite path is refused: the queue
  /// needs PostgreSQL.
  static Result<std::unique_ptr<TuningQueue>> open(const std::string &url,
                                                   bool fromCommandLine);
  virtual ~TuningQueue();

  /// Queues `taskKey` for `target` (a fingerprint hash, or empty for any
  /// device) and `precision`, with its `kopt.task/1` document, unless the
  /// database has a valid record for it or a job for it exists.
  virtual Result<EnqueueOutcome> enqueue(const std::string &taskKey,
                                         const std::string &target,
                                         const std::string &precision,
                                         const json::Value &task) = 0;

  /// Claims the oldest job that `worker` (of fingerprint `fingerprintHash`
  /// and `precision`) can take, queued or with an expired lease, for
  /// `leaseSeconds`; std::nullopt when there is none. A job whose lease
  /// expired after `maxAttempts` attempts is marked failed instead: each of
  /// its workers died on it.
  virtual Result<std::optional<TuningJob>>
  claim(const std::string &worker, const std::string &fingerprintHash,
        const std::string &precision, int64_t leaseSeconds,
        int64_t maxAttempts) = 0;

  /// Extends the lease of `job`'s claim by `leaseSeconds` from now; false
  /// when the claim is no longer this worker's.
  virtual Result<bool> renew(const TuningJob &job, int64_t leaseSeconds) = 0;

  /// Marks the claimed `job` done, or failed with `error`; false when the
  /// claim is no longer this worker's (the lease expired and another worker
  /// took the job over).
  virtual Result<bool> finish(const TuningJob &job, bool done,
                              const std::string &error = {}) = 0;

  /// Puts the claimed `job` back in the queue after an attempt that did not
  /// finish (its compile child crashed or hung), noting `error`; false when
  /// the claim is no longer this worker's.
  virtual Result<bool> release(const TuningJob &job,
                               const std::string &error) = 0;

  /// Queues the failed jobs again, with their attempts reset; returns how
  /// many.
  virtual Result<size_t> retryFailed() = 0;

  /// Depth by state and the workers.
  virtual Result<QueueStats> stats() = 0;

  /// Every job, oldest first (without the task documents).
  virtual Result<std::vector<TuningJob>> list() = 0;
};

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_TUNINGQUEUE_H
