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
