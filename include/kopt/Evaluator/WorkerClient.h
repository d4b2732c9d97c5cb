//===- WorkerClient.h - Start and drive an evaluator worker -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The compiler's side of the evaluator worker (docs/Design.md, "Evaluator"): a
// WorkerClient starts `kopt-worker` as a child process, talks
// `kopt.worker/1` to it over pipes (docs/EvaluatorProtocol.md) and keeps the
// caller safe from it. A worker that crashes, hangs past a request's
// deadline or breaks the protocol is killed and reaped; every candidate of
// that request is reported as failed with the reason, and the next request
// starts a fresh worker. docs/Evaluator.md, "The worker process", describes
// the lifecycle.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_EVALUATOR_WORKERCLIENT_H
#define KOPT_EVALUATOR_WORKERCLIENT_H

#include "kopt/Runtime/Protocol.h"

#include "llvm/Support/Error.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace mlir::kopt {

/// Variables every worker gets, whatever the caller's environment says:
/// NVLink multicast off in NCCL, PyTorch and NVSHMEM. A process that uses
/// multicast on a shared multi-GPU host can put its GPUs out of service,
/// and a worker has no use for it.
inline constexpr const char *kMulticastOffEnvironment[] = {
    "NCCL_NVLS_ENABLE=0", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1",
    "NVSHMEM_DISABLE_NVLS=1"};

/// The environment a worker starts with: `parent` (a null-terminated
/// `NAME=VALUE` array, such as `environ`) with `overrides` in place of the
/// variables they name, and kMulticastOffEnvironment in place of both.
std::vector<std::string>
makeWorkerEnvironment(const std::vector<std::string> &overrides,
                      char *const *parent);

/// How a WorkerClient starts and drives its worker.
struct WorkerOptions {
  /// The worker executable. Empty means `getDefaultWorkerPath()`.
  std::string executable;
  /// Arguments after the program name.
  std::vector<std::string> arguments;
  /// `NAME=VALUE` entries for the worker's environment; they replace the
  /// caller's variables of the same name, and the rest of the caller's
  /// environment is passed on (`KOPT_WORKER_TEST_MODE=crash`,
  /// `CUDA_VISIBLE_DEVICES=1`).
  std::vector<std::string> environment;
  /// How long a started worker may take to send `hello` (it creates a CUDA
  /// context first).
  std::chrono::milliseconds startTimeout{60000};
  /// Deadline of an `evaluate` request unless the call names one: from
  /// sending the request to reading the whole answer.
  std::chrono::milliseconds requestTimeout{600000};
  /// How long the worker may take to exit after `shutdown` before it is
  /// killed.
  std::chrono::milliseconds shutdownGrace{1000};
  /// The largest frame read or written.
  uint32_t maxFrameBytes = ::kopt::runtime::kDefaultMaxFrameBytes;
};

/// Returns `kopt-worker` in the directory of the running executable (so
/// `bin/kopt` finds `bin/kopt-worker`), or "" when the running executable's
/// path is unknown.
std::string getDefaultWorkerPath();

/// Returns the reason a WorkerClient recorded in a failed report
/// (`crash: signal 6 (Aborted)`), or "" when `report` carries none.
std::string getWorkerFailureReason(const ::kopt::runtime::EvalReport &report);

/// Records `reason` in `report` as `getWorkerFailureReason` reads it.
void setWorkerFailureReason(::kopt::runtime::EvalReport &report,
                            const std::string &reason);

/// Whether `reports` say their worker died on the request: a report fails
/// check `crash` with a worker failure reason (a hang, check `timeout`, is
/// not a death).
bool isWorkerDeath(const std::vector<::kopt::runtime::EvalReport> &reports);

/// Owns one worker process and sends it requests, one at a time. Not
/// thread-safe: use one client per worker (per GPU) and per thread.
///
/// The client never lets the worker take the caller down: SIGPIPE is blocked
/// in the calling thread while it writes, every wait has a deadline, and a
/// worker that misbehaves is killed with SIGKILL and reaped, so no zombie is
/// left. Destruction shuts the worker down.
class WorkerClient {
public:
  /// Prepares a client; the worker starts with `start()` or the first
  /// `evaluate()`.
  explicit WorkerClient(WorkerOptions options = {});
  /// Shuts the worker down (see `shutdown()`).
  ~WorkerClient();

