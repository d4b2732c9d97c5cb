//===- KernelRevalidationTest.cpp - Tests of stale winners ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Marking winners of another driver or NVRTC stale, and storing what a
// re-evaluation returns; the re-evaluation is a fake here, as it is what
// needs the GPU.
//
//===----------------------------------------------------------------------===//

#include "KernelDbTestHelpers.h"

#include "kopt/Runtime/KernelRevalidation.h"

#include <gtest/gtest.h>

using namespace kopt::runtime;
using namespace kopt::runtime::testing;

namespace {

DeviceFingerprint withToolchain(DeviceFingerprint fingerprint,
                                const std::string &driver,
                                const std::string &nvrtc) {
  fingerprint.driverVersion = driver;
  fingerprint.nvrtcVersion = nvrtc;
  return fingerprint;
}

class KernelRevalidationTest : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    if (GetParam() == "memory")
      db = std::make_unique<MemoryKernelDatabase>();
    else
      db = openOrDie(dir.file("kernels.db"));
    ASSERT_TRUE(db);
    // The current machine runs driver 12.6 and NVRTC 12.6; makeFingerprint
    // is 12.4 / 12.4.
    current = withToolchain(makeFingerprint(), "12.6", "12.6");
    other = makeFingerprint();
    other.computeCapability = "sm_80";
    other.smCount = 108;

    add("old-toolchain", makeFingerprint(), true);
    add("old-driver", withToolchain(makeFingerprint(), "12.4", "12.6"), true);
    add("current", current, true);
    add("invalid", makeFingerprint(), false);
    add("other-device", other, true);
    // Already re-validated: a record exists for the current toolchain.
    add("done", makeFingerprint(), true);
    add("done", current, true);
  }

  void add(const std::string &key, const DeviceFingerprint &fingerprint,
           bool valid) {
    KernelRecord record = makeRecord(key, 1.0);
    record.fingerprint = fingerprint;
    record.valid = valid;
    ASSERT_TRUE(db->put(record).isOk());
  }

  /// "key:pending" for each stale record.
  static std::vector<std::string>
  describe(const std::vector<StaleRecord> &stale) {
    std::vector<std::string> lines;
    for (const StaleRecord &record : stale)
      lines.push_back(record.taskKey + (record.pending ? ":pending" : ""));
    return lines;
  }

  TempDir dir;
  std::unique_ptr<KernelDatabase> db;
  DeviceFingerprint current, other;
};

TEST_P(KernelRevalidationTest, MarksWinnersOfAnotherToolchain) {
  RevalidationScope scope;
  scope.current = current;
  Result<std::vector<StaleRecord>> stale = markStaleRecords(*db, scope);
  ASSERT_TRUE(stale.isOk()) << stale.status().toString();
  EXPECT_EQ(describe(*stale),
            (std::vector<std::string>{"done", "old-driver:pending",
                                      "old-toolchain:pending"}));
  EXPECT_EQ((*stale)[1].target, current);
  EXPECT_EQ((*stale)[1].fingerprint,
            withToolchain(makeFingerprint(), "12.4", "12.6"));
  EXPECT_EQ(db->stats()->staleRecords, 3u);

  // Lookups on a stale record's own fingerprint still find it, marked.
  Result<std::optional<KernelRecord>> found =
      db->lookup("old-toolchain", makeFingerprint());
  ASSERT_TRUE(found.isOk() && found->has_value());
  EXPECT_TRUE((*found)->stale);
  EXPECT_FALSE((*db->lookup("current", current))->stale);
  EXPECT_TRUE(db->verify().isOk());

  // Marking again is the same; going back to the old toolchain flips it.
  EXPECT_EQ(describe(*markStaleRecords(*db, scope)), describe(*stale));
  scope.current = makeFingerprint();
  stale = markStaleRecords(*db, scope);
  ASSERT_TRUE(stale.isOk());
  EXPECT_EQ(describe(*stale),
            (std::vector<std::string>{"current:pending", "done",
                                      "old-driver:pending"}));
  EXPECT_FALSE((*db->lookup("old-toolchain", makeFingerprint()))->stale);
  EXPECT_TRUE((*db->lookup("current", current))->stale);
}

TEST_P(KernelRevalidationTest, JudgesOtherDevicesOnlyWhenAsked) {
  RevalidationScope scope;
  scope.current = withToolchain(DeviceFingerprint(), "12.6", "12.6");
  scope.sameDeviceOnly = false;
  Result<std::vector<StaleRecord>> stale = markStaleRecords(*db, scope);
  ASSERT_TRUE(stale.isOk()) << stale.status().toString();
  EXPECT_EQ(describe(*stale),
            (std::vector<std::string>{"done", "old-driver:pending",
                                      "old-toolchain:pending",
                                      "other-device:pending"}));
  EXPECT_EQ((*stale)[3].target, withToolchain(other, "12.6", "12.6"));
}

