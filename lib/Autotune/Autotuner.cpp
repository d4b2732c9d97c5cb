//===- Autotuner.cpp - Look up, tune and store fusion groups ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/Autotuner.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Autotune/Proposer.h"
#include "kopt/Autotune/Replay.h"
#include "kopt/Codegen/KernelTask.h"
#include "kopt/Codegen/Proposers.h"
#include "kopt/Evaluator/ReferenceBuilder.h"
#include "kopt/Evaluator/WorkerPool.h"
#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"
#include "kopt/Runtime/ModuleRunner.h"
#include "kopt/Runtime/PlanVerifier.h"
#include "kopt/Runtime/TuningQueue.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <set>

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

std::vector<std::string> mlir::kopt::splitProposerList(llvm::StringRef list) {
  llvm::SmallVector<llvm::StringRef> names;
  list.split(names, ',', -1, /*KeepEmpty=*/false);
  std::vector<std::string> proposers;
  for (llvm::StringRef name : names)
    proposers.push_back(name.trim().str());
  return proposers;
}

llvm::Error mlir::kopt::addProviderOption(ProviderOptions &options,
                                          llvm::StringRef option) {
  auto [key, value] = option.split('=');
  // Echo none of it: a mistyped option may be a secret.
  if (key.empty() || !option.contains('='))
    return llvm::createStringError("wants key=value");
  if (key == "api-key")
    return llvm::createStringError(
        "api-key=... would put the key in shell histories and logs; set "
        "KOPT_LLM_API_KEY");
  options[key.str()] = value.str();
  return llvm::Error::success();
}

std::optional<TuneMode> mlir::kopt::parseTuneMode(llvm::StringRef text) {
  if (text == "never")
    return TuneMode::Never;
  if (text == "missing")
    return TuneMode::Missing;
  if (text == "always")
    return TuneMode::Always;
  if (text == "enqueue")
    return TuneMode::Enqueue;
  return std::nullopt;
}

rt::TimingSummary mlir::kopt::toTimingSummary(const rt::Timing &times) {
  rt::TimingSummary summary;
  summary.medianMs = times.medianUs * 1e-3;
  summary.minMs = times.minUs * 1e-3;
  summary.p10Ms = times.p10Us * 1e-3;
  summary.p90Ms = times.p90Us * 1e-3;
  return summary;
}

std::optional<double> GroupOutcome::getSpeedup() const {
  if (!winnerUs || !baselineUs || *winnerUs <= 0)
    return std::nullopt;
  return *baselineUs / *winnerUs;
}

llvm::StringRef mlir::kopt::getSourceName(GroupOutcome::Source source) {
  switch (source) {
  case GroupOutcome::Source::Hit:
    return "hit";
  case GroupOutcome::Source::Tuned:
    return "tuned";
  case GroupOutcome::Source::Baseline:
    return "baseline";
  case GroupOutcome::Source::Replayed:
    return "replayed";
  }
  return "baseline";
}

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static llvm::Error toError(const rt::Status &status,
                           const llvm::Twine &context) {
  return makeError(context + ": " + status.message());
}

/// The plan of the stored `record` when a build can use it for `task`: it
/// reads, is for the task, and passes `verifyStoredPlan`.
static llvm::Expected<rt::KernelPlan>
getUsablePlan(const rt::KernelRecord &record, const rt::KernelTask &task) {
  auto plan = rt::kernelPlanFromJson(record.plan);
  if (!plan)
    return makeError("its plan does not read: " + plan.status().message());
  if (rt::Status status = rt::verifyStoredPlan(*plan, task); !status.isOk())
    return makeError("its plan does not fit the task: " + status.message());
  return std::move(*plan);
}

//===----------------------------------------------------------------------===//
// The autotuner
//===----------------------------------------------------------------------===//

