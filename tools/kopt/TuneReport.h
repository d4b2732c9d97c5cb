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

/// Prints the table and the totals; `seconds` is the command's wall time.
void printTuneReport(llvm::raw_ostream &os, const std::vector<ReportRow> &rows,
                     const std::string &target, double seconds);

/// The same as a `kopt.tune-report/1` document.
llvm::json::Value toJsonReport(const std::vector<ReportRow> &rows,
                               const std::string &target, double seconds);

} // namespace mlir::kopt

#endif // KOPT_TOOLS_KOPT_TUNEREPORT_H
