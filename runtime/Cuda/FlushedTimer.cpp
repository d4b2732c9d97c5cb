//===- FlushedTimer.cpp - One timed run, the way kopt times -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/FlushedTimer.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <string_view>

using namespace kopt::runtime;

// The flush reads its buffer rather than writing it. A write leaves L2 full
// of dirty lines, and the timed kernel then pays for writing them back as it
// evicts them: on a 12 MB kernel that doubled the DRAM traffic inside the
// timed region. Lines that were only read are evicted for free. The XOR of
// everything read decides a store that never happens in practice, so the
// loads cannot be removed.
static constexpr const char *kFlushSource = R"cuda(
extern "C" __global__ void kopt_l2_flush(const uint4 *data,
                                         unsigned long long count,
                                         unsigned *sink) {
  unsigned acc = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x +
                              threadIdx.x;
       i < count; i += (unsigned long long)gridDim.x * blockDim.x) {
    uint4 v = data[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u)
    *sink = acc;
}
)cuda";

/// The flush kernel's cubin per architecture, compiled once per process.
static Result<CompiledKernel> compileFlushKernel(const std::string &arch) {
  static std::mutex mutex;
  static std::map<std::string, CompiledKernel> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(arch);
  if (it != cache.end())
    return it->second;
  auto compiled = compileCuda(kFlushSource, "kopt_l2_flush.cu", arch);
  if (!compiled)
    return compiled.status().withContext("the timer's L2 flush");
  cache.emplace(arch, *compiled);
  return *compiled;
}

namespace {
/// A context's L2 flush: the buffer every flush reads and the kernel that
/// reads it. One per context (`CudaContext::getShared`).
struct L2Flush {
  /// Read by every flush; its last 16 bytes are the flush kernel's sink.
  DeviceBuffer buffer;
  int64_t bytes = 0;
  CUfunction kernel = nullptr;
  unsigned blocks = 1;
};
} // namespace

/// The key of the flush in `CudaContext::getShared`.
static constexpr std::string_view kL2FlushKey = "kopt.l2_flush";

/// Allocates and fills the flush buffer of `context` and loads its kernel.
static Result<std::shared_ptr<void>> makeL2Flush(const CudaContext &context) {
  auto flush = std::make_shared<L2Flush>();
  flush->bytes = computeL2FlushBytes(context.getDeviceInfo().l2Bytes);
  auto buffer = DeviceBuffer::allocate(context, flush->bytes);
  if (!buffer)
    return buffer.status().withContext("the timer's L2 flush");
  flush->buffer = std::move(*buffer);
  const CudaDriver &api = context.getDriver();
  if (Status status = api.check(
          api.cuMemsetD8(flush->buffer.get(), 0x5a, size_t(flush->bytes)),
          "cuMemsetD8(L2 flush buffer)");
      !status.isOk())
    return status;
  auto compiled = compileFlushKernel(context.getDeviceInfo().getArch());
  if (!compiled)
    return compiled.status();
  auto module = context.loadModule(compiled->cubin);
  if (!module)
    return module.status().withContext("the timer's L2 flush");
  if (Status status = api.check(
          api.cuModuleGetFunction(&flush->kernel, *module, "kopt_l2_flush"),
          "cuModuleGetFunction(kopt_l2_flush)");
      !status.isOk())
    return status;
  flush->blocks = unsigned(std::max(1, context.getDeviceInfo().smCount)) * 4;
  return std::shared_ptr<void>(std::move(flush));
}

/// The flush of `context`, made on first use.
static Result<std::shared_ptr<L2Flush>> getL2Flush(const CudaContext &context) {
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;
  auto shared =
      context.getShared(kL2FlushKey, [&] { return makeL2Flush(context); });
  if (!shared)
    return shared.status();
  return std::static_pointer_cast<L2Flush>(*shared);
}

int64_t kopt::runtime::computeL2FlushBytes(int64_t l2Bytes) {
  return std::max<int64_t>(2 * l2Bytes, 1 << 20);
}

