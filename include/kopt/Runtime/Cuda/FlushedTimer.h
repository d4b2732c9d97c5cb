//===- FlushedTimer.h - One timed run, the way kopt times -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every measurement kopt reports is taken the same way (docs/Design.md,
// "Timing protocol"): before the start event, outside the timed region, a
// scratch buffer twice the L2 size is read so no run finds the previous
// one's data in L2; then the work is enqueued between two CUDA events on
// the stream, and the end is waited for before the time is read. The
// evaluator (PlanRunner::timeRun), `kopt plan --run` (PlanRunner::timePlan)
// and `kopt-run --bench` all time through this class.
//
// The scratch buffer belongs to the context, not to the timer: one per
// context (so one per device in a process), allocated by the first timer
// that needs it (or by `prepareL2Flush`) and kept until the context is
// destroyed. Every runner's timer reads the same buffer, so a request that
// times many runners holds it once (docs/Evaluator.md, "Device memory").
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_FLUSHEDTIMER_H
#define KOPT_RUNTIME_CUDA_FLUSHEDTIMER_H

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Status.h"

#include <functional>
#include <memory>

namespace kopt::runtime {

class FlushedTimer {
public:
  /// Makes the two events on `context`, which must outlive the timer, and
  /// the context's flush buffer when it has none yet.
  static Result<std::unique_ptr<FlushedTimer>>
  create(const CudaContext &context);
  ~FlushedTimer();
  FlushedTimer(const FlushedTimer &) = delete;
  FlushedTimer &operator=(const FlushedTimer &) = delete;

  /// Flushes L2, records the start event on the context's stream, calls
  /// `enqueue` (which must only enqueue work on that stream), records the
  /// end event and waits for it, or for the whole context when
  /// `waitForContext` (work on other streams, as a CUDA graph's). Returns
  /// the time between the events in microseconds.
  Result<double> time(const std::function<Status()> &enqueue,
                      bool waitForContext = false);

  /// Enqueues the L2 flush alone on the context's stream: a kernel that
  /// reads the scratch buffer, so L2 holds only clean lines afterwards.
  Status flush();

private:
  struct Impl;
  explicit FlushedTimer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// The bytes of the L2 flush buffer on a device with `l2Bytes` of L2: twice
/// the L2, at least 1 MiB.
int64_t computeL2FlushBytes(int64_t l2Bytes);

/// Allocates `context`'s flush buffer when it has none yet (it is kept until
/// the context is destroyed) and returns its bytes.
Result<int64_t> prepareL2Flush(const CudaContext &context);

/// The bytes `context`'s flush buffer holds: 0 before a timer of the context
/// or `prepareL2Flush` allocated it.
int64_t getL2FlushBytesHeld(const CudaContext &context);

/// Calls `run` (which runs and waits) until `warmupMs` milliseconds have
/// passed, at least once; returns how many times it ran.
Result<unsigned> warmUpFor(double warmupMs, const std::function<Status()> &run);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CUDA_FLUSHEDTIMER_H
