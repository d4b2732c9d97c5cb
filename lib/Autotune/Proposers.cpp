//===- Proposers.cpp - The baseline and builtin proposers -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The two proposers that need no LLM, over the generators of
// kopt/Codegen/Proposers.h: each proposes once, in round 0. And the registry
// of kopt's proposers, the `llm` one's maker coming from LlmTuning.h.
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/Proposer.h"

#include "LlmTuning.h"

#include "kopt/Codegen/Proposers.h"
#include "kopt/Codegen/RuntimeStatus.h"
#include "kopt/Runtime/PlanVerifier.h"

using namespace mlir;
using namespace mlir::kopt;

namespace {

/// A proposer that offers its plans in round 0 and is then done.
class OneShotProposer : public Proposer {
public:
  OneShotProposer(func::FuncOp group, const KernelTask &task)
      : group(group), task(task) {}

  llvm::Expected<std::vector<Candidate>> propose(unsigned) final {
    done = true;
    auto plans = getPlans();
    if (!plans)
      return plans.takeError();
    std::vector<Candidate> candidates(plans->size());
    for (size_t i = 0; i < plans->size(); ++i)
      candidates[i].plan = std::move((*plans)[i]);
    return candidates;
  }
  llvm::Error notify(const RoundReports &,
                     llvm::ArrayRef<std::optional<size_t>>) final {
    return llvm::Error::success();
  }
  bool isDone() const final { return done; }

protected:
  virtual llvm::Expected<std::vector<KernelPlan>> getPlans() = 0;

  func::FuncOp group;
  const KernelTask &task;

private:
  bool done = false;
};

/// One kernel or library call per op: the plan to beat.
class BaselineProposer final : public OneShotProposer {
public:
  static constexpr llvm::StringLiteral kName = "baseline";
  using OneShotProposer::OneShotProposer;
  llvm::StringRef getName() const override { return kName; }

private:
  llvm::Expected<std::vector<KernelPlan>> getPlans() override {
    auto baseline = proposeBaseline(group, task);
    if (!baseline)
      return baseline.takeError();
    if (llvm::Error error = toLlvmError(verifyPlan(*baseline, task)))
      return llvm::createStringError(
          "the baseline plan of @" + task.name +
          " is invalid: " + llvm::toString(std::move(error)));
    return std::vector<KernelPlan>{std::move(*baseline)};
  }
};

/// Fused kernels from the built-in templates, in several variants.
class BuiltinProposer final : public OneShotProposer {
public:
  static constexpr llvm::StringLiteral kName = "builtin";
  using OneShotProposer::OneShotProposer;
  llvm::StringRef getName() const override { return kName; }

private:
  llvm::Expected<std::vector<KernelPlan>> getPlans() override {
    return proposeBuiltin(group, task).plans;
  }
};

/// Makes proposers of type `P`.
template <typename P>
class OneShotFactory final : public ProposerFactory {
public:
  llvm::StringRef getName() const override { return P::kName; }
  llvm::Expected<std::unique_ptr<Proposer>>
  create(func::FuncOp group, const KernelTask &task) override {
    return std::make_unique<P>(group, task);
  }
};

template <typename P>
void addOneShot(ProposerRegistry &registry) {
  registry.add(P::kName,
               [](const AutotuneOptions &)
                   -> llvm::Expected<std::unique_ptr<ProposerFactory>> {
                 return std::make_unique<OneShotFactory<P>>();
               });
}

} // namespace

ProposerRegistry mlir::kopt::createProposerRegistry() {
  ProposerRegistry registry;
  addOneShot<BaselineProposer>(registry);
  addOneShot<BuiltinProposer>(registry);
  registry.add("llm", makeLlmProposerFactory);
  return registry;
}