struct Autotuner::Impl {
  AutotuneOptions options;
  std::unique_ptr<rt::KernelDatabase> database;
  /// The tuning queue, with `--tune=enqueue`.
  std::unique_ptr<rt::TuningQueue> queue;
  std::optional<rt::DeviceFingerprint> fingerprint;
  bool device = false;
  std::string noDeviceReason;
  std::unique_ptr<WorkerPool> pool;
  int64_t nextRequestId = 1;
  /// The replay file, with `--replay`.
  std::unique_ptr<ReplaySource> replay;
  /// Devices the driver sees.
  int deviceCount = 0;
  /// Seconds spent tuning so far (for `tuningBudgetSeconds`).
  double tuningSeconds = 0;
  /// The proposers, one factory per name; the baseline's first.
  std::vector<std::unique_ptr<ProposerFactory>> proposers;
  /// Held by `processGroup` except around evaluations.
  std::mutex mutex;

  /// Tunes `group`; `lock` (held) is released while the worker evaluates.
  llvm::Expected<GroupOutcome> tune(func::FuncOp group, const KernelTask &task,
                                    GroupOutcome outcome,
                                    std::unique_lock<std::mutex> &lock);
  /// The evaluation request for `plans` (plans[0] the baseline), with fresh
  /// inputs and the fp64 references; a missing reference is noted in `note`.
  rt::EvaluateMessage makeRequest(func::FuncOp group, const KernelTask &task,
                                  const std::vector<const KernelPlan *> &plans,
                                  std::string &note);
  /// Evaluates `request`, each candidate alone beside the baseline when a
  /// worker failure took the whole request; `lock` (held) is released
  /// while the workers evaluate.
  llvm::Expected<std::vector<rt::EvalReport>>
  evaluateRequest(const rt::EvaluateMessage &request,
                  const std::string &function, std::string &note,
                  std::unique_lock<std::mutex> &lock);
  /// Stores one attempt: a plan with its report, or (`report` null) an
  /// answer refused for `failure`; `exchange` for the LLM's attempts.
  llvm::Error storeAttempt(const KernelTask &task, const KernelPlan *plan,
                           llvm::StringRef proposer,
                           const rt::EvalReport *report,
                           llvm::StringRef failure,
                           const rt::json::Value &exchange);
  llvm::Error chooseTarget();
  llvm::Error chooseReplayTarget();
  llvm::Expected<std::optional<rt::KernelRecord>>
  replayTask(const std::string &taskKey, bool &wrote);
};

