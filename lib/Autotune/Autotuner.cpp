//===- Autotuner.cpp - Look up, tune and store fusion groups ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "AutotunerImpl.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Codegen/Proposers.h"
#include "kopt/Runtime/ModuleRunner.h"
#include "kopt/Runtime/PlanVerifier.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
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

llvm::Expected<rt::KernelPlan>
mlir::kopt::getUsablePlan(const rt::KernelRecord &record,
                          const rt::KernelTask &task) {
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
  if (!rt::isKnownPrecision(options.precision))
    return makeError("precision must be fp32, fp32-ieee, tf32 or bf16, not '" +
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
  impl->deviceFingerprints =
      probeDeviceFingerprints(options.precision, impl->noDeviceReason);
  impl->device = !impl->deviceFingerprints.empty();
  if (impl->device) {
    impl->fingerprint = impl->deviceFingerprints.front();
    WorkerPoolOptions poolOptions;
    poolOptions.worker.executable = options.workerPath;
    // One worker per device: CUDA_VISIBLE_DEVICES's entries, or every
    // device the driver sees; worker `i` on the device probed `i`th.
    poolOptions.deviceCount = unsigned(impl->deviceFingerprints.size());
    impl->pool = std::make_unique<WorkerPool>(poolOptions);
    rt::DeviceFingerprint last = impl->deviceFingerprints.back();
    impl->deviceFingerprints.resize(impl->pool->size(), last);
  }
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
  return impl->pool ? unsigned(std::max<size_t>(1, impl->pool->size())) : 1;
}

const rt::DeviceFingerprint *Autotuner::getFingerprint() const {
  return impl->fingerprint ? &*impl->fingerprint : nullptr;
}

const std::vector<rt::DeviceFingerprint> &
Autotuner::getDeviceFingerprints() const {
  return impl->deviceFingerprints;
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

void mlir::kopt::choosePlan(func::FuncOp group, const KernelTask &task,
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
  // Where the group may be tuned, it holds a worker from its lookup to its
  // end, taken before the lock (it may wait for one) and given back after:
  // the group is looked up, timed and stored for that worker's GPU.
  GroupDevice device;
  device.fingerprint = impl->fingerprint ? &*impl->fingerprint : nullptr;
  if (impl->pool && (impl->options.mode == TuneMode::Missing ||
                     impl->options.mode == TuneMode::Always)) {
    device.worker = *impl->pool->acquire();
    device.pool = impl->pool.get();
    device.fingerprint = &impl->deviceFingerprints[device.worker];
  }
  // Everything but the evaluations runs under the lock (the database
  // connection and MLIR are used from one thread at a time).
  std::unique_lock<std::mutex> lock(impl->mutex);
  const rt::DeviceFingerprint *fingerprint = device.fingerprint;
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
  if (fingerprint) {
    auto found = impl->database->lookup(task->key, *fingerprint);
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
  if (!stored && impl->replay && fingerprint) {
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
  auto now = std::chrono::steady_clock::now();
  bool overBudget =
      tune && impl->options.deadline && now >= *impl->options.deadline;
  if (overBudget)
    tune = false;
  if (tune) {
    TuneLimits limits;
    limits.deadline = impl->options.deadline;
    if (impl->options.groupBudgetSeconds > 0) {
      auto own =
          now +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              std::chrono::duration<double>(impl->options.groupBudgetSeconds));
      limits.deadline = limits.deadline ? std::min(*limits.deadline, own) : own;
    }
    // A miss resumes what a stopped run measured; --tune=always measures
    // every candidate again.
    limits.resume = impl->options.mode == TuneMode::Missing;
    if (impl->options.onProgress) {
      TuneProgress event;
      event.function = outcome.function;
      event.task = &*task;
      impl->options.onProgress(event);
    }
    auto tuned = impl->tune(group, *task, outcome, limits, device, lock);
    // A tuning the budget cut short is not stored: with --tune=always the
    // stored plan stays.
    if (tuned && tuned->chosen && !(tuned->budgetSpent && stored))
      return tuned;
    if (tuned) {
      outcome = std::move(*tuned);
      // The budget ran out before the baseline was measured: the group
      // keeps what it had.
      if (!outcome.chosen)
        outcome.note += "nothing was measured";
      outcome.chosen.reset();
    } else {
      // A build never breaks because of the tuner: the group keeps what
      // the database has, or the baseline, and the report says why.
      outcome.tuningFailed = true;
      outcome.note = "tuning failed: " + llvm::toString(tuned.takeError());
    }
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
    outcome.arithmetic = plan->arithmetic;
    outcome.winnerUs = stored->winner.medianMs * 1e3;
    outcome.baselineUs = stored->baseline.medianMs * 1e3;
    choosePlan(group, *task, *plan, &*stored, fingerprint, outcome);
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
    auto queued =
        impl->queue->enqueue(task->key, fingerprint ? fingerprint->hash() : "",
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
  outcome.budgetSpent = overBudget;
  outcome.note = overBudget      ? "the tuning budget is spent"
                 : impl->replay  ? "no entry in the replay file for this target"
                 : !impl->device ? "no GPU to tune on"
                 : impl->options.mode == TuneMode::Never
                     ? "tuning is off (--tune=never)"
                     : "";
  choosePlan(group, *task, *baseline, nullptr, nullptr, outcome);
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
