//===- ProposeCommand.cpp - kopt propose ------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Asks a model for one fused kernel per fusion group, without a GPU: for
// each group it builds the prompt (with the baseline plan), asks the
// provider, parses the answer into a KernelPlan and compiles it with NVRTC.
// Everything is written under `--emit-dir`; a group whose answer is
// rejected or does not compile is reported with the reason and the others
// go on. Provider options are never printed or written (they may hold the
// API key).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "GroupWalk.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Codegen/Proposers.h"
#include "kopt/Codegen/RuntimeStatus.h"
#include "kopt/InitAll.h"
#include "kopt/LLM/LlmProposer.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"
#include "kopt/Runtime/FileName.h"
#include "kopt/Runtime/OutputFile.h"
#include "kopt/Support/ModelLoader.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::kopt;
namespace cl = llvm::cl;
namespace rt = ::kopt::runtime;

static cl::SubCommand proposeCommand(
    "propose",
    "Ask a language model for a fused kernel of every fusion group; write "
    "prompts, answers and plans, and compile them with NVRTC (no GPU "
    "needed, nothing is run). Exits with 0 when every group was handled, "
    "even when answers were rejected or failed to compile; with 1 on an "
    "unreadable input or unwritable output, 2 on a usage error");

static cl::list<std::string> inputFiles(cl::Positional, cl::OneOrMore,
                                        cl::desc("<model.mlir>..."),
                                        cl::sub(proposeCommand));
static cl::opt<std::string> proposerOption("proposer",
                                           cl::desc("The proposer to ask: llm"),
                                           cl::init("llm"),
                                           cl::sub(proposeCommand));
static cl::opt<std::string>
    providerOption("provider",
                   cl::desc("Who answers: openai, command or replay "
                            "(required; docs/LLM.md)"),
                   cl::value_desc("kind"), cl::sub(proposeCommand));
static cl::list<std::string> providerOptions(
    "provider-option",
    cl::desc("A provider option as key=value (repeatable), e.g. "
             "model=NAME, command=PROGRAM ARGS, dir=DIR, record-dir=DIR"),
    cl::value_desc("key=value"), cl::sub(proposeCommand));
static cl::opt<std::string> emitDir(
    "emit-dir",
    cl::desc("Write, per group, the prompt, the answer, the plan and its .cu "
             "source, and the verdict into DIR/<group function>/ "
             "(required)"),
    cl::value_desc("dir"), cl::sub(proposeCommand));
static cl::opt<std::string>
    archOption("arch",
               cl::desc("The GPU architecture the prompt describes and NVRTC "
                        "compiles for"),
               cl::init("sm_90"), cl::sub(proposeCommand));
static cl::opt<unsigned>
    maxTokens("max-tokens",
              cl::desc("The most tokens an answer may have (0: the server's "
                       "default)"),
              cl::init(8192), cl::sub(proposeCommand));

bool mlir::kopt::isProposeCommandSelected() {
  return static_cast<bool>(proposeCommand);
}

namespace {
/// What became of the groups, for the summary line.
struct Tally {
  unsigned compiled = 0, rejected = 0, compileFailed = 0, providerFailed = 0;
};

/// Where the groups' files go: one directory per group under --emit-dir,
/// named after its function made a safe file name.
struct EmitTarget {
  rt::FileNameSet groupNames;
  /// The inputs, which no output may overwrite.
  rt::ProtectedFiles protect;
};
} // namespace

/// Writes `text` to the file `name` (a safe file name) in `dir`.
static llvm::Error writeInto(llvm::StringRef dir, llvm::StringRef name,
                             llvm::StringRef text, const EmitTarget &target) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  rt::Status status =
      rt::writeOutputFile(std::string(path), text, target.protect);
  if (!status.isOk())
    return llvm::createStringError(status.message());
  return llvm::Error::success();
}

