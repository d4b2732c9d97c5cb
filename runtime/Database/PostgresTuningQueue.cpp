//===- PostgresTuningQueue.cpp - The tuning queue in PostgreSQL -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The `kopt.jobs` table: one row per task key, target and precision. A claim
// is one UPDATE of the row that a `SELECT ... FOR UPDATE SKIP LOCKED`
// picked, so concurrent workers never pick the same job; it counts the claim
// (`claims`), which is the claim's token: renewing and finishing name the
// worker and the token, so a worker whose lease lapsed and whose job was
// taken over can neither extend nor finish it. `attempts` counts the claims
// since the job was queued: a job whose attempts are spent is failed rather
// than claimed again, so a job that kills its workers stops after a few.
// Times are the server's.
//
//===----------------------------------------------------------------------===//

#include "PostgresKernelDatabase.h"

using namespace kopt::runtime;
using postgres::Connection;
using postgres::Rows;

namespace {

/// The server's clock, in seconds since the Unix epoch.
constexpr const char *kNow = "(extract(epoch from clock_timestamp()))::bigint";

/// The columns `readJob` expects, in order.
constexpr const char *kJobColumns =
    "id, task_key, target, precision_policy, task, state, "
    "COALESCE(claimed_by, ''), COALESCE(lease_expires_at, 0), claims, "
    "COALESCE(error, ''), created_at, updated_at, attempts";

TuningJob readJob(const Rows &rows, int row) {
  TuningJob job;
  job.id = rows.integer(row, 0);
  job.taskKey = rows.text(row, 1);
  job.target = rows.text(row, 2);
  job.precision = rows.text(row, 3);
  std::string task = rows.text(row, 4);
  if (!task.empty())
    if (Result<json::Value> value = json::parse(task))
      job.task = std::move(*value);
  job.state = rows.text(row, 5);
  job.claimedBy = rows.text(row, 6);
  job.leaseExpiresAt = rows.integer(row, 7);
  job.claims = rows.integer(row, 8);
  job.error = rows.text(row, 9);
  job.createdAt = rows.integer(row, 10);
  job.updatedAt = rows.integer(row, 11);
  job.attempts = rows.integer(row, 12);
  return job;
}

class PostgresTuningQueue final : public TuningQueue {
public:
  PostgresTuningQueue(Connection db, const std::string &url)
      : db(std::move(db)), name(redactDatabaseUrl(url)) {}

  Result<EnqueueOutcome> enqueue(const std::string &taskKey,
                                 const std::string &target,
                                 const std::string &precision,
                                 const json::Value &task) override {
    std::string doing = "cannot enqueue task " + taskKey;
    // A valid record of the target, or of any device of the precision when
    // the job is for any.
    Result<Rows> present = db.query(
        "SELECT EXISTS(SELECT 1 FROM kopt.kernels WHERE task_key = $1 AND "
        "valid = 1 AND CASE WHEN $2::text = '' THEN fingerprint LIKE "
        "'%;precision=' || $3::text ELSE fingerprint_hash = $2::text END)",
        {taskKey, target, precision});
    if (!present)
      return fail(present.status(), doing);
    if (present->boolean(0, 0))
      return EnqueueOutcome::InDatabase;
    // A done job whose record has gone (pruned) is queued again; a queued,
    // claimed or failed one stays as it is.
    Result<Rows> queued = db.query(
        std::string("INSERT INTO kopt.jobs AS j(task_key, target, "
                    "precision_policy, task, created_at, updated_at) "
                    "VALUES($1, $2, $3, $4, ") +
            kNow + ", " + kNow +
            ") ON CONFLICT (task_key, target, precision_policy) DO UPDATE "
            "SET state = 'queued', task = EXCLUDED.task, claimed_by = NULL, "
            "lease_expires_at = NULL, error = NULL, attempts = 0, updated_at = "
            "EXCLUDED.updated_at WHERE j.state = 'done' RETURNING 1",
        {taskKey, target, precision, json::write(task)});
    if (!queued)
      return fail(queued.status(), doing);
    return queued->size() ? EnqueueOutcome::Queued
                          : EnqueueOutcome::AlreadyQueued;
  }

