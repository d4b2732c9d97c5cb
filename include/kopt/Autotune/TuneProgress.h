//===- TuneProgress.h - What the autotuner says while it works --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The events a watcher of the autotuner receives (AutotuneOptions::onProgress)
// while groups are tuned: a group's tuning begins, and a candidate's verdict
// is known, each sent after the attempt is stored in the kernel database.
// `kopt compile` and `kopt warm` print them as progress lines
// (docs/Autotune.md, "Progress").
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_AUTOTUNE_TUNEPROGRESS_H
#define KOPT_AUTOTUNE_TUNEPROGRESS_H

#include "kopt/Runtime/Protocol.h"
#include "kopt/Runtime/TaskPlan.h"

#include "llvm/ADT/StringRef.h"

#include <functional>
#include <optional>
#include <string>

namespace mlir::kopt {

/// How a candidate's report came about.
struct ReportOrigin {
  /// Taken from the kernel database, where an earlier run that was stopped
  /// stored it: not measured now.
  bool stored = false;
  /// Seconds its evaluation took (0 when stored): the request's round trip
  /// to the worker.
  double seconds = 0;
  /// Seconds spent making the request before it was sent, when this
  /// report's request was the first to need it (the host's fp64
  /// references, built once per request and reused by every request of
  /// the round); 0 otherwise.
  double requestSeconds = 0;
  /// The baseline's times in the request that measured it, when known.
  std::optional<::kopt::runtime::Timing> baselineTimes;
  /// Its plan's index in the round's plans, and how many plans the round
  /// has (the baseline included).
  size_t index = 0;
  size_t count = 0;
};

/// One event of the autotuner's progress.
struct TuneProgress {
  enum class Kind {
    /// The tuning of a group begins.
    GroupStarted,
    /// A candidate's verdict is known, and its attempt stored.
    CandidateDone,
  };
  Kind kind = Kind::GroupStarted;
  /// The group's function (without `@`) and task.
  llvm::StringRef function;
  const ::kopt::runtime::KernelTask *task = nullptr;
  /// CandidateDone: `proposer/variant` (the proposer alone for an answer
  /// refused before evaluation), its round, its report (null when refused,
  /// with `failure` saying why) and how the report came about.
  std::string candidate;
  unsigned round = 0;
  const ::kopt::runtime::EvalReport *report = nullptr;
  llvm::StringRef failure;
  const ReportOrigin *origin = nullptr;
};

/// Receives the autotuner's progress. It is called with the autotuner's
/// lock held, from the thread that tunes the group: it must not call the
/// autotuner.
using TuneProgressSink = std::function<void(const TuneProgress &)>;

} // namespace mlir::kopt

#endif // KOPT_AUTOTUNE_TUNEPROGRESS_H
