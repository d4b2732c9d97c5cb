//===- DeviceProbe.cpp - The fingerprint of this machine's GPU --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/Autotuner.h"

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
/// one whose driver and NVRTC versions say `fake`.
static rt::DeviceFingerprint getFakeFingerprint(const std::string &precision) {
  rt::DeviceFingerprint fingerprint;
  fingerprint.computeCapability = "sm_90";
  fingerprint.smCount = 132;
  fingerprint.memoryBandwidthMBps = 4800000;
  fingerprint.l2Bytes = 52428800;
  fingerprint.driverVersion = "fake";
  fingerprint.nvrtcVersion = "fake";
  fingerprint.codegenVersion = kCodegenVersion;
  fingerprint.precision = precision;
  return fingerprint;
}

/// The fingerprint of device 0 from its attributes (no context), or none
/// when there is no driver or device. With fake workers, their made-up
/// device, so that the whole tuning loop runs without a GPU.
std::optional<rt::DeviceFingerprint>
mlir::kopt::probeDeviceFingerprint(const std::string &precision,
                                   std::string &why, int &count) {
  if (isFakeEvaluation()) {
    count = 1;
    return getFakeFingerprint(precision);
  }
  auto driver = rt::loadCudaDriver();
  if (!driver) {
    why = "no CUDA driver";
    return std::nullopt;
  }
  if ((*driver)->cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1) {
    why = "no CUDA device";
    return std::nullopt;
  }
  auto info = rt::queryDeviceInfo(**driver, 0);
  if (!info) {
    why = "no CUDA device: " + info.status().message();
    return std::nullopt;
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
  return fingerprint;
}
