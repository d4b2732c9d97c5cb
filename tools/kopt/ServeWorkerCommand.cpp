//===- ServeWorkerCommand.cpp - kopt serve-worker ---------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt serve-worker --db postgresql://...`: one per GPU box. Claims jobs
// from the database's tuning queue (docs/Fleet.md), rebuilds each job's
// group from the MLIR its task carries, tunes it with this machine's GPUs
// through the same autotuner as `kopt compile`, stores the winner and every
// attempt, and marks the job done. A second connection renews the job's
// lease while the work runs, so a live worker keeps its job however long
// tuning takes, and a dead one's job is claimed again once the lease
// expires. A job whose task another worker stored meanwhile is a hit: done
// without GPU work.
//
// With `--replay FILE` the results come from an exported file through the
// import path instead of a GPU (as `kopt warm --replay` does): for tests,
// and for machines that only redistribute results.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Autotune/Autotuner.h"
#include "kopt/InitAll.h"
#include "kopt/Runtime/TaskPlan.h"
#include "kopt/Runtime/TuningQueue.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <optional>
#include <thread>
#include <unistd.h>

using namespace mlir;
using namespace mlir::kopt;
namespace cl = llvm::cl;
namespace rt = ::kopt::runtime;

static cl::SubCommand serveWorkerCommand(
    "serve-worker",
    "Claim tuning jobs from the database's queue (postgresql://), tune them "
    "with this machine's GPUs, store the winners and mark the jobs done");

static cl::opt<std::string>
    database("db",
             cl::desc("The shared kernel database: a postgresql:// URL "
                      "without a password (default: $KOPT_DB)"),
             cl::value_desc("URL"), cl::init(""), cl::sub(serveWorkerCommand));
static cl::opt<unsigned>
    leaseSeconds("lease",
                 cl::desc("Seconds a claim lasts unless renewed; the worker "
                          "renews it every third of that while it works, "
                          "and a dead worker's job is claimed again after "
                          "it (default 300)"),
                 cl::value_desc("seconds"), cl::init(300),
                 cl::sub(serveWorkerCommand));
static cl::opt<unsigned>
    maxJobs("max-jobs",
            cl::desc("Stop after this many jobs (0: no limit, the default)"),
            cl::value_desc("N"), cl::init(0), cl::sub(serveWorkerCommand));
static cl::opt<bool>
    once("once",
         cl::desc("Stop when no job can be claimed, instead of waiting for "
                  "more"),
         cl::sub(serveWorkerCommand));
static cl::opt<unsigned>
    pollSeconds("poll",
                cl::desc("Seconds between looks at an empty queue (default "
                         "5)"),
                cl::value_desc("seconds"), cl::init(5),
                cl::sub(serveWorkerCommand));
static cl::opt<std::string> replay(
    "replay",
    cl::desc("Store the entries of FILE (as 'kopt db export' writes them) "
             "for each job instead of tuning it on a GPU: for tests"),
    cl::value_desc("FILE.jsonl"), cl::init(""), cl::sub(serveWorkerCommand));
static cl::opt<std::string>
    workerName("name",
               cl::desc("This worker's name in the queue (default: "
                        "HOST:PID)"),
               cl::init(""), cl::sub(serveWorkerCommand));
static cl::opt<std::string>
    precision("precision",
              cl::desc("The precision policy of the jobs to take: fp32 "
                       "(default), tf32 or bf16"),
              cl::init("fp32"), cl::sub(serveWorkerCommand));
static cl::opt<std::string>
    proposers("proposers",
              cl::desc("Comma-separated proposers beyond the baseline"),
              cl::init("builtin"), cl::sub(serveWorkerCommand));
static cl::opt<unsigned>
    maxCandidates("max-candidates",
                  cl::desc("Candidates per task, the baseline included"),
                  cl::init(16), cl::sub(serveWorkerCommand));
static cl::opt<double> minSpeedup(
    "min-speedup",
    cl::desc("A candidate must beat the baseline's median by this factor to "
             "win (default 1.03)"),
    cl::init(1.03), cl::sub(serveWorkerCommand));
static cl::opt<double> jobDelay(
    "job-delay",
    cl::desc("For tests: spend this many seconds in each job before its "
             "work, as long tuning would"),
    cl::init(0), cl::Hidden, cl::sub(serveWorkerCommand));

bool mlir::kopt::isServeWorkerCommandSelected() {
  return static_cast<bool>(serveWorkerCommand);
}

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "kopt") << message << "\n";
  return 1;
}

/// Set by SIGINT or SIGTERM: finish the job in hand, then stop.
static volatile std::sig_atomic_t stopRequested = 0;

extern "C" void requestStop(int) { stopRequested = 1; }

