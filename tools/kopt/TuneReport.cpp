//===- TuneReport.cpp - Reports of kopt compile and kopt warm ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "TuneReport.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kopt;

static std::string formatUs(const std::optional<double> &us) {
  return us ? llvm::formatv("{0:F1}", *us).str() : std::string("-");
}

/// What the text report's cache column says: whether the group was found,
/// and whether a miss was filled from a replay file.
static llvm::StringRef getCacheColumn(GroupOutcome::Source source) {
  if (source == GroupOutcome::Source::Hit)
    return "hit";
  if (source == GroupOutcome::Source::Replayed)
    return "replayed";
  return "miss";
}

/// The worker's phases in the order the breakdown prints them, with the
/// report's names.
struct PhaseColumn {
  const char *name;
  double ::kopt::runtime::EvalPhases::*member;
};
static constexpr PhaseColumn kPhaseColumns[] = {
    {"compile", &::kopt::runtime::EvalPhases::compileS},
    {"allocate", &::kopt::runtime::EvalPhases::allocateS},
    {"inputs", &::kopt::runtime::EvalPhases::inputsS},
    {"runs", &::kopt::runtime::EvalPhases::runsS},
    {"checks", &::kopt::runtime::EvalPhases::checksS},
    {"compare", &::kopt::runtime::EvalPhases::compareS},
    {"reference", &::kopt::runtime::EvalPhases::referenceS},
    {"timing", &::kopt::runtime::EvalPhases::timingS},
    {"timed_kernel", &::kopt::runtime::EvalPhases::timedKernelS},
};

/// A group's evaluation cost added up over its candidates measured now.
struct CostTotals {
  unsigned measured = 0;
  /// Round trips of the requests sent now, all of them and those with
  /// phases; the fp64 references; the worker's time of the latter.
  double seconds = 0, measuredSeconds = 0, requestSeconds = 0,
         workerSeconds = 0;
  ::kopt::runtime::EvalPhases phases;
  int64_t peakDeviceBytes = 0;
  /// The most any request held without the device's fixed buffers (the L2
  /// flush buffer, the shared GEMM workspace).
  int64_t peakWithoutFlushBytes = 0;
  int64_t taskBytes = 0;
  /// Requests that reused the baseline's kept outputs; candidates timed
  /// briefly because they could not win.
  unsigned baselineReused = 0, timingCut = 0;
};

/// The totals of `costs`; `measured` is 0 when no worker measured phases
/// (a fake worker), and then the report says nothing of them.
static CostTotals addCosts(const std::vector<CandidateCost> &costs) {
  CostTotals totals;
  for (const CandidateCost &cost : costs) {
    totals.requestSeconds += cost.requestSeconds;
    if (cost.stored)
      continue;
    totals.seconds += cost.seconds;
    if (!cost.phases)
      continue;
    ++totals.measured;
    totals.measuredSeconds += cost.seconds;
    // The request's worker time; the rest of the round trip is the pipe.
    totals.workerSeconds += cost.phases->requestS;
    for (const PhaseColumn &column : kPhaseColumns)
      totals.phases.*column.member += (*cost.phases).*column.member;
    totals.peakDeviceBytes =
        std::max(totals.peakDeviceBytes, cost.peakDeviceBytes.value_or(0));
    totals.peakWithoutFlushBytes = std::max(
        totals.peakWithoutFlushBytes,
        cost.peakDeviceBytes.value_or(0) - cost.flushDeviceBytes.value_or(0) -
            cost.workspaceDeviceBytes.value_or(0));
    totals.taskBytes = std::max(totals.taskBytes, cost.taskBytes.value_or(0));
    totals.baselineReused += cost.baselineReused;
    totals.timingCut += cost.timingCut;
  }
  return totals;
}

/// The breakdown line of the text report.
static void printCosts(llvm::raw_ostream &os, const CostTotals &totals) {
  os << llvm::formatv(
      "      evaluation: {0} request{1}, {2:F2} s; fp64 "
      "reference on the host {3:F2} s; transfers {4:F2} s\n",
      totals.measured, totals.measured == 1 ? "" : "s", totals.measuredSeconds,
      totals.requestSeconds,
      std::max(0.0, totals.measuredSeconds - totals.workerSeconds));
  os << "      worker:";
  for (const PhaseColumn &column : kPhaseColumns)
    os << llvm::formatv(" {0} {1:F2}", column.name,
                        totals.phases.*column.member);
  os << " s";
  if (totals.peakDeviceBytes)
    os << llvm::formatv(
        "; peak {0:F2} GiB ({1:F2} GiB without the device's "
        "flush buffer and GEMM workspace) for {2:F2} GiB of tensors",
        double(totals.peakDeviceBytes) / double(1 << 30),
        double(totals.peakWithoutFlushBytes) / double(1 << 30),
        double(totals.taskBytes) / double(1 << 30));
  os << "\n";
  if (totals.baselineReused || totals.timingCut)
    os << llvm::formatv("      the baseline's kept outputs reused in {0} of "
                        "{1} requests; {2} candidate{3} timed briefly "
                        "(could not win)\n",
                        totals.baselineReused, totals.measured,
                        totals.timingCut, totals.timingCut == 1 ? "" : "s");
}

