//===- DeviceProbe.cpp - The fingerprint of this machine's GPU --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/Autotuner.h"
#include "kopt/Evaluator/WorkerPool.h"

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"

#include "llvm/ADT/StringRef.h"

#include <cmath>
#include <cstdlib>

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

/// `major.minor` of a CUDA version number such as 13000.
static std::string formatCudaVersion(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

/// Whether the workers answer with made-up reports
/// (`KOPT_WORKER_TEST_MODE=fake[:<ms>]`, docs/Evaluator.md).
static bool isFakeEvaluation() {
  const char *mode = std::getenv("KOPT_WORKER_TEST_MODE");
  llvm::StringRef text = mode ? mode : "";
  return text == "fake" || text.starts_with("fake:");
}

/// The made-up device tuned for when the workers are fake: an H200-like
/// one whose driver and NVRTC versions say `fake`, or, for a
/// CUDA_VISIBLE_DEVICES entry `fake-sm_<NN>`, the same of architecture
/// `sm_<NN>`.
static rt::DeviceFingerprint getFakeFingerprint(const std::string &precision,
                                                llvm::StringRef entry) {
  rt::DeviceFingerprint fingerprint;
  fingerprint.computeCapability = "sm_90";
  if (entry.consume_front("fake-") && entry.starts_with("sm_"))
    fingerprint.computeCapability = entry.str();
  fingerprint.smCount = 132;
  fingerprint.memoryBandwidthMBps = 4800000;
  fingerprint.l2Bytes = 52428800;
  fingerprint.driverVersion = "fake";
  fingerprint.nvrtcVersion = "fake";
  fingerprint.codegenVersion = kCodegenVersion;
  fingerprint.precision = precision;
  return fingerprint;
}

/// The made-up devices of fake workers: one per CUDA_VISIBLE_DEVICES entry,
/// as a WorkerPool gives each its worker (one when it is unset).
static std::vector<rt::DeviceFingerprint>
getFakeFingerprints(const std::string &precision) {
  WorkerPoolOptions options;
  std::vector<rt::DeviceFingerprint> fingerprints;
  for (const std::string &entry :
       resolvePoolDevices(options, std::getenv("CUDA_VISIBLE_DEVICES")))
    fingerprints.push_back(getFakeFingerprint(precision, entry));
  return fingerprints;
}

std::vector<rt::DeviceFingerprint>
mlir::kopt::probeDeviceFingerprints(const std::string &precision,
                                    std::string &why) {
  if (isFakeEvaluation())
    return getFakeFingerprints(precision);
  auto driver = rt::loadCudaDriver();
  if (!driver) {
    why = "no CUDA driver";
    return {};
  }
  int count = 0;
  if ((*driver)->cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1) {
    why = "no CUDA device";
    return {};
  }
  std::vector<rt::DeviceFingerprint> fingerprints;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    auto info = rt::queryDeviceInfo(**driver, ordinal);
    if (!info) {
      // The devices before it still serve.
      if (ordinal > 0)
        break;
      why = "no CUDA device: " + info.status().message();
      return {};
    }
    rt::DeviceFingerprint fingerprint;
    fingerprint.computeCapability = info->getArch();
    fingerprint.smCount = info->smCount;
    // The theoretical bandwidth: stable, unlike a measured one.
    fingerprint.memoryBandwidthMBps =
        int64_t(std::llround(info->getTheoreticalBandwidthGBs() * 1000));
    fingerprint.l2Bytes = info->l2Bytes;
    fingerprint.driverVersion = formatCudaVersion((*driver)->version);
    if (auto nvrtc = rt::getNvrtcVersion())
      fingerprint.nvrtcVersion =
          std::to_string(nvrtc->first) + "." + std::to_string(nvrtc->second);
    fingerprint.codegenVersion = kCodegenVersion;
    fingerprint.precision = precision;
    fingerprints.push_back(std::move(fingerprint));
  }
  return fingerprints;
}

/// The first of `probeDeviceFingerprints`, with their number in `count`.
std::optional<rt::DeviceFingerprint>
mlir::kopt::probeDeviceFingerprint(const std::string &precision,
                                   std::string &why, int &count) {
  std::vector<rt::DeviceFingerprint> fingerprints =
      probeDeviceFingerprints(precision, why);
  count = int(fingerprints.size());
  if (fingerprints.empty())
    return std::nullopt;
  return fingerprints.front();
}

std::string
mlir::kopt::describeWorkerMismatch(const rt::HelloMessage &hello,
                                   const rt::DeviceFingerprint &fingerprint) {
  const rt::WorkerDeviceInfo &device = hello.device;
  std::string arch = "sm_" + std::to_string(device.computeCapabilityMajor) +
                     std::to_string(device.computeCapabilityMinor);
  auto describe = [](const std::string &arch, int64_t sms, int64_t l2,
                     const std::string &driver, const std::string &nvrtc) {
    return arch + ", " + std::to_string(sms) + " SMs, " + std::to_string(l2) +
           " bytes of L2, driver " + driver + ", NVRTC " + nvrtc;
  };
  if (arch == fingerprint.computeCapability &&
      device.smCount == fingerprint.smCount &&
      device.l2Bytes == fingerprint.l2Bytes &&
      hello.driverVersion == fingerprint.driverVersion &&
      hello.nvrtcVersion == fingerprint.nvrtcVersion)
    return "";
  return "the worker reports " +
         describe(arch, device.smCount, device.l2Bytes, hello.driverVersion,
                  hello.nvrtcVersion) +
         ", not the device probed for it (" +
         describe(fingerprint.computeCapability, fingerprint.smCount,
                  fingerprint.l2Bytes, fingerprint.driverVersion,
                  fingerprint.nvrtcVersion) +
         ")";
}