namespace {
/// Renews the lease of the job in hand from a connection of its own.
class LeaseKeeper {
public:
  LeaseKeeper(std::unique_ptr<rt::TuningQueue> queue, int64_t lease)
      : queue(std::move(queue)), lease(lease), thread([this] { run(); }) {}
  ~LeaseKeeper() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    thread.join();
  }
  /// Keeps `job`'s lease from now on (std::nullopt: none).
  void hold(std::optional<rt::TuningJob> job) {
    std::lock_guard<std::mutex> lock(mutex);
    held = std::move(job);
  }

private:
  void run() {
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

  std::unique_ptr<rt::TuningQueue> queue;
  int64_t lease;
  std::mutex mutex;
  std::condition_variable wake;
  std::optional<rt::TuningJob> held;
  bool stopping = false;
  std::thread thread;
};

/// The outcome of tuning `job`'s group: its task's MLIR is parsed into
/// `context` and the autotuner looks it up, tunes it and stores it.
llvm::Expected<GroupOutcome> runJob(const rt::TuningJob &job,
                                    MLIRContext &context, Autotuner &tuner) {
  auto task = rt::kernelTaskFromJson(job.task);
  if (!task)
    return llvm::createStringError(
        "job " + std::to_string(job.id) +
        ": its task does not read: " + task.status().message());
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    diagnostics += (diagnostics.empty() ? "" : "; ") + diagnostic.str();
    return success();
  });
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(task->mlir, &context);
  if (!module)
    return llvm::createStringError(
        "job " + std::to_string(job.id) +
        ": its task's MLIR does not parse: " + diagnostics);
  func::FuncOp group;
  for (auto func : module->getOps<func::FuncOp>())
    if (auto key = func->getAttrOfType<StringAttr>(kKeyAttrName))
      if (key.getValue() == job.taskKey)
        group = func;
  if (!group)
    return llvm::createStringError("job " + std::to_string(job.id) +
                                   ": its task's MLIR has no group with key " +
                                   job.taskKey);
  return tuner.processGroup(group);
}
} // namespace

int mlir::kopt::runServeWorkerCommand() {
  std::string url = database;
  bool fromCommandLine = !url.empty();
  if (url.empty())
    url = rt::getDatabaseFromEnvironment();
  if (url.empty())
    return fail("kopt serve-worker needs --db postgresql://... (or KOPT_DB)");
  if (precision != "fp32" && precision != "tf32" && precision != "bf16")
    return fail("--precision must be fp32, tf32 or bf16, not '" + precision +
                "'");
  auto queue = rt::TuningQueue::open(url, fromCommandLine);
  if (!queue)
    return fail(queue.status().message());
  auto keeperQueue = rt::TuningQueue::open(url, fromCommandLine);
  if (!keeperQueue)
    return fail(keeperQueue.status().message());

  AutotuneOptions options;
  options.databasePath = url;
  options.mode = TuneMode::Missing;
  options.replayPath = replay;
  options.precision = precision;
  options.proposers.clear();
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(proposers).split(names, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef name : names)
    options.proposers.push_back(name.trim().str());
  options.maxCandidates = maxCandidates;
  options.minSpeedup = minSpeedup;
  auto tuner = Autotuner::create(options);
  if (!tuner)
    return fail(llvm::toString(tuner.takeError()));
  const rt::DeviceFingerprint *fingerprint = (*tuner)->getFingerprint();
  if (!fingerprint || (!(*tuner)->hasDevice() && replay.empty()))
    return fail("no GPU here to tune with (" + (*tuner)->describeTarget() +
                "); a worker needs one (or --replay FILE, for tests)");

  std::string name = workerName;
  if (name.empty()) {
    char host[256] = "host";
    ::gethostname(host, sizeof(host) - 1);
    name = std::string(host) + ":" + std::to_string(::getpid());
  }
  std::signal(SIGINT, requestStop);
  std::signal(SIGTERM, requestStop);
  llvm::errs() << "kopt serve-worker: " << name << ": "
               << (*tuner)->describeTarget() << "; lease " << leaseSeconds
               << " s\n";

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  LeaseKeeper keeper(std::move(*keeperQueue), leaseSeconds);

  unsigned done = 0, failed = 0, lost = 0;
  while (!stopRequested && (!maxJobs || done + failed + lost < maxJobs)) {
    auto claimed =
        (*queue)->claim(name, fingerprint->hash(), precision, leaseSeconds);
    if (!claimed)
      return fail(claimed.status().message());
    if (!*claimed) {
      if (once)
        break;
      for (unsigned waited = 0; waited < pollSeconds && !stopRequested;
           ++waited)
        ::sleep(1);
      continue;
    }
    rt::TuningJob job = std::move(**claimed);
    llvm::outs() << "kopt serve-worker: " << name << ": claimed job " << job.id
                 << " (" << llvm::StringRef(job.taskKey).take_front(12)
                 << ", claim " << job.claims << ")\n";
    llvm::outs().flush();
    keeper.hold(job);
    auto start = std::chrono::steady_clock::now();
    if (jobDelay > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(jobDelay));
    auto outcome = runJob(job, context, **tuner);
    keeper.hold(std::nullopt);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();

    std::string error;
    std::string how;
    if (!outcome) {
      error = llvm::toString(outcome.takeError());
    } else if (outcome->tuningFailed ||
               outcome->source == GroupOutcome::Source::Baseline) {
      error = outcome->note.empty() ? "not tuned" : outcome->note;
    } else {
      how = getSourceName(outcome->source).str();
    }
    auto finished = (*queue)->finish(job, error.empty(), error);
    if (!finished)
      return fail(finished.status().message());
    if (!*finished) {
      ++lost;
      llvm::outs() << "kopt serve-worker: " << name << ": job " << job.id
                   << " lost: its lease expired and another worker took it "
                      "over\n";
    } else if (error.empty()) {
      ++done;
      llvm::outs() << llvm::formatv(
          "kopt serve-worker: {0}: job {1} ({2}) done: {3} in {4:F2} s\n", name,
          job.id, llvm::StringRef(job.taskKey).take_front(12), how, seconds);
    } else {
      ++failed;
      llvm::outs() << "kopt serve-worker: " << name << ": job " << job.id
                   << " failed: " << error << "\n";
    }
    llvm::outs().flush();
  }
  llvm::outs() << "kopt serve-worker: " << name << ": " << done
               << " jobs done, " << failed << " failed, " << lost << " lost\n";
  return 0;
}
