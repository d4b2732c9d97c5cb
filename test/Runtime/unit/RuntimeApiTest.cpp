//===- RuntimeApiTest.cpp - libkoptrt without a GPU -------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What libkoptrt does on a machine without a GPU: every call returns a
// status and a message, never aborts; and the kernel lookup's choice of a
// record for a device, on a memory database.
//
//===----------------------------------------------------------------------===//

#include "kopt-c/Runtime.h"
#include "kopt/Runtime/Cuda/BoundPlan.h"
#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/KernelLookup.h"

#include "gtest/gtest.h"

#include <string>

using namespace kopt::runtime;

namespace {

bool hasDriver() { return bool(loadCudaDriver()); }

TEST(RuntimeApiTest, NullArgumentsAreErrors) {
  EXPECT_EQ(koptDeviceCreate(0, nullptr), KOPT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(koptGetLastError()).find("'outDevice' is NULL"),
            std::string::npos)
      << koptGetLastError();
  EXPECT_EQ(koptModuleRun(nullptr, nullptr), KOPT_INVALID_ARGUMENT);
  EXPECT_EQ(koptKernelDbLookup(nullptr, nullptr, "k", nullptr, nullptr),
            KOPT_INVALID_ARGUMENT);
  const char *info = nullptr;
  EXPECT_EQ(koptModuleGetLoadInfo(nullptr, &info), KOPT_INVALID_ARGUMENT);
  koptModuleDestroy(nullptr);
  koptDeviceDestroy(nullptr);
  koptKernelDbClose(nullptr);
  koptKernelDestroy(nullptr);
  EXPECT_STREQ(koptStatusName(KOPT_UNAVAILABLE), "unavailable");
}

TEST(RuntimeApiTest, NoDriverIsAStatusNotAnAbort) {
  if (hasDriver())
    GTEST_SKIP() << "this machine has a CUDA driver";
  KoptDevice *device = nullptr;
  EXPECT_EQ(koptDeviceCreate(0, &device), KOPT_UNAVAILABLE);
  EXPECT_EQ(device, nullptr);
  EXPECT_NE(std::string(koptGetLastError()).find("no CUDA driver"),
            std::string::npos)
      << koptGetLastError();
  // A success clears the message.
  EXPECT_EQ(koptStatusName(KOPT_OK), std::string("ok"));
}

TEST(RuntimeApiTest, DatabaseIsOpenedReadOnlyAndNeverCreated) {
  KoptKernelDb *db = nullptr;
  EXPECT_NE(koptKernelDbOpen("/nonexistent/kernels.db", &db), KOPT_OK);
  EXPECT_EQ(db, nullptr);
  EXPECT_NE(std::string(koptGetLastError()).find("kernels.db"),
            std::string::npos)
      << koptGetLastError();
}

KernelRecord makeRecord(const std::string &key, const std::string &cc,
                        double medianMs, bool valid = true) {
  KernelRecord record;
  record.taskKey = key;
  record.fingerprint.computeCapability = cc;
  record.fingerprint.smCount = 132;
  record.fingerprint.codegenVersion = "1";
  record.valid = valid;
  record.winner.medianMs = medianMs;
  KernelPlan plan;
  plan.taskKey = key;
  plan.proposer = "builtin";
  plan.variant = cc + "_" + std::to_string(int(medianMs * 10));
  plan.sources.push_back({"main", "// code"});
  PlanStep step;
  step.launch.source = "main";
  step.launch.entry = "f";
  plan.steps.push_back(step);
  record.plan = toJson(plan);
  record.ptx = "// ptx of " + cc;
  return record;
}

TEST(KernelLookupTest, PrefersTheDevicesArchitectureThenOlderPtx) {
  MemoryKernelDatabase db;
  ASSERT_TRUE(bool(db.put(makeRecord("aaaa", "sm_80", 1.0))));
  ASSERT_TRUE(bool(db.put(makeRecord("aaaa", "sm_100", 0.5))));
  ASSERT_TRUE(bool(db.put(makeRecord("aaaab", "sm_90", 0.1))));
  auto older = findKernelForArch(db, "aaaa", "sm_90", "fp32");
  ASSERT_TRUE(bool(older)) << older.status().message();
  EXPECT_EQ(older->record.fingerprint.computeCapability, "sm_80");
  EXPECT_NE(older->note.find("its PTX is JIT-compiled"), std::string::npos);
  ASSERT_EQ(older->binaries.size(), 1u);
  EXPECT_EQ(older->binaries[0].arch, "sm_80");

  ASSERT_TRUE(bool(db.put(makeRecord("aaaa", "sm_90", 2.0))));
  auto same = findKernelForArch(db, "aaaa", "sm_90", "fp32");
  ASSERT_TRUE(bool(same));
  EXPECT_EQ(same->record.fingerprint.computeCapability, "sm_90");

  auto newer = findKernelForArch(db, "aaaa", "sm_75", "fp32");
  ASSERT_TRUE(bool(newer));
  EXPECT_NE(newer->note.find("compiled from source"), std::string::npos);

  auto missing = findKernelForArch(db, "aaa", "sm_90", "fp32");
  ASSERT_FALSE(bool(missing));
  EXPECT_EQ(missing.status().code(), StatusCode::Unavailable);
  EXPECT_FALSE(bool(findKernelForArch(db, "aaaa", "sm_90", "bf16")));
}

TEST(KernelLookupTest, PtxCompatibility) {
  EXPECT_TRUE(isPtxCompatible("sm_80", "sm_90"));
  EXPECT_TRUE(isPtxCompatible("sm_90", "sm_90"));
  EXPECT_FALSE(isPtxCompatible("sm_100", "sm_90"));
  EXPECT_FALSE(isPtxCompatible("sm_90a", "sm_100"));
  EXPECT_TRUE(isPtxCompatible("sm_90a", "sm_90a"));
  EXPECT_FALSE(isPtxCompatible("compute", "sm_90"));
}

} // namespace
