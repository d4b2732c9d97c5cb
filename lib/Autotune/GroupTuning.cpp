//===- GroupTuning.cpp - Tune one fusion group ------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The autotuner's tuning of one group that missed the database: the
// proposers' rounds evaluated in the workers, every attempt stored, and the
// winner chosen, compiled for the device and stored.
//
//===----------------------------------------------------------------------===//

#include "AutotunerImpl.h"

#include "kopt/Autotune/TaskEvaluator.h"
#include "kopt/Evaluator/ReferenceBuilder.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <map>

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

/// The `kopt.plan/1` JSON of `plan`.
static rt::json::Value planJson(const KernelPlan &plan) {
  return rt::toJson(plan);
}

/// What `attempt`'s evaluation cost, from its report and origin.
static CandidateCost makeCandidateCost(const ProposerAttempt &attempt) {
  CandidateCost cost;
  const Candidate &candidate = *attempt.candidate;
  cost.name = candidate.plan
                  ? candidate.plan->proposer + "/" + candidate.plan->variant
                  : attempt.proposer.str();
  cost.round = attempt.round;
  if (const rt::EvalReport *report = attempt.report) {
    cost.valid = report->valid;
    if (!report->valid)
      cost.failedCheck = rt::stringifyFailedCheck(report->failedCheck);
    cost.phases = report->phases;
    if (const rt::json::Value *memory =
            report->evidence.find("device_memory")) {
      if (const rt::json::Value *peak = memory->find("peak_bytes"))
        cost.peakDeviceBytes = peak->getInteger();
      if (const rt::json::Value *flush = memory->find("flush_bytes"))
        cost.flushDeviceBytes = flush->getInteger();
      if (const rt::json::Value *workspace =
              memory->find("gemm_workspace_bytes"))
        cost.workspaceDeviceBytes = workspace->getInteger();
      if (const rt::json::Value *task = memory->find("task_bytes"))
        cost.taskBytes = task->getInteger();
    }
    if (const rt::json::Value *outputs =
            report->evidence.find("baseline_outputs"))
      if (const rt::json::Value *reused = outputs->find("reused"))
        cost.baselineReused = reused->getBool().value_or(false);
    cost.timingCut = rt::isTimingCut(*report);
  } else {
    cost.failedCheck = "refused";
  }
  if (const ReportOrigin *origin = attempt.origin) {
    cost.stored = origin->stored;
    cost.seconds = origin->seconds;
    cost.requestSeconds = origin->requestSeconds;
  }
  return cost;
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

llvm::Expected<std::vector<rt::EvalReport>> Autotuner::Impl::sendRequest(
    rt::EvaluateMessage &request, std::chrono::milliseconds timeout,
    const std::string &function, GroupDevice &device, std::string &note,
    std::unique_lock<std::mutex> &lock) {
  if (!device.pool)
    return makeError("evaluating @" + function + ": no worker to evaluate on");
  request.requestId = nextRequestId++;
  // The evaluations run unlocked: one per worker (GPU) at a time. A retry
  // stays on the group's kind of GPU, whose times compare with the rest.
  std::string hash = device.fingerprint->hash();
  auto sameKind = [&](size_t index) {
    return deviceFingerprints[index].hash() == hash;
  };
  std::vector<std::string> deaths;
  lock.unlock();
  auto reports = device.pool->evaluateOn(device.worker, request, timeout,
                                         sameKind, &deaths);
  lock.lock();
  for (const std::string &death : deaths)
    note +=
        "a worker died (" + death + "); its request went to " +
        "CUDA_VISIBLE_DEVICES=" + device.pool->getWorker(device.worker).device +
        "; ";
  if (!reports)
    return makeError("evaluating @" + function + ": " +
                     llvm::toString(reports.takeError()));
  // The results are stored under the group's fingerprint: the worker that
  // measured them must say it runs on that device.
  WorkerPoolEntry worker = device.pool->getWorker(device.worker);
  if (worker.hello)
    if (std::string mismatch =
            describeWorkerMismatch(*worker.hello, *device.fingerprint);
        !mismatch.empty())
      return makeError("evaluating @" + function + " on CUDA_VISIBLE_DEVICES=" +
                       worker.device + ": " + mismatch);
  return reports;
}

llvm::Error Autotuner::Impl::storeAttempt(
    const KernelTask &task, const rt::DeviceFingerprint &measuredOn,
    const KernelPlan *plan, llvm::StringRef proposer,
    const rt::EvalReport *report, const ReportOrigin *origin,
    llvm::StringRef failure, const rt::json::Value &exchange) {
  rt::AttemptRecord attempt;
  attempt.taskKey = task.key;
  attempt.fingerprint = measuredOn;
  if (plan)
    attempt.plan = planJson(*plan);
  attempt.proposer = proposer.str();
  attempt.valid = report && report->valid;
  if (report) {
    attempt.failedCheck =
        report->valid ? "" : rt::stringifyFailedCheck(report->failedCheck);
    attempt.feedback = makeAttemptFeedback(
        *report, origin ? origin->baselineTimes : std::nullopt);
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
                      GroupOutcome outcome, const TuneLimits &limits,
                      GroupDevice &device, std::unique_lock<std::mutex> &lock) {
  const rt::DeviceFingerprint &fingerprint = *device.fingerprint;
  std::vector<std::unique_ptr<Proposer>> owned;
  std::vector<Proposer *> peers;
  for (const auto &factory : proposers) {
    auto proposer = factory->create(group, task);
    if (!proposer)
      return proposer.takeError();
    peers.push_back(proposer->get());
    owned.push_back(std::move(*proposer));
  }
  // What an earlier run of the task that was stopped measured is taken,
  // not measured again.
  std::map<std::string, StoredReport> storedReports;
  if (limits.resume) {
    auto attempts = database->listAttempts(task.key);
    if (!attempts)
      return toError(attempts.status(), "reading the attempts of " + task.key);
    storedReports = collectStoredReports(*attempts, fingerprint);
  }
  TaskEvaluator::Options evaluatorOptions;
  evaluatorOptions.evaluationTimeout = std::chrono::milliseconds(
      uint64_t(options.evaluationTimeoutSeconds) * 1000);
  evaluatorOptions.deadline = limits.deadline;
  TaskEvaluator evaluator(
      [&](const std::vector<const KernelPlan *> &plans) {
        return makeRequest(group, task, plans, outcome.note);
      },
      [&](rt::EvaluateMessage &request, std::chrono::milliseconds timeout) {
        return sendRequest(request, timeout, outcome.function, device,
                           outcome.note, lock);
      },
      evaluatorOptions, std::move(storedReports), outcome.note);
  RoundEvaluator evaluate = [&](unsigned round,
                                const std::vector<const KernelPlan *> &plans,
                                const ReportSink &sink) {
    return evaluator.evaluateRound(round, plans, sink);
  };
  // The baseline's times beside each candidate of round 0, by plan hash.
  std::map<std::string, rt::Timing> pairedBaselines;
  // Every attempt is kept as soon as it is known, with its report as the
  // proposer's feedback, and then reported.
  AttemptSink keep = [&](const ProposerAttempt &attempt) -> llvm::Error {
    const Candidate &candidate = *attempt.candidate;
    const KernelPlan *plan = candidate.plan ? &*candidate.plan : nullptr;
    const ReportOrigin *origin = attempt.origin;
    if (plan && origin && origin->baselineTimes && attempt.round == 0)
      pairedBaselines[getPlanHash(planJson(*plan))] = *origin->baselineTimes;
    outcome.candidateCosts.push_back(makeCandidateCost(attempt));
    if (origin && origin->stored)
      ++outcome.storedCandidates;
    else if (llvm::Error error = storeAttempt(
                 task, fingerprint, plan, attempt.proposer, attempt.report,
                 origin, candidate.failure, candidate.exchange))
      return error;
    if (options.onProgress) {
      TuneProgress event;
      event.kind = TuneProgress::Kind::CandidateDone;
      event.function = outcome.function;
      event.task = &task;
      event.candidate =
          plan ? plan->proposer + "/" + plan->variant : attempt.proposer.str();
      event.round = attempt.round;
      event.report = attempt.report;
      event.failure = candidate.failure;
      event.origin = origin;
      options.onProgress(event);
    }
    return llvm::Error::success();
  };
  auto rounds = runProposerRounds(outcome.function, peers, evaluate, keep,
                                  options.maxCandidates);
  if (!rounds)
    return rounds.takeError();
  outcome.evaluatedCandidates = rounds->evaluated;
  outcome.validCandidates = rounds->valid;
  outcome.budgetSpent = rounds->budgetSpent;
  outcome.notTried = rounds->notTried;
  if (rounds->budgetSpent)
    outcome.note += llvm::formatv("the tuning budget ran out: {0} "
                                  "candidate{1} not tried; ",
                                  rounds->notTried.size(),
                                  rounds->notTried.size() == 1 ? "" : "s")
                        .str();
  // Without the baseline nothing was measured: the caller keeps what the
  // group had.
  if (rounds->firstReports.empty())
    return outcome;
  const std::vector<KernelPlan> &plans = rounds->firstPlans;
  const std::vector<rt::EvalReport> &reports = rounds->firstReports;
  const rt::EvalReport &baselineReport = reports.front();

  // The valid, unsuspicious candidate of round 0 with the largest speedup
  // over the baseline (both timed interleaved in the candidate's request),
  // when that clears the margin; the baseline otherwise. A candidate timed
  // briefly because it could not win never does.
  size_t winner = 0;
  double bestSpeedup = 0;
  for (size_t i = 1; i < reports.size(); ++i) {
    const rt::EvalReport &report = reports[i];
    if (!report.valid || !report.times || report.suspicious ||
        !report.speedup || rt::isTimingCut(report))
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
  // The baseline as timed beside the winner, so that the winner's and the
  // baseline's times give the speedup measured.
  rt::Timing baselineTimes =
      chosenBaseline->times ? *chosenBaseline->times : *baselineReport.times;
  auto paired = pairedBaselines.find(getPlanHash(planJson(*chosenPlan)));
  if (!choiceWon && winner > 0 && paired != pairedBaselines.end())
    baselineTimes = paired->second;
  auto finishNote = [&] {
    if (winner == 0 && !choiceWon)
      outcome.note += "no candidate beat the baseline by " +
                      llvm::formatv("{0:F2}", options.minSpeedup).str() + "x";
    if (llvm::StringRef(outcome.note).ends_with("; "))
      outcome.note.resize(outcome.note.size() - 2);
  };
  outcome.source = GroupOutcome::Source::Tuned;
  if (rounds->budgetSpent) {
    // Not every candidate was tried: the group takes the best measured, but
    // the database gets no record, so that the next run finishes the
    // tuning (taking what was measured from the attempts).
    outcome.note += "not stored, run again to finish; ";
    outcome.proposer = chosenPlan->proposer;
    outcome.variant = chosenPlan->variant;
    outcome.arithmetic = chosenPlan->arithmetic;
    outcome.winnerUs = chosen.times->medianUs;
    outcome.baselineUs = baselineTimes.medianUs;
    finishNote();
    choosePlan(group, task, *chosenPlan, nullptr, nullptr, outcome);
    return outcome;
  }
  rt::KernelRecord record;
  record.taskKey = task.key;
  record.fingerprint = fingerprint;
  rt::KernelPlan runtimePlan = *chosenPlan;
  record.plan = rt::toJson(runtimePlan);
  // The binaries for the device, when the plan has one source.
  auto arch = rt::getCompileArch(runtimePlan, fingerprint.computeCapability);
  if (runtimePlan.sources.size() == 1 && arch) {
    rt::NvrtcOptions nvrtc;
    nvrtc.extra = runtimePlan.compileOptions;
    auto compiled =
        rt::compileCuda(runtimePlan.sources[0].code,
                        runtimePlan.sources[0].id + ".cu", *arch, nvrtc);
    if (compiled) {
      record.cubin = compiled->cubin;
      record.ptx = compiled->ptx;
    }
  }
  record.winner = toTimingSummary(*chosen.times);
  record.baseline = toTimingSummary(baselineTimes);
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
  auto kept = database->lookup(task.key, fingerprint);
  if (!kept || !*kept)
    return makeError("the winner of " + task.key + " was not stored");
  auto keptPlan = getUsablePlan(**kept, task);
  if (!keptPlan) {
    llvm::consumeError(keptPlan.takeError());
    *kept = record;
    keptPlan = runtimePlan;
  }
  outcome.proposer = keptPlan->proposer;
  outcome.variant = keptPlan->variant;
  outcome.arithmetic = keptPlan->arithmetic;
  outcome.winnerUs = (*kept)->winner.medianMs * 1e3;
  outcome.baselineUs = (*kept)->baseline.medianMs * 1e3;
  finishNote();
  choosePlan(group, task, *keptPlan, &**kept, &fingerprint, outcome);
  return outcome;
}
