//===- TuneReport.h - Reports of kopt compile and kopt warm -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The per-group table and totals that `kopt compile` and `kopt warm` print,
// as text or as the JSON document `kopt.tune-report/1`.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TOOLS_KOPT_TUNEREPORT_H
#define KOPT_TOOLS_KOPT_TUNEREPORT_H

#include "kopt/Autotune/Autotuner.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::kopt {

/// One group of one input file.
struct ReportRow {
  std::string file;
  GroupOutcome outcome;
};

/// A task `kopt warm` did not start before its budget ran out.
struct NotStartedTask {
  std::string file;
  std::string function;
  std::string key;
};

/// Prints the table and the totals; `seconds` is the command's wall time.
/// Groups whose candidates were not all tried list those that were not,
/// and `notStarted` (at most 20 of them) follows the totals.
void printTuneReport(llvm::raw_ostream &os, const std::vector<ReportRow> &rows,
                     const std::string &target, double seconds,
                     llvm::ArrayRef<NotStartedTask> notStarted = {});

/// The same as a `kopt.tune-report/1` document.
llvm::json::Value toJsonReport(const std::vector<ReportRow> &rows,
                               const std::string &target, double seconds,
                               llvm::ArrayRef<NotStartedTask> notStarted = {});

} // namespace mlir::kopt

#endif // KOPT_TOOLS_KOPT_TUNEREPORT_H