  Result<std::optional<TuningJob>> claim(const std::string &worker,
                                         const std::string &fingerprintHash,
                                         const std::string &precision,
                                         int64_t leaseSeconds,
                                         int64_t maxAttempts) override {
    // A lapsed claim of a job whose attempts are spent: every worker that
    // took it died (a crash or hang that no child contained). Fail it
    // rather than hand it to the next victim.
    Result<Rows> spent = db.query(
        std::string("UPDATE kopt.jobs SET state = 'failed', error = "
                    "'claimed ' || attempts || ' times; each worker stopped "
                    "before finishing it (a crash, a hang or a kill)' || "
                    "COALESCE('; last: ' || error, ''), lease_expires_at = "
                    "NULL, updated_at = ") +
            kNow + " WHERE state = 'claimed' AND lease_expires_at < " + kNow +
            " AND attempts >= $1::bigint RETURNING 1",
        {maxAttempts});
    if (!spent)
      return fail(spent.status(), "cannot claim a job");
    Result<Rows> rows = db.query(
        std::string("UPDATE kopt.jobs SET state = 'claimed', claimed_by = "
                    "$1, lease_expires_at = ") +
            kNow +
            " + $4::bigint, claims = claims + 1, attempts = attempts + 1, "
            "updated_at = " +
            kNow +
            " WHERE id = (SELECT id FROM kopt.jobs WHERE (state = 'queued' "
            "OR (state = 'claimed' AND lease_expires_at < " +
            kNow +
            ")) AND precision_policy = $3 AND (target = '' OR target = $2) "
            "ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING " +
            kJobColumns,
        {worker, fingerprintHash, precision, leaseSeconds});
    if (!rows)
      return fail(rows.status(), "cannot claim a job");
    if (rows->size() == 0)
      return std::optional<TuningJob>();
    return std::optional<TuningJob>(readJob(*rows, 0));
  }

  Result<bool> renew(const TuningJob &job, int64_t leaseSeconds) override {
    Result<Rows> rows = db.query(
        std::string("UPDATE kopt.jobs SET lease_expires_at = ") + kNow +
            " + $4::bigint, updated_at = " + kNow +
            " WHERE id = $1 AND state = 'claimed' AND claimed_by = $2 AND "
            "claims = $3 RETURNING 1",
        {job.id, job.claimedBy, job.claims, leaseSeconds});
    if (!rows)
      return fail(rows.status(),
                  "cannot renew the lease of job " + std::to_string(job.id));
    return rows->size() > 0;
  }

  Result<bool> finish(const TuningJob &job, bool done,
                      const std::string &error) override {
    Result<Rows> rows = db.query(
        std::string("UPDATE kopt.jobs SET state = $4, error = NULLIF($5, ''), "
                    "lease_expires_at = NULL, updated_at = ") +
            kNow +
            " WHERE id = $1 AND state = 'claimed' AND claimed_by = $2 AND "
            "claims = $3 RETURNING 1",
        {job.id, job.claimedBy, job.claims, done ? "done" : "failed", error});
    if (!rows)
      return fail(rows.status(), "cannot finish job " + std::to_string(job.id));
    return rows->size() > 0;
  }

  Result<bool> release(const TuningJob &job,
                       const std::string &error) override {
    Result<Rows> rows = db.query(
        std::string("UPDATE kopt.jobs SET state = 'queued', error = "
                    "NULLIF($4, ''), lease_expires_at = NULL, updated_at = ") +
            kNow +
            " WHERE id = $1 AND state = 'claimed' AND claimed_by = $2 AND "
            "claims = $3 RETURNING 1",
        {job.id, job.claimedBy, job.claims, error});
    if (!rows)
      return fail(rows.status(),
                  "cannot put job " + std::to_string(job.id) + " back");
    return rows->size() > 0;
  }

