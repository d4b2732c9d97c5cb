//===- LlmSearchTest.cpp - Rounds of the LLM search -------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The search against a scripted model (answers by replay name) and a fake
// evaluator that gives each candidate the verdict its source announces in a
// `// verdict:` comment, so every path of a round is driven without a GPU.
//
//===----------------------------------------------------------------------===//

#include "kopt/LLM/LlmSearch.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <map>
#include <mutex>

using namespace mlir::kopt;
namespace rt = ::kopt::runtime;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

KernelTask makeTask() {
  KernelTask task;
  task.key = std::string(64, 'b');
  task.name = "relu_kopt_g0_elementwise";
  task.kind = "elementwise";
  task.inputs = {{"in0", ElementType::F32, {1024, 1024}}};
  task.outputs = {{"out0", ElementType::F32, {1024, 1024}}};
  task.mlir = "func.func private @relu_kopt_g0_elementwise(%arg0: "
              "tensor<1024x1024xf32>) -> tensor<1024x1024xf32>";
  task.tolerance.relative = 1e-5;
  task.tolerance.absolute = 1e-6;
  return task;
}

KernelPlan makeBaseline(const KernelTask &task) {
  KernelPlan plan;
  plan.taskKey = task.key;
  plan.proposer = "baseline";
  plan.variant = "per-op";
  plan.sources = {{"main", "// baseline source\n"}};
  LaunchStep launch;
  launch.source = "main";
  launch.entry = "relu_baseline";
  launch.grid = {"4096"};
  launch.block = {"256"};
  launch.args = {"in0", "out0"};
  PlanStep step;
  step.kind = PlanStep::Kind::Launch;
  step.launch = launch;
  plan.steps = {step};
  return plan;
}

/// A kernel answer whose source carries `verdict` (and `tag`, to make
/// distinct sources).
std::string kernelAnswer(const std::string &verdict, const std::string &tag) {
  return "```cuda\n// verdict: " + verdict + " " + tag +
         "\nextern \"C\" __global__ void relu_kopt_g0_elementwise_llm(const "
         "float *__restrict__ in0, float *__restrict__ out0) {\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < 1024 * 1024) out0[i] = in0[i] > 0.f ? in0[i] : 0.f;\n"
         "}\n```\n```json\n{\"grid\": [\"cdiv(numel(out0), 256)\"], "
         "\"block\": [256]}\n```\n";
}

/// Answers by the request's replay name; records every request.
class ScriptedModel final : public LlmProvider {
public:
  std::map<std::string, std::string> answers;
  std::map<std::string, std::string> errors;
  std::vector<LlmRequest> requests;
  uint64_t tokensPerAnswer = 100;

  llvm::Expected<LlmResponse> complete(const LlmRequest &request) override {
    std::lock_guard<std::mutex> guard(mutex);
    requests.push_back(request);
    auto error = errors.find(request.replayName);
    if (error != errors.end())
      return llvm::createStringError(error->second);
    LlmResponse response;
    auto it = answers.find(request.replayName);
    response.text = it == answers.end() ? "" : it->second;
    response.model = "scripted";
    response.promptTokens = tokensPerAnswer;
    response.completionTokens = tokensPerAnswer;
    return response;
  }
  llvm::StringRef getKind() const override { return "scripted"; }

  const LlmRequest *find(const std::string &name) const {
    for (const LlmRequest &request : requests)
      if (request.replayName == name)
        return &request;
    return nullptr;
  }

private:
  std::mutex mutex;
};

/// The verdict a source announces, as a report.
rt::EvalReport judge(const KernelPlan &plan, int64_t index) {
  rt::EvalReport report;
  report.candidate = index;
  const std::string &code = plan.sources.front().code;
  auto timed = [&](double us) {
    report.compiled = true;
    report.valid = true;
    rt::Timing times;
    times.medianUs = times.minUs = times.p10Us = times.p90Us = us;
    times.repetitions = 20;
    report.times = times;
    report.speedup = 10.0 / us;
  };
  if (plan.proposer == "baseline" ||
      code.find("verdict: fast1") != std::string::npos) {
    timed(plan.proposer == "baseline" ? 10.0 : 8.0);
  } else if (code.find("verdict: fast2") != std::string::npos) {
    timed(5.0);
  } else if (code.find("verdict: slow") != std::string::npos) {
    timed(12.0);
  } else if (code.find("verdict: compile-error") != std::string::npos) {
    report.compiled = false;
    report.failedCheck = rt::FailedCheck::Compile;
    report.compileLog = "error: identifier \"row_max\" is undefined";
  } else if (code.find("verdict: wrong") != std::string::npos) {
    report.compiled = true;
    report.failedCheck = rt::FailedCheck::OutputMismatch;
    report.evidence.set("worst_index", int64_t(17));
  } else {
    report.compiled = true;
    report.failedCheck = rt::FailedCheck::InputIndependent;
  }
  return report;
}

