//===- PhysicalFloor.cpp - Lower bounds on a task's time --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/PhysicalFloor.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace kopt::runtime;

uint64_t
kopt::runtime::getCompulsoryBytes(const std::vector<TensorSpec> &inputs,
                                  const std::vector<TensorSpec> &outputs) {
  uint64_t bytes = 0;
  for (const TensorSpec &tensor : inputs)
    bytes += uint64_t(tensor.getBytes().value_or(0));
  for (const TensorSpec &tensor : outputs)
    bytes += uint64_t(tensor.getBytes().value_or(0));
  return bytes;
}

PhysicalFloor kopt::runtime::computePhysicalFloor(uint64_t bytes, double flops,
                                                  const DeviceLimits &limits) {
  PhysicalFloor floor;
  if (limits.bandwidthBytesPerSecond > 0.0)
    floor.memoryUs = double(bytes) / limits.bandwidthBytesPerSecond * 1e6;
  if (limits.peakFlopsPerSecond > 0.0 && flops > 0.0)
    floor.computeUs = flops / limits.peakFlopsPerSecond * 1e6;
  floor.floorUs = std::max(floor.memoryUs, floor.computeUs);
  return floor;
}

bool kopt::runtime::isBelowFloor(double measuredUs, double floorUs,
                                 double slack) {
  if (!(measuredUs > 0.0)) // Not positive, or NaN: no real run.
    return true;
  return measuredUs < slack * floorUs;
}

SpeedupCheck kopt::runtime::checkSpeedup(double baselineUs, double candidateUs,
                                         double threshold) {
  SpeedupCheck check;
  check.speedup = candidateUs > 0.0 ? baselineUs / candidateUs
                                    : std::numeric_limits<double>::infinity();
  check.suspicious = !(check.speedup <= threshold);
  return check;
}

bool kopt::runtime::isSpeedupAtTheFloor(double candidateUs, double floorUs) {
  return floorUs > 0.0 && !isBelowFloor(candidateUs, floorUs) &&
         candidateUs <= kFloorExplainedRatio * floorUs;
}
