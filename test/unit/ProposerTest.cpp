//===- ProposerTest.cpp - Proposers as peers, in rounds ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The proposer interface without a GPU: scripted proposers and a fake
// evaluator drive runProposerRounds, and the registry makes kopt's own
// proposers by name.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Autotune/Proposer.h"
#include "passes/Passes.h"

#include "llvm/Support/MemoryBuffer.h"
#include "gmock/gmock.h"

#include <map>

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

KernelPlan makePlan(const std::string &proposer, const std::string &variant) {
  KernelPlan plan;
  plan.proposer = proposer;
  plan.variant = variant;
  return plan;
}

std::string nameOf(const KernelPlan &plan) {
  return plan.proposer + "/" + plan.variant;
}

Candidate offer(KernelPlan plan) {
  Candidate candidate;
  candidate.plan = std::move(plan);
  return candidate;
}

Candidate remeasure(KernelPlan plan) {
  Candidate candidate = offer(std::move(plan));
  candidate.remeasured = true;
  return candidate;
}

Candidate refuse(const std::string &why) {
  Candidate candidate;
  candidate.failure = why;
  return candidate;
}

/// Offers the candidates scripted for each round, records what it is told,
/// and is done once notified of `lastRound`.
class ScriptedProposer final : public Proposer {
public:
  struct Notice {
    unsigned round;
    std::vector<std::string> plans;
    std::vector<std::optional<size_t>> own;
  };

  ScriptedProposer(std::string name,
                   std::map<unsigned, std::vector<Candidate>> script,
                   unsigned lastRound)
      : name(std::move(name)), script(std::move(script)), lastRound(lastRound) {
  }

  llvm::StringRef getName() const override { return name; }
  llvm::Expected<std::vector<Candidate>> propose(unsigned round) override {
    proposed.push_back(round);
    return script[round];
  }
  llvm::Error notify(const RoundReports &reports,
                     llvm::ArrayRef<std::optional<size_t>> own) override {
    Notice notice{reports.round, {}, own.vec()};
    for (const KernelPlan *plan : reports.plans)
      notice.plans.push_back(nameOf(*plan));
    EXPECT_EQ(reports.plans.size(), reports.reports.size());
    notices.push_back(std::move(notice));
    done = reports.round >= lastRound;
    return llvm::Error::success();
  }
  bool isDone() const override { return done; }

  std::vector<unsigned> proposed;
  std::vector<Notice> notices;

private:
  std::string name;
  std::map<unsigned, std::vector<Candidate>> script;
  unsigned lastRound;
  bool done = false;
};

/// Judges each plan by its variant: `wrong` is invalid, `slow-baseline`
/// fails the baseline, anything else is valid at twice the baseline's
/// speed. Tries at most `budget` plans in all (the rest are not tried).
/// Records every request, and every report given and attempt kept, in
/// order.
struct Harness {
  std::vector<std::vector<std::string>> requests;
  std::vector<std::string> kept;
  std::vector<std::string> events;
  size_t budget = 1000;

  RoundEvaluator evaluate = [this](unsigned,
                                   const std::vector<const KernelPlan *> &plans,
                                   const ReportSink &sink)
      -> llvm::Expected<std::vector<std::optional<rt::EvalReport>>> {
    std::vector<std::string> names;
    std::vector<std::optional<rt::EvalReport>> reports;
    for (size_t i = 0; i < plans.size(); ++i) {
      if (budget == 0) {
        reports.emplace_back();
        continue;
      }
      --budget;
      names.push_back(nameOf(*plans[i]));
      rt::EvalReport report;
      report.candidate = int64_t(i);
      report.compiled = true;
      report.valid =
          plans[i]->variant != "wrong" && plans[i]->variant != "slow-baseline";
      if (report.valid) {
        rt::Timing times;
        times.medianUs = i == 0 ? 10.0 : 5.0;
        report.times = times;
        report.speedup = 10.0 / times.medianUs;
      }
      events.push_back("report " + nameOf(*plans[i]));
      ReportOrigin origin;
      origin.index = i;
      origin.count = plans.size();
      if (llvm::Error error = sink(i, report, origin))
        return std::move(error);
      reports.push_back(std::move(report));
    }
    requests.push_back(std::move(names));
    return reports;
  };

