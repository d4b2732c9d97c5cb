//===- DeviceProbeTest.cpp - Tests of the per-GPU fingerprints --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The fingerprint of every device, with fake workers (no GPU): one per
// CUDA_VISIBLE_DEVICES entry, an entry `fake-sm_<NN>` making a device of
// another model, and each worker's own report of its device matching what
// was probed for it.
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/Autotuner.h"
#include "kopt/Evaluator/WorkerPool.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <optional>
#include <string>

using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

namespace {

/// Sets an environment variable for one test and restores it after.
class ScopedEnvironment {
public:
  ScopedEnvironment(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnvironment() {
    if (saved)
      ::setenv(name, saved->c_str(), 1);
    else
      ::unsetenv(name);
  }

private:
  const char *name;
  std::optional<std::string> saved;
};

TEST(DeviceProbeTest, FakeDevicesFollowTheVisibleDevices) {
  ScopedEnvironment mode("KOPT_WORKER_TEST_MODE", "fake");
  ScopedEnvironment visible("CUDA_VISIBLE_DEVICES", "0,fake-sm_80,1");
  std::string why;
  std::vector<rt::DeviceFingerprint> fingerprints =
      probeDeviceFingerprints("fp32", why);
  ASSERT_EQ(fingerprints.size(), 3u);
  EXPECT_EQ(fingerprints[0].computeCapability, "sm_90");
  EXPECT_EQ(fingerprints[1].computeCapability, "sm_80");
  EXPECT_EQ(fingerprints[2].computeCapability, "sm_90");
  EXPECT_EQ(fingerprints[0].hash(), fingerprints[2].hash());
  EXPECT_NE(fingerprints[0].hash(), fingerprints[1].hash());
  int count = 0;
  std::optional<rt::DeviceFingerprint> first =
      probeDeviceFingerprint("fp32", why, count);
  EXPECT_EQ(count, 3);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->hash(), fingerprints[0].hash());
}

TEST(DeviceProbeTest, EachWorkerReportsTheDeviceProbedForIt) {
  ScopedEnvironment mode("KOPT_WORKER_TEST_MODE", "fake");
  ScopedEnvironment visible("CUDA_VISIBLE_DEVICES", "0,fake-sm_80");
  std::string why;
  std::vector<rt::DeviceFingerprint> fingerprints =
      probeDeviceFingerprints("fp32", why);
  ASSERT_EQ(fingerprints.size(), 2u);
  WorkerPoolOptions options;
  options.worker.executable = KOPT_WORKER_PATH;
  options.worker.startTimeout = std::chrono::milliseconds(10000);
  WorkerPool pool(options);
  ASSERT_EQ(pool.size(), 2u);
  llvm::Error error = pool.start();
  ASSERT_FALSE(static_cast<bool>(error)) << llvm::toString(std::move(error));
  std::optional<rt::HelloMessage> hellos[2] = {pool.getWorker(0).hello,
                                               pool.getWorker(1).hello};
  pool.shutdown();
  ASSERT_TRUE(hellos[0] && hellos[1]);
  EXPECT_EQ(hellos[0]->device.computeCapabilityMajor, 9);
  EXPECT_EQ(hellos[1]->device.computeCapabilityMajor, 8);
  EXPECT_EQ(describeWorkerMismatch(*hellos[0], fingerprints[0]), "");
  EXPECT_EQ(describeWorkerMismatch(*hellos[1], fingerprints[1]), "");
  // Two models: neither worker may store under the other's fingerprint.
  EXPECT_EQ(describeWorkerMismatch(*hellos[1], fingerprints[0]),
            "the worker reports sm_80, 132 SMs, 52428800 bytes of L2, driver "
            "fake, NVRTC fake, not the device probed for it (sm_90, 132 SMs, "
            "52428800 bytes of L2, driver fake, NVRTC fake)");
  EXPECT_NE(describeWorkerMismatch(*hellos[0], fingerprints[1]), "");
}

TEST(DeviceProbeTest, AWorkerOfAnotherToolchainDoesNotMatch) {
  rt::HelloMessage hello;
  hello.device.computeCapabilityMajor = 9;
  hello.device.smCount = 132;
  hello.device.l2Bytes = 52428800;
  hello.device.memoryBandwidthGBps = 4321; // measured: not compared
  hello.driverVersion = "13.0";
  hello.nvrtcVersion = "13.0";
  rt::DeviceFingerprint fingerprint;
  fingerprint.computeCapability = "sm_90";
  fingerprint.smCount = 132;
  fingerprint.l2Bytes = 52428800;
  fingerprint.memoryBandwidthMBps = 4800000;
  fingerprint.driverVersion = "13.0";
  fingerprint.nvrtcVersion = "13.0";
  EXPECT_EQ(describeWorkerMismatch(hello, fingerprint), "");
  hello.driverVersion = "12.8";
  EXPECT_NE(describeWorkerMismatch(hello, fingerprint).find("driver 12.8"),
            std::string::npos);
  hello.driverVersion = "13.0";
  hello.device.smCount = 114;
  EXPECT_NE(describeWorkerMismatch(hello, fingerprint), "");
}

} // namespace
