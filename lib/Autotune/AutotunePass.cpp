//===- AutotunePass.cpp - The kopt-autotune pass ----------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/AutotunePass.h"

#include "kopt/Analysis/GroupAttributes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"

#include <cstdlib>

namespace mlir::kopt {
#define GEN_PASS_DEF_AUTOTUNEPASS
#include "lib/Autotune/AutotunePass.h.inc"
} // namespace mlir::kopt

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

namespace {
struct AutotunePass : public mlir::kopt::impl::AutotunePassBase<AutotunePass> {
  using AutotunePassBase::AutotunePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<TuneMode> mode = parseTuneMode(tuneMode);
    if (!mode) {
      module.emitError("kopt-autotune: tune must be never, missing or "
                       "always, not '")
          << tuneMode << "'";
      return signalPassFailure();
    }
    AutotuneOptions options;
    options.databasePath = databasePath;
    options.mode = *mode;
    options.proposers.clear();
    llvm::SmallVector<llvm::StringRef> names;
    llvm::StringRef(proposers).split(names, ',', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef name : names)
      options.proposers.push_back(name.trim().str());
    // The pass has no provider options: `llm` asks the OpenAI-compatible
    // server that the environment names (docs/LLM.md).
    if (std::getenv("KOPT_LLM_ENDPOINT"))
      options.llm.provider = "openai";
    options.maxCandidates = maxCandidates;
    options.precision = precision;
    options.minSpeedup = minSpeedup;
    options.target = target;
    options.tuningBudgetSeconds = budget;
    auto tuner = Autotuner::create(options);
    if (!tuner) {
      module.emitError("kopt-autotune: ") << llvm::toString(tuner.takeError());
      return signalPassFailure();
    }
    auto outcomes = autotuneModule(module, **tuner);
    if (!outcomes) {
      module.emitError("kopt-autotune: ")
          << llvm::toString(outcomes.takeError());
      return signalPassFailure();
    }
    unsigned misses = 0;
    for (const GroupOutcome &outcome : *outcomes)
      misses += outcome.source == GroupOutcome::Source::Baseline;
    if (misses) {
      InFlightDiagnostic diagnostic =
          requireCacheHit ? module.emitError() : module.emitRemark();
      diagnostic << "kopt-autotune: " << misses << " of " << outcomes->size()
                 << " groups missed the kernel database ("
                 << (*tuner)->describeTarget() << "); they keep the baseline";
      if (requireCacheHit)
        return signalPassFailure();
    }
  }
};
} // namespace