TEST_P(KernelRevalidationTest, StoresWhatReevaluationReturns) {
  RevalidationScope scope;
  scope.current = current;
  std::vector<std::string> asked;
  ReevaluateFunction reevaluate =
      [&](const KernelRecord &record,
          const DeviceFingerprint &target) -> Result<KernelRecord> {
    asked.push_back(record.taskKey);
    EXPECT_EQ(target, current);
    // The binaries come along.
    EXPECT_TRUE(record.cubin.has_value());
    if (record.taskKey == "old-driver")
      return Status::error(StatusCode::Unavailable, "no GPU here");
    KernelRecord result = record;
    result.winner.medianMs = 0.75;
    return result;
  };
  Result<RevalidationSummary> summary =
      revalidateStaleRecords(*db, scope, reevaluate);
  ASSERT_TRUE(summary.isOk()) << summary.status().toString();
  EXPECT_EQ(asked, (std::vector<std::string>{"old-driver", "old-toolchain"}));
  EXPECT_EQ(summary->countPending(), 2u);
  EXPECT_EQ(summary->confirmed, 1u);
  EXPECT_EQ(summary->invalidated, 0u);
  ASSERT_EQ(summary->errors.size(), 1u);
  EXPECT_EQ(summary->errors[0],
            "record old-driver on " +
                withToolchain(makeFingerprint(), "12.4", "12.6").hash() +
                ": no GPU here");

  Result<std::optional<KernelRecord>> revalidated =
      db->lookup("old-toolchain", current);
  ASSERT_TRUE(revalidated.isOk() && revalidated->has_value());
  EXPECT_EQ((*revalidated)->winner.medianMs, 0.75);
  EXPECT_FALSE((*revalidated)->stale);
  EXPECT_GT((*revalidated)->createdAt, 1700000000);
  EXPECT_TRUE(db->verify().isOk());

  // Only the one that failed is asked again; one found invalid is stored
  // as invalid and not asked again either.
  asked.clear();
  reevaluate = [&](const KernelRecord &record,
                   const DeviceFingerprint &) -> Result<KernelRecord> {
    asked.push_back(record.taskKey);
    KernelRecord result = record;
    result.valid = false;
    return result;
  };
  summary = revalidateStaleRecords(*db, scope, reevaluate);
  ASSERT_TRUE(summary.isOk()) << summary.status().toString();
  EXPECT_EQ(asked, (std::vector<std::string>{"old-driver"}));
  EXPECT_EQ(summary->invalidated, 1u);
  EXPECT_FALSE(db->lookup("old-driver", current)->has_value());
  summary = revalidateStaleRecords(*db, scope, reevaluate);
  ASSERT_TRUE(summary.isOk());
  EXPECT_EQ(summary->countPending(), 0u);
  EXPECT_EQ(asked.size(), 1u);
}

TEST_P(KernelRevalidationTest, OnlyMarksWithoutReevaluation) {
  RevalidationScope scope;
  scope.current = current;
  Result<RevalidationSummary> summary = revalidateStaleRecords(*db, scope);
  ASSERT_TRUE(summary.isOk()) << summary.status().toString();
  EXPECT_EQ(summary->stale.size(), 3u);
  EXPECT_EQ(summary->countPending(), 2u);
  EXPECT_EQ(summary->confirmed + summary->invalidated, 0u);
  EXPECT_FALSE(db->lookup("old-toolchain", current)->has_value());
}

INSTANTIATE_TEST_SUITE_P(Implementations, KernelRevalidationTest,
                         ::testing::Values("memory", "sqlite"),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

TEST(KernelRevalidationTest, ComparesDeviceAndCodegen) {
  DeviceFingerprint a = makeFingerprint();
  EXPECT_TRUE(isSameDeviceAndCodegen(a, withToolchain(a, "13.0", "13.1")));
  DeviceFingerprint b = a;
  b.codegenVersion = "2";
  EXPECT_FALSE(isSameDeviceAndCodegen(a, b));
  b = a;
  b.precision = "tf32";
  EXPECT_FALSE(isSameDeviceAndCodegen(a, b));
  EXPECT_EQ(withToolchainOf(a, withToolchain(b, "13.0", "13.1")),
            withToolchain(a, "13.0", "13.1"));
}

} // namespace
