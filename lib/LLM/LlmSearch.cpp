//===- LlmSearch.cpp - Rounds of LLM proposals with feedback ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/LLM/LlmSearch.h"

#include "kopt/Codegen/RuntimeStatus.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SHA256.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;
using Clock = std::chrono::steady_clock;

//===----------------------------------------------------------------------===//
// Ideas and feedback
//===----------------------------------------------------------------------===//

std::vector<std::string> mlir::kopt::parseIdeas(llvm::StringRef answer,
                                                unsigned count) {
  std::vector<std::string> ideas;
  llvm::SmallVector<llvm::StringRef> lines;
  answer.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (ideas.size() >= count)
      break;
    line = line.trim();
    // `1.`, `1)`, `-` or `*` starts an idea.
    llvm::StringRef rest = line.ltrim("0123456789");
    if (rest.size() < line.size() &&
        (rest.starts_with(".") || rest.starts_with(")")))
      rest = rest.drop_front();
    else if (line.starts_with("-") || line.starts_with("*"))
      rest = line.drop_front();
    else
      continue;
    rest = rest.trim().trim("*").trim();
    if (rest.empty())
      continue;
    std::string idea =
        llvm::json::isUTF8(rest) ? rest.str() : llvm::json::fixUTF8(rest);
    if (idea.size() > 400)
      idea = idea.substr(0, 400) + "...";
    ideas.push_back(std::move(idea));
  }
  return ideas;
}

/// `text` cut to `limit` bytes, saying so.
static std::string clip(llvm::StringRef text, size_t limit) {
  text = text.trim();
  if (text.size() <= limit)
    return text.str();
  return text.take_front(limit).str() + "\n[... " +
         std::to_string(text.size() - limit) + " more bytes]";
}

std::string mlir::kopt::describeAttemptFeedback(const SearchAttempt &attempt) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "- Round " << attempt.round << ", idea " << attempt.index;
  if (!attempt.idea.empty())
    os << " (\"" << clip(attempt.idea, 200) << "\")";
  if (attempt.plan)
    os << ", candidate `" << attempt.plan->variant << "`";
  os << ": ";
  if (!attempt.report) {
    os << "not evaluated: " << clip(attempt.failure, 1500);
    return text;
  }
  const rt::EvalReport &report = *attempt.report;
  if (!report.compiled) {
    os << "did not compile:\n" << clip(report.compileLog, 1500);
    return text;
  }
  if (!report.valid) {
    os << "rejected by the check `"
       << rt::stringifyFailedCheck(report.failedCheck)
       << "`; evidence: " << clip(rt::json::write(report.evidence), 1200);
    return text;
  }
  os << "correct";
  if (report.times)
    os << llvm::formatv(", {0:F2} us median", report.times->medianUs);
  if (report.speedup)
    os << llvm::formatv(" ({0:F2}x the baseline)", *report.speedup);
  if (report.suspicious)
    os << ", but its timing was implausible and it was not trusted";
  return text;
}

//===----------------------------------------------------------------------===//
// The search
//===----------------------------------------------------------------------===//

namespace {

/// One request and its answer, for the records.
struct Exchange {
  LlmRequest request;
  /// The answer, or the provider's error (which never holds a key).
  std::optional<LlmResponse> response;
  std::string error;
};

} // namespace

class mlir::kopt::LlmSearch::Impl {
public:
  Impl(const KernelTask &task, const KernelPlan &baseline,
       const rt::EvalReport &baselineReport, SearchSeed seed,
       LlmProvider &provider, const LlmSearchOptions &options, SearchLog log)
      : task(task), baseline(baseline), provider(provider), options(options),
        log(std::move(log)), start(Clock::now()) {
    result.best = std::move(seed);
    if (baselineReport.times)
      baselineUs = baselineReport.times->medianUs;
    // Sources already seen are never evaluated again.
    seen.insert(hashSources(baseline));
    seen.insert(hashSources(result.best.plan));
  }

  std::vector<const KernelPlan *> propose();
  llvm::Error notify(const std::vector<rt::EvalReport> &reports);

  /// Whether the search has stopped.
  bool done = false;
  /// The current round (from 1), and its first attempt.
  unsigned round = 0;
  size_t firstOfRound = 0;
  SearchResult result;

private:
  std::string hashSources(const KernelPlan &plan) const;
  std::string replayName(unsigned round, llvm::StringRef role) const;
  std::string budgetSpent() const;
  SearchState makeState(unsigned round) const;
  void ask(std::vector<Exchange> &exchanges);
  rt::json::Value record(const Exchange &exchange, llvm::StringRef role,
                         unsigned round, unsigned index,
                         llvm::StringRef idea) const;
  void say(const std::string &line) const {
    if (log)
      log(line);
  }
  bool seedIsBaseline() const {
    return result.best.plan.proposer == "baseline";
  }

