//===- PhysicalFloorTest.cpp - Tests of time lower bounds -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/PhysicalFloor.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace kopt::runtime;

namespace {

TEST(PhysicalFloorTest, CompulsoryBytesReadInputsAndWriteOutputsOnce) {
  std::vector<TensorSpec> inputs = {{"in0", ElementType::F32, {1024, 1024}},
                                    {"in1", ElementType::F16, {1024}}};
  std::vector<TensorSpec> outputs = {{"out0", ElementType::F32, {1024}},
                                     {"out1", ElementType::I1, {3}}};
  EXPECT_EQ(getCompulsoryBytes(inputs, outputs),
            4u * 1024 * 1024 + 2u * 1024 + 4u * 1024 + 3u);
}

TEST(PhysicalFloorTest, FloorIsTheLargerBound) {
  DeviceLimits limits{1e12, 1e15}; // 1 TB/s, 1 PFLOP/s.
  PhysicalFloor memoryBound = computePhysicalFloor(1000000000, 1e9, limits);
  EXPECT_DOUBLE_EQ(memoryBound.memoryUs, 1000.0);
  EXPECT_DOUBLE_EQ(memoryBound.computeUs, 1.0);
  EXPECT_DOUBLE_EQ(memoryBound.floorUs, 1000.0);
  PhysicalFloor computeBound = computePhysicalFloor(1000000000, 2e12, limits);
  EXPECT_DOUBLE_EQ(computeBound.floorUs, 2000.0);
  // An unknown peak contributes nothing.
  PhysicalFloor noPeak = computePhysicalFloor(1000, 1e12, DeviceLimits{1e9, 0});
  EXPECT_DOUBLE_EQ(noPeak.computeUs, 0.0);
  EXPECT_DOUBLE_EQ(noPeak.floorUs, 1.0);
}

TEST(PhysicalFloorTest, BelowFloorRule) {
  EXPECT_TRUE(isBelowFloor(700.0, 1000.0, 0.8));
  EXPECT_FALSE(isBelowFloor(800.0, 1000.0, 0.8));
  EXPECT_FALSE(isBelowFloor(900.0, 1000.0));
  EXPECT_TRUE(isBelowFloor(799.0, 1000.0));
  EXPECT_TRUE(isBelowFloor(0.0, 1000.0));
  EXPECT_TRUE(isBelowFloor(-1.0, 0.0));
  EXPECT_TRUE(isBelowFloor(std::nan(""), 1000.0));
  EXPECT_FALSE(isBelowFloor(1e-3, 0.0));
}

TEST(PhysicalFloorTest, SpeedupsOverTenfoldAreSuspicious) {
  SpeedupCheck tenfold = checkSpeedup(100.0, 10.0);
  EXPECT_DOUBLE_EQ(tenfold.speedup, 10.0);
  EXPECT_FALSE(tenfold.suspicious);
  EXPECT_TRUE(checkSpeedup(100.0, 9.9).suspicious);
  EXPECT_FALSE(checkSpeedup(100.0, 200.0).suspicious);
  EXPECT_TRUE(checkSpeedup(100.0, 0.0).suspicious);
  EXPECT_TRUE(std::isinf(checkSpeedup(100.0, 0.0).speedup));
  EXPECT_FALSE(checkSpeedup(100.0, 30.0, 3.5).suspicious);
  EXPECT_TRUE(checkSpeedup(100.0, 25.0, 3.5).suspicious);
}

TEST(PhysicalFloorTest, LargeSpeedupsStandOnlyNearTheMemoryFloor) {
  // GroupNorm's statistics: a floor of 127 us, a one-pass kernel at 130 us.
  EXPECT_TRUE(isSpeedupAtTheFloor(130.0, 127.0));
  EXPECT_TRUE(isSpeedupAtTheFloor(1.5 * 127.0, 127.0));
  // Further from the floor (a compute-bound kernel), or below it (with
  // the floor's slack), or with no floor known: the speedup stays
  // suspicious.
  EXPECT_FALSE(isSpeedupAtTheFloor(1.51 * 127.0, 127.0));
  EXPECT_FALSE(isSpeedupAtTheFloor(2000.0, 127.0));
  EXPECT_TRUE(isSpeedupAtTheFloor(0.8 * 127.0, 127.0));
  EXPECT_FALSE(isSpeedupAtTheFloor(0.79 * 127.0, 127.0));
  EXPECT_FALSE(isSpeedupAtTheFloor(130.0, 0.0));
  EXPECT_FALSE(isSpeedupAtTheFloor(0.0, 127.0));
}

} // namespace