Result<int64_t> kopt::runtime::prepareL2Flush(const CudaContext &context) {
  auto flush = getL2Flush(context);
  if (!flush)
    return flush.status();
  return (*flush)->bytes;
}

int64_t kopt::runtime::getL2FlushBytesHeld(const CudaContext &context) {
  std::shared_ptr<void> shared = context.findShared(kL2FlushKey);
  return shared ? static_cast<L2Flush *>(shared.get())->bytes : 0;
}

struct FlushedTimer::Impl {
  const CudaContext *context = nullptr;
  /// The context's flush, shared with its other timers.
  std::shared_ptr<L2Flush> flush;
  CUevent begin = nullptr, end = nullptr;

  ~Impl() {
    const CudaDriver &api = context->getDriver();
    if (begin)
      api.cuEventDestroy(begin);
    if (end)
      api.cuEventDestroy(end);
  }
};

FlushedTimer::FlushedTimer(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
FlushedTimer::~FlushedTimer() = default;

Result<std::unique_ptr<FlushedTimer>>
FlushedTimer::create(const CudaContext &context) {
  auto flush = getL2Flush(context);
  if (!flush)
    return flush.status();
  auto impl = std::make_unique<Impl>();
  impl->context = &context;
  impl->flush = std::move(*flush);
  const CudaDriver &api = context.getDriver();
  for (CUevent *event : {&impl->begin, &impl->end})
    if (Status status = api.check(api.cuEventCreate(event, CU_EVENT_DEFAULT),
                                  "cuEventCreate");
        !status.isOk())
      return status;
  return std::unique_ptr<FlushedTimer>(new FlushedTimer(std::move(impl)));
}

Result<double> FlushedTimer::time(const std::function<Status()> &enqueue,
                                  bool waitForContext) {
  const CudaContext &context = *impl->context;
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;
  const CudaDriver &api = context.getDriver();
  CUstream stream = context.getStream();
  // Evict the previous run's data from L2, before the start event.
  if (Status status = flush(); !status.isOk())
    return status;
  if (Status status =
          api.check(api.cuEventRecord(impl->begin, stream), "cuEventRecord");
      !status.isOk())
    return status;
  if (Status status = enqueue(); !status.isOk())
    return status;
  if (Status status =
          api.check(api.cuEventRecord(impl->end, stream), "cuEventRecord");
      !status.isOk())
    return status;
  if (Status status =
          waitForContext ? api.check(api.cuCtxSynchronize(), "cuCtxSynchronize")
                         : api.check(api.cuEventSynchronize(impl->end),
                                     "cuEventSynchronize");
      !status.isOk())
    return status;
  float ms = 0;
  if (Status status =
          api.check(api.cuEventElapsedTime(&ms, impl->begin, impl->end),
                    "cuEventElapsedTime");
      !status.isOk())
    return status;
  return double(ms) * 1e3;
}

Status FlushedTimer::flush() {
  const CudaContext &context = *impl->context;
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;
  const CudaDriver &api = context.getDriver();
  const L2Flush &l2 = *impl->flush;
  CUdeviceptr data = l2.buffer.get();
  unsigned long long count = (unsigned long long)(l2.bytes - 16) / 16;
  CUdeviceptr sink = data + CUdeviceptr(l2.bytes - 16);
  void *arguments[] = {&data, &count, &sink};
  return api.check(api.cuLaunchKernel(l2.kernel, l2.blocks, 1, 1, 512, 1, 1, 0,
                                      context.getStream(), arguments, nullptr),
                   "cuLaunchKernel(L2 flush)");
}

Result<unsigned> kopt::runtime::warmUpFor(double warmupMs,
                                          const std::function<Status()> &run) {
  unsigned runs = 0;
  auto start = std::chrono::steady_clock::now();
  do {
    if (Status status = run(); !status.isOk())
      return status;
    ++runs;
  } while (std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
               .count() < warmupMs);
  return runs;
}
