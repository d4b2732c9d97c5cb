//===- WorkerPool.h - One evaluator worker per GPU --------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A WorkerPool owns one WorkerClient per GPU. Each worker is started with
// CUDA_VISIBLE_DEVICES set to its one device, so it sees that device as
// ordinal 0. A GPU runs one evaluation at a time: `evaluate` waits for a
// free worker, and requests on different workers run concurrently, from any
// number of threads. Failures and restarts are the WorkerClient's: a worker
// that crashes, hangs or breaks the protocol is killed and its request's
// candidates are reported as failed; that worker alone starts afresh on its
// next request. A request whose worker dies (a crash, not a hang) goes once
// more to another worker, so that one bad GPU or driver does not fail it;
// when that one dies too, the reports name both devices. A caller that
// wants all its requests on one GPU (one task's candidates, timed against
// each other) holds a worker with `acquire` and sends them with
// `evaluateOn`. docs/Evaluator.md, "The worker process", describes it.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_EVALUATOR_WORKERPOOL_H
#define KOPT_EVALUATOR_WORKERPOOL_H

#include "kopt/Evaluator/WorkerClient.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mlir::kopt {

/// How a WorkerPool chooses its devices and starts its workers.
struct WorkerPoolOptions {
  /// The options of every worker. Each worker's environment gets
  /// `CUDA_VISIBLE_DEVICES=<its device>` after these entries.
  WorkerOptions worker;
  /// The devices, one worker each, as CUDA_VISIBLE_DEVICES entries
  /// (ordinals, `GPU-<uuid>`, `MIG-<uuid>`). Empty: see `deviceCount`.
  std::vector<std::string> devices;
  /// Used when `devices` is empty: the number of workers, on the first
  /// `deviceCount` entries of the caller's CUDA_VISIBLE_DEVICES when it is
  /// set, else on ordinals 0 to `deviceCount - 1`. 0 means every entry of
  /// CUDA_VISIBLE_DEVICES, or one device (ordinal 0) when it is unset.
  unsigned deviceCount = 0;
};

/// The devices of a pool with `options`, given the caller's
/// CUDA_VISIBLE_DEVICES (`visibleDevices`, null when unset): see
/// `WorkerPoolOptions`. A set variable with no entries (the caller sees no
/// GPU) gives one device, the variable's value itself, so that one worker
/// starts and reports that it has no GPU.
std::vector<std::string> resolvePoolDevices(const WorkerPoolOptions &options,
                                            const char *visibleDevices);

/// What a WorkerPool knows of one worker, copied out under its lock.
struct WorkerPoolEntry {
  /// The worker's CUDA_VISIBLE_DEVICES.
  std::string device;
  /// The running process, or -1.
  pid_t pid = -1;
  /// How many processes this worker has started.
  unsigned startCount = 0;
  /// Whether a request is running on it now.
  bool busy = false;
  /// The last `hello`, and the reason of the last failure ("" when none).
  std::optional<::kopt::runtime::HelloMessage> hello;
  std::string lastFailure;
};

/// One worker per device, one request at a time per worker. Thread-safe,
/// except that the pool must outlive every call on it.
class WorkerPool {
public:
  /// Prepares one worker per device (`resolvePoolDevices` with the
  /// process's CUDA_VISIBLE_DEVICES); workers start with `start()` or with
  /// their first request.
  explicit WorkerPool(WorkerPoolOptions options = {});
  /// Shuts every worker down (see `shutdown()`).
  ~WorkerPool();

  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;

  /// The number of workers (devices).
  size_t size() const { return slots.size(); }

  /// Starts every worker that is not running and idle, one after another;
  /// returns the first failure (the other workers are still started).
  llvm::Error start();

  /// Waits for a free worker (the lowest-numbered when several are free),
  /// then evaluates `request` on it as `evaluateOn` does: the same reports,
  /// failures, errors, restarts and retry. `timeout` counts from when the
  /// worker is taken, not from the call. When `workerIndex` is given, it
  /// receives the index of the worker that answered.
  llvm::Expected<std::vector<::kopt::runtime::EvalReport>>
  evaluate(const ::kopt::runtime::EvaluateMessage &request,
           std::optional<std::chrono::milliseconds> timeout = std::nullopt,
           size_t *workerIndex = nullptr);

  /// Which workers a caller takes: true for those it may use.
  using WorkerFilter = llvm::function_ref<bool(size_t index)>;

  /// Takes a free worker for the caller alone, waiting for one: the
  /// lowest-numbered of those `accept` allows (every one when null). None,
  /// at once, when `accept` allows no worker at all. The caller sends its
  /// requests with `evaluateOn` and gives the worker back with `release`.
  std::optional<size_t> acquire(WorkerFilter accept = nullptr);
  /// Gives back worker `index`, taken with `acquire`.
  void release(size_t index);

  /// Evaluates `request` on worker `index`, which the caller holds, as
  /// `WorkerClient::evaluate` does. When the worker dies on it (the reports
  /// fail check `crash` with a worker failure reason), the caller gives it
  /// back (it starts afresh on its next request), and the request goes
  /// once more to another worker that `accept` allows, taken as `acquire`
  /// does; `index` then names that one, which the caller now holds. When it
  /// dies too, each report's failure reason names both devices. With no
  /// other worker to take, the first answer stands. `deaths`, when given,
  /// receives one line per death that was retried
  /// (`CUDA_VISIBLE_DEVICES=1: crash: signal 6 (Aborted)`).
  llvm::Expected<std::vector<::kopt::runtime::EvalReport>>
  evaluateOn(size_t &index, const ::kopt::runtime::EvaluateMessage &request,
             std::optional<std::chrono::milliseconds> timeout = std::nullopt,
             WorkerFilter accept = nullptr,
             std::vector<std::string> *deaths = nullptr);

  /// Waits for the running requests, then shuts every worker down
  /// (`WorkerClient::shutdown`). A later request starts its worker again.
  void shutdown();

  /// The state of worker `index` (< `size()`).
  WorkerPoolEntry getWorker(size_t index) const;

  /// The options of worker `index`, for its next start (such as a test
  /// mode for one worker). Change them only while no request runs on it.
  WorkerOptions &getWorkerOptions(size_t index);

private:
  struct Slot {
    std::unique_ptr<WorkerClient> client;
    WorkerPoolEntry entry;
  };

  /// Copies the client's state into the slot's entry; `lock` is held.
  static void refresh(Slot &slot);
  /// Runs `request` on worker `index`, held by the caller.
  llvm::Expected<std::vector<::kopt::runtime::EvalReport>>
  evaluateHeld(size_t index, const ::kopt::runtime::EvaluateMessage &request,
               std::optional<std::chrono::milliseconds> timeout);

  mutable std::mutex mutex;
  std::condition_variable freed;
  std::vector<Slot> slots;
};

} // namespace mlir::kopt

#endif // KOPT_EVALUATOR_WORKERPOOL_H
