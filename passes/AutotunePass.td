//===- AutotunePass.td - The kopt-autotune pass ------------*- tablegen -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Beside passes/Passes.td but apart from it: this pass links the autotuner
// (the kernel database, the evaluator's worker protocol, the CUDA layer),
// which the installed pass library KoptPasses and the pass plugin do not
// carry. It builds as its own library, KoptAutotunePass.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_AUTOTUNE_PASS_TD
#define KOPT_AUTOTUNE_PASS_TD

include "mlir/Pass/PassBase.td"

def AutotunePass : Pass<"kopt-autotune", "mlir::ModuleOp"> {
  let summary = "Look up, tune and store every outlined fusion group";
  let description = [{
    For each outlined fusion group (a function with `kopt.fusion_group`, as
    `kopt-outline-fusion-groups` makes them), builds its KernelTask and looks
    its key up in the kernel database for this device. On a miss, when a GPU
    is present and tuning is allowed, evaluates the baseline and every
    proposer's candidates in a kopt-worker (validation and timing, see
    docs/Evaluator.md), keeps the fastest valid plan that beats the baseline
    by `min-speedup` (the baseline otherwise), and stores it with every
    attempt, each attempt as soon as it is measured; attempts a stopped run
    stored are not measured again. The group function and its calls get
    `kopt.plan` (`proposer/variant`), `kopt.plan_hash` and
    `kopt.fingerprint`. `budget` and `group-budget` are deadlines: no
    candidate is started that would end past them.

    Without a GPU the pass uses what the database holds (for `target`, or
    the database's only device), says how many groups missed, and leaves
    missed groups to the baseline. With every group a hit it starts no
    worker and does no GPU work.
  }];
  let options = [
    Option<"databasePath", "db", "std::string", /*default=*/"\"kopt.db\"",
           "The kernel database (SQLite file, created when missing)">,
    Option<"tuneMode", "tune", "std::string", /*default=*/"\"missing\"",
           "When to tune: never, missing or always">,
    Option<"proposers", "proposers", "std::string", /*default=*/"\"builtin\"",
           "Comma-separated proposers beyond the baseline: builtin, llm "
           "(llm needs llm-provider)">,
    Option<"llmProvider", "llm-provider", "std::string", /*default=*/"\"\"",
           "Who answers for the llm proposer: openai, command or replay "
           "(docs/LLM.md)">,
    ListOption<"llmOptions", "llm-option", "std::string",
               "Provider options as key=value, e.g. model=NAME or dir=DIR "
               "(the API key only ever comes from KOPT_LLM_API_KEY)">,
    Option<"maxCandidates", "max-candidates", "unsigned", /*default=*/"16",
           "Candidates per task, the baseline included">,
    Option<"precision", "precision", "std::string", /*default=*/"\"fp32\"",
           "Precision policy: fp32, fp32-ieee, tf32 or bf16">,
    Option<"minSpeedup", "min-speedup", "double", /*default=*/"1.03",
           "Factor by which a candidate must beat the baseline to win">,
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "Fingerprint hash to look up when there is no GPU">,
    Option<"budget", "budget", "double", /*default=*/"0",
           "Seconds for the pass, a deadline: no candidate is started that "
           "would end past it, groups keep the best valid candidate measured "
           "by then, later ones the baseline (0: no limit)">,
    Option<"groupBudget", "group-budget", "double", /*default=*/"0",
           "Seconds one group may be tuned for, a deadline like budget's "
           "(0: no limit)">,
    Option<"requireCacheHit", "require-cache-hit", "bool",
           /*default=*/"false", "Fail when any group misses the database">
  ];
}

#endif // KOPT_AUTOTUNE_PASS_TD
