//===- ProgressPrinter.cpp - Tuning progress a person can watch -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "ProgressPrinter.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

/// The width of the bar between its brackets.
static constexpr unsigned kBarWidth = 24;

std::string mlir::kopt::formatDuration(double seconds) {
  if (seconds < 60)
    return llvm::formatv("{0:F0}s", seconds).str();
  return llvm::formatv("{0}m{1:D2}s", unsigned(seconds) / 60,
                       unsigned(seconds) % 60)
      .str();
}

std::string mlir::kopt::describeCandidate(const TuneProgress &event) {
  if (!event.report) {
    // The first line is enough here; the database keeps all of it.
    llvm::StringRef failure = event.failure.split('\n').first;
    return "refused: " + (failure.size() > 120
                              ? failure.take_front(117).str() + "..."
                              : failure.str());
  }
  const rt::EvalReport &report = *event.report;
  std::string text = report.valid
                         ? "valid"
                         : std::string("rejected: ") +
                               rt::stringifyFailedCheck(report.failedCheck);
  if (report.valid && report.times)
    text += llvm::formatv(", {0:F2} us", report.times->medianUs).str();
  if (report.valid && report.speedup)
    text += llvm::formatv(", {0:F2}x", *report.speedup).str();
  if (report.suspicious)
    text += ", suspicious timing";
  if (rt::isTimingCut(report))
    text += llvm::formatv(", timed {0} times only: it cannot win",
                          report.times ? report.times->repetitions : 0)
                .str();
  if (event.origin && event.origin->stored)
    text += " (stored)";
  else if (event.origin)
    text += llvm::formatv(" ({0:F1} s)", event.origin->seconds).str();
  return text;
}

std::string mlir::kopt::describeGroupOutcome(const GroupOutcome &outcome) {
  if (outcome.tuningFailed)
    return "failed: " + outcome.note;
  std::string text = getSourceName(outcome.source).str();
  if (outcome.source == GroupOutcome::Source::Baseline)
    return outcome.note.empty() ? text : text + " (" + outcome.note + ")";
  text += ", " + outcome.proposer + "/" + outcome.variant;
  if (std::optional<double> speedup = outcome.getSpeedup())
    text += llvm::formatv(", {0:F2}x", *speedup).str();
  if (outcome.source == GroupOutcome::Source::Tuned) {
    text += llvm::formatv(", {0} of {1} valid", outcome.validCandidates,
                          outcome.evaluatedCandidates)
                .str();
    if (outcome.storedCandidates)
      text += llvm::formatv(" ({0} stored)", outcome.storedCandidates).str();
  }
  if (!outcome.notTried.empty())
    text += llvm::formatv(", {0} not tried (the tuning budget ran out)",
                          outcome.notTried.size())
                .str();
  return text;
}

ProgressPrinter::ProgressPrinter(llvm::raw_ostream &os, Options options)
    : os(os), options(std::move(options)) {}

std::string ProgressPrinter::describeStatus() const {
  double elapsed =
      std::chrono::duration<double>(Clock::now() - options.start).count();
  unsigned left = options.total > done ? options.total - done : 0;
  // From the groups that were tuned (hits cost nothing), spread over the
  // workers, and never past the budget.
  std::optional<double> eta;
  if (tuned)
    eta = tuningSeconds / tuned / std::max(1u, options.threads) * left;
  if (options.deadline) {
    double budgetLeft = std::max(
        0.0, std::chrono::duration<double>(*options.deadline - Clock::now())
                 .count());
    eta = eta ? std::min(*eta, budgetLeft) : budgetLeft;
  }
  if (left == 0)
    eta = 0;
  return llvm::formatv("{0} left, elapsed {1}, ETA {2}", left,
                       formatDuration(elapsed),
                       eta ? formatDuration(*eta) : std::string("-"))
      .str();
}

void ProgressPrinter::clearBar() {
  if (barShown)
    os << "\r\x1b[K";
  barShown = false;
}

void ProgressPrinter::drawBar() {
  if (options.live && options.enabled && options.total) {
    unsigned filled = kBarWidth * std::min(done, options.total) / options.total;
    os << "[" << std::string(filled, '#')
       << std::string(kBarWidth - filled, '.') << "] "
       << llvm::formatv("{0}/{1} groups, ", done, options.total)
       << describeStatus();
    if (bestSpeedup > 0)
      os << llvm::formatv(", best {0:F2}x", bestSpeedup);
    barShown = true;
  }
  os.flush();
}

void ProgressPrinter::emit(llvm::StringRef line) {
  clearBar();
  os << line << "\n";
  drawBar();
}

void ProgressPrinter::setThreads(unsigned threads) {
  std::lock_guard<std::mutex> lock(mutex);
  options.threads = threads;
}

void ProgressPrinter::onProgress(const TuneProgress &event) {
  if (!options.enabled)
    return;
  std::lock_guard<std::mutex> lock(mutex);
  std::string head = options.prefix + ": @" + event.function.str();
  if (event.kind == TuneProgress::Kind::GroupStarted) {
    emit(head + " (" + event.task->kind + ", " +
         llvm::StringRef(event.task->key).take_front(12).str() + "): tuning");
    return;
  }
  std::string where;
  if (event.round > 0)
    where += llvm::formatv(" round {0}", event.round).str();
  if (event.origin && event.origin->count)
    where += llvm::formatv(" [{0}/{1}]", event.origin->index + 1,
                           event.origin->count)
                 .str();
  emit(head + where + " " + event.candidate + ": " + describeCandidate(event));
}

void ProgressPrinter::onGroupDone(const GroupOutcome *outcome, double seconds) {
  std::lock_guard<std::mutex> lock(mutex);
  ++done;
  if (outcome && outcome->source == GroupOutcome::Source::Tuned) {
    ++tuned;
    tuningSeconds += seconds;
  }
  if (outcome)
    if (std::optional<double> speedup = outcome->getSpeedup())
      bestSpeedup = std::max(bestSpeedup, *speedup);
  if (!options.enabled)
    return;
  if (!outcome) {
    // The error is the tool's to print; the bar moves on.
    clearBar();
    drawBar();
    return;
  }
  emit(llvm::formatv("{0}: [{1}/{2}] @{3}: {4}; {5}", options.prefix, done,
                     options.total, outcome->function,
                     describeGroupOutcome(*outcome), describeStatus())
           .str());
}

void ProgressPrinter::printLine(llvm::StringRef line) {
  std::lock_guard<std::mutex> lock(mutex);
  emit(line);
}

void ProgressPrinter::finish() {
  std::lock_guard<std::mutex> lock(mutex);
  clearBar();
  os.flush();
}