  const KernelTask &task;
  const KernelPlan &baseline;
  LlmProvider &provider;
  const LlmSearchOptions &options;
  SearchLog log;
  Clock::time_point start;
  double baselineUs = 0;
  std::set<std::string> seen;
  unsigned candidates = 0;
  unsigned roundsWithoutGain = 0;
  /// The round's answers, the attempts with a plan to evaluate, and whether
  /// the seed goes before them; `awaiting` until `notify` takes the round.
  size_t answers = 0;
  std::vector<size_t> toEvaluate;
  bool seedEvaluated = false;
  bool awaiting = false;
};

std::string LlmSearch::Impl::hashSources(const KernelPlan &plan) const {
  llvm::SHA256 sha;
  for (const KernelSource &source : plan.sources) {
    sha.update(source.code);
    sha.update(llvm::StringRef("\0", 1));
  }
  return llvm::toHex(sha.final(), /*LowerCase=*/true);
}

std::string LlmSearch::Impl::replayName(unsigned round,
                                        llvm::StringRef role) const {
  return (llvm::StringRef(task.key).take_front(16) + "-r" +
          std::to_string(round) + "-" + role)
      .str();
}

std::string LlmSearch::Impl::budgetSpent() const {
  const SearchBudget &budget = options.budget;
  if (candidates >= budget.maxCandidates)
    return "the candidate budget is spent (" +
           std::to_string(budget.maxCandidates) + ")";
  uint64_t tokens = result.promptTokens + result.completionTokens;
  if (budget.maxTokens && tokens >= budget.maxTokens)
    return "the token budget is spent (" + std::to_string(tokens) + " of " +
           std::to_string(budget.maxTokens) + ")";
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (budget.maxSeconds > 0 && seconds >= budget.maxSeconds)
    return llvm::formatv("the time budget is spent ({0:F1} s)", seconds).str();
  return "";
}

SearchState LlmSearch::Impl::makeState(unsigned round) const {
  SearchState state;
  state.round = round;
  state.baselineUs = baselineUs;
  if (!seedIsBaseline()) {
    state.seed = &result.best.plan;
    state.seedName = result.best.plan.proposer + "/" + result.best.plan.variant;
    if (result.best.report.times)
      state.seedUs = result.best.report.times->medianUs;
  }
  if (options.prompt.gpu.bandwidthGBs > 0) {
    int64_t bytes = 0;
    for (const TensorSpec &tensor : task.inputs)
      bytes += tensor.getBytes().value_or(0);
    for (const TensorSpec &tensor : task.outputs)
      bytes += tensor.getBytes().value_or(0);
    state.floorUs = double(bytes) / (options.prompt.gpu.bandwidthGBs * 1e3);
  }
  for (const SearchAttempt &attempt : result.attempts)
    state.feedback.push_back(describeAttemptFeedback(attempt));
  return state;
}

void LlmSearch::Impl::ask(std::vector<Exchange> &exchanges) {
  // A few threads take the requests in turn; providers are thread-safe.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < exchanges.size(); i = next++) {
      auto response = provider.complete(exchanges[i].request);
      if (response)
        exchanges[i].response = std::move(*response);
      else
        exchanges[i].error = llvm::toString(response.takeError());
    }
  };
  size_t threads = std::min<size_t>(std::max(1u, options.parallelRequests),
                                    exchanges.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &thread : pool)
    thread.join();
  for (Exchange &exchange : exchanges)
    if (exchange.response) {
      result.promptTokens += exchange.response->promptTokens;
      result.completionTokens += exchange.response->completionTokens;
    }
}

/// `text` as JSON can hold it.
static std::string toJsonText(llvm::StringRef text) {
  return llvm::json::isUTF8(text) ? text.str() : llvm::json::fixUTF8(text);
}

rt::json::Value LlmSearch::Impl::record(const Exchange &exchange,
                                        llvm::StringRef role, unsigned round,
                                        unsigned index,
                                        llvm::StringRef idea) const {
  rt::json::Value value = rt::json::Value::object();
  value.set("role", std::string(role));
  value.set("round", int64_t(round));
  if (index)
    value.set("index", int64_t(index));
  if (!idea.empty())
    value.set("idea", std::string(idea));
  value.set("provider", std::string(provider.getKind()));
  value.set("prompt_hash", getPromptHash(exchange.request));
  value.set("replay_name", exchange.request.replayName);
  value.set("system_prompt", toJsonText(exchange.request.systemPrompt));
  value.set("user_prompt", toJsonText(exchange.request.userPrompt));
  if (!exchange.response) {
    value.set("error", clip(toJsonText(exchange.error), 2000));
    return value;
  }
  const LlmResponse &response = *exchange.response;
  value.set("model", toJsonText(response.model.empty() ? options.model
                                                       : response.model));
  value.set("answer", toJsonText(response.text));
  value.set("prompt_tokens", response.promptTokens);
  value.set("completion_tokens", response.completionTokens);
  value.set("latency_seconds", response.latencySeconds);
  const TokenPrices &prices = options.prices;
  if (prices.inputPerMillion > 0 || prices.outputPerMillion > 0)
    value.set("cost_estimate",
              (double(response.promptTokens) * prices.inputPerMillion +
               double(response.completionTokens) * prices.outputPerMillion) *
                  1e-6);
  return value;
}

