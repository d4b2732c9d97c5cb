//===- Cupti.cpp - Kernel launch accounting through CUPTI -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/Cupti.h"

#include "DynamicLibrary.h"

#include <cupti.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

using namespace kopt::runtime;

/// CUPTI functions kopt uses; none has a versioned name in CUPTI 13.
#define KOPT_CUPTI_SYMBOLS(X)                                                  \
  X(cuptiGetResultString)                                                      \
  X(cuptiActivityEnable)                                                       \
  X(cuptiActivityDisable)                                                      \
  X(cuptiActivityRegisterCallbacks)                                            \
  X(cuptiActivityFlushAll)                                                     \
  X(cuptiActivityGetNextRecord)                                                \
  X(cuptiActivityGetNumDroppedRecords)                                         \
  X(cuptiGetStreamIdEx)                                                        \
  X(cuptiGetTimestamp)

namespace {
struct CuptiLibrary {
#define KOPT_DECLARE_CUPTI_FUNCTION(symbol)                                    \
  decltype(&::symbol) symbol = nullptr;
  KOPT_CUPTI_SYMBOLS(KOPT_DECLARE_CUPTI_FUNCTION)
#undef KOPT_DECLARE_CUPTI_FUNCTION

  Status check(CUptiResult result, const char *call) const {
    if (result == CUPTI_SUCCESS)
      return Status::success();
    const char *text = nullptr;
    if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || !text)
      text = "unknown CUPTI error";
    return Status::error(StatusCode::Internal,
                         std::string(call) + " failed: " + text);
  }
};

struct CuptiLoad {
  std::unique_ptr<CuptiLibrary> library;
  Status error;
};

/// What the buffer callbacks share with the recorder. CUPTI calls them on
/// its own threads.
struct ActivityState {
  std::mutex mutex;
  bool callbacksRegistered = false;
  bool recorderExists = false;
  /// Whether completed buffers are kept (between start and stop).
  bool keeping = false;
  std::vector<KernelActivity> records;
  size_t dropped = 0;
};
} // namespace

