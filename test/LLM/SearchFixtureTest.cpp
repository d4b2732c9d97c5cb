//===- SearchFixtureTest.cpp - The scripted answers parse and compile -----===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The answers under Inputs/attention-softmax are what the GPU machine's run
// of the LLM search replays (scripts/gpu-check). Here, without a GPU, each
// one meets the fate it was written for before any evaluation: parsed or
// refused by the parser, compiled or rejected by NVRTC.
//
//===----------------------------------------------------------------------===//

#include "kopt/LLM/LlmProposer.h"
#include "kopt/LLM/LlmSearch.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"

#include "llvm/Support/MemoryBuffer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace mlir::kopt;
using ::testing::HasSubstr;

namespace {

/// The task of attention_block's softmax group (examples/attention_block.mlir).
KernelTask makeSoftmaxTask() {
  KernelTask task;
  task.key = "cc6c43c59de05ed14ea1e797e9aee5b312344aba61ef41e35430a81661de0dc7";
  task.name = "attention_block_kopt_g1_softmax";
  task.kind = "softmax";
  task.inputs = {{"in0", ElementType::F32, {8, 512, 512}}};
  task.outputs = {{"out0", ElementType::F32, {8, 512, 512}}};
  return task;
}

std::string readAnswer(const std::string &name) {
  std::string path = std::string(KOPT_SOURCE_DIR) +
                     "/test/LLM/Inputs/attention-softmax/" + name + ".txt";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(static_cast<bool>(buffer)) << "cannot read " << path;
  return buffer ? (*buffer)->getBuffer().str() : "";
}

/// "compiled", or why the answer went no further.
std::string fate(const std::string &name) {
  auto plan = parseAnswer(readAnswer(name), makeSoftmaxTask());
  if (!plan)
    return "refused: " + llvm::toString(plan.takeError());
  auto compiled = ::kopt::runtime::compileCuda(plan->sources.front().code,
                                               name + ".cu", "sm_90");
  if (!compiled)
    return "compile error: " + compiled.status().message();
  return "compiled";
}

const char *const kTask = "cc6c43c59de05ed1";

TEST(SearchFixtureTest, IdeasAreThreeNumberedLines) {
  for (const char *round : {"-r1-ideas", "-r2-ideas"})
    EXPECT_EQ(parseIdeas(readAnswer(kTask + std::string(round)), 3).size(), 3u)
        << round;
}

TEST(SearchFixtureTest, EachAnswerMeetsItsIntendedFate) {
  std::string task = kTask;
  EXPECT_THAT(fate(task + "-r1-kernel1"), HasSubstr("row_max"));
  EXPECT_EQ(fate(task + "-r1-kernel2"), "compiled"); // wrong numerics
  EXPECT_EQ(fate(task + "-r1-kernel3"), "compiled");
  EXPECT_EQ(fate(task + "-r2-kernel1"), "compiled");
  EXPECT_EQ(fate(task + "-r2-kernel2"), "compiled"); // the reward hack
  EXPECT_THAT(fate(task + "-r2-kernel3"), HasSubstr("refused"));
}

} // namespace