std::vector<const KernelPlan *> LlmSearch::Impl::propose() {
  const SearchBudget &budget = options.budget;
  toEvaluate.clear();
  seedEvaluated = false;
  awaiting = false;
  if (done)
    return {};
  if (std::string spent = budgetSpent(); !spent.empty()) {
    result.stopReason = spent;
    done = true;
    return {};
  }
  result.rounds = ++round;
  awaiting = true;
  SearchState state = makeState(round);

  // Ideas first, in plain language.
  std::vector<Exchange> ideasExchange(1);
  LlmPrompt ideasPrompt = buildIdeasPrompt(task, &baseline, options.prompt,
                                           state, budget.ideasPerRound);
  ideasExchange[0].request = {ideasPrompt.system, ideasPrompt.user,
                              options.maxAnswerTokens, options.temperature,
                              replayName(round, "ideas")};
  ask(ideasExchange);
  std::vector<std::string> ideas;
  if (ideasExchange[0].response)
    ideas = parseIdeas(ideasExchange[0].response->text, budget.ideasPerRound);
  const std::string &ideasError = ideasExchange[0].error;
  rt::json::Value ideasRecord = record(ideasExchange[0], "ideas", round, 0, "");
  say(llvm::formatv("round {0}: {1} idea(s){2}", round, ideas.size(),
                    ideasError.empty() ? "" : " (" + ideasError + ")")
          .str());
  // Without ideas the model still gets to write kernels of its own.
  while (ideas.size() < budget.ideasPerRound)
    ideas.push_back("");
  unsigned room = budget.maxCandidates - candidates;
  if (ideas.size() > room)
    ideas.resize(room);

  // Then one implementation per idea, in parallel.
  std::vector<Exchange> exchanges(ideas.size());
  for (size_t i = 0; i < ideas.size(); ++i) {
    LlmPrompt prompt = buildImplementationPrompt(
        task, &baseline, options.prompt, state, ideas[i]);
    exchanges[i].request = {
        prompt.system, prompt.user, options.maxAnswerTokens,
        options.temperature,
        replayName(round, "kernel" + std::to_string(i + 1))};
  }
  ask(exchanges);
  answers = exchanges.size();

  firstOfRound = result.attempts.size();
  for (size_t i = 0; i < exchanges.size(); ++i) {
    SearchAttempt attempt;
    attempt.round = round;
    attempt.index = unsigned(i + 1);
    attempt.idea = ideas[i];
    attempt.exchange =
        record(exchanges[i], "kernel", round, attempt.index, ideas[i]);
    attempt.exchange.set("ideas", ideasRecord);
    if (!exchanges[i].response) {
      attempt.failure = "the model gave no answer: " + exchanges[i].error;
    } else {
      auto plan =
          parseAnswer(exchanges[i].response->text, task, options.answer);
      if (!plan) {
        attempt.failure =
            "the answer was refused: " + llvm::toString(plan.takeError());
      } else {
        std::string hash = hashSources(*plan);
        if (!seen.insert(hash).second) {
          attempt.failure = "the same source as an earlier candidate "
                            "(evaluated once)";
        } else {
          ++candidates;
          attempt.plan = std::move(*plan);
          toEvaluate.push_back(result.attempts.size());
        }
      }
    }
    result.attempts.push_back(std::move(attempt));
  }

  // The new candidates go beside the baseline and the seed.
  std::vector<const KernelPlan *> plans;
  if (toEvaluate.empty())
    return plans;
  seedEvaluated = !seedIsBaseline();
  if (seedEvaluated)
    plans.push_back(&result.best.plan);
  for (size_t index : toEvaluate)
    plans.push_back(&*result.attempts[index].plan);
  return plans;
}