  AttemptSink keep = [this](const ProposerAttempt &attempt) {
    std::string line =
        attempt.proposer.str() + " r" + std::to_string(attempt.round) + " ";
    line += attempt.candidate->plan ? attempt.candidate->plan->variant
                                    : "refused: " + attempt.candidate->failure;
    if (attempt.report)
      line += attempt.report->valid ? " valid" : " invalid";
    EXPECT_EQ(attempt.report != nullptr, attempt.origin != nullptr);
    kept.push_back(line);
    events.push_back("keep " + line);
    return llvm::Error::success();
  };
};

TEST(ProposerTest, RoundsGiveEveryProposerTheWholeRound) {
  ScriptedProposer baseline("baseline",
                            {{0, {offer(makePlan("baseline", "b"))}}}, 0);
  ScriptedProposer builtin(
      "builtin",
      {{0,
        {offer(makePlan("builtin", "v1")), offer(makePlan("builtin", "v2"))}}},
      0);
  ScriptedProposer searcher(
      "llm",
      {{1,
        {remeasure(makePlan("builtin", "v2")), offer(makePlan("llm", "k1")),
         refuse("no code")}},
       {2, {offer(makePlan("llm", "wrong"))}}},
      2);
  Harness h;
  auto result = runProposerRounds("f", {&baseline, &builtin, &searcher},
                                  h.evaluate, h.keep, /*maxFirstRound=*/16);
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());

  // The baseline is candidate 0 of every request; the seed goes again in
  // round 1 beside the new candidate.
  ASSERT_EQ(h.requests.size(), 3u);
  EXPECT_THAT(h.requests[0],
              ElementsAre("baseline/b", "builtin/v1", "builtin/v2"));
  EXPECT_THAT(h.requests[1], ElementsAre("baseline/b", "builtin/v2", "llm/k1"));
  EXPECT_THAT(h.requests[2], ElementsAre("baseline/b", "llm/wrong"));

  // Every new attempt is kept in order, a refused one without a report;
  // the remeasured seed is not a new attempt.
  EXPECT_THAT(h.kept,
              ElementsAre("baseline r0 b valid", "builtin r0 v1 valid",
                          "builtin r0 v2 valid", "llm r1 k1 valid",
                          "llm r1 refused: no code", "llm r2 wrong invalid"));
  EXPECT_EQ(result->rounds, 3u);
  EXPECT_EQ(result->evaluated, 5u);
  EXPECT_EQ(result->valid, 4u);
  ASSERT_EQ(result->firstPlans.size(), 3u);
  EXPECT_EQ(nameOf(result->firstPlans[0]), "baseline/b");
  ASSERT_EQ(result->firstReports.size(), 3u);
  EXPECT_DOUBLE_EQ(*result->firstReports[2].speedup, 2.0);

  // The one-shot proposers are asked once; the searcher in every round, and
  // it hears round 0's reports on the others' plans.
  EXPECT_THAT(baseline.proposed, ElementsAre(0u));
  EXPECT_THAT(builtin.proposed, ElementsAre(0u));
  ASSERT_EQ(builtin.notices.size(), 1u);
  EXPECT_THAT(builtin.notices[0].own, ElementsAre(1u, 2u));
  EXPECT_THAT(searcher.proposed, ElementsAre(0u, 1u, 2u));
  ASSERT_EQ(searcher.notices.size(), 3u);
  EXPECT_EQ(searcher.notices[0].plans.size(), 3u);
  EXPECT_TRUE(searcher.notices[0].own.empty());
  EXPECT_THAT(searcher.notices[1].own,
              ElementsAre(std::optional<size_t>(1), std::optional<size_t>(2),
                          std::nullopt));
  EXPECT_THAT(searcher.notices[2].own, ElementsAre(1u));
}