  WorkerClient(const WorkerClient &) = delete;
  WorkerClient &operator=(const WorkerClient &) = delete;

  /// Starts the worker unless one is running, and reads its `hello` within
  /// `WorkerOptions::startTimeout`. Fails, leaving no process behind, when
  /// the executable cannot be run or the worker exits, hangs or says
  /// anything but `hello` first.
  llvm::Error start();

  /// Sends `request` and returns one report per candidate, in order.
  ///
  /// When the worker crashes (end of its output, exit or signal), passes
  /// the deadline (`timeout`, or `WorkerOptions::requestTimeout`) or breaks
  /// the protocol, it is killed and reaped, and every candidate gets a
  /// report with `valid` false, failed check `crash` or `timeout`, and the
  /// reason in its evidence (`getWorkerFailureReason`): `crash: signal 6
  /// (Aborted)`, `crash: exit status 0`, `timeout after 500 ms`, `protocol
  /// error: ...`. The next call starts a new worker.
  ///
  /// Returns an error, with the worker left running, when the worker
  /// answers `error` (the request itself is bad, such as an unreadable
  /// task), and when the request cannot be sent at all: no candidates, a
  /// frame over the limit, or a worker that cannot be started.
  llvm::Expected<std::vector<::kopt::runtime::EvalReport>>
  evaluate(const ::kopt::runtime::EvaluateMessage &request,
           std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  /// Sends `shutdown`, closes the worker's input, waits up to
  /// `WorkerOptions::shutdownGrace` for it to exit, then kills it; reaps it
  /// either way. Does nothing when no worker is running.
  void shutdown();

  /// Whether a worker process is running (started and not yet reaped).
  bool isRunning() const { return pid > 0; }
  /// The running worker's process id, or -1.
  pid_t getPid() const { return pid; }
  /// The `hello` of the running worker, or of the last one.
  const std::optional<::kopt::runtime::HelloMessage> &getHello() const {
    return hello;
  }
  /// How many worker processes this client has started.
  unsigned getStartCount() const { return startCount; }
  /// The reason the last worker failure was recorded, or "".
  const std::string &getLastFailure() const { return lastFailure; }
  /// The path of the executable the client starts.
  const std::string &getExecutable() const { return options.executable; }
  /// The options; changes apply from the next worker the client starts.
  WorkerOptions &getOptions() { return options; }
  const WorkerOptions &getOptions() const { return options; }

private:
  /// How a read or write with a deadline ended.
  struct IoResult;

  /// Runs the executable with pipes for stdin and stdout.
  llvm::Error spawn();
  /// Writes `data` before `deadline`.
  IoResult writeBefore(const std::string &data,
                       std::chrono::steady_clock::time_point deadline);
  /// Reads one whole frame's payload before `deadline`.
  IoResult readFrameBefore(std::string &payload,
                           std::chrono::steady_clock::time_point deadline);
  /// Turns a failed read or write into a reason, killing and reaping the
  /// worker.
  std::string failWorker(const IoResult &io, std::chrono::milliseconds timeout);
  /// Kills the worker with SIGKILL (unless it has exited) and reaps it.
  void killAndReap();
  /// Waits until `deadline` for the worker to exit; returns whether it was
  /// reaped, with its wait status in `waitStatus`.
  bool reapBefore(std::chrono::steady_clock::time_point deadline,
                  int &waitStatus);
  /// Closes both pipes and forgets the process.
  void forgetProcess();

  WorkerOptions options;
  pid_t pid = -1;
  /// The write end of the worker's stdin, non-blocking.
  int toWorker = -1;
  /// The read end of the worker's stdout, non-blocking.
  int fromWorker = -1;
  /// Bytes read from the worker and not yet returned as a frame.
  std::string readBuffer;
  std::optional<::kopt::runtime::HelloMessage> hello;
  unsigned startCount = 0;
  std::string lastFailure;
};

} // namespace mlir::kopt

#endif // KOPT_EVALUATOR_WORKERCLIENT_H