  Result<size_t> retryFailed() override {
    Result<Rows> rows = db.query(
        std::string("UPDATE kopt.jobs SET state = 'queued', error = NULL, "
                    "claimed_by = NULL, attempts = 0, updated_at = ") +
        kNow + " WHERE state = 'failed' RETURNING 1");
    if (!rows)
      return fail(rows.status(), "cannot queue failed jobs again");
    return static_cast<size_t>(rows->size());
  }

  Result<QueueStats> stats() override {
    QueueStats stats;
    // One snapshot for the counts and the workers.
    Result<postgres::Transaction> transaction =
        postgres::Transaction::beginRead(db);
    if (!transaction)
      return fail(transaction.status());
    Result<Rows> now = db.query(std::string("SELECT ") + kNow);
    if (!now)
      return fail(now.status(), "cannot read the queue");
    stats.now = now->integer(0, 0);
    Result<Rows> states = db.query(
        "SELECT state, COALESCE(lease_expires_at < $1::bigint, false), "
        "COUNT(*), COALESCE(SUM(GREATEST(claims - 1, 0)), 0) FROM "
        "kopt.jobs GROUP BY 1, 2",
        {stats.now});
    if (!states)
      return fail(states.status(), "cannot read the queue");
    for (int row = 0; row < states->size(); ++row) {
      std::string state = states->text(row, 0);
      size_t count = static_cast<size_t>(states->integer(row, 2));
      stats.reclaims += static_cast<size_t>(states->integer(row, 3));
      if (state == "queued")
        stats.queued += count;
      else if (state == "claimed")
        (states->boolean(row, 1) ? stats.expired : stats.claimed) += count;
      else if (state == "done")
        stats.done += count;
      else
        stats.failed += count;
    }
    Result<Rows> workers = db.query(
        "SELECT claimed_by, COUNT(*) FILTER (WHERE state = 'claimed'), "
        "COUNT(*) FILTER (WHERE state = 'done'), COUNT(*) FILTER (WHERE "
        "state = 'failed'), MAX(updated_at) FROM kopt.jobs WHERE claimed_by "
        "IS NOT NULL GROUP BY 1 ORDER BY 1");
    if (!workers)
      return fail(workers.status(), "cannot read the queue");
    for (int row = 0; row < workers->size(); ++row) {
      QueueWorker worker;
      worker.name = workers->text(row, 0);
      worker.claimed = static_cast<size_t>(workers->integer(row, 1));
      worker.done = static_cast<size_t>(workers->integer(row, 2));
      worker.failed = static_cast<size_t>(workers->integer(row, 3));
      worker.lastSeen = workers->integer(row, 4);
      stats.workers.push_back(std::move(worker));
    }
    transaction->commit().ignore();
    return stats;
  }

  Result<std::vector<TuningJob>> list() override {
    std::string columns = kJobColumns;
    columns.replace(columns.find("task, "), 6, "'', ");
    Result<Rows> rows =
        db.query("SELECT " + columns + " FROM kopt.jobs ORDER BY id");
    if (!rows)
      return fail(rows.status(), "cannot list jobs");
    std::vector<TuningJob> jobs;
    for (int row = 0; row < rows->size(); ++row)
      jobs.push_back(readJob(*rows, row));
    return jobs;
  }

private:
  Status fail(const Status &status, const std::string &doing = {}) const {
    return Status::error(status.code(),
                         "kernel database '" + name +
                             "': " + (doing.empty() ? "" : doing + ": ") +
                             status.message());
  }

  Connection db;
  std::string name;
};

} // namespace

Result<std::unique_ptr<TuningQueue>>
kopt::runtime::openPostgresTuningQueue(const std::string &url,
                                       const KernelDatabaseOptions &options) {
  int64_t version = 0;
  Result<Connection> db = connectPostgres(url, /*readOnly=*/false,
                                          /*create=*/true, options, version);
  if (!db)
    return db.status();
  return std::unique_ptr<TuningQueue>(
      new PostgresTuningQueue(std::move(*db), url));
}
