//===- WorkerTestUtils.h - Helpers for the worker tests ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_UNIT_WORKERTESTUTILS_H
#define KOPT_TEST_UNIT_WORKERTESTUTILS_H

#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/Protocol.h"

#include "gtest/gtest.h"

#include <fstream>
#include <sstream>
#include <string>

namespace mlir::kopt::testing {

/// Reads a file of test/Runtime/Inputs as JSON.
inline ::kopt::runtime::json::Value readWorkerInput(const std::string &name) {
  namespace rt = ::kopt::runtime;
  std::ifstream file(std::string(KOPT_SOURCE_DIR) + "/test/Runtime/Inputs/" +
                     name);
  std::stringstream text;
  text << file.rdbuf();
  rt::Result<rt::json::Value> value = rt::json::parse(text.str());
  EXPECT_TRUE(value.isOk()) << name << ": " << value.status().message();
  return value.isOk() ? *value : rt::json::Value::object();
}

/// A request with the mlp_block_g1 task, its baseline and a builtin plan.
inline ::kopt::runtime::EvaluateMessage makeWorkerRequest(int64_t id) {
  ::kopt::runtime::EvaluateMessage request;
  request.requestId = id;
  request.task = readWorkerInput("mlp_block_g1.task.json");
  request.candidates.push_back(
      readWorkerInput("mlp_block_g1.baseline.plan.json"));
  request.candidates.push_back(
      readWorkerInput("mlp_block_g1.builtin.plan.json"));
  return request;
}

} // namespace mlir::kopt::testing

#endif // KOPT_TEST_UNIT_WORKERTESTUTILS_H