llvm::Error
LlmSearch::Impl::notify(const std::vector<rt::EvalReport> &reports) {
  const SearchBudget &budget = options.budget;
  if (!awaiting)
    return llvm::Error::success();
  size_t firstNew = seedEvaluated ? 2 : 1;
  size_t expected = toEvaluate.empty() ? 0 : firstNew + toEvaluate.size();
  if (reports.size() != expected)
    return llvm::createStringError(
        "the evaluator returned " + std::to_string(reports.size()) +
        " reports for " + std::to_string(expected) + " candidates");
  awaiting = false;
  bool gained = false;
  if (!toEvaluate.empty()) {
    if (reports[0].times)
      baselineUs = reports[0].times->medianUs;
    // The seed as measured now, beside the new candidates.
    double seedSpeedup = 1.0;
    result.best.baselineReport = reports[0];
    if (seedEvaluated) {
      result.best.report = reports[1];
      seedSpeedup = result.best.report.valid && result.best.report.speedup
                        ? *result.best.report.speedup
                        : 0.0;
    } else {
      result.best.report = reports[0];
    }
    std::optional<size_t> winner;
    double winnerSpeedup = seedSpeedup * budget.minGain;
    for (size_t k = 0; k < toEvaluate.size(); ++k) {
      SearchAttempt &attempt = result.attempts[toEvaluate[k]];
      attempt.report = reports[firstNew + k];
      const rt::EvalReport &report = *attempt.report;
      if (report.valid && !report.suspicious && !rt::isTimingCut(report) &&
          report.speedup && *report.speedup > winnerSpeedup) {
        winner = toEvaluate[k];
        winnerSpeedup = *report.speedup;
      }
    }
    if (winner) {
      gained = true;
      result.best.plan = *result.attempts[*winner].plan;
      result.best.report = *result.attempts[*winner].report;
      result.best.baselineReport = reports[0];
      result.bestAttempt = *winner;
    }
  }
  unsigned valid = 0;
  for (size_t i = firstOfRound; i < result.attempts.size(); ++i)
    if (result.attempts[i].report && result.attempts[i].report->valid)
      ++valid;
  say(llvm::formatv(
          "round {0}: {1} answer(s), {2} evaluated, {3} valid; "
          "best {4}{5}",
          round, answers, toEvaluate.size(), valid,
          result.best.plan.proposer + "/" + result.best.plan.variant,
          result.best.report.speedup
              ? llvm::formatv(" at {0:F2}x", *result.best.report.speedup).str()
              : std::string())
          .str());
  roundsWithoutGain = gained ? 0 : roundsWithoutGain + 1;
  if (roundsWithoutGain >= std::max(1u, budget.patience)) {
    result.stopReason = "round " + std::to_string(round) + " brought no gain";
    done = true;
  } else if (round >= budget.rounds) {
    result.stopReason =
        "all " + std::to_string(budget.rounds) + " round(s) were run";
    done = true;
  }
  return llvm::Error::success();
}

LlmSearch::LlmSearch(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
LlmSearch::~LlmSearch() = default;

llvm::Expected<std::unique_ptr<LlmSearch>>
LlmSearch::create(const KernelTask &task, const KernelPlan &baseline,
                  const rt::EvalReport &baselineReport, SearchSeed seed,
                  LlmProvider &provider, const LlmSearchOptions &options,
                  SearchLog log) {
  if (options.budget.rounds == 0 || options.budget.ideasPerRound == 0 ||
      options.budget.maxCandidates == 0)
    return llvm::createStringError(
        "the LLM search needs at least one round, one idea per round and "
        "one candidate");
  return std::unique_ptr<LlmSearch>(new LlmSearch(
      std::make_unique<Impl>(task, baseline, baselineReport, std::move(seed),
                             provider, options, std::move(log))));
}

std::vector<const KernelPlan *> LlmSearch::propose() { return impl->propose(); }

llvm::Error LlmSearch::notify(const std::vector<rt::EvalReport> &reports) {
  return impl->notify(reports);
}

bool LlmSearch::isDone() const { return impl->done; }

const SearchResult &LlmSearch::getResult() const { return impl->result; }

size_t LlmSearch::getRoundBegin() const { return impl->firstOfRound; }

llvm::Expected<SearchResult>
mlir::kopt::runLlmSearch(const KernelTask &task, const KernelPlan &baseline,
                         const rt::EvalReport &baselineReport, SearchSeed seed,
                         LlmProvider &provider, const SearchEvaluator &evaluate,
                         const LlmSearchOptions &options,
                         const SearchLog &log) {
  auto search = LlmSearch::create(task, baseline, baselineReport,
                                  std::move(seed), provider, options, log);
  if (!search)
    return search.takeError();
  while (true) {
    std::vector<const KernelPlan *> plans = (*search)->propose();
    if ((*search)->isDone())
      break;
    std::vector<rt::EvalReport> reports;
    if (!plans.empty()) {
      plans.insert(plans.begin(), &baseline);
      auto evaluated = evaluate(plans);
      if (!evaluated)
        return evaluated.takeError();
      reports = std::move(*evaluated);
    }
    if (llvm::Error error = (*search)->notify(reports))
      return std::move(error);
    if ((*search)->isDone())
      break;
  }
  return (*search)->getResult();
}
