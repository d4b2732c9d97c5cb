//===- Revalidator.cpp - Re-evaluate stored winners on a GPU ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/Revalidator.h"

#include "kopt/Autotune/Autotuner.h"
#include "kopt/Evaluator/ReferenceBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Parser/Parser.h"

#include <chrono>

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

/// Adds to `request` the fp64 references of its validation sets, built from
/// the task's MLIR: a plan in another arithmetic than IEEE fp32 proves its
/// accuracy against them on every set (docs/Evaluator.md). Without them
/// such a plan fails, which is the right verdict when they cannot be built.
static void addReferences(rt::EvaluateMessage &request) {
  auto task = rt::kernelTaskFromJson(request.task);
  if (!task)
    return;
  MLIRContext context;
  context.loadDialect<arith::ArithDialect, func::FuncDialect,
                      linalg::LinalgDialect, math::MathDialect,
                      tensor::TensorDialect>();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(task->mlir, &context);
  if (!module || module->getOps<func::FuncOp>().empty())
    return;
  func::FuncOp group = *module->getOps<func::FuncOp>().begin();
  auto references = buildReferenceSets(
      group, *task, uint64_t(request.options.seed),
      unsigned(std::max<int64_t>(request.options.validationSets, 1)));
  for (size_t set = 0; set < references.size(); ++set) {
    if (!references[set]) {
      llvm::consumeError(references[set].takeError());
      continue;
    }
    if (set == 0)
      request.reference = std::move(*references[set]);
    else
      request.laterReferences.push_back(std::move(*references[set]));
  }
}

rt::ReevaluateFunction mlir::kopt::makeWorkerReevaluator(WorkerPool &pool) {
  return [&pool](const rt::KernelRecord &record,
                 const rt::DeviceFingerprint &target)
             -> rt::Result<rt::KernelRecord> {
    const rt::json::Value *task = record.validation.find("task");
    const rt::json::Value *baseline = record.validation.find("baseline_plan");
    if (!task || !baseline)
      return rt::Status::error(
          rt::StatusCode::InvalidArgument,
          "the record keeps no task or baseline plan (stored before kopt "
          "kept them): tune the group again with kopt compile --tune=always");
    rt::EvaluateMessage request;
    request.requestId = 1;
    request.task = *task;
    request.candidates.push_back(*baseline);
    // A winner that is the baseline itself is evaluated alone.
    bool isBaseline =
        rt::json::write(*baseline) == rt::json::write(record.plan);
    if (!isBaseline)
      request.candidates.push_back(record.plan);
    request.options.seed = int64_t(
        uint64_t(std::chrono::system_clock::now().time_since_epoch().count()) &
        0x7fffffffffffffffull);
    auto plan = rt::kernelPlanFromJson(record.plan);
    if (!isBaseline && plan && plan->arithmetic != "fp32")
      addReferences(request);
    auto reports = pool.evaluate(request);
    if (!reports)
      return rt::Status::error(rt::StatusCode::Unavailable,
                               llvm::toString(reports.takeError()));
    const rt::EvalReport &base = reports->front();
    const rt::EvalReport &mine = reports->back();
    rt::KernelRecord result = record;
    result.fingerprint = target;
    result.createdAt = result.updatedAt = 0;
    result.valid = base.valid && mine.valid && !mine.suspicious;
    result.validation = record.validation;
    result.validation.set("evidence", mine.evidence);
    result.validation.set("revalidated_from", rt::toJson(record.fingerprint));
    if (mine.times)
      result.winner = toTimingSummary(*mine.times);
    if (base.times)
      result.baseline = toTimingSummary(*base.times);
    return result;
  };
}