llvm::Error Autotuner::Impl::chooseTarget() {
  // Without a GPU: the named target, or the database's only fingerprint.
  auto fingerprints = database->listFingerprints();
  if (!fingerprints)
    return toError(fingerprints.status(),
                   "reading '" + database->getLocation() + "'");
  std::set<std::string> hashes;
  std::map<std::string, rt::DeviceFingerprint> byHash;
  for (const rt::DeviceFingerprint &fingerprint : *fingerprints) {
    hashes.insert(fingerprint.hash());
    byHash.emplace(fingerprint.hash(), fingerprint);
  }
  if (!options.target.empty()) {
    auto it = byHash.find(options.target);
    if (it == byHash.end())
      return makeError("target fingerprint '" + options.target +
                       "' has no entry in '" + database->getLocation() + "'");
    fingerprint = it->second;
    return llvm::Error::success();
  }
  if (hashes.size() > 1)
    return makeError("no GPU here and '" + database->getLocation() +
                     "' holds entries for " + std::to_string(hashes.size()) +
                     " devices; choose one with --target=<fingerprint> (" +
                     llvm::join(hashes, ", ") + ")");
  if (hashes.size() == 1)
    fingerprint = byHash.begin()->second;
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Autotuner>>
Autotuner::create(const AutotuneOptions &options) {
  if (options.precision != "fp32" && options.precision != "tf32" &&
      options.precision != "bf16")
    return makeError("precision must be fp32, tf32 or bf16, not '" +
                     options.precision + "'");
  // The baseline always runs, and first: its plan is candidate 0 of every
  // evaluation, the one every speedup is measured against.
  ProposerRegistry registry = createProposerRegistry();
  std::vector<std::string> names = {"baseline"};
  std::vector<const ProposerRegistry::Maker *> makers;
  for (const std::string &name : options.proposers)
    if (!llvm::is_contained(names, name))
      names.push_back(name);
  for (const std::string &name : names) {
    auto maker = registry.lookup(name);
    if (!maker)
      return maker.takeError();
    makers.push_back(*maker);
  }
  if (options.maxCandidates < 1)
    return makeError("at least one candidate (the baseline) per task");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  // The proposers (the LLM's provider) are set up before anything is opened
  // or written, even without a GPU, so their errors show at once.
  for (const ProposerRegistry::Maker *maker : makers) {
    auto factory = (*maker)(options);
    if (!factory)
      return factory.takeError();
    impl->proposers.push_back(std::move(*factory));
  }
  // Never tuning and never writing: a read-only database is fine.
  auto database = rt::openKernelDatabase(options.databasePath);
  if (!database)
    return makeError(database.status().message());
  impl->database = std::move(*database);
  if (options.mode == TuneMode::Enqueue) {
    auto queue = rt::TuningQueue::open(options.databasePath,
                                       /*fromCommandLine=*/false);
    if (!queue)
      return makeError("--tune=enqueue: " + queue.status().message());
    impl->queue = std::move(*queue);
  }
  if (!options.replayPath.empty()) {
    // Replaying does no GPU work: the device is not even probed.
    auto replay = ReplaySource::load(options.replayPath);
    if (!replay)
      return replay.takeError();
    impl->replay = std::move(*replay);
    impl->noDeviceReason = "replaying '" + options.replayPath + "'";
    if (llvm::Error error = impl->chooseReplayTarget())
      return std::move(error);
    return std::unique_ptr<Autotuner>(new Autotuner(std::move(impl)));
  }
  impl->fingerprint = probeDeviceFingerprint(
      options.precision, impl->noDeviceReason, impl->deviceCount);
  impl->device = impl->fingerprint.has_value();
  if (impl->device && !options.target.empty() &&
      impl->fingerprint->hash() != options.target)
    return makeError("--target=" + options.target +
                     " names another device than this one (" +
                     impl->fingerprint->hash() + ")");
  if (!impl->device)
    if (llvm::Error error = impl->chooseTarget())
      return std::move(error);
  if (impl->fingerprint)
    for (const auto &factory : impl->proposers)
      factory->setArch(impl->fingerprint->computeCapability);
  return std::unique_ptr<Autotuner>(new Autotuner(std::move(impl)));
}

Autotuner::Autotuner(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Autotuner::~Autotuner() = default;

bool Autotuner::hasDevice() const { return impl->device; }

unsigned Autotuner::getWorkerCount() const {
  if (!impl->device)
    return 1;
  WorkerPoolOptions options;
  options.deviceCount = unsigned(impl->deviceCount);
  return unsigned(std::max<size_t>(
      1,
      resolvePoolDevices(options, std::getenv("CUDA_VISIBLE_DEVICES")).size()));
}

const rt::DeviceFingerprint *Autotuner::getFingerprint() const {
  return impl->fingerprint ? &*impl->fingerprint : nullptr;
}

std::string Autotuner::describeTarget() const {
  if (!impl->fingerprint)
    return "no GPU here (" + impl->noDeviceReason +
           ") and no database entries to target";
  std::string text = impl->fingerprint->computeCapability + ", " +
                     std::to_string(impl->fingerprint->smCount) + " SMs, " +
                     impl->fingerprint->precision + ", fingerprint " +
                     impl->fingerprint->hash();
  if (impl->replay)
    text = "replaying '" + impl->replay->getPath() + "'; target " + text;
  else if (!impl->device)
    text = "no GPU here; target " + text;
  return text;
}

/// Sets the chosen plan's attributes on `group`.
static void tagGroup(func::FuncOp group, const rt::KernelPlan &plan,
                     const rt::DeviceFingerprint *fingerprint) {
  Builder builder(group.getContext());
  group->setAttr(kPlanAttrName,
                 builder.getStringAttr(plan.proposer + "/" + plan.variant));
  group->setAttr(kPlanHashAttrName, builder.getStringAttr(rt::hashBytes(
                                        rt::json::write(rt::toJson(plan)))));
  if (fingerprint)
    group->setAttr(kFingerprintAttrName,
                   builder.getStringAttr(fingerprint->hash()));
  else
    group->removeAttr(kFingerprintAttrName);
}

/// Tags `group` with `plan` and gives `outcome` the choice: the plan of
/// `record`, stored under `fingerprint`, or (`record` null) the baseline of
/// a miss.
static void choosePlan(func::FuncOp group, const KernelTask &task,
                       const rt::KernelPlan &plan,
                       const rt::KernelRecord *record,
                       const rt::DeviceFingerprint *fingerprint,
                       GroupOutcome &outcome) {
  tagGroup(group, plan, record ? fingerprint : nullptr);
  ChosenPlan chosen;
  chosen.task = task;
  chosen.plan = plan;
  if (record) {
    chosen.storedFor = *fingerprint;
    chosen.binaries = rt::getRecordBinaries(*record, plan);
  }
  outcome.chosen = std::move(chosen);
}

void mlir::kopt::tagCallsOfGroup(ModuleOp module, func::FuncOp group) {
  llvm::StringRef name = group.getSymName();
  module.walk([&](func::CallOp call) {
    if (call.getCallee() != name)
      return;
    for (llvm::StringRef attr :
         {kPlanAttrName, kPlanHashAttrName, kFingerprintAttrName}) {
      if (Attribute value = group->getAttr(attr))
        call->setAttr(attr, value);
      else
        call->removeAttr(attr);
    }
  });
}

llvm::Expected<GroupOutcome> Autotuner::processGroup(func::FuncOp group) {
  // Everything but the evaluations runs under the lock (the database
  // connection and MLIR are used from one thread at a time).
  std::unique_lock<std::mutex> lock(impl->mutex);
  auto task = buildKernelTask(group);
  if (!task)
    return task.takeError();
  task->precision = impl->options.precision;
  GroupOutcome outcome;
  outcome.function = group.getSymName().str();
  outcome.kind = task->kind;
  outcome.taskKey = task->key;

  std::optional<rt::KernelRecord> stored;
  std::optional<rt::KernelPlan> storedPlan;
  if (impl->fingerprint) {
    auto found = impl->database->lookup(task->key, *impl->fingerprint);
    if (!found)
      return toError(found.status(), "looking up " + task->key);
    stored = std::move(*found);
  }
  if (stored) {
    // A record stored before records were checked, or written behind
    // kopt's back, may not be usable: a miss, never a failed build.
    auto plan = getUsablePlan(*stored, *task);
    if (plan) {
      storedPlan = std::move(*plan);
    } else {
      outcome.warning = "the database's record of @" + outcome.function +
                        " cannot be used (" + llvm::toString(plan.takeError()) +
                        "); treated as a miss";
      stored.reset();
    }
  }
  bool replayed = false;
  if (!stored && impl->replay && impl->fingerprint) {
    auto found = impl->replayTask(task->key, replayed);
    if (!found)
      return found.takeError();
    if (*found) {
      auto plan = getUsablePlan(**found, *task);
      if (!plan)
        return plan.takeError();
      stored = std::move(*found);
      storedPlan = std::move(*plan);
    }
  }
  bool tune = impl->device && impl->options.mode != TuneMode::Never &&
              impl->options.mode != TuneMode::Enqueue &&
              (!stored || impl->options.mode == TuneMode::Always);
  bool overBudget = tune && impl->options.tuningBudgetSeconds > 0 &&
                    impl->tuningSeconds >= impl->options.tuningBudgetSeconds;
  if (overBudget)
    tune = false;
  if (tune) {
    auto start = std::chrono::steady_clock::now();
    struct AddTime {
      double &total;
      std::chrono::steady_clock::time_point start;
      ~AddTime() {
        total += std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - start)
                     .count();
      }
    } addTime{impl->tuningSeconds, start};
    auto tuned = impl->tune(group, *task, outcome, lock);
    if (tuned)
      return tuned;
    // A build never breaks because of the tuner: the group keeps what the
    // database has, or the baseline, and the report says why.
    outcome.tuningFailed = true;
    outcome.note = "tuning failed: " + llvm::toString(tuned.takeError());
    if (!stored) {
      auto baseline = proposeBaseline(group, *task);
      if (!baseline)
        return baseline.takeError();
      outcome.source = GroupOutcome::Source::Baseline;
      outcome.variant = baseline->variant;
      choosePlan(group, *task, *baseline, nullptr, nullptr, outcome);
      return outcome;
    }
  }

  if (stored) {
    const rt::KernelPlan *plan = &*storedPlan;
    outcome.source =
        replayed ? GroupOutcome::Source::Replayed : GroupOutcome::Source::Hit;
    outcome.proposer = plan->proposer;
    outcome.variant = plan->variant;
    outcome.winnerUs = stored->winner.medianMs * 1e3;
    outcome.baselineUs = stored->baseline.medianMs * 1e3;
    choosePlan(group, *task, *plan, &*stored, &*impl->fingerprint, outcome);
    return outcome;
  }
  // A miss that is not tuned: the baseline stands.
  auto baseline = proposeBaseline(group, *task);
  if (!baseline)
    return baseline.takeError();
  outcome.source = GroupOutcome::Source::Baseline;
  outcome.variant = baseline->variant;
  if (impl->queue) {
    // The job names this target, or any device of the precision when there
    // is none here.
    auto queued = impl->queue->enqueue(
        task->key, impl->fingerprint ? impl->fingerprint->hash() : "",
        task->precision, rt::toJson(*task));
    if (!queued)
      return toError(queued.status(), "enqueueing " + task->key);
    outcome.note = *queued == rt::EnqueueOutcome::Queued ? "enqueued for tuning"
                   : *queued == rt::EnqueueOutcome::AlreadyQueued
                       ? "already queued for tuning"
                       : "stored by a worker for another device";
    choosePlan(group, *task, *baseline, nullptr, nullptr, outcome);
    return outcome;
  }
  outcome.note = overBudget      ? "the tuning budget is spent"
                 : impl->replay  ? "no entry in the replay file for this target"
                 : !impl->device ? "no GPU to tune on"
                 : impl->options.mode == TuneMode::Never
                     ? "tuning is off (--tune=never)"
                     : "";
  choosePlan(group, *task, *baseline, nullptr, nullptr, outcome);
  return outcome;
}

/// The `kopt.plan/1` JSON of `plan`.
static rt::json::Value planJson(const KernelPlan &plan) {
  return rt::toJson(plan);
}

rt::EvaluateMessage
Autotuner::Impl::makeRequest(func::FuncOp group, const KernelTask &task,
                             const std::vector<const KernelPlan *> &plans,
                             std::string &note) {
  rt::EvaluateMessage request;
  request.requestId = nextRequestId++;
  request.task = rt::toJson(task);
  for (const KernelPlan *plan : plans)
    request.candidates.push_back(planJson(*plan));
  request.options.validationSets = options.validationSets;
  request.options.repetitions = options.repetitions;
  // A fresh seed per evaluation, so a candidate never sees the same inputs
  // twice; fixed per key and time, so a run can be repeated.
  request.options.seed = int64_t(
      (std::hash<std::string>()(task.key) ^
       uint64_t(std::chrono::system_clock::now().time_since_epoch().count())) &
      0x7fffffffffffffffull);
  // Every set's reference at once (one request per task; the sets side by
  // side on the host's threads).
  auto references =
      buildReferenceSets(group, task, uint64_t(request.options.seed),
                         std::max(options.validationSets, 1u));
  if (references.front()) {
    request.reference = std::move(*references.front());
    // The later sets' references let honest candidates through on
    // ill-conditioned sets (docs/Evaluator.md); one that cannot be built
    // only keeps the strict comparison with the baseline there.
    for (size_t set = 1; set < references.size(); ++set) {
      if (references[set])
        request.laterReferences.push_back(std::move(*references[set]));
      else
        llvm::consumeError(references[set].takeError());
    }
  } else {
    note += "no fp64 reference (" +
            llvm::toString(references.front().takeError()) + "); ";
    for (size_t set = 1; set < references.size(); ++set)
      if (!references[set])
        llvm::consumeError(references[set].takeError());
  }
  return request;
}

llvm::Expected<std::vector<rt::EvalReport>>
Autotuner::Impl::evaluateRequest(const rt::EvaluateMessage &request,
                                 const std::string &function, std::string &note,
                                 std::unique_lock<std::mutex> &lock) {
  if (!pool) {
    WorkerPoolOptions poolOptions;
    poolOptions.worker.executable = options.workerPath;
    // One worker per device: CUDA_VISIBLE_DEVICES's entries, or every
    // device the driver sees.
    poolOptions.deviceCount = unsigned(deviceCount);
    pool = std::make_unique<WorkerPool>(poolOptions);
  }
  std::chrono::milliseconds timeout(uint64_t(options.evaluationTimeoutSeconds) *
                                    1000);
  // The evaluations run unlocked: one per worker (GPU) at a time.
  lock.unlock();
  auto reports = pool->evaluate(request, timeout);
  lock.lock();
  if (!reports)
    return makeError("evaluating @" + function + ": " +
                     llvm::toString(reports.takeError()));
  // A worker that crashes or hangs takes the whole request with it: then
  // each candidate goes again beside the baseline alone, so only the
  // culprit fails (its report names the crash or the timeout).
  bool workerFailed = llvm::any_of(*reports, [](const rt::EvalReport &report) {
    return !getWorkerFailureReason(report).empty();
  });
  if (workerFailed && request.candidates.size() > 2) {
    std::vector<rt::EvalReport> isolated(request.candidates.size());
    bool haveBaseline = false;
    for (size_t i = 1; i < request.candidates.size(); ++i) {
      rt::EvaluateMessage pair = request;
      pair.requestId = nextRequestId++;
      pair.candidates = {request.candidates[0], request.candidates[i]};
      lock.unlock();
      auto pairReports = pool->evaluate(pair, timeout);
      lock.lock();
      if (!pairReports)
        return makeError("evaluating @" + function + ": " +
                         llvm::toString(pairReports.takeError()));
      if (!haveBaseline || !isolated[0].valid) {
        isolated[0] = (*pairReports)[0];
        haveBaseline = true;
      }
      isolated[i] = std::move((*pairReports)[1]);
      isolated[i].candidate = int64_t(i);
    }
    *reports = std::move(isolated);
    note += "a worker failure was isolated by evaluating the "
            "candidates one at a time; ";
  }

  return reports;
}

llvm::Error Autotuner::Impl::storeAttempt(const KernelTask &task,
                                          const KernelPlan *plan,
                                          llvm::StringRef proposer,
                                          const rt::EvalReport *report,
                                          llvm::StringRef failure,
                                          const rt::json::Value &exchange) {
  rt::AttemptRecord attempt;
  attempt.taskKey = task.key;
  attempt.fingerprint = *fingerprint;
  if (plan)
    attempt.plan = planJson(*plan);
  attempt.proposer = proposer.str();
  attempt.valid = report && report->valid;
  if (report) {
    attempt.failedCheck =
        report->valid ? "" : rt::stringifyFailedCheck(report->failedCheck);
    attempt.feedback = rt::toJson(*report);
  } else {
    // Refused before evaluation: the parser's or the provider's reason.
    attempt.failedCheck = "refused";
    attempt.feedback = rt::json::Value::object();
    attempt.feedback.set("reason", failure.str());
  }
  attempt.exchange = exchange;
  if (rt::Status status = database->addAttempt(attempt); !status.isOk())
    return toError(status, "storing an attempt of " + task.key);
  return llvm::Error::success();
}

llvm::Expected<GroupOutcome>
Autotuner::Impl::tune(func::FuncOp group, const KernelTask &task,
                      GroupOutcome outcome,
                      std::unique_lock<std::mutex> &lock) {
  std::vector<std::unique_ptr<Proposer>> owned;
  std::vector<Proposer *> peers;
  for (const auto &factory : proposers) {
    auto proposer = factory->create(group, task);
    if (!proposer)
      return proposer.takeError();
    peers.push_back(proposer->get());
    owned.push_back(std::move(*proposer));
  }
  RoundEvaluator evaluate = [&](const std::vector<const KernelPlan *> &plans) {
    rt::EvaluateMessage request = makeRequest(group, task, plans, outcome.note);
    return evaluateRequest(request, outcome.function, outcome.note, lock);
  };
  // Every attempt is kept, with its report as the proposer's feedback.
  AttemptSink keep = [&](const ProposerAttempt &attempt) {
    const Candidate &candidate = *attempt.candidate;
    return storeAttempt(task, candidate.plan ? &*candidate.plan : nullptr,
                        attempt.proposer, attempt.report, candidate.failure,
                        candidate.exchange);
  };
  auto rounds = runProposerRounds(outcome.function, peers, evaluate, keep,
                                  options.maxCandidates);
  if (!rounds)
    return rounds.takeError();
  outcome.evaluatedCandidates = rounds->evaluated;
  outcome.validCandidates = rounds->valid;
  const std::vector<KernelPlan> &plans = rounds->firstPlans;
  const std::vector<rt::EvalReport> &reports = rounds->firstReports;
  const rt::EvalReport &baselineReport = reports.front();

  // The valid, unsuspicious candidate of round 0 with the largest speedup
  // over the baseline (both timed interleaved in one request), when that
  // clears the margin; the baseline otherwise.
  size_t winner = 0;
  double bestSpeedup = 0;
  for (size_t i = 1; i < reports.size(); ++i) {
    const rt::EvalReport &report = reports[i];
    if (!report.valid || !report.times || report.suspicious || !report.speedup)
      continue;
    if (*report.speedup >= options.minSpeedup &&
        *report.speedup > bestSpeedup) {
      winner = i;
      bestSpeedup = *report.speedup;
    }
  }
  const KernelPlan *chosenPlan = &plans[winner];
  const rt::EvalReport *chosenReport = &reports[winner];
  const rt::EvalReport *chosenBaseline = &baselineReport;
  rt::Provenance provenance;

  // A proposer's choice after rounds of its own (the LLM's) was measured
  // beside the fastest valid candidate before it, so it beats every earlier
  // candidate: it wins when it clears the margin.
  bool choiceWon = false;
  for (Proposer *proposer : peers) {
    proposer->summarize(outcome);
    std::optional<ProposerChoice> choice = proposer->getChoice();
    if (!choice || !choice->report->valid || !choice->report->speedup ||
        *choice->report->speedup < options.minSpeedup)
      continue;
    chosenPlan = choice->plan;
    chosenReport = choice->report;
    chosenBaseline = choice->baselineReport;
    provenance = choice->provenance;
    choiceWon = true;
  }

  const rt::EvalReport &chosen = *chosenReport;
  rt::KernelRecord record;
  record.taskKey = task.key;
  record.fingerprint = *fingerprint;
  rt::KernelPlan runtimePlan = *chosenPlan;
  record.plan = rt::toJson(runtimePlan);
  // The binaries for the device, when the plan has one source.
  if (runtimePlan.sources.size() == 1) {
    rt::NvrtcOptions nvrtc;
    nvrtc.extra = runtimePlan.compileOptions;
    auto compiled = rt::compileCuda(runtimePlan.sources[0].code,
                                    runtimePlan.sources[0].id + ".cu",
                                    fingerprint->computeCapability, nvrtc);
    if (compiled) {
      record.cubin = compiled->cubin;
      record.ptx = compiled->ptx;
    }
  }
  record.winner = toTimingSummary(*chosen.times);
  record.baseline = toTimingSummary(
      chosenBaseline->times ? *chosenBaseline->times : *baselineReport.times);
  // The evidence, and what `kopt db revalidate` needs to evaluate the
  // winner again without the graph: the task and the baseline plan.
  record.validation = rt::json::Value::object();
  record.validation.set("evidence", chosen.evidence);
  record.validation.set("task", rt::toJson(task));
  record.validation.set("baseline_plan", planJson(plans.front()));
  record.provenance = provenance;
  record.provenance.proposer = runtimePlan.proposer;
  if (rt::Status status = database->merge(record).status(); !status.isOk())
    return toError(status, "storing the winner of " + task.key);

  // With --tune=always the stored winner may be better than this one; an
  // unusable one stays in the database, and this winner is used.
  auto kept = database->lookup(task.key, *fingerprint);
  if (!kept || !*kept)
    return makeError("the winner of " + task.key + " was not stored");
  auto keptPlan = getUsablePlan(**kept, task);
  if (!keptPlan) {
    llvm::consumeError(keptPlan.takeError());
    *kept = record;
    keptPlan = runtimePlan;
  }
  outcome.source = GroupOutcome::Source::Tuned;
  outcome.proposer = keptPlan->proposer;
  outcome.variant = keptPlan->variant;
  outcome.winnerUs = (*kept)->winner.medianMs * 1e3;
  outcome.baselineUs = (*kept)->baseline.medianMs * 1e3;
  if (winner == 0 && !choiceWon)
    outcome.note += "no candidate beat the baseline by " +
                    llvm::formatv("{0:F2}", options.minSpeedup).str() + "x";
  choosePlan(group, task, *keptPlan, &**kept, &*fingerprint, outcome);
  return outcome;
}

//===----------------------------------------------------------------------===//
// Replay
//===----------------------------------------------------------------------===//

llvm::Error Autotuner::Impl::chooseReplayTarget() {
  // The named target, else the replayed records' only fingerprint, else what
  // the database alone gives.
  const auto &replayed = replay->getFingerprints();
  if (!options.target.empty()) {
    auto it = replayed.find(options.target);
    if (it == replayed.end())
      return chooseTarget();
    fingerprint = it->second;
    return llvm::Error::success();
  }
  if (replayed.empty())
    return chooseTarget();
  if (replayed.size() > 1) {
    std::vector<std::string> hashes;
    for (const auto &entry : replayed)
      hashes.push_back(entry.first);
    return makeError("'" + replay->getPath() + "' holds entries for " +
                     std::to_string(hashes.size()) +
                     " devices; choose one with --target=<fingerprint> (" +
                     llvm::join(hashes, ", ") + ")");
  }
  fingerprint = replayed.begin()->second;
  return llvm::Error::success();
}

/// Stores the replay file's entries for `taskKey` and looks the task up
/// again; sets `wrote` when a record was stored (not when another process
/// had stored the same one since the first lookup: that is a hit).
llvm::Expected<std::optional<rt::KernelRecord>>
Autotuner::Impl::replayTask(const std::string &taskKey, bool &wrote) {
  wrote = false;
  if (!replay->hasTask(taskKey))
    return std::nullopt;
  // One transaction: the task's records and attempts are stored together or
  // not at all. The import keeps the better of a stored and a replayed
  // record, and skips attempts already stored.
  auto summary = replay->storeTask(*database, taskKey);
  if (!summary)
    return summary.takeError();
  wrote = summary->added + summary->replaced > 0;
  auto found = database->lookup(taskKey, *fingerprint);
  if (!found)
    return toError(found.status(), "looking up " + taskKey);
  return std::move(*found);
}
