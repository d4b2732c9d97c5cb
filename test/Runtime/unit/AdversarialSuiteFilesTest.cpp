//===- AdversarialSuiteFilesTest.cpp - The suite is well-formed -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The evaluator's adversarial suite (test/Evaluator/adversarial) runs only on
// a GPU (AdversarialSuiteTest in kopt-gpu-tests). This test keeps it
// well-formed on any machine: the manifest names every cheat the suite must
// hold, each with known failed-check names; every plan reads, fits the task
// (verifyPlan) and compiles with NVRTC for sm_90.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/Nvrtc.h"
#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/PlanVerifier.h"
#include "kopt/Runtime/Protocol.h"
#include "kopt/Runtime/TaskPlan.h"

#include "gtest/gtest.h"

#include <fstream>
#include <set>
#include <sstream>

using namespace kopt::runtime;

namespace {

const std::string kSuiteDir =
    std::string(KOPT_SOURCE_DIR) + "/test/Evaluator/adversarial/";

json::Value readJson(const std::string &file) {
  std::ifstream stream(kSuiteDir + file);
  EXPECT_TRUE(stream.good()) << "cannot read " << kSuiteDir + file;
  std::stringstream text;
  text << stream.rdbuf();
  auto value = json::parse(text.str());
  EXPECT_TRUE(bool(value)) << file << ": " << value.status().message();
  return value ? *value : json::Value();
}

std::string getString(const json::Value &object, const char *key) {
  const json::Value *value = object.find(key);
  const std::string *text = value ? value->getString() : nullptr;
  return text ? *text : "";
}

struct Suite {
  KernelTask task;
  json::Value manifest;
};

Suite readSuite() {
  Suite suite;
  suite.manifest = readJson("manifest.json");
  auto task = kernelTaskFromJson(readJson(getString(suite.manifest, "task")));
  EXPECT_TRUE(bool(task)) << task.status().message();
  if (task)
    suite.task = *task;
  return suite;
}

/// Reads `file` as a plan and checks it against `task`.
std::optional<KernelPlan> readPlan(const std::string &file,
                                   const KernelTask &task) {
  json::Value document = readJson(file);
  auto plan = kernelPlanFromJson(document);
  EXPECT_TRUE(bool(plan)) << file << ": " << plan.status().message();
  if (!plan)
    return std::nullopt;
  EXPECT_FALSE(getString(document, "comment").empty())
      << file << " says nothing about what it does and what should happen";
  EXPECT_EQ(plan->taskKey, task.key) << file;
  Status verified = verifyPlan(*plan, task);
  EXPECT_TRUE(verified.isOk()) << file << ": " << verified.message();
  return *plan;
}

TEST(AdversarialSuiteFilesTest, ManifestNamesEveryCheat) {
  Suite suite = readSuite();
  EXPECT_EQ(getString(suite.manifest, "schema"), "kopt.adversarial/1");
  EXPECT_EQ(suite.task.inputs.size(), 3u);
  EXPECT_EQ(suite.task.outputs.size(), 1u);
  const json::Value *candidates = suite.manifest.find("candidates");
  ASSERT_TRUE(candidates && candidates->isArray());

  std::set<std::string> names;
  unsigned honest = 0, isolated = 0;
  for (size_t i = 0; i < candidates->size(); ++i) {
    const json::Value &candidate = candidates->at(i);
    std::string name = getString(candidate, "name");
    EXPECT_TRUE(names.insert(name).second) << "duplicate " << name;
    EXPECT_FALSE(getString(candidate, "plan").empty()) << name;
    EXPECT_FALSE(getString(candidate, "why").empty()) << name;
    const json::Value *isolate = candidate.find("isolate");
    ASSERT_TRUE(isolate && isolate->getBool()) << name;
    isolated += *isolate->getBool();
    const json::Value *expect = candidate.find("expect");
    ASSERT_TRUE(expect && expect->isArray() && expect->size() > 0) << name;
    for (size_t j = 0; j < expect->size(); ++j) {
      const std::string *check = expect->at(j).getString();
      ASSERT_NE(check, nullptr) << name;
      if (*check == "valid") {
        EXPECT_EQ(expect->size(), 1u) << name << ": valid excludes the rest";
        ++honest;
        continue;
      }
      std::optional<FailedCheck> parsed = parseFailedCheck(*check);
      EXPECT_TRUE(parsed && *parsed != FailedCheck::None)
          << name << ": unknown check '" << *check << "'";
    }
  }
  // The cheats the suite exists for (issue: the adversarial suite).
  for (const char *cheat :
       {"noop", "returns-input", "writes-half", "writes-input",
        "device-global-cache", "keyed-on-output-pointer", "fp16-math",
        "data-race", "oob-neighbour", "infinite-loop", "faulting-launch",
        "extra-launch", "first-n-calls", "ignores-input",
        // Kernels that skip their work only while they are timed.
        "skip-when-written", "skip-when-recent", "skip-per-block"})
    EXPECT_TRUE(names.count(cheat)) << "the suite lacks " << cheat;
  EXPECT_GE(honest, 2u);
  EXPECT_EQ(isolated, 2u) << "the hang and the fault run in a worker";
}

TEST(AdversarialSuiteFilesTest, EveryPlanVerifies) {
  Suite suite = readSuite();
  auto baseline = readPlan(getString(suite.manifest, "baseline"), suite.task);
  ASSERT_TRUE(baseline.has_value());
  EXPECT_EQ(baseline->proposer, "baseline");
  const json::Value *candidates = suite.manifest.find("candidates");
  ASSERT_NE(candidates, nullptr);
  for (size_t i = 0; i < candidates->size(); ++i)
    readPlan(getString(candidates->at(i), "plan"), suite.task);
}

TEST(AdversarialSuiteFilesTest, EverySourceCompiles) {
  if (!getNvrtcVersion())
    GTEST_SKIP() << getNvrtcVersion().status().message();
  Suite suite = readSuite();
  std::vector<std::string> files = {getString(suite.manifest, "baseline")};
  const json::Value *candidates = suite.manifest.find("candidates");
  ASSERT_NE(candidates, nullptr);
  for (size_t i = 0; i < candidates->size(); ++i)
    files.push_back(getString(candidates->at(i), "plan"));
  for (const std::string &file : files) {
    auto plan = kernelPlanFromJson(readJson(file));
    ASSERT_TRUE(bool(plan)) << file;
    NvrtcOptions options;
    options.extra = plan->compileOptions;
    options.warningsAsErrors = true;
    for (const KernelSource &source : plan->sources) {
      auto compiled = compileCuda(source.code, file, "sm_90", options);
      EXPECT_TRUE(bool(compiled))
          << file << ": " << compiled.status().message();
    }
  }
}

} // namespace
