//===- CudaDriver.cpp - The CUDA driver API, loaded at run ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/CudaDriver.h"

#include "DynamicLibrary.h"

#include <algorithm>
#include <atomic>

using namespace kopt::runtime;

// Every table entry must name the symbol cuda.h maps its API name to, or we
// would call a function through a pointer of another version's signature.
#define KOPT_CHECK_DRIVER_SYMBOL(api, symbol)                                  \
  static_assert(dynlib::equalNames(KOPT_EXPANDED_NAME(api), #symbol),          \
                "cuda.h maps " #api " to another symbol than the table's");
KOPT_CUDA_DRIVER_SYMBOLS(KOPT_CHECK_DRIVER_SYMBOL)
#undef KOPT_CHECK_DRIVER_SYMBOL

Status CudaDriver::check(CUresult result, std::string_view call) const {
  if (result == CUDA_SUCCESS)
    return Status::success();
  const char *name = nullptr;
  const char *description = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = "unknown CUresult";
  if (cuGetErrorString(result, &description) != CUDA_SUCCESS || !description)
    description = "no description";
  return Status::error(StatusCode::Internal, std::string(call) +
                                                 " failed: " + name + " (" +
                                                 std::to_string(int(result)) +
                                                 ": " + description + ")");
}

namespace {
/// The outcome of the one attempt to load the driver.
struct DriverLoad {
  std::unique_ptr<CudaDriver> driver;
  Status error;
};
} // namespace

static DriverLoad loadDriverOnce() {
  DriverLoad load;
  auto library = dynlib::openFirstLibrary(
      {"libcuda.so.1"},
      "no CUDA driver (libcuda.so.1 not found): this machine has no GPU");
  if (!library) {
    load.error = library.status();
    return load;
  }
  auto driver = std::make_unique<CudaDriver>();
#define KOPT_RESOLVE_DRIVER_SYMBOL(api, symbol)                                \
  driver->symbol = reinterpret_cast<decltype(driver->symbol)>(                 \
      dynlib::lookupSymbol(*library, #symbol));                                \
  if (!driver->symbol) {                                                       \
    load.error = Status::error(StatusCode::Unavailable,                        \
                               "the CUDA driver lacks " #symbol                \
                               " (a driver for CUDA 13 or newer is needed)");  \
    return load;                                                               \
  }
  KOPT_CUDA_DRIVER_SYMBOLS(KOPT_RESOLVE_DRIVER_SYMBOL)
#undef KOPT_RESOLVE_DRIVER_SYMBOL

  if (Status status = driver->check(driver->cuInit(0), "cuInit");
      !status.isOk()) {
    load.error = Status::error(
        StatusCode::Unavailable,
        "the CUDA driver is present but does not start: " + status.message());
    return load;
  }
  if (Status status = driver->check(
          driver->cuDriverGetVersion(&driver->version), "cuDriverGetVersion");
      !status.isOk()) {
    load.error = status;
    return load;
  }
  // The library stays open for the life of the process: the table points
  // into it.
  load.driver = std::move(driver);
  return load;
}

Result<const CudaDriver *> kopt::runtime::loadCudaDriver() {
  static const DriverLoad load = loadDriverOnce();
  if (!load.driver)
    return load.error;
  return load.driver.get();
}

//===----------------------------------------------------------------------===//
// Device information
//===----------------------------------------------------------------------===//

std::string DeviceInfo::getArch() const {
  return "sm_" + std::to_string(computeMajor) + std::to_string(computeMinor);
}

double DeviceInfo::getTheoreticalBandwidthGBs() const {
  return 2.0 * double(memoryClockKHz) * 1e3 * double(memoryBusWidthBits) / 8.0 /
         1e9;
}

Result<DeviceInfo> kopt::runtime::queryDeviceInfo(const CudaDriver &driver,
                                                  int ordinal) {
  DeviceInfo info;
  info.ordinal = ordinal;
  CUdevice device = 0;
  if (Status status =
          driver.check(driver.cuDeviceGet(&device, ordinal), "cuDeviceGet");
      !status.isOk())
    return status;
  char name[256] = {};
  if (Status status =
          driver.check(driver.cuDeviceGetName(name, sizeof(name) - 1, device),
                       "cuDeviceGetName");
      !status.isOk())
    return status;
  info.name = name;
  size_t totalMemory = 0;
  if (Status status = driver.check(
          driver.cuDeviceTotalMem(&totalMemory, device), "cuDeviceTotalMem");
      !status.isOk())
    return status;
  info.totalMemoryBytes = int64_t(totalMemory);

  struct Attribute {
    CUdevice_attribute attribute;
    const char *name;
    int64_t *intoWide;
    int *intoInt;
  };
  int64_t l2 = 0, memoryClock = 0, busWidth = 0, sharedOptin = 0;
  Attribute attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability",
       nullptr, &info.computeMajor},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability",
       nullptr, &info.computeMinor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count", nullptr,
       &info.smCount},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size", &l2, nullptr},
      {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "memory clock", &memoryClock,
       nullptr},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "memory bus width",
       &busWidth, nullptr},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       "shared memory per block (opt-in)", &sharedOptin, nullptr},
  };
  for (const Attribute &attribute : attributes) {
    int value = 0;
    if (Status status = driver.check(
            driver.cuDeviceGetAttribute(&value, attribute.attribute, device),
            std::string("cuDeviceGetAttribute(") + attribute.name + ")");
        !status.isOk())
      return status;
    if (attribute.intoInt)
      *attribute.intoInt = value;
    else
      *attribute.intoWide = value;
  }
  info.l2Bytes = l2;
  info.memoryClockKHz = memoryClock;
  info.memoryBusWidthBits = busWidth;
  info.maxSharedPerBlockOptin = sharedOptin;
  return info;
}