struct Harness {
  KernelTask task = makeTask();
  KernelPlan baseline = makeBaseline(task);
  ScriptedModel model;
  std::vector<std::vector<std::string>> evaluated;
  std::vector<std::string> progress;
  LlmSearchOptions options;

  Harness() {
    options.budget.rounds = 2;
    options.budget.ideasPerRound = 3;
    options.parallelRequests = 3;
    options.prompt.gpu = describeGpu("sm_90");
  }

  llvm::Expected<SearchResult> run() {
    rt::EvalReport baselineReport = judge(baseline, 0);
    SearchSeed seed{baseline, baselineReport, baselineReport};
    SearchEvaluator evaluate = [&](const std::vector<const KernelPlan *> &plans)
        -> llvm::Expected<std::vector<rt::EvalReport>> {
      std::vector<std::string> names;
      std::vector<rt::EvalReport> reports;
      for (size_t i = 0; i < plans.size(); ++i) {
        names.push_back(plans[i]->proposer + "/" + plans[i]->variant);
        reports.push_back(judge(*plans[i], int64_t(i)));
      }
      evaluated.push_back(names);
      return reports;
    };
    return runLlmSearch(
        task, baseline, baselineReport, seed, model, evaluate, options,
        [&](const std::string &line) { progress.push_back(line); });
  }
};

const std::string kIdeas = "1. One thread per element.\n"
                           "2) Four elements per thread with float4.\n"
                           "- Grid-stride loop.\n";

TEST(LlmSearchTest, ParsesNumberedAndBulletedIdeas) {
  std::vector<std::string> ideas =
      parseIdeas("Ideas:\n1. First idea.\n 2) Second\n* **Third**\nnot one\n"
                 "- Fourth\n",
                 3);
  ASSERT_EQ(ideas.size(), 3u);
  EXPECT_EQ(ideas[0], "First idea.");
  EXPECT_EQ(ideas[1], "Second");
  EXPECT_EQ(ideas[2], "Third");
  EXPECT_TRUE(parseIdeas("no list here", 4).empty());
}

TEST(LlmSearchTest, CompileErrorIsFixedInRoundTwoWithFeedback) {
  Harness h;
  std::string prefix = std::string(16, 'b');
  h.model.answers[prefix + "-r1-ideas"] = kIdeas;
  h.model.answers[prefix + "-r1-kernel1"] = kernelAnswer("compile-error", "a");
  h.model.answers[prefix + "-r1-kernel2"] = kernelAnswer("wrong", "b");
  h.model.answers[prefix + "-r1-kernel3"] = kernelAnswer("fast1", "c");
  h.model.answers[prefix + "-r2-ideas"] = kIdeas;
  h.model.answers[prefix + "-r2-kernel1"] = kernelAnswer("fast2", "fixed");
  h.model.answers[prefix + "-r2-kernel2"] = "I cannot help with that.";
  h.model.answers[prefix + "-r2-kernel3"] = kernelAnswer("cheat", "e");
  auto result = h.run();
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());

  EXPECT_EQ(result->rounds, 2u);
  ASSERT_EQ(result->attempts.size(), 6u);
  ASSERT_TRUE(result->bestAttempt.has_value());
  const SearchAttempt &best = result->attempts[*result->bestAttempt];
  EXPECT_EQ(best.round, 2u);
  EXPECT_THAT(best.plan->sources[0].code, HasSubstr("fixed"));
  EXPECT_DOUBLE_EQ(*result->best.report.speedup, 2.0);
  EXPECT_EQ(result->stopReason, "all 2 round(s) were run");
  // Two progress lines per round: the ideas, then the round's outcome.
  ASSERT_EQ(h.progress.size(), 4u);
  EXPECT_EQ(h.progress[0], "round 1: 3 idea(s)");
  EXPECT_THAT(h.progress[3], HasSubstr("round 2: 3 answer(s), 2 evaluated, 1 "
                                       "valid; best llm/llm-"));

  // Round 1 measured the baseline and its three candidates; round 2 the
  // baseline, the seed from round 1 and the two new parsed candidates.
  ASSERT_EQ(h.evaluated.size(), 2u);
  EXPECT_EQ(h.evaluated[0].size(), 4u);
  ASSERT_EQ(h.evaluated[1].size(), 4u);
  EXPECT_EQ(h.evaluated[1][1], result->attempts[2].plan->proposer + "/" +
                                   result->attempts[2].plan->variant);

  // Each failure has its reason.
  EXPECT_EQ(result->attempts[0].report->failedCheck, rt::FailedCheck::Compile);
  EXPECT_EQ(result->attempts[1].report->failedCheck,
            rt::FailedCheck::OutputMismatch);
  EXPECT_FALSE(result->attempts[4].plan.has_value());
  EXPECT_THAT(result->attempts[4].failure, HasSubstr("refused"));
  EXPECT_EQ(result->attempts[5].report->failedCheck,
            rt::FailedCheck::InputIndependent);

  // Round 2's prompts carry round 1's feedback and the seed's source.
  const LlmRequest *second = h.model.find(prefix + "-r2-kernel1");
  ASSERT_NE(second, nullptr);
  EXPECT_THAT(second->userPrompt, HasSubstr("row_max"));
  EXPECT_THAT(second->userPrompt, HasSubstr("output-mismatch"));
  EXPECT_THAT(second->userPrompt, HasSubstr("verdict: fast1 c"));
  EXPECT_THAT(second->userPrompt, HasSubstr("One thread per element."));
  const LlmRequest *first = h.model.find(prefix + "-r1-kernel1");
  ASSERT_NE(first, nullptr);
  EXPECT_THAT(first->userPrompt, HasSubstr("No earlier attempts."));

  // The exchange is kept with each attempt, ideas included.
  const rt::json::Value &exchange = result->attempts[0].exchange;
  ASSERT_NE(exchange.find("answer"), nullptr);
  EXPECT_THAT(*exchange.find("answer")->getString(),
              HasSubstr("compile-error"));
  ASSERT_NE(exchange.find("ideas"), nullptr);
  EXPECT_EQ(*exchange.find("model")->getString(), "scripted");
  EXPECT_EQ(result->promptTokens, 8u * 100u);
}