static CuptiLoad loadCuptiOnce() {
  CuptiLoad load;
  // The loader's search first (LD_LIBRARY_PATH, the system cache), then the
  // toolkit folders: CUPTI sits in extras/CUPTI/lib64 in older toolkits and
  // beside the other libraries in CUDA 13.
  std::vector<std::string> candidates = {"libcupti.so.13", "libcupti.so"};
  for (const std::string &root : dynlib::getCudaRoots())
    for (const char *lib : {"/extras/CUPTI/lib64", "/lib64", "/lib"})
      for (std::string &found :
           dynlib::listLibraries(root + lib, "libcupti.so"))
        candidates.push_back(std::move(found));
  auto handle = dynlib::openFirstLibrary(
      candidates, "CUPTI (libcupti.so.13) not found: launch accounting is "
                  "unavailable; install the CUDA 13 toolkit or set CUDA_HOME");
  if (!handle) {
    load.error = handle.status();
    return load;
  }
  auto library = std::make_unique<CuptiLibrary>();
#define KOPT_RESOLVE_CUPTI_SYMBOL(symbol)                                      \
  library->symbol = reinterpret_cast<decltype(library->symbol)>(               \
      dynlib::lookupSymbol(*handle, #symbol));                                 \
  if (!library->symbol) {                                                      \
    load.error = Status::error(StatusCode::Unavailable,                        \
                               "CUPTI lacks " #symbol                          \
                               " (CUPTI 12 or newer is needed)");              \
    return load;                                                               \
  }
  KOPT_CUPTI_SYMBOLS(KOPT_RESOLVE_CUPTI_SYMBOL)
#undef KOPT_RESOLVE_CUPTI_SYMBOL
  load.library = std::move(library);
  return load;
}

static Result<const CuptiLibrary *> loadCupti() {
  static const CuptiLoad load = loadCuptiOnce();
  if (!load.library)
    return load.error;
  return load.library.get();
}

static ActivityState &getActivityState() {
  static ActivityState *state = new ActivityState();
  return *state;
}

/// Size of each activity buffer; CUPTI asks for as many as it needs.
static constexpr size_t kActivityBufferBytes = size_t(1) << 20;
/// CUPTI requires buffers aligned to ACTIVITY_RECORD_ALIGNMENT (8).
static constexpr size_t kActivityBufferAlignment = 8;

static void CUPTIAPI requestBuffer(uint8_t **buffer, size_t *size,
                                   size_t *maxNumRecords) {
  *buffer = static_cast<uint8_t *>(
      std::aligned_alloc(kActivityBufferAlignment, kActivityBufferBytes));
  *size = *buffer ? kActivityBufferBytes : 0;
  // Zero: fill the buffer with as many records as fit.
  *maxNumRecords = 0;
}

static void CUPTIAPI completeBuffer(CUcontext context, uint32_t streamId,
                                    uint8_t *buffer, size_t size,
                                    size_t validSize) {
  (void)size;
  auto cupti = loadCupti();
  ActivityState &state = getActivityState();
  if (cupti && buffer) {
    std::lock_guard<std::mutex> lock(state.mutex);
    CUpti_Activity *record = nullptr;
    while ((*cupti)->cuptiActivityGetNextRecord(buffer, validSize, &record) ==
           CUPTI_SUCCESS) {
      if (!state.keeping ||
          record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        continue;
      // The kernel record's leading fields have kept their layout across
      // record versions; CUPTI 13 writes CUpti_ActivityKernel10.
      const auto *kernel =
          reinterpret_cast<const CUpti_ActivityKernel10 *>(record);
      KernelActivity activity;
      activity.name = kernel->name ? kernel->name : "";
      activity.deviceId = kernel->deviceId;
      activity.contextId = kernel->contextId;
      activity.streamId = kernel->streamId;
      activity.correlationId = kernel->correlationId;
      activity.startNs = kernel->start;
      activity.endNs = kernel->end;
      activity.grid = {kernel->gridX, kernel->gridY, kernel->gridZ};
      activity.block = {kernel->blockX, kernel->blockY, kernel->blockZ};
      activity.dynamicSharedBytes = kernel->dynamicSharedMemory;
      state.records.push_back(std::move(activity));
    }
    size_t dropped = 0;
    if ((*cupti)->cuptiActivityGetNumDroppedRecords(
            context, streamId, &dropped) == CUPTI_SUCCESS &&
        state.keeping)
      state.dropped += dropped;
  }
  std::free(buffer);
}

Result<std::unique_ptr<LaunchRecorder>> LaunchRecorder::create() {
  auto cupti = loadCupti();
  if (!cupti)
    return cupti.status();
  ActivityState &state = getActivityState();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.recorderExists)
      return Status::error(StatusCode::InvalidArgument,
                           "a LaunchRecorder already exists: CUPTI's activity "
                           "buffers are global to the process");
    if (!state.callbacksRegistered) {
      Status registered =
          (*cupti)->check((*cupti)->cuptiActivityRegisterCallbacks(
                              requestBuffer, completeBuffer),
                          "cuptiActivityRegisterCallbacks");
      if (!registered.isOk())
        return registered;
      state.callbacksRegistered = true;
    }
    state.recorderExists = true;
  }
  return std::unique_ptr<LaunchRecorder>(new LaunchRecorder());
}

LaunchRecorder::~LaunchRecorder() {
  if (recording) {
    auto stopped = stop();
    (void)stopped;
  }
  ActivityState &state = getActivityState();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.recorderExists = false;
}

Status LaunchRecorder::start() {
  auto cupti = loadCupti();
  if (!cupti)
    return cupti.status();
  if (recording)
    return Status::error(StatusCode::InvalidArgument,
                         "the launch recorder is already recording");
  ActivityState &state = getActivityState();
  // Drain whatever CUPTI still holds from earlier work, and forget it.
  (void)(*cupti)->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (Status status = (*cupti)->check((*cupti)->cuptiGetTimestamp(&startNs),
                                      "cuptiGetTimestamp");
      !status.isOk())
    return status;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.records.clear();
    state.dropped = 0;
    state.keeping = true;
  }
  Status enabled = (*cupti)->check(
      (*cupti)->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
      "cuptiActivityEnable(CONCURRENT_KERNEL)");
  if (!enabled.isOk()) {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.keeping = false;
    return enabled;
  }
  recording = true;
  return Status::success();
}

