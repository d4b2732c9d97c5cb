//===- ServeWorker.cpp - The job loop of kopt serve-worker ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Fleet/ServeWorker.h"

#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <unistd.h>

using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

double ServeWorkerHooks::getSteadySeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void ServeWorkerHooks::waitOneSecond() { ::sleep(1); }

llvm::Expected<ServeWorkerCounts>
mlir::kopt::serveJobs(rt::TuningQueue &queue, const ServeWorkerOptions &options,
                      const ServeWorkerHooks &hooks, llvm::raw_ostream &os) {
  auto holdLease = [&](std::optional<rt::TuningJob> job) {
    if (hooks.holdLease)
      hooks.holdLease(std::move(job));
  };
  const std::string &name = options.name;
  ServeWorkerCounts counts;
  while (!hooks.stopRequested() &&
         (!options.maxJobs ||
          counts.done + counts.failed + counts.lost < options.maxJobs)) {
    auto claimed = queue.claim(name, options.fingerprintHash, options.precision,
                               options.leaseSeconds, options.maxAttempts);
    if (!claimed)
      return llvm::createStringError(claimed.status().message());
    if (!*claimed) {
      if (options.once)
        break;
      for (unsigned waited = 0;
           waited < options.pollSeconds && !hooks.stopRequested(); ++waited)
        hooks.waitASecond();
      continue;
    }
    rt::TuningJob job = std::move(**claimed);
    os << "kopt serve-worker: " << name << ": claimed job " << job.id << " ("
       << llvm::StringRef(job.taskKey).take_front(12) << ", claim "
       << job.claims << ")\n";
    os.flush();
    holdLease(job);
    double start = hooks.now();
    JobResult result = hooks.runJob(job);
    holdLease(std::nullopt);
    double seconds = hooks.now() - start;

    // An attempt that did not finish is retried while attempts are left.
    std::string attempt =
        llvm::formatv("attempt {0} of {1}", job.attempts, options.maxAttempts)
            .str();
    bool retry =
        !result.finished && job.attempts < int64_t(options.maxAttempts);
    std::string error = result.error;
    if (!result.finished)
      error += " (" + attempt + ")";
    auto finished = retry ? queue.release(job, error)
                          : queue.finish(job, error.empty(), error);
    if (!finished)
      return llvm::createStringError(finished.status().message());
    if (!*finished) {
      ++counts.lost;
      os << "kopt serve-worker: " << name << ": job " << job.id
         << " lost: its lease expired and another worker took it over\n";
    } else if (retry) {
      ++counts.putBack;
      os << "kopt serve-worker: " << name << ": job " << job.id << ": " << error
         << "; queued again\n";
    } else if (error.empty()) {
      ++counts.done;
      os << llvm::formatv(
          "kopt serve-worker: {0}: job {1} ({2}) done: {3} in {4:F2} s\n", name,
          job.id, llvm::StringRef(job.taskKey).take_front(12), result.how,
          seconds);
    } else {
      ++counts.failed;
      os << "kopt serve-worker: " << name << ": job " << job.id
         << " failed: " << error << "\n";
    }
    os.flush();
  }
  os << "kopt serve-worker: " << name << ": " << counts.done << " jobs done, "
     << counts.failed << " failed, " << counts.lost << " lost, "
     << counts.putBack << " put back\n";
  return counts;
}