//===----------------------------------------------------------------------===//
// CudaContext
//===----------------------------------------------------------------------===//

Result<std::unique_ptr<CudaContext>> CudaContext::create(int ordinal) {
  auto driver = loadCudaDriver();
  if (!driver)
    return driver.status();
  const CudaDriver &api = **driver;
  int count = 0;
  if (Status status =
          api.check(api.cuDeviceGetCount(&count), "cuDeviceGetCount");
      !status.isOk())
    return status;
  if (ordinal < 0 || ordinal >= count)
    return Status::error(StatusCode::Unavailable,
                         "no CUDA device " + std::to_string(ordinal) +
                             " (the driver sees " + std::to_string(count) +
                             ")");
  std::unique_ptr<CudaContext> context(new CudaContext(api));
  auto info = queryDeviceInfo(api, ordinal);
  if (!info)
    return info.status();
  context->info = std::move(*info);
  if (Status status =
          api.check(api.cuDeviceGet(&context->device, ordinal), "cuDeviceGet");
      !status.isOk())
    return status;
  // cuCtxCreate is cuCtxCreate_v4 in CUDA 13 and takes creation parameters;
  // the primary context needs none and is shared with the CUDA runtime.
  if (Status status = api.check(
          api.cuDevicePrimaryCtxRetain(&context->context, context->device),
          "cuDevicePrimaryCtxRetain");
      !status.isOk())
    return status;
  if (Status status = context->makeCurrent(); !status.isOk())
    return status;
  // A blocking stream: it waits for work on the legacy default stream, where
  // cuMemcpyHtoD and cuMemsetD8 run. A copy from pageable host memory may
  // return before its DMA lands; with a non-blocking stream a kernel could
  // then read a partly copied input (seen on an H200: intermittently wrong
  // outputs for 1 MB inputs).
  if (Status status =
          api.check(api.cuStreamCreate(&context->stream, CU_STREAM_DEFAULT),
                    "cuStreamCreate");
      !status.isOk())
    return status;
  return context;
}

CudaContext::~CudaContext() {
  // The shared objects hold device memory of this context.
  if (context && !shared.empty() && makeCurrent().isOk())
    shared.clear();
  if (context && !modules.empty() && makeCurrent().isOk())
    for (auto &[image, module] : modules)
      driver->check(driver->cuModuleUnload(module), "cuModuleUnload").ignore();
  if (stream)
    driver->check(driver->cuStreamDestroy(stream), "cuStreamDestroy").ignore();
  if (context)
    driver
        ->check(driver->cuDevicePrimaryCtxRelease(device),
                "cuDevicePrimaryCtxRelease")
        .ignore();
}

Result<std::shared_ptr<void>> CudaContext::getShared(
    std::string_view key,
    const std::function<Result<std::shared_ptr<void>>()> &make) const {
  std::lock_guard<std::mutex> lock(sharedMutex);
  auto it = shared.find(key);
  if (it != shared.end())
    return it->second;
  auto made = make();
  if (!made)
    return made.status();
  shared.emplace(std::string(key), *made);
  return *made;
}

std::shared_ptr<void> CudaContext::findShared(std::string_view key) const {
  std::lock_guard<std::mutex> lock(sharedMutex);
  auto it = shared.find(key);
  return it == shared.end() ? nullptr : it->second;
}

Status CudaContext::makeCurrent() const {
  return driver->check(driver->cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

Result<CUmodule> CudaContext::loadModule(std::string_view image) const {
  std::lock_guard<std::mutex> lock(moduleMutex);
  auto it = modules.find(image);
  if (it != modules.end())
    return it->second;
  CUmodule module = nullptr;
  if (Status status = driver->check(
          driver->cuModuleLoadData(&module, image.data()), "cuModuleLoadData");
      !status.isOk())
    return status;
  modules.emplace(std::string(image), module);
  return module;
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

namespace {
/// What `getBytesInUse` and `getPeakBytes` report.
std::atomic<int64_t> bytesInUse{0};
std::atomic<int64_t> peakBytes{0};
} // namespace

int64_t DeviceBuffer::getBytesInUse() { return bytesInUse.load(); }
int64_t DeviceBuffer::getPeakBytes() { return peakBytes.load(); }
void DeviceBuffer::resetPeakBytes() { peakBytes.store(bytesInUse.load()); }

Result<DeviceBuffer> DeviceBuffer::allocate(const CudaContext &context,
                                            int64_t bytes) {
  const CudaDriver &driver = context.getDriver();
  DeviceBuffer buffer;
  int64_t size = std::max<int64_t>(bytes, 1);
  if (Status status =
          driver.check(driver.cuMemAlloc(&buffer.pointer, size_t(size)),
                       "cuMemAlloc(" + std::to_string(size) + " bytes)");
      !status.isOk())
    return status;
  buffer.driver = &driver;
  buffer.bytes = bytes;
  int64_t inUse = bytesInUse += size;
  int64_t peak = peakBytes.load();
  while (inUse > peak && !peakBytes.compare_exchange_weak(peak, inUse)) {
  }
  return buffer;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) {
  if (this != &other) {
    reset();
    driver = other.driver;
    pointer = other.pointer;
    bytes = other.bytes;
    other.pointer = 0;
    other.bytes = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (pointer && driver) {
    driver->check(driver->cuMemFree(pointer), "cuMemFree").ignore();
    bytesInUse -= std::max<int64_t>(bytes, 1);
  }
  pointer = 0;
  bytes = 0;
}
