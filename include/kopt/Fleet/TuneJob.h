//===- TuneJob.h - Tune the group of one queued job -------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The child's side of a `kopt serve-worker` job: rebuild the job's group from
// the MLIR its task carries, tune it through the same autotuner as `kopt
// compile` (which looks it up, tunes it and stores it), and say what came of
// it.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_FLEET_TUNEJOB_H
#define KOPT_FLEET_TUNEJOB_H

#include "kopt/Autotune/Autotuner.h"
#include "kopt/Fleet/JobChild.h"
#include "kopt/Runtime/TuningQueue.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"

namespace mlir::kopt {

/// The outcome of tuning `job`'s group: its task's MLIR is parsed into
/// `context` (with the bounds of any input) and `tuner` processes the group
/// whose key is the job's. Fails when the task does not read, its MLIR does
/// not parse (the error carries the diagnostics) or has no such group, or
/// when `tuner` fails.
llvm::Expected<GroupOutcome> tuneJob(const ::kopt::runtime::TuningJob &job,
                                     MLIRContext &context, Autotuner &tuner);

/// What the child reports for `outcome`: done (`how` names the outcome's
/// source) when the group was tuned, found or replayed; otherwise failed
/// with the error, or with why the group kept the baseline.
JobResult summarizeJobOutcome(llvm::Expected<GroupOutcome> outcome);

} // namespace mlir::kopt

#endif // KOPT_FLEET_TUNEJOB_H