/// The `candidates` entries of the JSON report.
static llvm::json::Array toJsonCosts(const std::vector<CandidateCost> &costs) {
  llvm::json::Array entries;
  for (const CandidateCost &cost : costs) {
    llvm::json::Object entry{
        {"name", cost.name}, {"round", cost.round}, {"valid", cost.valid}};
    if (!cost.failedCheck.empty())
      entry["failed_check"] = cost.failedCheck;
    if (cost.stored)
      entry["stored"] = true;
    entry["seconds"] = cost.seconds;
    if (cost.requestSeconds > 0)
      entry["reference_s"] = cost.requestSeconds;
    if (cost.phases) {
      llvm::json::Object phases;
      for (const PhaseColumn &column : kPhaseColumns)
        phases[std::string(column.name) + "_s"] = (*cost.phases).*column.member;
      phases["total_s"] = cost.phases->totalS;
      phases["request_s"] = cost.phases->requestS;
      phases["transfer_s"] =
          std::max(0.0, cost.seconds - cost.phases->requestS);
      entry["phases"] = std::move(phases);
    }
    if (cost.peakDeviceBytes)
      entry["peak_device_bytes"] = *cost.peakDeviceBytes;
    if (cost.flushDeviceBytes)
      entry["flush_device_bytes"] = *cost.flushDeviceBytes;
    if (cost.workspaceDeviceBytes)
      entry["gemm_workspace_device_bytes"] = *cost.workspaceDeviceBytes;
    if (cost.taskBytes)
      entry["task_bytes"] = *cost.taskBytes;
    if (cost.baselineReused)
      entry["baseline_reused"] = true;
    if (cost.timingCut)
      entry["timing_cut"] = true;
    entries.push_back(std::move(entry));
  }
  return entries;
}

/// How many tasks not started the text report names.
static constexpr size_t kNotStartedShown = 20;

void mlir::kopt::printTuneReport(llvm::raw_ostream &os,
                                 const std::vector<ReportRow> &rows,
                                 const std::string &target, double seconds,
                                 llvm::ArrayRef<NotStartedTask> notStarted) {
  os << "target: " << target << "\n";
  os << llvm::formatv("{0,-28} {1,-12} {2,-12} {3,-8} {4,-28} {5,10} {6,10} "
                      "{7,8}\n",
                      "group", "kind", "key", "cache", "plan", "time us",
                      "base us", "speedup");
  unsigned hits = 0, tuned = 0, baseline = 0, replayed = 0;
  std::string lastFile;
  for (const ReportRow &row : rows) {
    if (row.file != lastFile) {
      os << row.file << "\n";
      lastFile = row.file;
    }
    const GroupOutcome &outcome = row.outcome;
    hits += outcome.source == GroupOutcome::Source::Hit;
    tuned += outcome.source == GroupOutcome::Source::Tuned;
    baseline += outcome.source == GroupOutcome::Source::Baseline;
    replayed += outcome.source == GroupOutcome::Source::Replayed;
    llvm::StringRef cache = getCacheColumn(outcome.source);
    std::optional<double> speedup = outcome.getSpeedup();
    os << llvm::formatv(
        "  {0,-26} {1,-12} {2,-12} {3,-8} {4,-28} {5,10} {6,10} {7,8}\n",
        "@" + outcome.function, outcome.kind,
        llvm::StringRef(outcome.taskKey).take_front(12), cache,
        outcome.proposer + "/" + outcome.variant, formatUs(outcome.winnerUs),
        formatUs(outcome.baselineUs),
        speedup ? llvm::formatv("{0:F2}x", *speedup).str() : "-");
    if (outcome.arithmetic != "fp32")
      os << "      arithmetic: " << outcome.arithmetic << "\n";
    if (!outcome.note.empty())
      os << "      note: " << outcome.note << "\n";
    if (!outcome.notTried.empty())
      os << "      not tried: " << llvm::join(outcome.notTried, ", ") << "\n";
    if (CostTotals costs = addCosts(outcome.candidateCosts); costs.measured)
      printCosts(os, costs);
    if (!outcome.llmSummary.empty())
      os << "      " << outcome.llmSummary << "\n";
    for (const std::string &line : outcome.llmAttempts)
      os << "        " << line << "\n";
  }
  // Replayed groups are only counted when there are some, so reports
  // without --replay read as they always did.
  std::string replayedText =
      replayed ? llvm::formatv("{0} replayed, ", replayed).str() : "";
  os << llvm::formatv("total: {0} groups: {1} hits, {2}{3} tuned, {4} missed "
                      "(baseline); {5:F2} s\n",
                      rows.size(), hits, replayedText, tuned, baseline,
                      seconds);
  if (notStarted.empty())
    return;
  os << "the budget ran out: " << notStarted.size()
     << " tasks not started (run again to continue):\n";
  for (const NotStartedTask &task : notStarted.take_front(kNotStartedShown))
    os << "  " << task.file << " @" << task.function << " ("
       << llvm::StringRef(task.key).take_front(12) << ")\n";
  if (notStarted.size() > kNotStartedShown)
    os << "  ... and " << notStarted.size() - kNotStartedShown << " more\n";
}

