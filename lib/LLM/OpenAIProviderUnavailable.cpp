//===- OpenAIProviderUnavailable.cpp - openai without libcurl -------------===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Builds without libcurl (the portable build, whose binaries must run where
// libcurl may be missing) keep the command and replay providers; asking for
// `openai` there gives one clear error.
//
//===----------------------------------------------------------------------===//

#include "kopt/LLM/Provider.h"

llvm::Expected<std::unique_ptr<mlir::kopt::LlmProvider>>
mlir::kopt::createOpenAIProvider(OpenAIOptions) {
  return llvm::createStringError(
      "this kopt was built without libcurl (a portable build): the openai "
      "provider is unavailable; use the command or replay provider, or a "
      "build with libcurl");
}
