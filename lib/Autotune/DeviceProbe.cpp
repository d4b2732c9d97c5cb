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

#include <cmath>

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

/// `major.minor` of a CUDA version number such as 13000.
static std::string formatCudaVersion(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

/// The fingerprint of device 0 from its attributes (no context), or none
/// when there is no driver or device.
std::optional<rt::DeviceFingerprint>
mlir::kopt::probeDeviceFingerprint(const std::string &precision,
                                   std::string &why, int &count) {
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
