//===- Revalidator.cpp - Re-evaluate stored winners on a GPU ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/Revalidator.h"

#include "kopt/Autotune/Autotuner.h"

#include <chrono>

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

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
