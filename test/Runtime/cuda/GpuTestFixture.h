//===- GpuTestFixture.h - A CUDA context for the GPU tests ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The fixture every GPU test derives from: its SetUp opens a context on
// device 0, skips the test on a machine without a CUDA driver, and fails it
// instead under KOPT_REQUIRE_GPU=1, which scripts/gpu-check sets so that a
// GPU machine whose driver does not load cannot pass by skipping.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_RUNTIME_CUDA_GPUTESTFIXTURE_H
#define KOPT_TEST_RUNTIME_CUDA_GPUTESTFIXTURE_H

#include "kopt/Runtime/Cuda/CudaDriver.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <memory>
#include <string>

namespace kopt::runtime::gputest {

/// Whether KOPT_REQUIRE_GPU=1 asks that a missing GPU fail the tests.
inline bool isGpuRequired() {
  const char *require = std::getenv("KOPT_REQUIRE_GPU");
  return require && std::string(require) == "1";
}

/// A fixture (over `Base`, such as ::testing::TestWithParam<T>) holding a
/// context on device 0. A fixture with more to set up calls this SetUp
/// first and returns when `context` is null (the test was skipped or
/// failed).
template <typename Base = ::testing::Test>
class WithCudaContext : public Base {
protected:
  void SetUp() override {
    auto driver = loadCudaDriver();
    if (!driver) {
      if (isGpuRequired())
        FAIL() << "KOPT_REQUIRE_GPU=1 but " << driver.status().message();
      GTEST_SKIP() << driver.status().message();
    }
    auto created = CudaContext::create(0);
    ASSERT_TRUE(bool(created)) << created.status().message();
    context = std::move(*created);
  }

  std::unique_ptr<CudaContext> context;
};

} // namespace kopt::runtime::gputest

#endif // KOPT_TEST_RUNTIME_CUDA_GPUTESTFIXTURE_H
