//===- PlanCommand.cpp - kopt plan ------------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Plans fusion groups like `kopt analyze`, then builds each group's
// KernelTask and asks the baseline and built-in proposers for KernelPlans.
// Prints a table per group; `--emit-dir` writes the task, every plan and its
// CUDA sources; `--compile` compiles every source with NVRTC (no GPU
// needed) and fails on any error or warning; `--run` executes every plan on
// the GPU, checks it against the fp64 interpreter and times it.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "GroupWalk.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Codegen/Proposers.h"
#include "kopt/Codegen/RuntimeStatus.h"
#include "kopt/Evaluator/PlanExecutor.h"
#include "kopt/InitAll.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"
#include "kopt/Runtime/FileName.h"
#include "kopt/Runtime/OutputFile.h"
#include "kopt/Support/ModelLoader.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::kopt;
namespace cl = llvm::cl;
namespace rt = ::kopt::runtime;

static cl::SubCommand planCommand(
    "plan", "Generate the baseline and built-in kernel plans of every fusion "
            "group (KernelTask and KernelPlan JSON, CUDA sources)");

static cl::list<std::string> inputFiles(cl::Positional, cl::OneOrMore,
                                        cl::desc("<model.mlir>..."),
                                        cl::sub(planCommand));
static cl::opt<std::string>
    proposerOption("proposer",
                   cl::desc("Which proposers to run: baseline, builtin or all"),
                   cl::init("all"), cl::sub(planCommand));
static cl::opt<std::string>
    emitDir("emit-dir",
            cl::desc("Write, per group, task.json, each plan's .json and its "
                     ".cu source into DIR/<group function>/"),
            cl::value_desc("dir"), cl::sub(planCommand));
static cl::opt<bool>
    compileOption("compile",
                  cl::desc("Compile every plan's sources with NVRTC and fail "
                           "on any error or warning (needs no GPU)"),
                  cl::sub(planCommand));
static cl::opt<std::string> archOption("arch",
                                       cl::desc("NVRTC target for --compile"),
                                       cl::init("sm_90"), cl::sub(planCommand));
static cl::opt<bool> runOption(
    "run",
    cl::desc("Run every plan on the GPU: check it against the fp64 "
             "interpreter on sampled points and time it against the baseline"),
    cl::sub(planCommand));
static cl::opt<std::string> variantsOption(
    "variants",
    cl::desc("Keep only the built-in plans whose variant name matches this "
             "regular expression (the baseline stays: --run times against "
             "it)"),
    cl::value_desc("regex"), cl::sub(planCommand));
static cl::opt<unsigned>
    repetitions("repetitions",
                cl::desc("Timed repetitions per plan (--run; at least 20, or "
                         "0 to check without timing)"),
                cl::init(50), cl::sub(planCommand));

bool mlir::kopt::isPlanCommandSelected() {
  return static_cast<bool>(planCommand);
}

static std::string summarizeSteps(const KernelPlan &plan) {
  unsigned launches = 0, gemms = 0, convs = 0;
  for (const PlanStep &step : plan.steps) {
    launches += step.kind == PlanStep::Kind::Launch;
    gemms += step.kind == PlanStep::Kind::Gemm;
    convs += step.kind == PlanStep::Kind::Conv;
  }
  std::string text =
      std::to_string(launches) + " kernel" + (launches == 1 ? "" : "s");
  if (gemms)
    text += " + " + std::to_string(gemms) + " gemm";
  if (convs)
    text += " + " + std::to_string(convs) + " conv";
  return text;
}

/// Writes `task` and `plans` into their group's directory under --emit-dir,
/// named by `names` (the function name made a safe file name).
static llvm::Error emitGroup(const KernelTask &task,
                             llvm::ArrayRef<KernelPlan> plans,
                             rt::FileNameSet &names,
                             const rt::ProtectedFiles &protect,
                             llvm::raw_ostream &os) {
  std::string name = names.add(task.name);
  llvm::SmallString<256> dir(emitDir);
  llvm::sys::path::append(dir, name);
  if (name != task.name)
    os << "    files in '" << dir << "'\n";
  bool existed = llvm::sys::fs::is_directory(dir);
  if (std::error_code error = llvm::sys::fs::create_directories(dir))
    return llvm::createStringError(error, "cannot create '%s': %s", dir.c_str(),
                                   error.message().c_str());
  auto write = [&](llvm::StringRef file, llvm::StringRef text) -> llvm::Error {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, file);
    rt::Status status = rt::writeOutputFile(std::string(path), text, protect);
    if (status.isOk())
      return llvm::Error::success();
    // Every file is whole or absent; a directory made for nothing goes too.
    if (!existed)
      llvm::sys::fs::remove(dir);
    return llvm::createStringError(status.message());
  };
  if (llvm::Error error =
          write("task.json",
                llvm::formatv("{0:2}\n", toLlvmJson(toJson(task))).str()))
    return error;
  rt::FileNameSet stems;
  for (const KernelPlan &plan : plans) {
    std::string stem = stems.add(plan.proposer + "-" + plan.variant);
    if (llvm::Error error =
            write(stem + ".plan.json",
                  llvm::formatv("{0:2}\n", toLlvmJson(toJson(plan))).str()))
      return error;
    for (const KernelSource &source : plan.sources)
      if (llvm::Error error =
              write(stem + "." + rt::sanitizeFileName(source.id) + ".cu",
                    source.code))
        return error;
  }
  return llvm::Error::success();
}

