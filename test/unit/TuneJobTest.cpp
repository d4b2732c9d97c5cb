//===- TuneJobTest.cpp - Tests of the child's side of a job -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Rebuilds a queued job's group from the MLIR its task carries, in a fresh
// context, and hands it to an autotuner that never tunes (no GPU needed);
// and what the child reports for each kind of outcome.
//
//===----------------------------------------------------------------------===//

#include "kopt/Fleet/TuneJob.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Codegen/KernelTask.h"
#include "kopt/InitAll.h"
#include "kopt/Support/ModelLoader.h"
#include "passes/Passes.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

namespace {

/// The job of the first fusion group of examples/layernorm_gelu.mlir.
rt::TuningJob makeExampleJob() {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  auto module = loadModelGraph(std::string(KOPT_SOURCE_DIR) +
                                   "/examples/layernorm_gelu.mlir",
                               context, sourceMgr);
  rt::TuningJob job;
  job.id = 12;
  if (!module) {
    ADD_FAILURE() << llvm::toString(module.takeError());
    return job;
  }
  EXPECT_TRUE(succeeded(prepareModelGraph(**module)));
  for (auto func : (*module)->getOps<func::FuncOp>()) {
    if (!func->hasAttr(kFusionGroupAttrName))
      continue;
    auto task = buildKernelTask(func);
    if (!task) {
      ADD_FAILURE() << llvm::toString(task.takeError());
      return job;
    }
    job.taskKey = task->key;
    job.task = rt::toJson(*task);
    return job;
  }
  ADD_FAILURE() << "no fusion group";
  return job;
}

/// An autotuner over a fresh database that never tunes.
class TuneJobTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("kopt-tune-job", folder));
    AutotuneOptions options;
    options.databasePath = (folder + "/kopt.db").str();
    options.mode = TuneMode::Never;
    auto created = Autotuner::create(options);
    ASSERT_TRUE(bool(created)) << llvm::toString(created.takeError());
    tuner = std::move(*created);
    registerAllDialects(registry);
    context = std::make_unique<MLIRContext>(registry);
    context->printOpOnDiagnostic(false);
  }
  void TearDown() override {
    tuner.reset();
    llvm::sys::fs::remove_directories(folder);
  }

  /// The error `job` fails with.
  std::string errorOf(const rt::TuningJob &job) {
    auto outcome = tuneJob(job, *context, *tuner);
    if (outcome) {
      ADD_FAILURE() << "job " << job.id << " did not fail";
      return "";
    }
    return llvm::toString(outcome.takeError());
  }

  llvm::SmallString<128> folder;
  std::unique_ptr<Autotuner> tuner;
  DialectRegistry registry;
  std::unique_ptr<MLIRContext> context;
};

TEST_F(TuneJobTest, GroupIsRebuiltFromItsTask) {
  rt::TuningJob job = makeExampleJob();
  ASSERT_FALSE(job.taskKey.empty());
  auto outcome = tuneJob(job, *context, *tuner);
  ASSERT_TRUE(bool(outcome)) << llvm::toString(outcome.takeError());
  EXPECT_EQ(outcome->taskKey, job.taskKey);
  // Never tuned: the baseline stands, and the job is not done.
  EXPECT_EQ(outcome->source, GroupOutcome::Source::Baseline);
  JobResult result = summarizeJobOutcome(std::move(outcome));
  EXPECT_TRUE(result.finished);
  EXPECT_FALSE(result.error.empty());
  EXPECT_EQ(result.how, "");
}

TEST_F(TuneJobTest, BadTasksFail) {
  rt::TuningJob job = makeExampleJob();
  ASSERT_FALSE(job.taskKey.empty());

  rt::TuningJob unreadable = job;
  unreadable.task = rt::json::Value::object();
  EXPECT_EQ(errorOf(unreadable).rfind("job 12: its task does not read: ", 0),
            0u);

  rt::TuningJob unparsable = job;
  unparsable.task.set("mlir", rt::json::Value("func.func @f("));
  EXPECT_EQ(errorOf(unparsable)
                .rfind("job 12: its task's MLIR does not "
                       "parse: ",
                       0),
            0u);

  rt::TuningJob otherKey = job;
  otherKey.taskKey = "ffff";
  EXPECT_EQ(errorOf(otherKey),
            "job 12: its task's MLIR has no group with key ffff");
}

TEST(SummarizeJobOutcomeTest, DoneOnlyWhenTunedFoundOrReplayed) {
  auto outcomeFrom = [](GroupOutcome::Source source, std::string note = "",
                        bool tuningFailed = false) {
    GroupOutcome outcome;
    outcome.source = source;
    outcome.note = std::move(note);
    outcome.tuningFailed = tuningFailed;
    return summarizeJobOutcome(outcome);
  };
  using Source = GroupOutcome::Source;
  EXPECT_EQ(outcomeFrom(Source::Tuned).how, "tuned");
  EXPECT_EQ(outcomeFrom(Source::Hit).how, "hit");
  EXPECT_EQ(outcomeFrom(Source::Replayed).how, "replayed");
  EXPECT_EQ(outcomeFrom(Source::Tuned).error, "");
  EXPECT_EQ(outcomeFrom(Source::Baseline).error, "not tuned");
  EXPECT_EQ(outcomeFrom(Source::Baseline, "no candidate beat it").error,
            "no candidate beat it");
  JobResult failed = outcomeFrom(Source::Hit, "the worker died", true);
  EXPECT_EQ(failed.error, "the worker died");
  EXPECT_EQ(failed.how, "");
  JobResult error =
      summarizeJobOutcome(llvm::createStringError("database is locked"));
  EXPECT_TRUE(error.finished);
  EXPECT_EQ(error.error, "database is locked");
}

} // namespace
