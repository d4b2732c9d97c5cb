//===- AutotunePass.cpp - The kopt-autotune pass ----------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "passes/AutotunePass.h"

#include "kopt/Autotune/Autotuner.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Debug.h"

#include <chrono>

#define DEBUG_TYPE "kopt-autotune"

namespace mlir::kopt {
#define GEN_PASS_DEF_AUTOTUNEPASS
#include "passes/AutotunePass.h.inc"
} // namespace mlir::kopt

using namespace mlir;
using namespace mlir::kopt;

namespace {
struct AutotunePass final
    : public mlir::kopt::impl::AutotunePassBase<AutotunePass> {
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
    options.proposers = splitProposerList(proposers);
    // The driver decides who answers (kopt compile reads KOPT_LLM_*); the
    // pass only takes what its options say.
    options.llm.provider = llmProvider;
    for (const std::string &option : llmOptions)
      if (llvm::Error error =
              addProviderOption(options.llm.providerOptions, option)) {
        module.emitError("kopt-autotune: llm-option ")
            << llvm::toString(std::move(error));
        return signalPassFailure();
      }
    if (llvm::is_contained(options.proposers, "llm") &&
        options.llm.provider.empty()) {
      module.emitError("kopt-autotune: proposers=llm needs llm-provider "
                       "(openai, command or replay)");
      return signalPassFailure();
    }
    LLVM_DEBUG(llvm::dbgs() << "kopt-autotune: db=" << databasePath << " tune="
                            << tuneMode << " proposers=" << proposers << "\n");
    options.maxCandidates = maxCandidates;
    options.precision = precision;
    options.minSpeedup = minSpeedup;
    options.target = target;
    if (budget < 0 || groupBudget < 0) {
      module.emitError("kopt-autotune: budget and group-budget must not be "
                       "negative");
      return signalPassFailure();
    }
    if (budget > 0)
      options.deadline =
          std::chrono::steady_clock::now() +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              std::chrono::duration<double>(budget));
    options.groupBudgetSeconds = groupBudget;
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
