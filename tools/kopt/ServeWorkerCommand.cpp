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
//===----------------------------------------------------------------------===//

#include "ChildProcess.h"
#include "Commands.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Autotune/Autotuner.h"
#include "kopt/InitAll.h"
#include "kopt/Runtime/TaskPlan.h"
#include "kopt/Runtime/TuningQueue.h"
#include "kopt/Support/ModelLoader.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
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
  // The MLIR comes from whoever may enqueue: it gets the bounds of any
  // input (nesting, and the parser's own stack).
  std::string name = "job " + std::to_string(job.id);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(task->mlir, name), llvm::SMLoc());
  auto module = parseModelBuffer(sourceMgr, context, name);
  if (!module) {
    std::string reason = llvm::toString(module.takeError());
    return llvm::createStringError(
        name + ": its task's MLIR does not parse: " +
        (diagnostics.empty() ? reason : diagnostics));
  }
  func::FuncOp group;
  for (auto func : (*module)->getOps<func::FuncOp>())
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

/// The child's side: tune the job in `runJobFile` and write its outcome
/// (`{"error": ..., "how": ...}`) to `outcomeFile`. A crash or a hang here
/// is the worker's to contain.
static int runJobInChild(const std::string &url) {
  dieWithParent();
  // The worker decides when to stop; the child finishes or is killed.
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  auto text = llvm::MemoryBuffer::getFile(runJobFile);
  if (!text)
    return fail("cannot read job file '" + runJobFile +
                "': " + text.getError().message());
  auto document = rt::json::parse((*text)->getBuffer().str());
  if (!document)
    return fail("job file '" + runJobFile +
                "': " + document.status().message());
  rt::TuningJob job;
  if (const rt::json::Value *id = document->find("id"))
    job.id = id->getInteger().value_or(0);
  if (const rt::json::Value *key = document->find("task_key"))
    if (const std::string *keyText = key->getString())
      job.taskKey = *keyText;
  if (const rt::json::Value *task = document->find("task"))
    job.task = *task;

  auto tuner = Autotuner::create(makeTuneOptions(url));
  if (!tuner)
    return fail(llvm::toString(tuner.takeError()));
  if (!fault.empty() && llvm::StringRef(job.taskKey).starts_with(faultKey)) {
    if (fault == "crash")
      std::raise(SIGSEGV);
    while (fault == "hang")
      ::sleep(60);
  }
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  auto outcome = runJob(job, context, **tuner);
  std::string error, how;
  if (!outcome)
    error = llvm::toString(outcome.takeError());
  else if (outcome->tuningFailed ||
           outcome->source == GroupOutcome::Source::Baseline)
    error = outcome->note.empty() ? "not tuned" : outcome->note;
  else
    how = getSourceName(outcome->source).str();
  rt::json::Value result = rt::json::Value::object();
  result.set("error", rt::json::Value(error));
  result.set("how", rt::json::Value(how));
  std::error_code code;
  llvm::raw_fd_ostream out(outcomeFile, code);
  if (code)
    return fail("cannot write '" + outcomeFile + "': " + code.message());
  out << rt::json::write(result);
  out.close();
  if (out.has_error())
    return fail("cannot write '" + outcomeFile + "': " + out.error().message());
  return 0;
}

namespace {
/// What one attempt at a job came to.
struct JobResult {
  /// The child finished: `error` is empty when the job is done.
  bool finished = false;
  std::string error;
  std::string how;
};

/// A temporary file, removed at the end of its scope.
struct TemporaryFile {
  llvm::SmallString<128> path;
  ~TemporaryFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};
} // namespace

