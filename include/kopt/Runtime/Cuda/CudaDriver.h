//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// kopt never links libcuda: it opens libcuda.so.1 with dlopen and resolves the
// driver functions it uses from an X-macro table, so every binary starts on a
// machine without a GPU and says so clearly. cuda.h is included for its types
// only.
//
// CUDA 13's cuda.h maps several API names to versioned symbols
// (`#define cuMemAlloc cuMemAlloc_v2`, `cuEventElapsedTime_v2`,
// `cuCtxCreate_v4`...). The table names each symbol as the library exports
// it; the function-pointer members carry those names, so code that calls
// `driver.cuMemAlloc(...)` goes through the same macro and reaches the right
// version. A static_assert in CudaDriver.cpp checks every entry against the
// header's mapping.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_CUDADRIVER_H
#define KOPT_RUNTIME_CUDA_CUDADRIVER_H

#include "kopt/Runtime/Status.h"

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace kopt::runtime {

/// Driver functions kopt uses: `X(api, symbol)` names the API function as
/// written in code and the symbol libcuda.so.1 exports for it.
#define KOPT_CUDA_DRIVER_SYMBOLS(X)                                            \
  X(cuInit, cuInit)                                                            \
  X(cuDriverGetVersion, cuDriverGetVersion)                                    \
  X(cuGetErrorName, cuGetErrorName)                                            \
  X(cuGetErrorString, cuGetErrorString)                                        \
  X(cuDeviceGetCount, cuDeviceGetCount)                                        \
  X(cuDeviceGet, cuDeviceGet)                                                  \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute)                                \
  X(cuDeviceGetName, cuDeviceGetName)                                          \
  X(cuDeviceTotalMem, cuDeviceTotalMem_v2)                                     \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)                        \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2)                   \
  X(cuCtxSetCurrent, cuCtxSetCurrent)                                          \
  X(cuCtxSynchronize, cuCtxSynchronize)                                        \
  X(cuMemAlloc, cuMemAlloc_v2)                                                 \
  X(cuMemFree, cuMemFree_v2)                                                   \
  X(cuMemGetInfo, cuMemGetInfo_v2)                                             \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2)                                             \
  X(cuMemcpyDtoH, cuMemcpyDtoH_v2)                                             \
  X(cuMemcpyDtoD, cuMemcpyDtoD_v2)                                             \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2)                                   \
  X(cuMemsetD8, cuMemsetD8_v2)                                                 \
  X(cuMemsetD8Async, cuMemsetD8Async)                                          \
  X(cuModuleLoadData, cuModuleLoadData)                                        \
  X(cuModuleGetFunction, cuModuleGetFunction)                                  \
  X(cuModuleUnload, cuModuleUnload)                                            \
  X(cuFuncSetAttribute, cuFuncSetAttribute)                                    \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor,                               \
    cuOccupancyMaxActiveBlocksPerMultiprocessor)                               \
  X(cuOccupancyMaxActiveClusters, cuOccupancyMaxActiveClusters)                \
  X(cuLaunchKernel, cuLaunchKernel)                                            \
  X(cuLaunchKernelEx, cuLaunchKernelEx)                                        \
  X(cuStreamCreate, cuStreamCreate)                                            \
  X(cuStreamDestroy, cuStreamDestroy_v2)                                       \
  X(cuStreamSynchronize, cuStreamSynchronize)                                  \
  X(cuEventCreate, cuEventCreate)                                              \
  X(cuEventDestroy, cuEventDestroy_v2)                                         \
  X(cuEventRecord, cuEventRecord)                                              \
  X(cuEventSynchronize, cuEventSynchronize)                                    \
  X(cuEventElapsedTime, cuEventElapsedTime_v2)                                 \
  X(cuStreamBeginCapture, cuStreamBeginCapture_v2)                             \
  X(cuStreamEndCapture, cuStreamEndCapture)                                    \
  X(cuGraphInstantiate, cuGraphInstantiateWithFlags)                           \
  X(cuGraphLaunch, cuGraphLaunch)                                              \
  X(cuGraphExecDestroy, cuGraphExecDestroy)                                    \
  X(cuGraphDestroy, cuGraphDestroy)

/// The driver's function table, resolved once per process.
struct CudaDriver {
#define KOPT_DECLARE_DRIVER_FUNCTION(api, symbol)                              \
  decltype(&::symbol) symbol = nullptr;
  KOPT_CUDA_DRIVER_SYMBOLS(KOPT_DECLARE_DRIVER_FUNCTION)
#undef KOPT_DECLARE_DRIVER_FUNCTION

