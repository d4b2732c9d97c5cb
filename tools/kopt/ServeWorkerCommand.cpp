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
// Each job is compiled and tuned in a child process, this binary run again
// with the hidden `--run-job`, which writes its outcome to a file. A job
// that crashes the child or keeps it past `--job-timeout` costs the child
// only: the worker puts the job back in the queue, and fails it for good
// once it has had `--max-attempts` attempts (a claim whose worker died
// counts too), so one poison job cannot stop a fleet.
//
// With `--replay FILE` the results come from an exported file through the
// import path instead of a GPU (as `kopt warm --replay` does): for tests,
// and for machines that only redistribute results.
//
// This file parses the options; the job loop, the lease keeper and both
// sides of the child process live in lib/Fleet (kopt/Fleet/ServeWorker.h).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "kopt/Autotune/Autotuner.h"
#include "kopt/Fleet/ChildProcess.h"
#include "kopt/Fleet/JobChild.h"
#include "kopt/Fleet/LeaseKeeper.h"
#include "kopt/Fleet/ServeWorker.h"
#include "kopt/Fleet/TuneJob.h"
#include "kopt/InitAll.h"
#include "kopt/Runtime/TaskPlan.h"
#include "kopt/Runtime/TuningQueue.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <cstdio>
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
                       "(default), fp32-ieee, tf32 or bf16"),
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
static cl::opt<unsigned> maxAttempts(
    "max-attempts",
    cl::desc("Attempts a job gets before it is failed for good, counting "
             "the ones whose compile crashed, hung or lost its worker "
             "(default 3)"),
    cl::value_desc("N"), cl::init(3), cl::sub(serveWorkerCommand));
static cl::opt<unsigned> jobTimeout(
    "job-timeout",
    cl::desc("Seconds a job's compile and tuning may take before its child "
             "process is killed (0: no limit; default 3600)"),
    cl::value_desc("seconds"), cl::init(3600), cl::sub(serveWorkerCommand));
static cl::opt<std::string>
    runJobFile("run-job",
               cl::desc("Internal: compile and tune the job in FILE, as the "
                        "worker's child process"),
               cl::init(""), cl::Hidden, cl::sub(serveWorkerCommand));
static cl::opt<std::string>
    outcomeFile("job-outcome",
                cl::desc("Internal: where --run-job writes its outcome"),
                cl::init(""), cl::Hidden, cl::sub(serveWorkerCommand));
static cl::opt<std::string> fault(
    "fault",
    cl::desc("For tests: the compile child crashes (crash) or hangs (hang) "
             "on jobs whose key starts with --fault-key"),
    cl::init(""), cl::Hidden, cl::sub(serveWorkerCommand));
static cl::opt<std::string> faultKey("fault-key",
                                     cl::desc("For tests: see --fault"),
                                     cl::init(""), cl::Hidden,
                                     cl::sub(serveWorkerCommand));
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

/// The tuning options both the worker and its child use, for `url`.
static AutotuneOptions makeTuneOptions(const std::string &url) {
  AutotuneOptions options;
  options.databasePath = url;
  options.mode = TuneMode::Missing;
  options.replayPath = replay;
  options.precision = precision;
  options.proposers = splitProposerList(proposers);
  options.maxCandidates = maxCandidates;
  options.minSpeedup = minSpeedup;
  return options;
}

/// The child's side: tune the job in `runJobFile` and write its outcome to
/// `outcomeFile`. A crash or a hang here is the worker's to contain.
static int runJobInChild(const std::string &url) {
  dieWithParent();
  // The worker decides when to stop; the child finishes or is killed.
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  auto job = readJobFile(runJobFile);
  if (!job)
    return fail(llvm::toString(job.takeError()));
  auto tuner = Autotuner::create(makeTuneOptions(url));
  if (!tuner)
    return fail(llvm::toString(tuner.takeError()));
  if (!fault.empty() && llvm::StringRef(job->taskKey).starts_with(faultKey)) {
    if (fault == "crash")
      std::raise(SIGSEGV);
    while (fault == "hang")
      ::sleep(60);
  }
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  JobResult result = summarizeJobOutcome(tuneJob(*job, context, **tuner));
  if (llvm::Error error =
          writeJobOutcome(outcomeFile, result.error, result.how))
    return fail(llvm::toString(std::move(error)));
  return 0;
}

