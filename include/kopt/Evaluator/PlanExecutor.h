//===- PlanExecutor.h - Check and time a group's plans on a GPU -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The small GPU harness behind `kopt plan --run`: runs each plan of a group
// on the same fresh inputs, checks every output against the fp64
// interpreter on sampled points, and times the plans with the baseline
// first and last so drift shows. The full evaluator (isolated worker,
// adversarial checks) is a separate component; this harness only measures.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_EVALUATOR_PLANEXECUTOR_H
#define KOPT_EVALUATOR_PLANEXECUTOR_H

#include "kopt/Codegen/KernelTask.h"
#include "kopt/Runtime/Cuda/CudaDriver.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace mlir::kopt {

class PlanExecutor {
public:
  /// Opens GPU 0; fails with a clear message on machines without one.
  static llvm::Expected<std::unique_ptr<PlanExecutor>>
  create(unsigned repetitions);

  /// Checks and times `plans` (the first must be the baseline) for the
  /// group `func`; prints a table to `os` and one JSON line per plan to
  /// stderr-free `jsonOut` if set. Returns false if any plan failed.
  bool runGroup(func::FuncOp func, const KernelTask &task,
                llvm::ArrayRef<KernelPlan> plans, llvm::raw_ostream &os);

private:
  std::unique_ptr<::kopt::runtime::CudaContext> context;
  unsigned repetitions = 50;
};

} // namespace mlir::kopt

#endif // KOPT_EVALUATOR_PLANEXECUTOR_H