TEST(ProposerTest, EachAttemptIsKeptAsSoonAsItsReportIsKnown) {
  ScriptedProposer baseline("baseline",
                            {{0, {offer(makePlan("baseline", "b"))}}}, 0);
  ScriptedProposer builtin(
      "builtin",
      {{0,
        {offer(makePlan("builtin", "v1")), offer(makePlan("builtin", "v2"))}}},
      0);
  Harness h;
  auto result = runProposerRounds("f", {&baseline, &builtin}, h.evaluate,
                                  h.keep, /*maxFirstRound=*/16);
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  EXPECT_THAT(h.events,
              ElementsAre("report baseline/b", "keep baseline r0 b valid",
                          "report builtin/v1", "keep builtin r0 v1 valid",
                          "report builtin/v2", "keep builtin r0 v2 valid"));
}

TEST(ProposerTest, PlansNotTriedAreDroppedAndEndTheRounds) {
  ScriptedProposer baseline("baseline",
                            {{0, {offer(makePlan("baseline", "b"))}}}, 0);
  ScriptedProposer builtin(
      "builtin",
      {{0,
        {offer(makePlan("builtin", "v1")), offer(makePlan("builtin", "v2")),
         offer(makePlan("builtin", "v3"))}}},
      0);
  ScriptedProposer searcher("llm", {{1, {offer(makePlan("llm", "k1"))}}}, 1);
  Harness h;
  h.budget = 2;
  auto result = runProposerRounds("f", {&baseline, &builtin, &searcher},
                                  h.evaluate, h.keep, /*maxFirstRound=*/16);
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  EXPECT_TRUE(result->budgetSpent);
  EXPECT_THAT(result->notTried, ElementsAre("builtin/v2", "builtin/v3"));
  EXPECT_THAT(h.kept,
              ElementsAre("baseline r0 b valid", "builtin r0 v1 valid"));
  EXPECT_EQ(result->evaluated, 2u);
  ASSERT_EQ(result->firstPlans.size(), 2u);
  ASSERT_EQ(result->firstReports.size(), 2u);
  // The proposers hear of what was evaluated; no round follows.
  ASSERT_EQ(builtin.notices.size(), 1u);
  EXPECT_THAT(builtin.notices[0].plans,
              ElementsAre("baseline/b", "builtin/v1"));
  EXPECT_THAT(builtin.notices[0].own, ElementsAre(std::optional<size_t>(1),
                                                  std::nullopt, std::nullopt));
  EXPECT_THAT(searcher.proposed, ElementsAre(0u));
  EXPECT_EQ(result->rounds, 1u);
}

TEST(ProposerTest, NothingIsDoneWhenTheBaselineIsNotTried) {
  ScriptedProposer baseline("baseline",
                            {{0, {offer(makePlan("baseline", "b"))}}}, 0);
  ScriptedProposer builtin("builtin", {{0, {offer(makePlan("builtin", "v1"))}}},
                           0);
  Harness h;
  h.budget = 0;
  auto result = runProposerRounds("f", {&baseline, &builtin}, h.evaluate,
                                  h.keep, /*maxFirstRound=*/16);
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  EXPECT_TRUE(result->budgetSpent);
  EXPECT_THAT(result->notTried, ElementsAre("baseline/b", "builtin/v1"));
  EXPECT_TRUE(result->firstPlans.empty());
  EXPECT_TRUE(h.kept.empty());
  EXPECT_TRUE(builtin.notices.empty());
}

TEST(ProposerTest, ARoundWithoutPlansEvaluatesNothing) {
  ScriptedProposer baseline("baseline",
                            {{0, {offer(makePlan("baseline", "b"))}}}, 0);
  ScriptedProposer searcher("llm", {{1, {refuse("no answer")}}}, 1);
  Harness h;
  auto result = runProposerRounds("f", {&baseline, &searcher}, h.evaluate,
                                  h.keep, /*maxFirstRound=*/16);
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  EXPECT_EQ(h.requests.size(), 1u);
  EXPECT_THAT(h.kept,
              ElementsAre("baseline r0 b valid", "llm r1 refused: no answer"));
  ASSERT_EQ(searcher.notices.size(), 2u);
  EXPECT_TRUE(searcher.notices[1].plans.empty());
  EXPECT_THAT(searcher.notices[1].own, ElementsAre(std::nullopt));
}

