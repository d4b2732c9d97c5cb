//===- GroupReport.h - Per-group facts for reports --------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Collects, from a module whose groups have been outlined, what `kopt
// analyze` reports about each group, and renders it as text or as the JSON
// document described in docs/Analyze.md.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_ANALYSIS_GROUPREPORT_H
#define KOPT_ANALYSIS_GROUPREPORT_H

#include "kopt/Analysis/GroupCost.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::kopt {

/// The version of the `kopt analyze --json` document.
inline constexpr llvm::StringLiteral kAnalyzeSchema = "kopt.analyze/1";

/// One tensor at a group's boundary.
struct TensorSummary {
  std::string type;
  std::string elementType;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
};

/// One member op of a group.
struct OpSummary {
  std::string description;
  /// `file:line:col` of the op in the input, when known.
  std::string location;
};

/// What is reported about one outlined group.
struct GroupSummary {
  int64_t id = 0;
  std::string kind;
  std::string parent;
  std::string function;
  std::string key;
  std::vector<OpSummary> ops;
  std::vector<TensorSummary> inputs;
  std::vector<TensorSummary> outputs;
  GroupCost cost;
};

/// A diagnostic collected while preparing the input (remarks, warnings).
struct DiagnosticSummary {
  std::string severity;
  std::string location;
  std::string message;
};

/// Summaries of every outlined group in `module`, in the order the groups
/// appear in their parent functions.
std::vector<GroupSummary> summarizeGroups(ModuleOp module,
                                          const DeviceRoofline &device);

/// Writes `groups` of `path` as the human-readable report.
void printGroupReport(llvm::raw_ostream &os, llvm::StringRef path,
                      const std::vector<GroupSummary> &groups,
                      const DeviceRoofline &device);

/// Returns the JSON object describing one analysed file.
llvm::json::Object
groupReportToJson(llvm::StringRef path, const std::vector<GroupSummary> &groups,
                  const std::vector<DiagnosticSummary> &diagnostics);

/// Returns the JSON object describing `device`.
llvm::json::Object deviceToJson(const DeviceRoofline &device);

/// Formats `value` with an SI prefix and `unit`, like `1.25 MB`.
std::string formatQuantity(double value, llvm::StringRef unit);

/// Formats a location as `file:line:col`, or "" when it has none.
std::string formatLocation(Location loc);

} // namespace mlir::kopt

#endif // KOPT_ANALYSIS_GROUPREPORT_H