llvm::json::Value
mlir::kopt::toJsonReport(const std::vector<ReportRow> &rows,
                         const std::string &target, double seconds,
                         llvm::ArrayRef<NotStartedTask> notStarted) {
  llvm::json::Array groups;
  unsigned hits = 0, tuned = 0, baseline = 0, replayed = 0;
  size_t notTried = 0;
  bool budgetSpent = !notStarted.empty();
  for (const ReportRow &row : rows) {
    const GroupOutcome &outcome = row.outcome;
    hits += outcome.source == GroupOutcome::Source::Hit;
    tuned += outcome.source == GroupOutcome::Source::Tuned;
    baseline += outcome.source == GroupOutcome::Source::Baseline;
    replayed += outcome.source == GroupOutcome::Source::Replayed;
    llvm::json::Object group{
        {"file", row.file},
        {"function", outcome.function},
        {"kind", outcome.kind},
        {"key", outcome.taskKey},
        {"cache", outcome.source == GroupOutcome::Source::Hit ? "hit" : "miss"},
        {"source", getSourceName(outcome.source)},
        {"proposer", outcome.proposer},
        {"variant", outcome.variant},
        {"evaluated", outcome.evaluatedCandidates},
        {"valid", outcome.validCandidates},
    };
    if (outcome.winnerUs)
      group["time_us"] = *outcome.winnerUs;
    if (outcome.baselineUs)
      group["baseline_us"] = *outcome.baselineUs;
    if (std::optional<double> speedup = outcome.getSpeedup())
      group["speedup"] = *speedup;
    // Only where it says something, so that reports of fp32 plans read as
    // they did before.
    if (outcome.arithmetic != "fp32")
      group["arithmetic"] = outcome.arithmetic;
    if (!outcome.note.empty())
      group["note"] = outcome.note;
    if (outcome.storedCandidates)
      group["stored"] = outcome.storedCandidates;
    if (outcome.budgetSpent)
      group["budget_spent"] = true;
    if (!outcome.notTried.empty()) {
      llvm::json::Array names;
      for (const std::string &name : outcome.notTried)
        names.push_back(name);
      group["not_tried"] = std::move(names);
    }
    notTried += outcome.notTried.size();
    if (!outcome.candidateCosts.empty()) {
      group["candidates"] = toJsonCosts(outcome.candidateCosts);
      CostTotals costs = addCosts(outcome.candidateCosts);
      group["evaluation_s"] = costs.seconds;
      group["reference_s"] = costs.requestSeconds;
    }
    budgetSpent |= outcome.budgetSpent;
    if (!outcome.llmSummary.empty()) {
      group["llm"] = outcome.llmSummary;
      llvm::json::Array attempts;
      for (const std::string &line : outcome.llmAttempts)
        attempts.push_back(line);
      group["llm_attempts"] = std::move(attempts);
    }
    groups.push_back(std::move(group));
  }
  llvm::json::Object document{
      {"schema", "kopt.tune-report/1"},
      {"target", target},
      {"groups", std::move(groups)},
      {"totals", llvm::json::Object{{"groups", rows.size()},
                                    {"hits", hits},
                                    {"replayed", replayed},
                                    {"tuned", tuned},
                                    {"missed", baseline},
                                    {"not_tried", notTried},
                                    {"not_started", notStarted.size()},
                                    {"seconds", seconds}}},
  };
  // Only when true, so reports of runs within their budget read as always.
  if (budgetSpent)
    document.getObject("totals")->try_emplace("budget_spent", true);
  if (!notStarted.empty()) {
    llvm::json::Array tasks;
    for (const NotStartedTask &task : notStarted)
      tasks.push_back(llvm::json::Object{
          {"file", task.file}, {"function", task.function}, {"key", task.key}});
    document["not_started"] = std::move(tasks);
  }
  return document;
}
