//===- FlushedTimer.cpp - One timed run, the way kopt times -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/FlushedTimer.h"

#include <algorithm>
#include <chrono>

using namespace kopt::runtime;

struct FlushedTimer::Impl {
  const CudaContext *context = nullptr;
  DeviceBuffer flush;
  int64_t flushBytes = 0;
  /// Changes the flush's byte every run, so no write is a no-op.
  unsigned round = 0;
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
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;
  auto impl = std::make_unique<Impl>();
  impl->context = &context;
  impl->flushBytes =
      std::max<int64_t>(2 * context.getDeviceInfo().l2Bytes, 1 << 20);
  auto flush = DeviceBuffer::allocate(context, impl->flushBytes);
  if (!flush)
    return flush.status();
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
  if (Status status = api.check(
          api.cuMemsetD8Async(impl->flush.get(), uint8_t(++impl->round),
                              size_t(impl->flushBytes), stream),
          "cuMemsetD8Async(L2 flush)");
      !status.isOk())
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