TEST(ProposerTest, FirstRoundIsCappedWithTheBaselineIncluded) {
  ScriptedProposer baseline("baseline",
                            {{0, {offer(makePlan("baseline", "b"))}}}, 0);
  ScriptedProposer builtin(
      "builtin",
      {{0,
        {offer(makePlan("builtin", "v1")), offer(makePlan("builtin", "v2")),
         offer(makePlan("builtin", "v3"))}}},
      0);
  Harness h;
  auto result = runProposerRounds("f", {&baseline, &builtin}, h.evaluate,
                                  h.keep, /*maxFirstRound=*/2);
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  ASSERT_EQ(h.requests.size(), 1u);
  EXPECT_THAT(h.requests[0], ElementsAre("baseline/b", "builtin/v1"));
  EXPECT_THAT(h.kept,
              ElementsAre("baseline r0 b valid", "builtin r0 v1 valid"));
  ASSERT_EQ(builtin.notices.size(), 1u);
  EXPECT_THAT(builtin.notices[0].own, ElementsAre(std::optional<size_t>(1),
                                                  std::nullopt, std::nullopt));
}

TEST(ProposerTest, BaselineMustPassItsFirstEvaluation) {
  ScriptedProposer baseline(
      "baseline", {{0, {offer(makePlan("baseline", "slow-baseline"))}}}, 0);
  ScriptedProposer builtin("builtin", {{0, {offer(makePlan("builtin", "v1"))}}},
                           0);
  Harness h;
  auto result = runProposerRounds("f", {&baseline, &builtin}, h.evaluate,
                                  h.keep, /*maxFirstRound=*/16);
  ASSERT_FALSE(static_cast<bool>(result));
  EXPECT_THAT(llvm::toString(result.takeError()),
              HasSubstr("the baseline of @f failed its own evaluation"));
  // The attempts are kept all the same, and no one hears of the round.
  EXPECT_EQ(h.kept.size(), 2u);
  EXPECT_TRUE(builtin.notices.empty());
}

TEST(ProposerTest, FirstProposerMustOfferThePlanToBeat) {
  ScriptedProposer baseline("baseline", {{0, {refuse("cannot")}}}, 0);
  Harness h;
  auto result = runProposerRounds("f", {&baseline}, h.evaluate, h.keep,
                                  /*maxFirstRound=*/16);
  ASSERT_FALSE(static_cast<bool>(result));
  EXPECT_EQ(llvm::toString(result.takeError()),
            "the baseline proposer gave @f no plan to measure the others "
            "against");
  EXPECT_TRUE(h.requests.empty());
}

TEST(ProposerTest, RegistryRefusesUnknownNamesListingTheKnownOnes) {
  ProposerRegistry registry = createProposerRegistry();
  EXPECT_THAT(registry.getNames(), ElementsAre("baseline", "builtin", "llm"));
  auto unknown = registry.lookup("oracle");
  ASSERT_FALSE(static_cast<bool>(unknown));
  EXPECT_EQ(llvm::toString(unknown.takeError()),
            "unknown proposer 'oracle' (available: baseline, builtin, llm)");

  ProposerRegistry mine;
  mine.add("scripted",
           [](const AutotuneOptions &)
               -> llvm::Expected<std::unique_ptr<ProposerFactory>> {
             return llvm::createStringError("not here");
           });
  auto found = mine.lookup("scripted");
  ASSERT_TRUE(static_cast<bool>(found)) << llvm::toString(found.takeError());
  auto made = (**found)(AutotuneOptions());
  EXPECT_EQ(llvm::toString(made.takeError()), "not here");
  EXPECT_EQ(llvm::toString(mine.lookup("builtin").takeError()),
            "unknown proposer 'builtin' (available: scripted)");
}

TEST(ProposerTest, LlmProposerNeedsAProvider) {
  auto maker = createProposerRegistry().lookup("llm");
  ASSERT_TRUE(static_cast<bool>(maker)) << llvm::toString(maker.takeError());
  auto factory = (**maker)(AutotuneOptions());
  ASSERT_FALSE(static_cast<bool>(factory));
  EXPECT_THAT(llvm::toString(factory.takeError()),
              HasSubstr("the llm proposer needs a provider"));
}