/// Handles one group; returns an error only for I/O failures.
static llvm::Error proposeGroup(func::FuncOp func, const KernelTask &task,
                                LlmProvider &provider, EmitTarget &target,
                                Tally &tally, llvm::raw_ostream &os) {
  std::string name = target.groupNames.add(task.name);
  llvm::SmallString<256> dir(emitDir);
  llvm::sys::path::append(dir, name);
  if (name != task.name)
    os << "    files in '" << dir << "'\n";
  if (std::error_code error = llvm::sys::fs::create_directories(dir))
    return llvm::createStringError(error, "cannot create '%s': %s", dir.c_str(),
                                   error.message().c_str());
  auto writeFile = [&](llvm::StringRef file, llvm::StringRef text) {
    return writeInto(dir, file, text, target);
  };
  if (llvm::Error error =
          writeFile("task.json",
                    llvm::formatv("{0:2}\n", toLlvmJson(toJson(task))).str()))
    return error;

  std::optional<KernelPlan> baseline;
  if (auto plan = proposeBaseline(func, task))
    baseline = std::move(*plan);
  else
    os << "    no baseline for the prompt: " << llvm::toString(plan.takeError())
       << "\n";

  PromptOptions promptOptions;
  promptOptions.gpu = describeGpu(archOption);
  LlmPrompt prompt =
      buildPrompt(task, baseline ? &*baseline : nullptr, promptOptions);
  LlmRequest request;
  request.systemPrompt = prompt.system;
  request.userPrompt = prompt.user;
  request.maxTokens = maxTokens;
  std::string hash = getPromptHash(request);
  if (llvm::Error error = writeFile("prompt.system.txt", prompt.system))
    return error;
  if (llvm::Error error = writeFile("prompt.user.txt", prompt.user))
    return error;
  os << "    prompt " << llvm::StringRef(hash).take_front(12) << ": "
     << prompt.system.size() + prompt.user.size() << " bytes\n";

  auto verdict = [&](llvm::StringRef text) -> llvm::Error {
    os << "    " << text << "\n";
    return writeFile("verdict.txt", (text + "\n").str());
  };

  auto answer = provider.complete(request);
  if (!answer) {
    ++tally.providerFailed;
    return verdict("no answer: " + llvm::toString(answer.takeError()));
  }
  if (llvm::Error error = writeFile("answer.txt", answer->text))
    return error;
  os << "    answer: " << answer->text.size() << " bytes";
  if (!answer->model.empty())
    os << " from " << answer->model;
  os << llvm::formatv(" in {0:f1} s\n", answer->latencySeconds);

  AnswerOptions answerOptions;
  answerOptions.maxAnswerBytes = promptOptions.maxAnswerBytes;
  auto plan = parseAnswer(answer->text, task, answerOptions);
  if (!plan) {
    ++tally.rejected;
    return verdict("rejected: " + llvm::toString(plan.takeError()));
  }
  // The variant and the source ids come from the model's answer.
  std::string stem = rt::sanitizeFileName(plan->variant);
  if (llvm::Error error =
          writeFile(stem + ".plan.json",
                    llvm::formatv("{0:2}\n", toLlvmJson(toJson(*plan))).str()))
    return error;
  for (const KernelSource &source : plan->sources)
    if (llvm::Error error = writeFile(
            stem + "." + rt::sanitizeFileName(source.id) + ".cu", source.code))
      return error;
  os << "    plan " << plan->proposer << " " << plan->variant << ": 1 kernel\n";

  auto arch = ::kopt::runtime::getCompileArch(*plan, archOption);
  if (!arch) {
    ++tally.compileFailed;
    return verdict("compile error (" + archOption +
                   "): " + arch.status().message());
  }
  for (const KernelSource &source : plan->sources) {
    ::kopt::runtime::NvrtcOptions options;
    options.extra = plan->compileOptions;
    auto compiled =
        ::kopt::runtime::compileCuda(source.code, stem + ".cu", *arch, options);
    if (!compiled) {
      ++tally.compileFailed;
      return verdict("compile error (" + archOption +
                     "): " + compiled.status().message());
    }
  }
  ++tally.compiled;
  return verdict("compiled " + plan->proposer + " " + plan->variant + " for " +
                 archOption + ": ok");
}

int mlir::kopt::runProposeCommand() {
  if (proposerOption != "llm") {
    llvm::WithColor::error(llvm::errs(), "kopt")
        << "--proposer must be llm, not '" << proposerOption << "'\n";
    return 2;
  }
  if (providerOption.empty() || emitDir.empty()) {
    llvm::WithColor::error(llvm::errs(), "kopt")
        << "kopt propose needs --provider and --emit-dir\n";
    return 2;
  }
  ProviderOptions options;
  for (llvm::StringRef option : providerOptions) {
    auto [key, value] = option.split('=');
    if (key.empty() || !option.contains('=')) {
      // Echo none of it: a mistyped option may be a secret.
      llvm::WithColor::error(llvm::errs(), "kopt")
          << "--provider-option wants key=value\n";
      return 2;
    }
    options[key.str()] = value.str();
  }
  auto provider = createProvider(providerOption, options);
  if (!provider) {
    llvm::WithColor::error(llvm::errs(), "kopt")
        << llvm::toString(provider.takeError()) << "\n";
    return 2;
  }

  DialectRegistry registry;
  registerAllDialects(registry);
  Tally tally;
  llvm::raw_ostream &os = llvm::outs();
  std::vector<std::string> paths(inputFiles.begin(), inputFiles.end());
  EmitTarget target;
  for (const std::string &path : paths)
    target.protect.addInput(path);
  bool ioOk = walkGroups(
      registry, paths, os, [&](func::FuncOp func, const KernelTask &task) {
        if (llvm::Error error =
                proposeGroup(func, task, **provider, target, tally, os)) {
          llvm::WithColor::error(llvm::errs(), "kopt")
              << llvm::toString(std::move(error)) << "\n";
          return false;
        }
        return true;
      });
  os << llvm::formatv("{0} compiled, {1} rejected, {2} failed to compile, {3} "
                      "without an answer\n",
                      tally.compiled, tally.rejected, tally.compileFailed,
                      tally.providerFailed);
  return ioOk ? 0 : 1;
}
