//===- DbQueue.cpp - kopt db init and kopt db queue -------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt db init` creates kopt's tables, which a fleet's administrator does
// once on the shared server. `kopt db queue` shows the tuning queue that
// `kopt compile --tune=enqueue` fills and `kopt serve-worker` drains: jobs
// by state, the workers and what they did, and the progress.
//
//===----------------------------------------------------------------------===//

#include "DbCommand.h"

#include "kopt/Runtime/TuningQueue.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir::kopt;
using namespace mlir::kopt::db;
namespace rt = ::kopt::runtime;

int mlir::kopt::db::runInit(const DbOptions &options) {
  auto db = openDatabase(options, OpenMode::Create);
  if (!db)
    return 1;
  llvm::outs() << "kernel database '" << options.name << "': schema "
               << db->getSchemaVersion() << "\n";
  return 0;
}

int mlir::kopt::db::runQueue(const DbOptions &options) {
  auto queue = rt::TuningQueue::open(options.database, options.fromCommandLine);
  if (!queue) {
    printError(queue.status().message());
    return 1;
  }
  if (options.retryFailed) {
    auto retried = (*queue)->retryFailed();
    if (!retried) {
      printError(retried.status().message());
      return 1;
    }
    llvm::errs() << "queued " << plural(*retried, "failed job", "failed jobs")
                 << " again\n";
  }
  auto stats = (*queue)->stats();
  if (!stats) {
    printError(stats.status().message());
    return 1;
  }
  std::vector<rt::TuningJob> jobs;
  if (options.jobs) {
    auto listed = (*queue)->list();
    if (!listed) {
      printError(listed.status().message());
      return 1;
    }
    jobs = std::move(*listed);
  }
  size_t total = stats->queued + stats->claimed + stats->expired + stats->done +
                 stats->failed;

  if (options.json) {
    llvm::json::Array workers;
    for (const rt::QueueWorker &worker : stats->workers)
      workers.push_back(llvm::json::Object{{"name", worker.name},
                                           {"claimed", int64_t(worker.claimed)},
                                           {"done", int64_t(worker.done)},
                                           {"failed", int64_t(worker.failed)},
                                           {"last_seen", worker.lastSeen}});
    llvm::json::Array jobList;
    for (const rt::TuningJob &job : jobs)
      jobList.push_back(llvm::json::Object{{"id", job.id},
                                           {"task_key", job.taskKey},
                                           {"target", job.target},
                                           {"precision", job.precision},
                                           {"state", job.state},
                                           {"claimed_by", job.claimedBy},
                                           {"claims", job.claims},
                                           {"attempts", job.attempts},
                                           {"error", job.error}});
    llvm::json::Object document{{"schema", "kopt.db.queue/1"},
                                {"database", options.name},
                                {"jobs", int64_t(total)},
                                {"queued", int64_t(stats->queued)},
                                {"claimed", int64_t(stats->claimed)},
                                {"expired", int64_t(stats->expired)},
                                {"done", int64_t(stats->done)},
                                {"failed", int64_t(stats->failed)},
                                {"reclaims", int64_t(stats->reclaims)},
                                {"workers", std::move(workers)}};
    if (options.jobs)
      document["job_list"] = std::move(jobList);
    llvm::outs() << llvm::formatv("{0:2}\n",
                                  llvm::json::Value(std::move(document)));
    return 0;
  }

  llvm::raw_ostream &os = llvm::outs();
  os << "tuning queue of '" << options.name << "'\n";
  os << llvm::formatv("  jobs      {0}: {1} queued, {2} claimed, {3} with an "
                      "expired lease, {4} done, {5} failed\n",
                      total, stats->queued, stats->claimed, stats->expired,
                      stats->done, stats->failed);
  os << llvm::formatv("  progress  {0} of {1} finished ({2:P0})",
                      stats->done + stats->failed, total,
                      total ? double(stats->done + stats->failed) / total : 1.0)
     << (stats->reclaims ? llvm::formatv("; {0} taken over after a lease "
                                         "expired",
                                         stats->reclaims)
                               .str()
                         : "")
     << "\n";
  if (!stats->workers.empty()) {
    os << "  workers   " << stats->workers.size() << "\n";
    for (const rt::QueueWorker &worker : stats->workers)
      os << llvm::formatv("    {0,-40} {1} claimed, {2} done, {3} failed, "
                          "last seen {4}s ago\n",
                          worker.name, worker.claimed, worker.done,
                          worker.failed, stats->now - worker.lastSeen);
  }
  if (options.jobs) {
    os << "ID      KEY           TARGET            STATE    CLAIMS  WORKER\n";
    for (const rt::TuningJob &job : jobs)
      os << llvm::formatv("{0,-7} {1,-13} {2,-17} {3,-8} {4,6}  {5}{6}\n",
                          job.id, shortKey(job.taskKey),
                          job.target.empty() ? "any/" + job.precision
                                             : job.target,
                          job.state, job.claims, job.claimedBy,
                          job.error.empty() ? "" : "  (" + job.error + ")");
  }
  return 0;
}