Result<std::vector<KernelActivity>> LaunchRecorder::stop(size_t minRecords) {
  auto cupti = loadCupti();
  if (!cupti)
    return cupti.status();
  if (!recording)
    return Status::error(StatusCode::InvalidArgument,
                         "the launch recorder is not recording");
  recording = false;
  ActivityState &state = getActivityState();
  // Flush first, then disable: a forced flush delivers the records of
  // finished kernels, including those still in CUPTI's per-stream queues,
  // though not always at once (measured on an H200: a record arrived one
  // window late), so flush until the window's records are in.
  auto countWindow = [&] {
    std::lock_guard<std::mutex> lock(state.mutex);
    size_t count = 0;
    for (const KernelActivity &record : state.records)
      count += record.startNs >= startNs;
    return count;
  };
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  // `minRecords` is a lower bound (a library step may launch several
  // kernels), so once it is reached, flush until two polls in a row bring
  // nothing new (an H200 run lost a fused kernel's record that arrived
  // after cuBLASLt's two had met the bound).
  Status flushed;
  size_t seen = 0;
  unsigned quiet = 0;
  while (true) {
    flushed = (*cupti)->check(
        (*cupti)->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED),
        "cuptiActivityFlushAll");
    if (!flushed.isOk() || std::chrono::steady_clock::now() > deadline)
      break;
    size_t count = countWindow();
    quiet = count == seen ? quiet + 1 : 0;
    seen = count;
    if (count >= minRecords && quiet >= 2)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  Status disabled = (*cupti)->check(
      (*cupti)->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
      "cuptiActivityDisable(CONCURRENT_KERNEL)");
  std::vector<KernelActivity> records;
  size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.keeping = false;
    records.swap(state.records);
    dropped = state.dropped;
    state.dropped = 0;
  }
  if (!flushed.isOk())
    return flushed;
  if (!disabled.isOk())
    return disabled;
  if (dropped)
    return Status::error(StatusCode::Internal,
                         "CUPTI dropped " + std::to_string(dropped) +
                             " activity records: the launch record is "
                             "incomplete");
  // Late records of earlier windows.
  records.erase(std::remove_if(records.begin(), records.end(),
                               [&](const KernelActivity &record) {
                                 return record.startNs < startNs;
                               }),
                records.end());
  std::stable_sort(records.begin(), records.end(),
                   [](const KernelActivity &a, const KernelActivity &b) {
                     return a.startNs < b.startNs;
                   });
  return records;
}

Result<uint32_t> kopt::runtime::getCuptiStreamId(CUstream stream) {
  auto cupti = loadCupti();
  if (!cupti)
    return cupti.status();
  uint32_t id = 0;
  Status status = (*cupti)->check(
      (*cupti)->cuptiGetStreamIdEx(nullptr, stream, /*perThreadStream=*/0, &id),
      "cuptiGetStreamIdEx");
  if (!status.isOk())
    return status;
  return id;
}

Result<std::vector<KernelActivity>>
kopt::runtime::recordLaunches(LaunchRecorder &recorder,
                              const std::function<Status()> &run,
                              size_t minRecords) {
  Status started = recorder.start();
  if (!started.isOk())
    return started;
  Status ran = run();
  auto record = recorder.stop(ran.isOk() ? minRecords : 0);
  if (!ran.isOk())
    return ran;
  return record;
}