  /// The driver's CUDA version (13000 for 13.0).
  int version = 0;

  /// Success when `result` is CUDA_SUCCESS; otherwise an error naming `call`
  /// and the driver's name and description of `result`.
  Status check(CUresult result, std::string_view call) const;
};

/// Opens libcuda.so.1, resolves every symbol of the table and calls cuInit.
/// The first call does the work; later calls return the same table or the
/// same failure. Fails with "no CUDA driver (libcuda.so.1 not found): this
/// machine has no GPU" when the library is absent.
Result<const CudaDriver *> loadCudaDriver();

/// What kopt needs to know about a device, from the driver's attributes.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeMajor = 0;
  int computeMinor = 0;
  int smCount = 0;
  int64_t l2Bytes = 0;
  int64_t totalMemoryBytes = 0;
  /// Peak memory clock in kHz and bus width in bits.
  int64_t memoryClockKHz = 0;
  int64_t memoryBusWidthBits = 0;
  /// Opt-in maximum of shared memory per block, in bytes.
  int64_t maxSharedPerBlockOptin = 0;

  /// NVRTC's architecture name, such as `sm_90`.
  std::string getArch() const;
  /// Theoretical DRAM bandwidth in GB/s: two transfers per memory clock
  /// over the bus width.
  double getTheoreticalBandwidthGBs() const;
};

/// Reads the attributes of device `ordinal`.
Result<DeviceInfo> queryDeviceInfo(const CudaDriver &driver, int ordinal);

/// A device's primary context made current on the creating thread, and one
/// stream on it. The primary context is the one the CUDA runtime (and so
/// cuBLASLt and cuDNN) uses, so library calls and kernels share it.
class CudaContext {
public:
  /// Loads the driver and opens device `ordinal`.
  static Result<std::unique_ptr<CudaContext>> create(int ordinal = 0);
  ~CudaContext();
  CudaContext(const CudaContext &) = delete;
  CudaContext &operator=(const CudaContext &) = delete;

  const CudaDriver &getDriver() const { return *driver; }
  const DeviceInfo &getDeviceInfo() const { return info; }
  CUstream getStream() const { return stream; }
  /// Makes the context current on the calling thread.
  Status makeCurrent() const;

  /// Loads `image` (a cubin, or NUL-terminated PTX) once per context: later
  /// calls with the same bytes return the same module, and every module
  /// stays loaded until the context is destroyed. So a CUfunction handle is
  /// never reused for another kernel: CUPTI named a kernel of a freshly
  /// loaded module after the kernel that had the same handle in an unloaded
  /// one (seen on an H200), which failed an honest candidate's launch check.
  Result<CUmodule> loadModule(std::string_view image) const;

  /// The object named `key` that every user of the context shares, made by
  /// `make` on the first call and held until the context is destroyed (it is
  /// freed before the context). The timers' L2 flush buffer is one
  /// (FlushedTimer.h): one per context, not one per timer.
  Result<std::shared_ptr<void>>
  getShared(std::string_view key,
            const std::function<Result<std::shared_ptr<void>>()> &make) const;
  /// The object named `key` when one was made; null otherwise.
  std::shared_ptr<void> findShared(std::string_view key) const;

private:
  CudaContext(const CudaDriver &driver) : driver(&driver) {}

  const CudaDriver *driver;
  DeviceInfo info;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  mutable std::mutex moduleMutex;
  /// Loaded modules by image bytes.
  mutable std::map<std::string, CUmodule, std::less<>> modules;
  mutable std::mutex sharedMutex;
  /// What `getShared` made, by key.
  mutable std::map<std::string, std::shared_ptr<void>, std::less<>> shared;
};

/// A device allocation, freed on destruction.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  /// Allocates `bytes` (at least one byte) on `context`'s device.
  static Result<DeviceBuffer> allocate(const CudaContext &context,
                                       int64_t bytes);
  DeviceBuffer(DeviceBuffer &&other) { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other);
  ~DeviceBuffer() { reset(); }

  CUdeviceptr get() const { return pointer; }
  int64_t getBytes() const { return bytes; }
  /// Frees the allocation now.
  void reset();

  /// The device bytes that this process's DeviceBuffers hold now, over
  /// every device, and the most they held at once since the last
  /// `resetPeakBytes` (the evaluator's peak per request).
  static int64_t getBytesInUse();
  static int64_t getPeakBytes();
  /// Starts a new peak at the bytes in use now.
  static void resetPeakBytes();

private:
  const CudaDriver *driver = nullptr;
  CUdeviceptr pointer = 0;
  int64_t bytes = 0;
};

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CUDA_CUDADRIVER_H
