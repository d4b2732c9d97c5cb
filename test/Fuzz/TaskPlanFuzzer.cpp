//===- TaskPlanFuzzer.cpp - libFuzzer target: task and plan JSON -*- C++
//-*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Feeds text to the runtime's JSON reader and the `kopt.task/1` and
// `kopt.plan/1` readers (include/kopt/Runtime/TaskPlan.h), which read task
// and plan files, database records and worker requests. What reads must
// write and read back to the same text. An array `[task, plan]` also runs
// the plan verifier (verifyPlan, verifyStoredPlan) and so the evaluation of
// every grid and block expression.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "kopt/Runtime/PlanVerifier.h"
#include "kopt/Runtime/TaskPlan.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace kopt::runtime;
using kopt::fuzz::check;

/// Reads `value` with `read`; what reads must write and read back the same.
template <typename T, typename Reader>
static Result<T> readAndRoundTrip(const json::Value &value, Reader read) {
  Result<T> first = read(value);
  if (!first)
    return first;
  std::string written = json::write(toJson(*first));
  Result<json::Value> reparsed = json::parse(written);
  check(reparsed.isOk(), "written JSON does not parse", written);
  Result<T> second = read(*reparsed);
  check(second.isOk(), "a written document does not read",
        second.status().message());
  check(json::write(toJson(*second)) == written,
        "a document changed on a round trip", written);
  return first;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  Result<json::Value> value = json::parse(text);
  if (!value)
    return 0;
  std::string written = json::write(*value);
  Result<json::Value> reparsed = json::parse(written);
  check(reparsed.isOk(), "written JSON does not parse", written);
  check(json::write(*reparsed) == written, "JSON changed on a round trip",
        written);

  if (value->isArray() && value->size() == 2) {
    Result<KernelTask> task =
        readAndRoundTrip<KernelTask>(value->at(0), kernelTaskFromJson);
    Result<KernelPlan> plan =
        readAndRoundTrip<KernelPlan>(value->at(1), kernelPlanFromJson);
    if (task && plan) {
      Status verified = verifyPlan(*plan, *task);
      Status stored = verifyStoredPlan(*plan, *task);
      check(verified.isOk() || !stored.isOk(),
            "a stored plan passes where the plan itself does not");
    }
    return 0;
  }
  readAndRoundTrip<KernelTask>(*value, kernelTaskFromJson).status().ignore();
  readAndRoundTrip<KernelPlan>(*value, kernelPlanFromJson).status().ignore();
  return 0;
}