/// Compiles every source of `plan`; returns false (and reports) on failure.
static bool compilePlan(const KernelPlan &plan, llvm::raw_ostream &os) {
  bool ok = true;
  auto arch = ::kopt::runtime::getCompileArch(plan, archOption);
  if (!arch) {
    llvm::WithColor::error(llvm::errs(), "kopt")
        << plan.proposer << " " << plan.variant << ": "
        << arch.status().message() << "\n";
    return false;
  }
  for (const KernelSource &source : plan.sources) {
    ::kopt::runtime::NvrtcOptions options;
    options.extra = plan.compileOptions;
    options.warningsAsErrors = true;
    auto compiled = ::kopt::runtime::compileCuda(
        source.code, plan.proposer + "-" + plan.variant + ".cu", *arch,
        options);
    if (!compiled) {
      llvm::WithColor::error(llvm::errs(), "kopt")
          << plan.proposer << " " << plan.variant << ": "
          << compiled.status().message() << "\n";
      ok = false;
    }
  }
  if (ok)
    os << "    compiled " << plan.proposer << " " << plan.variant << " for "
       << *arch << ": ok\n";
  return ok;
}

int mlir::kopt::runPlanCommand() {
  if (proposerOption != "baseline" && proposerOption != "builtin" &&
      proposerOption != "all") {
    llvm::WithColor::error(llvm::errs(), "kopt")
        << "--proposer must be baseline, builtin or all, not '"
        << proposerOption << "'\n";
    return 2;
  }
  llvm::Regex variants(variantsOption);
  if (std::string problem;
      !variantsOption.empty() && !variants.isValid(problem)) {
    llvm::WithColor::error(llvm::errs(), "kopt")
        << "--variants: '" << variantsOption << "' is not a regular "
        << "expression: " << problem << "\n";
    return 2;
  }
  DialectRegistry registry;
  registerAllDialects(registry);
  std::unique_ptr<PlanExecutor> executor;
  if (runOption) {
    auto created = PlanExecutor::create(repetitions);
    if (!created) {
      llvm::WithColor::error(llvm::errs(), "kopt")
          << llvm::toString(created.takeError()) << "\n";
      return 1;
    }
    executor = std::move(*created);
  }

  llvm::raw_ostream &os = llvm::outs();
  std::vector<std::string> paths(inputFiles.begin(), inputFiles.end());
  rt::FileNameSet groupNames;
  rt::ProtectedFiles protect;
  for (const std::string &path : paths)
    protect.addInput(path);
  bool allOk = walkGroups(
      registry, paths, os, [&](func::FuncOp func, const KernelTask &task) {
        bool ok = true;
        std::vector<KernelPlan> plans;
        if (proposerOption != "builtin") {
          auto baseline = proposeBaseline(func, task);
          if (!baseline) {
            llvm::WithColor::error(llvm::errs(), "kopt")
                << task.name << ": " << llvm::toString(baseline.takeError())
                << "\n";
            return false;
          }
          if (llvm::Error error = toLlvmError(verifyPlan(*baseline, task))) {
            llvm::WithColor::error(llvm::errs(), "kopt")
                << task.name << ": baseline plan is invalid: "
                << llvm::toString(std::move(error)) << "\n";
            return false;
          }
          plans.push_back(std::move(*baseline));
        }
        if (proposerOption != "baseline") {
          Proposal builtin = proposeBuiltin(func, task);
          for (const std::string &remark : builtin.remarks)
            func.emitRemark("kopt: ") << remark;
          for (KernelPlan &plan : builtin.plans)
            if (variantsOption.empty() || variants.match(plan.variant))
              plans.push_back(std::move(plan));
        }
        for (const KernelPlan &plan : plans) {
          unsigned lines = 0;
          for (const KernelSource &source : plan.sources)
            lines += llvm::count(source.code, '\n');
          os << llvm::formatv("    {0,-9} {1,-20} {2,-22} {3,5} lines\n",
                              plan.proposer, plan.variant, summarizeSteps(plan),
                              lines);
        }
        if (!emitDir.empty())
          if (llvm::Error error =
                  emitGroup(task, plans, groupNames, protect, os)) {
            llvm::WithColor::error(llvm::errs(), "kopt")
                << llvm::toString(std::move(error)) << "\n";
            ok = false;
          }
        if (compileOption)
          for (const KernelPlan &plan : plans)
            ok &= compilePlan(plan, os);
        if (executor)
          ok &= executor->runGroup(func, task, plans, os);
        return ok;
      });
  return allOk ? 0 : 1;
}
