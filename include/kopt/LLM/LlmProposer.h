//===- LlmProposer.h - Prompts and answers of the LLM proposer --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The LLM proposer's two ends around a provider (docs/LLM.md): the prompt
// that asks a model for one fused kernel of a group, built from templates
// embedded at build time (lib/LLM/templates/), and the strict parser that
// turns the model's answer into a KernelPlan or into a reason to feed back.
// Library `KoptLLMProposer`; the providers (`KoptLLM`) stay free of MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LLM_LLMPROPOSER_H
#define KOPT_LLM_LLMPROPOSER_H

#include "kopt/Codegen/KernelTask.h"
#include "kopt/LLM/Provider.h"

#include <optional>
#include <string>

namespace mlir::kopt {

/// The GPU a prompt describes.
struct GpuDescription {
  /// The NVRTC target, such as `sm_90`.
  std::string arch = "sm_90";
  /// Memory bandwidth in GB/s, for the physical floor; 0 when unknown.
  double bandwidthGBs = 0;
  /// Free text on the device (name, SM count, bandwidth, shared memory);
  /// empty leaves the line out.
  std::string details;
};

/// Returns the description kopt uses for `arch`: known details for `sm_80`,
/// `sm_89`, `sm_90` and `sm_100`, the name alone otherwise.
GpuDescription describeGpu(llvm::StringRef arch);

/// What a prompt is built from besides the task.
struct PromptOptions {
  GpuDescription gpu;
  /// The largest answer the parser accepts, stated in the prompt.
  size_t maxAnswerBytes = 64 * 1024;
};

/// A prompt: what the provider gets.
struct LlmPrompt {
  std::string system;
  std::string user;
};

/// Returns the name the kernel of an answer must have for `task`: its
/// outlined function's name made a C identifier (sanitizeIdentifier) with
/// `_llm` appended.
std::string getLlmEntryName(const KernelTask &task);

/// Returns the kernel's exact parameter list for `task`: every input as
/// `const T *__restrict__ inK`, then every output as `T *__restrict__ outK`,
/// in the task's order, separated by `, `.
std::string getLlmParameterList(const KernelTask &task);

/// Returns the group in `mlirText` (an outlined function) as plain loops:
/// each linalg op as its loop nest with one body operation per line, named
/// as the kernel ABI names the tensors (`in0`, `out0`, temporaries `t1`).
/// Empty when the text does not parse.
std::string formatPseudoCode(llvm::StringRef mlirText);

/// Builds the prompt asking for one fused kernel of `task`: the group as
/// MLIR, its tensors, the baseline's steps and sources when `baseline` is
/// given, the GPU, the kernel ABI and answer format, the tolerance and what
/// is forbidden. Deterministic: the same inputs give the same prompt (and
/// so the same replay hash).
LlmPrompt buildPrompt(const KernelTask &task, const KernelPlan *baseline,
                      const PromptOptions &options);

/// What a search round's prompts say beyond the task (LlmSearch.h).
struct SearchState {
  /// The round, from 1.
  unsigned round = 1;
  /// The fastest valid candidate so far and its name (`builtin/rows_bs64`),
  /// or none when only the baseline is valid.
  const KernelPlan *seed = nullptr;
  std::string seedName;
  /// Medians in microseconds, as last measured side by side; 0 when unknown.
  double seedUs = 0;
  double baselineUs = 0;
  /// The time to read every input and write every output once at the
  /// GPU's bandwidth, in microseconds; 0 when unknown.
  double floorUs = 0;
  /// One paragraph per earlier attempt, oldest first.
  std::vector<std::string> feedback;
};

/// Builds the prompt asking for `count` diverse optimisation ideas in plain
/// language, one per numbered line: the task's prompt, the search state,
/// then the question.
LlmPrompt buildIdeasPrompt(const KernelTask &task, const KernelPlan *baseline,
                           const PromptOptions &options,
                           const SearchState &state, unsigned count);

/// Builds the prompt asking for a kernel that implements `idea` (any idea
/// when empty): the task's prompt, the search state, the idea, and the
/// answer format.
LlmPrompt buildImplementationPrompt(const KernelTask &task,
                                    const KernelPlan *baseline,
                                    const PromptOptions &options,
                                    const SearchState &state,
                                    llvm::StringRef idea);

/// How strictly answers are read.
struct AnswerOptions {
  /// Longer answers are rejected.
  size_t maxAnswerBytes = 64 * 1024;
};

/// Reads a model's answer for `task` into a one-launch KernelPlan (proposer
/// `llm`, variant `llm-` plus 8 hex digits of the code's SHA-256) and checks
/// it with `verifyPlan`. Fails, with a reason meant to be shown to the model,
/// on an oversized answer, invalid UTF-8, no or several ```cuda or ```json
/// blocks, host code, a disallowed `#include` or library call, no or several
/// `__global__` kernels, a kernel that is not `extern "C"`, has another name
/// or another parameter list than required, or a missing or invalid launch
/// block. Never crashes, whatever the text.
llvm::Expected<KernelPlan> parseAnswer(llvm::StringRef text,
                                       const KernelTask &task,
                                       const AnswerOptions &options = {});

} // namespace mlir::kopt

#endif // KOPT_LLM_LLMPROPOSER_H
