//===- LlmTuning.h - The LLM proposer inside the autotuner ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Autotune. With `llm` among the proposers, the autotuner
// evaluates the baseline and the built-in candidates first, then runs the
// LLM search (kopt/LLM/LlmSearch.h) from the fastest valid one, through the
// same worker pool, and stores every LLM attempt with its exchange.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_AUTOTUNE_LLMTUNING_H
#define KOPT_LIB_AUTOTUNE_LLMTUNING_H

#include "kopt/Autotune/Autotuner.h"
#include "kopt/LLM/LlmSearch.h"

#include <memory>

namespace mlir::kopt {

/// The provider and options of the LLM proposer for one autotuner.
class LlmTuner {
public:
  /// Creates the provider that `options.llm` names, for a device of
  /// architecture `arch` (`sm_90`).
  static llvm::Expected<std::unique_ptr<LlmTuner>>
  create(const LlmTuneOptions &options, const std::string &arch);

  /// Describes a device of architecture `arch` in the prompts.
  void setArch(const std::string &arch) {
    search.prompt.gpu = describeGpu(arch);
  }

  /// Runs the search for `task` from the round-0 reports `reports` of
  /// `plans` (plans[0] is the baseline). `storeAttempt` is called for each
  /// LLM attempt; `outcome` gains the search's summary and one line per
  /// attempt.
  llvm::Expected<SearchResult>
  run(const KernelTask &task, const std::vector<KernelPlan> &plans,
      const std::vector<::kopt::runtime::EvalReport> &reports,
      const SearchEvaluator &evaluate,
      const std::function<llvm::Error(const SearchAttempt &)> &storeAttempt,
      GroupOutcome &outcome);

private:
  LlmTuner(std::unique_ptr<LlmProvider> provider, LlmSearchOptions search)
      : provider(std::move(provider)), search(std::move(search)) {}

  std::unique_ptr<LlmProvider> provider;
  LlmSearchOptions search;
};

/// The verdict of an LLM attempt in one line (`valid, 1.84x`, `rejected:
/// output-mismatch`, `refused: no ```cuda block`).
std::string describeAttemptVerdict(const SearchAttempt &attempt);

} // namespace mlir::kopt

#endif // KOPT_LIB_AUTOTUNE_LLMTUNING_H