TEST(ProposerTest, BaselineAndBuiltinProposeOnceInRoundZero) {
  auto context = mlir::kopt::testing::makeContext();
  OwningOpRef<ModuleOp> module = mlir::kopt::testing::parse(*context, R"mlir(
func.func @bias_relu_sum(%x: tensor<64x128xf32>, %b: tensor<128xf32>) -> tensor<64xf32> {
  %init = tensor.empty() : tensor<64x128xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<64x128xf32>, tensor<128xf32>) outs(%init : tensor<64x128xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x128xf32>
  %zero = arith.constant 0.0 : f32
  %acc = tensor.empty() : tensor<64xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%acc : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.reduce ins(%0 : tensor<64x128xf32>) outs(%filled : tensor<64xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %t = arith.addf %in, %a : f32
      linalg.yield %t : f32
    }
  return %sum : tensor<64xf32>
}
)mlir");
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(prepareModelGraph(*module)));
  func::FuncOp group;
  for (auto func : module->getOps<func::FuncOp>())
    if (func->hasAttr(kFusionGroupAttrName))
      group = func;
  ASSERT_TRUE(group);
  auto task = buildKernelTask(group);
  ASSERT_TRUE(static_cast<bool>(task)) << llvm::toString(task.takeError());

  ProposerRegistry registry = createProposerRegistry();
  for (llvm::StringRef name : {"baseline", "builtin"}) {
    auto maker = registry.lookup(name);
    ASSERT_TRUE(static_cast<bool>(maker)) << llvm::toString(maker.takeError());
    auto factory = (**maker)(AutotuneOptions());
    ASSERT_TRUE(static_cast<bool>(factory))
        << llvm::toString(factory.takeError());
    EXPECT_EQ((*factory)->getName(), name);
    auto proposer = (*factory)->create(group, *task);
    ASSERT_TRUE(static_cast<bool>(proposer))
        << llvm::toString(proposer.takeError());
    EXPECT_FALSE((*proposer)->isDone());
    auto candidates = (*proposer)->propose(0);
    ASSERT_TRUE(static_cast<bool>(candidates))
        << llvm::toString(candidates.takeError());
    ASSERT_FALSE(candidates->empty()) << name.str();
    if (name == "baseline") {
      EXPECT_EQ(candidates->size(), 1u);
    }
    for (const Candidate &candidate : *candidates) {
      ASSERT_TRUE(candidate.plan.has_value());
      EXPECT_EQ(candidate.plan->proposer, name);
      EXPECT_FALSE(candidate.remeasured);
    }
    EXPECT_TRUE((*proposer)->isDone());
  }
}

