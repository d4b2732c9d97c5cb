//===- AutotuneModule.cpp - Tune every group of a module --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/Autotuner.h"

#include "kopt/Analysis/GroupAttributes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::kopt;

llvm::Expected<std::vector<GroupOutcome>> mlir::kopt::autotuneModule(
    ModuleOp module, Autotuner &tuner,
    const std::function<void(const GroupOutcome &)> &onGroup) {
  std::vector<func::FuncOp> groups;
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(kFusionGroupAttrName))
      groups.push_back(func);
  std::vector<GroupOutcome> outcomes;
  for (func::FuncOp group : groups) {
    auto outcome = tuner.processGroup(group);
    if (!outcome)
      return outcome.takeError();
    if (!outcome->warning.empty())
      group.emitWarning(outcome->warning);
    tagCallsOfGroup(module, group);
    if (onGroup)
      onGroup(*outcome);
    outcomes.push_back(std::move(*outcome));
  }
  return outcomes;
}