TEST(LlmSearchTest, RoundsAtATimeOfferTheSeedThenTheNewCandidates) {
  Harness h;
  std::string prefix = std::string(16, 'b');
  h.model.answers[prefix + "-r1-kernel1"] = kernelAnswer("fast1", "a");
  h.model.answers[prefix + "-r1-kernel2"] = "no code at all";
  h.model.answers[prefix + "-r2-kernel1"] = kernelAnswer("fast2", "b");
  rt::EvalReport baselineReport = judge(h.baseline, 0);
  auto search = LlmSearch::create(h.task, h.baseline, baselineReport,
                                  {h.baseline, baselineReport, baselineReport},
                                  h.model, h.options);
  ASSERT_TRUE(static_cast<bool>(search)) << llvm::toString(search.takeError());

  // Round 1: the seed is the baseline, so only the new candidate goes.
  std::vector<const KernelPlan *> plans = (*search)->propose();
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ((*search)->getRoundBegin(), 0u);
  EXPECT_EQ((*search)->getResult().attempts.size(), 3u);
  // The wrong number of reports is refused, and the round stays open.
  llvm::Error wrong = (*search)->notify({baselineReport});
  EXPECT_THAT(llvm::toString(std::move(wrong)),
              HasSubstr("returned 1 reports for 2 candidates"));
  llvm::Error taken = (*search)->notify({baselineReport, judge(*plans[0], 1)});
  ASSERT_FALSE(static_cast<bool>(taken)) << llvm::toString(std::move(taken));
  EXPECT_FALSE((*search)->isDone());

  // Round 2: round 1's winner is the seed, measured again first.
  plans = (*search)->propose();
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ((*search)->getRoundBegin(), 3u);
  EXPECT_THAT(plans[0]->sources[0].code, HasSubstr("fast1 a"));
  EXPECT_THAT(plans[1]->sources[0].code, HasSubstr("fast2 b"));
  llvm::Error second = (*search)->notify(
      {baselineReport, judge(*plans[0], 1), judge(*plans[1], 2)});
  ASSERT_FALSE(static_cast<bool>(second)) << llvm::toString(std::move(second));
  EXPECT_TRUE((*search)->isDone());
  EXPECT_EQ((*search)->getResult().stopReason, "all 2 round(s) were run");
  EXPECT_TRUE((*search)->propose().empty());
}

TEST(LlmSearchTest, StopsAfterARoundWithoutGain) {
  Harness h;
  h.options.budget.rounds = 3;
  std::string prefix = std::string(16, 'b');
  h.model.answers[prefix + "-r1-ideas"] = kIdeas;
  h.model.answers[prefix + "-r1-kernel1"] = kernelAnswer("slow", "a");
  h.model.answers[prefix + "-r1-kernel2"] = kernelAnswer("wrong", "b");
  h.model.answers[prefix + "-r1-kernel3"] = "no code at all";
  auto result = h.run();
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  EXPECT_EQ(result->rounds, 1u);
  EXPECT_FALSE(result->bestAttempt.has_value());
  EXPECT_EQ(result->best.plan.proposer, "baseline");
  EXPECT_EQ(result->stopReason, "round 1 brought no gain");
}