TEST(ProposerTest, LlmProposerSearchesFromRoundZerosBest) {
  // attention_block's softmax group, with the answers recorded for it.
  auto context = mlir::kopt::testing::makeContext();
  auto text = llvm::MemoryBuffer::getFile(std::string(KOPT_SOURCE_DIR) +
                                          "/examples/attention_block.mlir");
  ASSERT_TRUE(static_cast<bool>(text));
  OwningOpRef<ModuleOp> module =
      mlir::kopt::testing::parse(*context, (*text)->getBuffer());
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(prepareModelGraph(*module)));
  func::FuncOp group;
  std::optional<KernelTask> task;
  for (auto func : module->getOps<func::FuncOp>()) {
    if (!func->hasAttr(kFusionGroupAttrName))
      continue;
    auto built = buildKernelTask(func);
    ASSERT_TRUE(static_cast<bool>(built)) << llvm::toString(built.takeError());
    if (llvm::StringRef(built->key).starts_with("cc6c43c59de05ed1")) {
      group = func;
      task = std::move(*built);
    }
  }
  ASSERT_TRUE(group);

  AutotuneOptions options;
  options.llm.provider = "replay";
  options.llm.providerOptions["dir"] =
      std::string(KOPT_SOURCE_DIR) + "/test/LLM/Inputs/attention-softmax";
  options.llm.budget.rounds = 2;
  options.llm.budget.ideasPerRound = 3;
  ProposerRegistry registry = createProposerRegistry();
  std::vector<std::unique_ptr<ProposerFactory>> factories;
  std::vector<std::unique_ptr<Proposer>> owned;
  std::vector<Proposer *> peers;
  for (llvm::StringRef name : {"baseline", "builtin", "llm"}) {
    auto maker = registry.lookup(name);
    ASSERT_TRUE(static_cast<bool>(maker)) << llvm::toString(maker.takeError());
    auto factory = (**maker)(options);
    ASSERT_TRUE(static_cast<bool>(factory))
        << llvm::toString(factory.takeError());
    factories.push_back(std::move(*factory));
    auto proposer = factories.back()->create(group, *task);
    ASSERT_TRUE(static_cast<bool>(proposer))
        << llvm::toString(proposer.takeError());
    peers.push_back(proposer->get());
    owned.push_back(std::move(*proposer));
  }

  // The baseline takes 10 us, a builtin plan 8 us, an LLM plan 5 us.
  std::vector<std::vector<std::string>> requests;
  std::vector<std::string> kept;
  RoundEvaluator evaluate = [&](unsigned,
                                const std::vector<const KernelPlan *> &plans,
                                const ReportSink &sink)
      -> llvm::Expected<std::vector<std::optional<rt::EvalReport>>> {
    std::vector<std::string> names;
    std::vector<std::optional<rt::EvalReport>> reports;
    for (size_t i = 0; i < plans.size(); ++i) {
      names.push_back(plans[i]->proposer);
      rt::EvalReport report;
      report.candidate = int64_t(i);
      report.compiled = report.valid = true;
      rt::Timing times;
      times.medianUs = plans[i]->proposer == "baseline"  ? 10.0
                       : plans[i]->proposer == "builtin" ? 8.0
                                                         : 5.0;
      report.times = times;
      report.speedup = 10.0 / times.medianUs;
      if (llvm::Error error = sink(i, report, ReportOrigin()))
        return std::move(error);
      reports.push_back(std::move(report));
    }
    requests.push_back(std::move(names));
    return reports;
  };
  AttemptSink keep = [&](const ProposerAttempt &attempt) {
    kept.push_back(attempt.proposer.str() + " r" +
                   std::to_string(attempt.round) +
                   (attempt.report ? " evaluated" : " refused"));
    if (attempt.proposer == "llm") {
      EXPECT_NE(attempt.candidate->exchange.find("answer"), nullptr);
    }
    return llvm::Error::success();
  };
  auto result =
      runProposerRounds(task->name, peers, evaluate, keep, /*maxFirstRound=*/4);
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());

  // Round 1 measures the fastest builtin plan again beside the model's
  // three kernels; round 2 the fastest of those beside the two that parse.
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_THAT(requests[0],
              ElementsAre("baseline", "builtin", "builtin", "builtin"));
  EXPECT_THAT(requests[1],
              ElementsAre("baseline", "builtin", "llm", "llm", "llm"));
  EXPECT_THAT(requests[2], ElementsAre("baseline", "llm", "llm", "llm"));
  EXPECT_EQ(std::count(kept.begin(), kept.end(), "llm r1 evaluated"), 3);
  EXPECT_EQ(std::count(kept.begin(), kept.end(), "llm r2 evaluated"), 2);
  EXPECT_EQ(std::count(kept.begin(), kept.end(), "llm r2 refused"), 1);
  EXPECT_EQ(result->evaluated, 4u + 5u);
  EXPECT_TRUE(peers[2]->isDone());

  // Round 1's first kernel won; round 2 brought no gain over it.
  std::optional<ProposerChoice> choice = peers[2]->getChoice();
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->plan->proposer, "llm");
  EXPECT_DOUBLE_EQ(*choice->report->speedup, 2.0);
  EXPECT_EQ(choice->provenance.round, 1);
  EXPECT_FALSE(choice->provenance.promptHash.empty());
  EXPECT_FALSE(peers[1]->getChoice().has_value());
  GroupOutcome outcome;
  for (Proposer *proposer : peers)
    proposer->summarize(outcome);
  EXPECT_EQ(outcome.llmAttempts.size(), 6u);
  EXPECT_THAT(outcome.llmSummary,
              StartsWith("llm: 2 round(s), 6 answer(s), 5 evaluated, 5 "
                         "valid"));
  EXPECT_THAT(outcome.llmSummary, HasSubstr("round 2 brought no gain"));
}

} // namespace
