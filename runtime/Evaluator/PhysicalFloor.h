//===- PhysicalFloor.h - Lower bounds on a task's time ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// No correct kernel beats physics (docs/Design.md "Evaluator", point 8). A task
// must read every input once and write every output once, so its time is at
// least those bytes over the device's measured bandwidth, and at least its
// FLOPs over the device's peak. A measured time below that floor means the
// kernel skipped work (cached results, wrote nothing, timed the wrong stream):
// the candidate is rejected. Separately, a speedup over 10x against the
// baseline is not rejected but re-measured and reported as suspicious.
//
// The floor ignores caches on purpose: the timing protocol flushes L2 between
// repetitions, so the compulsory bytes come from device memory every time.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_EVALUATOR_PHYSICALFLOOR_H
#define KOPT_RUNTIME_EVALUATOR_PHYSICALFLOOR_H

#include "kopt/Runtime/Evaluator/ElementCodec.h"

#include <cstdint>
#include <vector>

namespace kopt::runtime {

/// The measured limits of a device.
struct DeviceLimits {
  /// Device memory bandwidth in bytes per second (read + write bytes), as
  /// measured by the worker (a device-to-device copy).
  double bandwidthBytesPerSecond = 0.0;
  /// Peak arithmetic rate in FLOP per second for the task's precision.
  double peakFlopsPerSecond = 0.0;
};

/// The floor of one task on one device.
struct PhysicalFloor {
  /// Compulsory bytes over the bandwidth, in microseconds.
  double memoryUs = 0.0;
  /// FLOPs over the peak, in microseconds.
  double computeUs = 0.0;
  /// The larger of the two: no correct run is faster.
  double floorUs = 0.0;
};

/// Bytes every correct run moves: each input read once and each output
/// written once (a tensor whose size overflows counts as empty; the task
/// reader refuses those).
uint64_t getCompulsoryBytes(const std::vector<TensorSpec> &inputs,
                            const std::vector<TensorSpec> &outputs);

/// The floor of moving `bytes` and computing `flops` on `limits` (a limit
/// that is not positive contributes nothing).
PhysicalFloor computePhysicalFloor(uint64_t bytes, double flops,
                                   const DeviceLimits &limits);

/// The default slack of `isBelowFloor`: the bandwidth is itself a
/// measurement, which a well-written kernel can beat by a little.
constexpr double kDefaultFloorSlack = 0.8;

/// True when `measuredUs` is below `slack * floorUs`, i.e. faster than any
/// correct run can be; also true for a time that is not positive or NaN.
bool isBelowFloor(double measuredUs, double floorUs,
                  double slack = kDefaultFloorSlack);

/// Speedups above this are re-measured and shown as suspicious.
constexpr double kSuspiciousSpeedup = 10.0;

/// How close to the memory floor a candidate must run for a re-measured
/// speedup over kSuspiciousSpeedup to stand (`isSpeedupAtTheFloor`).
constexpr double kFloorExplainedRatio = 1.5;

/// True when `candidateUs` is not below the task's memory floor `floorUs`
/// (`isBelowFloor`, with its slack) and at most kFloorExplainedRatio times
/// it: the candidate's time is then fixed by the bytes it must move, and a
/// large speedup over the baseline says how far the baseline is from that
/// floor. False when the floor is unknown (0). A compute-bound task's
/// candidates run far above its memory floor, so their large speedups stay
/// suspicious.
bool isSpeedupAtTheFloor(double candidateUs, double floorUs);

/// The speedup of a candidate over the baseline, and whether it is
/// suspicious.
struct SpeedupCheck {
  /// `baselineUs / candidateUs` (infinity for a candidate time <= 0).
  double speedup = 0.0;
  /// True when `speedup` exceeds the threshold: re-measure, then report it
  /// as suspicious.
  bool suspicious = false;
};

/// Checks a candidate's `candidateUs` against the baseline's `baselineUs`.
SpeedupCheck checkSpeedup(double baselineUs, double candidateUs,
                          double threshold = kSuspiciousSpeedup);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_EVALUATOR_PHYSICALFLOOR_H
