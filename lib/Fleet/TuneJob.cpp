//===- TuneJob.cpp - Tune the group of one queued job -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Fleet/TuneJob.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Runtime/TaskPlan.h"
#include "kopt/Support/ModelLoader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

llvm::Expected<GroupOutcome> mlir::kopt::tuneJob(const rt::TuningJob &job,
                                                 MLIRContext &context,
                                                 Autotuner &tuner) {
  auto task = rt::kernelTaskFromJson(job.task);
  if (!task)
    return llvm::createStringError(
        "job " + std::to_string(job.id) +
        ": its task does not read: " + task.status().message());
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    diagnostics += (diagnostics.empty() ? "" : "; ") + diagnostic.str();
    return success();
  });
  // The MLIR comes from whoever may enqueue: it gets the bounds of any
  // input (nesting, and the parser's own stack).
  std::string name = "job " + std::to_string(job.id);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(task->mlir, name), llvm::SMLoc());
  auto module = parseModelBuffer(sourceMgr, context, name);
  if (!module) {
    std::string reason = llvm::toString(module.takeError());
    return llvm::createStringError(
        name + ": its task's MLIR does not parse: " +
        (diagnostics.empty() ? reason : diagnostics));
  }
  func::FuncOp group;
  for (auto func : (*module)->getOps<func::FuncOp>())
    if (auto key = func->getAttrOfType<StringAttr>(kKeyAttrName))
      if (key.getValue() == job.taskKey)
        group = func;
  if (!group)
    return llvm::createStringError("job " + std::to_string(job.id) +
                                   ": its task's MLIR has no group with key " +
                                   job.taskKey);
  return tuner.processGroup(group);
}

JobResult
mlir::kopt::summarizeJobOutcome(llvm::Expected<GroupOutcome> outcome) {
  JobResult result;
  result.finished = true;
  if (!outcome)
    result.error = llvm::toString(outcome.takeError());
  else if (outcome->tuningFailed ||
           outcome->source == GroupOutcome::Source::Baseline)
    result.error = outcome->note.empty() ? "not tuned" : outcome->note;
  else
    result.how = getSourceName(outcome->source).str();
  return result;
}
