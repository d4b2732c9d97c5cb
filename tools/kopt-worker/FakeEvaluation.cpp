//===- FakeEvaluation.cpp - Made-up reports for tests -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "FakeEvaluation.h"

#include "kopt/Runtime/Hash.h"
#include "kopt/Runtime/TaskPlan.h"

using namespace kopt::runtime;

/// The report of a plan whose JSON hashes to `hash`, before speedups.
static EvalReport makeReport(uint64_t hash, bool baseline,
                             int64_t repetitions) {
  EvalReport report;
  report.compiled = true;
  report.evidence.set("fake", true);
  if (!baseline && (hash >> 12) % 4 == 0) {
    report.failedCheck = FailedCheck::OutputMismatch;
    return report;
  }
  report.valid = true;
  Timing times;
  times.medianUs = 20.0 + double(hash % 1000) / 10.0;
  times.minUs = times.medianUs * 0.98;
  times.p10Us = times.medianUs * 0.99;
  times.p90Us = times.medianUs * 1.02;
  times.repetitions = repetitions;
  report.times = times;
  return report;
}

ReportMessage kopt::runtime::makeFakeReports(const EvaluateMessage &request) {
  ReportMessage answer;
  answer.requestId = request.requestId;
  for (size_t i = 0, e = request.candidates.size(); i < e; ++i) {
    EvalReport report;
    if (Result<KernelPlan> plan = kernelPlanFromJson(request.candidates[i]);
        !plan) {
      report.failedCheck = FailedCheck::Compile;
      report.compileLog = plan.status().message();
      report.evidence.set("reason", "unreadable-plan");
    } else {
      std::string text = json::write(request.candidates[i]);
      report = makeReport(fnv1a64(text.data(), text.size()), i == 0,
                          request.options.repetitions);
    }
    report.candidate = int64_t(i);
    answer.reports.push_back(std::move(report));
  }
  const EvalReport &baseline = answer.reports.front();
  for (EvalReport &report : answer.reports)
    if (report.times && baseline.times)
      report.speedup = baseline.times->medianUs / report.times->medianUs;
  return answer;
}
