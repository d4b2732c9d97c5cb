//===- Nvml.cpp - SM clock and temperature through NVML ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/Nvml.h"

#include <dlfcn.h>
#include <mutex>

using namespace kopt::runtime;

namespace {
/// NVML's ABI for the functions used: `nvmlReturn_t` is an int (0 is
/// NVML_SUCCESS), `nvmlDevice_t` an opaque pointer.
using NvmlInit = int (*)();
using NvmlGetHandle = int (*)(unsigned, void **);
using NvmlGetClock = int (*)(void *, int, unsigned *);
using NvmlGetTemperature = int (*)(void *, int, unsigned *);

/// NVML_CLOCK_SM and NVML_TEMPERATURE_GPU.
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlTemperatureGpu = 0;

struct Nvml {
  NvmlGetHandle getHandle = nullptr;
  NvmlGetClock getClock = nullptr;
  NvmlGetTemperature getTemperature = nullptr;
};
} // namespace

/// Loads NVML once; nullptr when it is missing or does not initialise. The
/// library stays open for the process.
static const Nvml *loadNvml() {
  static std::once_flag once;
  static Nvml nvml;
  static bool loaded = false;
  std::call_once(once, [] {
    void *library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library)
      return;
    auto init = reinterpret_cast<NvmlInit>(dlsym(library, "nvmlInit_v2"));
    nvml.getHandle = reinterpret_cast<NvmlGetHandle>(
        dlsym(library, "nvmlDeviceGetHandleByIndex_v2"));
    nvml.getClock = reinterpret_cast<NvmlGetClock>(
        dlsym(library, "nvmlDeviceGetClockInfo"));
    nvml.getTemperature = reinterpret_cast<NvmlGetTemperature>(
        dlsym(library, "nvmlDeviceGetTemperature"));
    loaded = init && nvml.getHandle && nvml.getClock && nvml.getTemperature &&
             init() == 0;
  });
  return loaded ? &nvml : nullptr;
}

DeviceReading kopt::runtime::readDeviceState(unsigned index) {
  DeviceReading reading;
  const Nvml *nvml = loadNvml();
  if (!nvml)
    return reading;
  void *device = nullptr;
  if (nvml->getHandle(index, &device) != 0)
    return reading;
  unsigned value = 0;
  if (nvml->getClock(device, kNvmlClockSm, &value) == 0)
    reading.smClockMhz = double(value);
  if (nvml->getTemperature(device, kNvmlTemperatureGpu, &value) == 0)
    reading.temperatureC = double(value);
  return reading;
}
