//===- NvrtcTest.cpp - Tests of NVRTC compilation ---------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// NVRTC needs no GPU: these tests run wherever the CUDA toolkit is installed
// and skip only when libnvrtc cannot be loaded.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/Nvrtc.h"

#include "gtest/gtest.h"

using namespace kopt::runtime;

namespace {

class NvrtcTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto version = getNvrtcVersion();
    if (!version)
      GTEST_SKIP() << "NVRTC unavailable: " << version.status().message();
  }
};

constexpr const char *kVectorAdd = R"cuda(
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void vadd(const __half *x, const __nv_bfloat16 *y,
                                float *z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    z[i] = __half2float(x[i]) + __bfloat162float(y[i]);
}
)cuda";

TEST_F(NvrtcTest, CompilesCubinAndPtxForSm90) {
  auto compiled = compileCuda(kVectorAdd, "vadd.cu", "sm_90");
  ASSERT_TRUE(bool(compiled)) << compiled.status().message();
  ASSERT_GE(compiled->cubin.size(), 4u);
  EXPECT_EQ(compiled->cubin.substr(0, 4), "\x7f"
                                          "ELF");
  EXPECT_NE(compiled->ptx.find(".target sm_90"), std::string::npos);
  EXPECT_NE(compiled->ptx.find(".entry vadd"), std::string::npos);
  EXPECT_EQ(compiled->ptx.find('\0'), std::string::npos);
  EXPECT_EQ(compiled->log, "");
}

TEST_F(NvrtcTest, CleanKernelPassesWarningsAsErrors) {
  NvrtcOptions options;
  options.warningsAsErrors = true;
  auto compiled = compileCuda(kVectorAdd, "vadd.cu", "sm_90", options);
  EXPECT_TRUE(bool(compiled)) << compiled.status().message();
}

TEST_F(NvrtcTest, CompilesAGridBarrier) {
  // cooperative_groups.h includes the toolkit's C++ library (cuda/std),
  // which CUDA 13 keeps in include/cccl.
  NvrtcOptions options;
  options.warningsAsErrors = true;
  auto compiled = compileCuda(R"cuda(
#include <cooperative_groups.h>
extern "C" __global__ void barrier(float *y) {
  y[blockIdx.x] = 1.0f;
  cooperative_groups::this_grid().sync();
  if (blockIdx.x == 0)
    y[0] = y[gridDim.x - 1];
}
)cuda",
                              "barrier.cu", "sm_90", options);
  ASSERT_TRUE(bool(compiled)) << compiled.status().message();
  EXPECT_NE(compiled->ptx.find(".entry barrier"), std::string::npos);
}

TEST_F(NvrtcTest, SyntaxErrorFailsWithTheLog) {
  auto compiled =
      compileCuda("extern \"C\" __global__ void f(float *x) { x[0] = 1 }",
                  "broken.cu", "sm_90");
  ASSERT_FALSE(bool(compiled));
  std::string message = compiled.status().message();
  EXPECT_NE(message.find("NVRTC_ERROR_COMPILATION"), std::string::npos)
      << message;
  EXPECT_NE(message.find("broken.cu(1): error: expected a \";\""),
            std::string::npos)
      << message;
}

TEST_F(NvrtcTest, WarningFailsOnlyUnderWarningsAsErrors) {
  const char *source = "#warning kernels must not warn\n"
                       "extern \"C\" __global__ void f(float *x) { x[0] = 1; }";
  auto lenient = compileCuda(source, "warns.cu", "sm_90");
  ASSERT_TRUE(bool(lenient)) << lenient.status().message();
  EXPECT_FALSE(lenient->cubin.empty());
  EXPECT_TRUE(nvrtcLogHasWarning(lenient->log)) << lenient->log;

  NvrtcOptions options;
  options.warningsAsErrors = true;
  auto strict = compileCuda(source, "warns.cu", "sm_90", options);
  ASSERT_FALSE(bool(strict));
  std::string message = strict.status().message();
  EXPECT_NE(message.find("compiled with warnings"), std::string::npos)
      << message;
  EXPECT_NE(message.find("kernels must not warn"), std::string::npos)
      << message;
}

TEST_F(NvrtcTest, UninitializedVariableWarns) {
  NvrtcOptions options;
  options.warningsAsErrors = true;
  auto compiled =
      compileCuda("extern \"C\" __global__ void f(float *x) { int v; x[0] = "
                  "v; }",
                  "uninitialized.cu", "sm_90", options);
  ASSERT_FALSE(bool(compiled));
  EXPECT_NE(compiled.status().message().find("used before its value"),
            std::string::npos);
}

TEST_F(NvrtcTest, UnknownOptionFails) {
  NvrtcOptions options;
  options.extra = {"-Wall"};
  auto compiled = compileCuda(kVectorAdd, "vadd.cu", "sm_90", options);
  ASSERT_FALSE(bool(compiled));
  EXPECT_NE(compiled.status().message().find("-Wall"), std::string::npos);
}

TEST_F(NvrtcTest, VirtualArchitectureGivesNoCubin) {
  auto compiled = compileCuda(kVectorAdd, "vadd.cu", "compute_90");
  ASSERT_FALSE(bool(compiled));
  EXPECT_NE(compiled.status().message().find("no cubin"), std::string::npos);
}

TEST(NvrtcLogTest, RecognisesWarningLines) {
  EXPECT_FALSE(nvrtcLogHasWarning(""));
  EXPECT_FALSE(nvrtcLogHasWarning("k.cu(3): error: expected a \";\""));
  EXPECT_TRUE(nvrtcLogHasWarning(
      "k.cu(1): warning #549-D: variable \"v\" is used before its value is "
      "set\n"));
  EXPECT_TRUE(nvrtcLogHasWarning(
      "nvrtc: warning : Architectures prior to sm_75 are deprecated"));
  EXPECT_FALSE(nvrtcLogHasWarning("a comment on warnings in general"));
}

} // namespace