TEST(LlmSearchTest, PatienceKeepsSearchingAfterFailedRound) {
  Harness h;
  h.options.budget.patience = 2;
  std::string prefix = std::string(16, 'b');
  h.model.answers[prefix + "-r1-kernel1"] = kernelAnswer("compile-error", "a");
  h.model.answers[prefix + "-r2-kernel1"] = kernelAnswer("fast1", "fix");
  auto result = h.run();
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  EXPECT_EQ(result->rounds, 2u);
  ASSERT_TRUE(result->bestAttempt.has_value());
  EXPECT_EQ(result->attempts[*result->bestAttempt].round, 2u);
}

TEST(LlmSearchTest, IdenticalAnswersAreEvaluatedOnce) {
  Harness h;
  h.options.budget.rounds = 1;
  std::string prefix = std::string(16, 'b');
  std::string same = kernelAnswer("fast1", "same");
  h.model.answers[prefix + "-r1-kernel1"] = same;
  h.model.answers[prefix + "-r1-kernel2"] = same;
  h.model.answers[prefix + "-r1-kernel3"] = same;
  auto result = h.run();
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  ASSERT_EQ(h.evaluated.size(), 1u);
  EXPECT_EQ(h.evaluated[0].size(), 2u); // the baseline and one candidate
  EXPECT_THAT(result->attempts[1].failure, HasSubstr("same source"));
  EXPECT_THAT(result->attempts[2].failure, HasSubstr("same source"));
}

TEST(LlmSearchTest, ProviderErrorsAreAttemptsWithTheirReason) {
  Harness h;
  h.options.budget.rounds = 1;
  std::string prefix = std::string(16, 'b');
  h.model.errors[prefix + "-r1-ideas"] = "HTTP 500 after 4 retries";
  h.model.errors[prefix + "-r1-kernel1"] = "HTTP 429 after 4 retries";
  h.model.answers[prefix + "-r1-kernel2"] = kernelAnswer("fast1", "x");
  h.model.answers[prefix + "-r1-kernel3"] = std::string(100000, 'x');
  auto result = h.run();
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  ASSERT_EQ(result->attempts.size(), 3u);
  EXPECT_THAT(result->attempts[0].failure, HasSubstr("HTTP 429"));
  EXPECT_TRUE(result->attempts[1].report.has_value());
  EXPECT_THAT(result->attempts[2].failure, HasSubstr("refused"));
  // Without ideas, the kernels were asked for with a free choice.
  EXPECT_THAT(h.model.find(prefix + "-r1-kernel2")->userPrompt,
              HasSubstr("any idea of yours"));
  EXPECT_THAT(
      *result->attempts[0].exchange.find("ideas")->find("error")->getString(),
      HasSubstr("HTTP 500"));
}

TEST(LlmSearchTest, TokenAndCandidateBudgetsStopTheSearch) {
  Harness h;
  h.options.budget.rounds = 5;
  h.options.budget.maxTokens = 500;
  std::string prefix = std::string(16, 'b');
  for (int r = 1; r <= 5; ++r)
    for (int k = 1; k <= 3; ++k)
      h.model.answers[prefix + "-r" + std::to_string(r) + "-kernel" +
                      std::to_string(k)] =
          kernelAnswer(r == 1 && k == 1 ? "fast1" : "fast2",
                       std::to_string(r) + "." + std::to_string(k));
  auto result = h.run();
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  EXPECT_EQ(result->rounds, 1u);
  EXPECT_THAT(result->stopReason, HasSubstr("token budget"));

  Harness c;
  c.options.budget.rounds = 5;
  c.options.budget.maxCandidates = 4;
  c.model.answers = h.model.answers;
  auto capped = c.run();
  ASSERT_TRUE(static_cast<bool>(capped)) << llvm::toString(capped.takeError());
  unsigned parsed = 0;
  for (const SearchAttempt &attempt : capped->attempts)
    parsed += attempt.plan.has_value();
  EXPECT_EQ(parsed, 4u);
}

TEST(LlmSearchTest, CostEstimateFromPrices) {
  Harness h;
  h.options.budget.rounds = 1;
  h.options.prices.inputPerMillion = 3.0;
  h.options.prices.outputPerMillion = 15.0;
  std::string prefix = std::string(16, 'b');
  h.model.answers[prefix + "-r1-kernel1"] = kernelAnswer("slow", "a");
  auto result = h.run();
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  const rt::json::Value *cost =
      result->attempts[0].exchange.find("cost_estimate");
  ASSERT_NE(cost, nullptr);
  EXPECT_NEAR(cost->getNumber().value_or(-1), (100 * 3.0 + 100 * 15.0) * 1e-6,
              1e-12);
}

} // namespace
