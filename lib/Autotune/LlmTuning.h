//===- LlmTuning.h - The LLM proposer inside the autotuner ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Autotune. The `llm` proposer (Proposer.h) over the LLM
// search (kopt/LLM/LlmSearch.h): it offers nothing in round 0, starts the
// search from round 0's fastest valid candidate, and from round 1 on offers
// each search round's answers (the seed first, measured again) until the
// search stops. Every answer is an attempt, stored with its exchange.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_AUTOTUNE_LLMTUNING_H
#define KOPT_LIB_AUTOTUNE_LLMTUNING_H

#include "kopt/Autotune/Proposer.h"
#include "kopt/LLM/LlmSearch.h"

#include <memory>

namespace mlir::kopt {

/// The `llm` proposer's factory for `options.llm`, with the provider it
/// names (made now, so its errors show before anything is tuned); prompts
/// describe an `sm_90` until `setArch`.
llvm::Expected<std::unique_ptr<ProposerFactory>>
makeLlmProposerFactory(const AutotuneOptions &options);

/// The verdict of an LLM attempt in one line (`valid, 1.84x`, `rejected:
/// output-mismatch`, `refused: no ```cuda block`).
std::string describeAttemptVerdict(const SearchAttempt &attempt);

} // namespace mlir::kopt

#endif // KOPT_LIB_AUTOTUNE_LLMTUNING_H
