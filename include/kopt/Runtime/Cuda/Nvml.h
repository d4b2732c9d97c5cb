//===- Nvml.h - SM clock and temperature through NVML -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The evaluator logs the SM clock and the GPU temperature with each
// measurement. NVML is opened with dlopen (libnvidia-ml.so.1) and only four
// functions are used, declared here with NVML's ABI, so no NVML header is
// needed. A machine without NVML gives no readings, which is not an error.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_NVML_H
#define KOPT_RUNTIME_CUDA_NVML_H

#include <optional>

namespace kopt::runtime {

/// One reading of a device's state.
struct DeviceReading {
  /// The current SM clock in MHz, when NVML gave it.
  std::optional<double> smClockMhz;
  /// The GPU temperature in degrees Celsius, when NVML gave it.
  std::optional<double> temperatureC;
};

/// Reads the SM clock and temperature of NVML device `index`. NVML numbers
/// devices by PCI order, ignoring CUDA_VISIBLE_DEVICES: the caller passes
/// the CUDA ordinal, which matches when CUDA_DEVICE_ORDER=PCI_BUS_ID and no
/// device is hidden. Loads and initialises NVML on the first call; without
/// NVML every field is empty.
DeviceReading readDeviceState(unsigned index);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CUDA_NVML_H