/// `value` as text that reads back as the same double.
static std::string formatExactly(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

/// How the worker starts the child for a job: this binary as
/// `serve-worker --run-job`, with the worker's tuning options.
static JobChildCommand makeChildCommand(const std::string &url,
                                        bool urlFromCommandLine) {
  JobChildCommand command;
  command.program = {llvm::sys::fs::getMainExecutable(
                         "kopt", reinterpret_cast<void *>(&runJobInChild)),
                     "serve-worker"};
  command.arguments = {"--precision=" + precision, "--proposers=" + proposers,
                       "--max-candidates=" + std::to_string(maxCandidates),
                       "--min-speedup=" + formatExactly(minSpeedup)};
  // A URL from KOPT_DB reaches the child through the environment.
  if (urlFromCommandLine)
    command.arguments.push_back("--db=" + url);
  if (!replay.empty())
    command.arguments.push_back("--replay=" + replay);
  if (!fault.empty())
    command.arguments.insert(command.arguments.end(),
                             {"--fault=" + fault, "--fault-key=" + faultKey});
  // A crash prints its stack without symbols: symbolising can take minutes.
  command.environment = {"LLVM_DISABLE_SYMBOLIZATION=1"};
  command.timeoutSeconds = jobTimeout;
  return command;
}

int mlir::kopt::runServeWorkerCommand() {
  std::string url = database;
  bool fromCommandLine = !url.empty();
  if (url.empty())
    url = rt::getDatabaseFromEnvironment();
  if (url.empty())
    return fail("kopt serve-worker needs --db postgresql://... (or KOPT_DB)");
  if (!rt::isKnownPrecision(precision))
    return fail("--precision must be fp32, fp32-ieee, tf32 or bf16, not '" +
                precision + "'");
  if (!runJobFile.empty())
    return runJobInChild(url);
  if (maxAttempts < 1)
    return fail("--max-attempts must be at least 1");
  auto queue = rt::TuningQueue::open(url, fromCommandLine);
  if (!queue)
    return fail(queue.status().message());
  auto keeperQueue = rt::TuningQueue::open(url, fromCommandLine);
  if (!keeperQueue)
    return fail(keeperQueue.status().message());

  // The worker's own tuner only names the device it claims jobs for; each
  // job is tuned by its child's.
  auto tuner = Autotuner::create(makeTuneOptions(url));
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

  LeaseKeeper keeper(std::move(*keeperQueue), leaseSeconds);
  ServeWorkerOptions options;
  options.name = name;
  options.fingerprintHash = fingerprint->hash();
  options.precision = precision;
  options.leaseSeconds = leaseSeconds;
  options.maxJobs = maxJobs;
  options.once = once;
  options.pollSeconds = pollSeconds;
  options.maxAttempts = maxAttempts;
  JobChildCommand command = makeChildCommand(url, fromCommandLine);
  ServeWorkerHooks hooks;
  hooks.runJob = [&](const rt::TuningJob &job) {
    if (jobDelay > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(jobDelay));
    return runJobInChildProcess(job, command);
  };
  hooks.holdLease = [&](std::optional<rt::TuningJob> job) {
    keeper.hold(std::move(job));
  };
  hooks.stopRequested = [] { return stopRequested != 0; };
  auto counts = serveJobs(**queue, options, hooks, llvm::outs());
  if (!counts)
    return fail(llvm::toString(counts.takeError()));
  return 0;
}
