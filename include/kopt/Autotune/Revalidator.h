//===- Revalidator.h - Re-evaluate stored winners on a GPU ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The GPU half of `kopt db revalidate`: a stored winner whose driver or NVRTC
// changed is evaluated again, beside the baseline plan stored with it, in a
// kopt-worker on this machine, and the result is stored under the current
// toolchain's fingerprint (runtime/Database's `revalidateStaleRecords` does
// the bookkeeping). The record carries what this needs in `validation`:
// `task` and `baseline_plan` (the autotuner stores both with every winner).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_AUTOTUNE_REVALIDATOR_H
#define KOPT_AUTOTUNE_REVALIDATOR_H

#include "kopt/Evaluator/WorkerPool.h"
#include "kopt/Runtime/KernelRevalidation.h"

namespace mlir::kopt {

/// A `ReevaluateFunction` that evaluates each record on `pool`, which must
/// outlive it. A record without its task or baseline fails with an error
/// saying so (it stays pending).
::kopt::runtime::ReevaluateFunction makeWorkerReevaluator(WorkerPool &pool);

} // namespace mlir::kopt

#endif // KOPT_AUTOTUNE_REVALIDATOR_H
