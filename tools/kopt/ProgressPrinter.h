//===- ProgressPrinter.h - Tuning progress a person can watch ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What `kopt compile` and `kopt warm` print on stderr while they tune
// (docs/Autotune.md, "Progress"): a line when a group's tuning begins, one
// per candidate (name, verdict, time, speedup), one per group done with the
// groups done and left and an estimate of the time left, and, on a
// terminal, a one-line progress bar under them.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TOOLS_KOPT_PROGRESSPRINTER_H
#define KOPT_TOOLS_KOPT_PROGRESSPRINTER_H

#include "kopt/Autotune/Autotuner.h"

#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

namespace mlir::kopt {

/// Prints the autotuner's progress. Thread-safe.
class ProgressPrinter {
public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    /// Starts every line (`kopt`, `kopt warm`).
    std::string prefix = "kopt";
    /// The groups to process in all, and how many are processed at once.
    unsigned total = 0;
    unsigned threads = 1;
    /// Print progress at all (off with --report=json and --quiet); on a
    /// terminal, keep a progress bar under the lines.
    bool enabled = true;
    bool live = false;
    /// When the command started, and when its budget ends.
    Clock::time_point start = Clock::now();
    std::optional<Clock::time_point> deadline;
  };

  ProgressPrinter(llvm::raw_ostream &os, Options options);

  /// Sets how many groups are processed at once.
  void setThreads(unsigned threads);
  /// The autotuner's sink (AutotuneOptions::onProgress).
  void onProgress(const TuneProgress &event);
  /// Counts a group processed in `seconds` and prints its line; a group
  /// whose processing failed has no outcome and prints nothing.
  void onGroupDone(const GroupOutcome *outcome, double seconds);
  /// Prints `line` (a message of the tool's own, such as a warning) above
  /// the bar, progress or not.
  void printLine(llvm::StringRef line);
  /// Clears the bar.
  void finish();

private:
  /// Writes `line` and a newline above the bar, and redraws the bar; the
  /// mutex is held, as for the next two.
  void emit(llvm::StringRef line);
  /// Erases the bar, when shown, leaving the cursor at the line's start.
  void clearBar();
  /// Draws the bar on a terminal, and flushes.
  void drawBar();
  /// The groups left, the time spent and the estimate of the time left.
  std::string describeStatus() const;

  llvm::raw_ostream &os;
  Options options;
  std::mutex mutex;
  unsigned done = 0;
  unsigned tuned = 0;
  double tuningSeconds = 0;
  double bestSpeedup = 0;
  bool barShown = false;
};

/// `42s` or `3m07s`.
std::string formatDuration(double seconds);

/// The verdict of a candidate in a progress line: `valid, 12.50 us, 1.92x`,
/// `rejected: output-mismatch`, or the reason an answer was refused.
std::string describeCandidate(const TuneProgress &event);

/// What became of a group in a progress line: `tuned, builtin/rows_bs128,
/// 1.92x, 4 of 5 valid`, `hit, ...`, `baseline (the tuning budget is
/// spent)`.
std::string describeGroupOutcome(const GroupOutcome &outcome);

} // namespace mlir::kopt

#endif // KOPT_TOOLS_KOPT_PROGRESSPRINTER_H