/// `value` as text that reads back as the same double.
static std::string formatExactly(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

/// Runs `job` in a child process: this binary as `serve-worker --run-job`.
static JobResult runJobInChildProcess(const rt::TuningJob &job,
                                      const std::string &url,
                                      bool urlFromCommandLine) {
  JobResult result;
  TemporaryFile jobFile, outcome;
  if (std::error_code code = llvm::sys::fs::createTemporaryFile(
          "kopt-job", "json", jobFile.path)) {
    result.error = "cannot create a job file: " + code.message();
    return result;
  }
  if (std::error_code code = llvm::sys::fs::createTemporaryFile(
          "kopt-job-outcome", "json", outcome.path)) {
    result.error = "cannot create an outcome file: " + code.message();
    return result;
  }
  {
    rt::json::Value document = rt::json::Value::object();
    document.set("id", rt::json::Value(job.id));
    document.set("task_key", rt::json::Value(job.taskKey));
    document.set("task", job.task);
    std::error_code code;
    llvm::raw_fd_ostream out(jobFile.path, code);
    out << rt::json::write(document);
    out.close();
    if (code || out.has_error()) {
      result.error =
          "cannot write the job file '" + jobFile.path.str().str() + "'";
      out.clear_error();
      return result;
    }
  }

  std::string self = llvm::sys::fs::getMainExecutable(
      "kopt", reinterpret_cast<void *>(&runJobInChild));
  std::vector<std::string> argv = {
      self,
      "serve-worker",
      "--run-job=" + jobFile.path.str().str(),
      "--job-outcome=" + outcome.path.str().str(),
      "--precision=" + precision,
      "--proposers=" + proposers,
      "--max-candidates=" + std::to_string(maxCandidates),
      "--min-speedup=" + formatExactly(minSpeedup)};
  // A URL from KOPT_DB reaches the child through the environment.
  if (urlFromCommandLine)
    argv.push_back("--db=" + url);
  if (!replay.empty())
    argv.push_back("--replay=" + replay);
  if (!fault.empty())
    argv.insert(argv.end(), {"--fault=" + fault, "--fault-key=" + faultKey});
  // A crash prints its stack without symbols: symbolising can take minutes.
  ChildExit exit =
      runChildProcess(argv, {"LLVM_DISABLE_SYMBOLIZATION=1"}, jobTimeout);
  if (!exit.succeeded()) {
    result.error = exit.describe(jobTimeout);
    return result;
  }
  rt::json::Value document;
  if (auto text = llvm::MemoryBuffer::getFile(outcome.path))
    if (auto parsed = rt::json::parse((*text)->getBuffer().str()))
      document = std::move(*parsed);
  const rt::json::Value *error = document.find("error");
  const rt::json::Value *how = document.find("how");
  if (!error || !error->getString() || !how || !how->getString()) {
    result.error = "the compile child exited without an outcome";
    return result;
  }
  result.finished = true;
  result.error = *error->getString();
  result.how = *how->getString();
  return result;
}

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

  unsigned done = 0, failed = 0, lost = 0, putBack = 0;
  while (!stopRequested && (!maxJobs || done + failed + lost < maxJobs)) {
    auto claimed = (*queue)->claim(name, fingerprint->hash(), precision,
                                   leaseSeconds, maxAttempts);
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
    JobResult result = runJobInChildProcess(job, url, fromCommandLine);
    keeper.hold(std::nullopt);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();

    // An attempt that did not finish is retried while attempts are left.
    std::string attempt =
        llvm::formatv("attempt {0} of {1}", job.attempts, unsigned(maxAttempts))
            .str();
    bool retry = !result.finished && job.attempts < int64_t(maxAttempts);
    std::string error = result.error;
    if (!result.finished)
      error += " (" + attempt + ")";
    auto finished = retry ? (*queue)->release(job, error)
                          : (*queue)->finish(job, error.empty(), error);
    if (!finished)
      return fail(finished.status().message());
    if (!*finished) {
      ++lost;
      llvm::outs() << "kopt serve-worker: " << name << ": job " << job.id
                   << " lost: its lease expired and another worker took it "
                      "over\n";
    } else if (retry) {
      ++putBack;
      llvm::outs() << "kopt serve-worker: " << name << ": job " << job.id
                   << ": " << error << "; queued again\n";
    } else if (error.empty()) {
      ++done;
      llvm::outs() << llvm::formatv(
          "kopt serve-worker: {0}: job {1} ({2}) done: {3} in {4:F2} s\n", name,
          job.id, llvm::StringRef(job.taskKey).take_front(12), result.how,
          seconds);
    } else {
      ++failed;
      llvm::outs() << "kopt serve-worker: " << name << ": job " << job.id
                   << " failed: " << error << "\n";
    }
    llvm::outs().flush();
  }
  llvm::outs() << "kopt serve-worker: " << name << ": " << done
               << " jobs done, " << failed << " failed, " << lost << " lost, "
               << putBack << " put back\n";
  return 0;
}
