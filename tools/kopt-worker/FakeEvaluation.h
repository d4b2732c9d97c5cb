//===- FakeEvaluation.h - Made-up reports for tests -------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The worker's `fake` test mode (KOPT_WORKER_TEST_MODE=fake[:<ms>]): every
// request is answered with reports made up from the candidates' plans, as
// if they had been evaluated on a GPU, so the autotuner's whole loop runs
// (and is tested) on machines without one. The same plan always gets the
// same report.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TOOLS_KOPT_WORKER_FAKEEVALUATION_H
#define KOPT_TOOLS_KOPT_WORKER_FAKEEVALUATION_H

#include "kopt/Runtime/Protocol.h"

namespace kopt::runtime {

/// The made-up reports of `request`'s candidates. Each plan's median is
/// 20 to 120 us, drawn from the FNV-1a hash of its JSON; one candidate in
/// four after the baseline fails `output-mismatch` (the baseline never
/// does); a plan that cannot be read fails `compile`, as it would in a real
/// evaluation. Speedups are the baseline's median over each median.
ReportMessage makeFakeReports(const EvaluateMessage &request);

} // namespace kopt::runtime

#endif // KOPT_TOOLS_KOPT_WORKER_FAKEEVALUATION_H
