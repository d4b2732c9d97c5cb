//===- FakeTuningQueue.h - A tuning queue in memory, for tests --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The part of the tuning queue that `kopt serve-worker`'s loop uses (claim,
// renew, finish, release), in memory and recorded, so the loop is tested
// without PostgreSQL.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_UNIT_FAKETUNINGQUEUE_H
#define KOPT_TEST_UNIT_FAKETUNINGQUEUE_H

#include "kopt/Runtime/TuningQueue.h"

#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace mlir::kopt::testing {

/// Queued jobs in order; `claim` takes the first, counting its claim and
/// attempt as the server does, and `release` puts it back at the end.
class FakeTuningQueue : public ::kopt::runtime::TuningQueue {
public:
  /// A call to `finish` or `release`.
  struct Ending {
    int64_t id;
    /// `finish` with done, `finish` with failed, or `release`.
    enum class Kind { Done, Failed, Released } kind;
    std::string error;
  };
  /// What the last `claim` was asked.
  struct ClaimArguments {
    std::string worker, fingerprintHash, precision;
    int64_t leaseSeconds = 0, maxAttempts = 0;
  };

  /// Queues a job for `taskKey`; returns its id.
  int64_t add(const std::string &taskKey) {
    ::kopt::runtime::TuningJob job;
    job.id = nextId++;
    job.taskKey = taskKey;
    job.state = "queued";
    queued.push_back(job);
    return job.id;
  }

  ::kopt::runtime::Result<std::optional<::kopt::runtime::TuningJob>>
  claim(const std::string &worker, const std::string &fingerprintHash,
        const std::string &precision, int64_t leaseSeconds,
        int64_t maxAttempts) override {
    ++claims;
    lastClaim = {worker, fingerprintHash, precision, leaseSeconds, maxAttempts};
    if (!claimError.empty())
      return fail(claimError);
    if (queued.empty())
      return std::optional<::kopt::runtime::TuningJob>();
    ::kopt::runtime::TuningJob job = queued.front();
    queued.pop_front();
    job.state = "claimed";
    job.claimedBy = worker;
    ++job.claims;
    ++job.attempts;
    return std::optional<::kopt::runtime::TuningJob>(job);
  }

  ::kopt::runtime::Result<bool> renew(const ::kopt::runtime::TuningJob &job,
                                      int64_t) override {
    std::lock_guard<std::mutex> lock(renewMutex);
    renewed.push_back(job.id);
    return true;
  }

  ::kopt::runtime::Result<bool> finish(const ::kopt::runtime::TuningJob &job,
                                       bool done,
                                       const std::string &error) override {
    endings.push_back(
        {job.id, done ? Ending::Kind::Done : Ending::Kind::Failed, error});
    return !lost.count(job.id);
  }

  ::kopt::runtime::Result<bool> release(const ::kopt::runtime::TuningJob &job,
                                        const std::string &error) override {
    endings.push_back({job.id, Ending::Kind::Released, error});
    ::kopt::runtime::TuningJob back = job;
    back.state = "queued";
    queued.push_back(back);
    return true;
  }

  ::kopt::runtime::Result<::kopt::runtime::EnqueueOutcome>
  enqueue(const std::string &, const std::string &, const std::string &,
          const ::kopt::runtime::json::Value &) override {
    return fail("enqueue is not faked");
  }
  ::kopt::runtime::Result<size_t> retryFailed() override {
    return fail("retryFailed is not faked");
  }
  ::kopt::runtime::Result<::kopt::runtime::QueueStats> stats() override {
    return fail("stats is not faked");
  }
  ::kopt::runtime::Result<std::vector<::kopt::runtime::TuningJob>>
  list() override {
    return fail("list is not faked");
  }

  /// The jobs in the queue, in order.
  std::deque<::kopt::runtime::TuningJob> queued;
  /// Every `finish` and `release`, in order.
  std::vector<Ending> endings;
  /// The ids whose `renew` was called (from the lease keeper's thread).
  std::vector<int64_t> renewed;
  std::mutex renewMutex;
  /// How many times `claim` was called, and its last arguments.
  unsigned claims = 0;
  ClaimArguments lastClaim;
  /// Non-empty: `claim` fails with this message.
  std::string claimError;
  /// Jobs whose `finish` finds the claim taken over.
  std::set<int64_t> lost;

private:
  static ::kopt::runtime::Status fail(const std::string &message) {
    return ::kopt::runtime::Status::error(
        ::kopt::runtime::StatusCode::Unavailable, message);
  }
  int64_t nextId = 7;
};

} // namespace mlir::kopt::testing

#endif // KOPT_TEST_UNIT_FAKETUNINGQUEUE_H
