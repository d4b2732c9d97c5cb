//===- GuardsTest.cpp - Tests of poison, redzones and checksums -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/Guards.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <string>

using namespace kopt::runtime;

namespace {

TEST(GuardsTest, FloatPoisonIsAQuietNaNAndVariantsDiffer) {
  for (ElementType type : getAllElementTypes()) {
    std::vector<uint8_t> first = getPoisonElement(type, 0);
    std::vector<uint8_t> second = getPoisonElement(type, 1);
    ASSERT_EQ(int64_t(first.size()), getElementBytes(type));
    EXPECT_NE(first, second) << stringifyElementType(type);
    EXPECT_EQ(getPoisonElement(type, 2), first);
    if (isFloatType(type)) {
      EXPECT_TRUE(std::isnan(decodeElement(type, first.data())));
      EXPECT_TRUE(std::isnan(decodeElement(type, second.data())));
    }
  }
  uint32_t bits;
  std::memcpy(&bits, getPoisonElement(ElementType::F32).data(), 4);
  EXPECT_EQ(bits, 0x7fc0deadu);
  // Poison booleans are never 0 or 1.
  for (unsigned variant = 0; variant < 2; ++variant) {
    uint8_t byte = getPoisonElement(ElementType::I1, variant)[0];
    EXPECT_GT(byte, 1);
  }
}

TEST(GuardsTest, FindsUnwrittenFloatElements) {
  std::vector<uint8_t> output = makePoisonedBuffer(ElementType::F32, 10);
  ASSERT_EQ(output.size(), 40u);
  EXPECT_EQ(findUnwrittenElements(output, ElementType::F32).size(), 10u);
  // A kernel that writes every element but 3 and 7 (including a NaN of its
  // own: the canonical NaN is not poison).
  for (size_t i = 0; i < 10; ++i) {
    if (i == 3 || i == 7)
      continue;
    float value = i == 4 ? std::nanf("") : float(i);
    std::memcpy(output.data() + 4 * i, &value, 4);
  }
  std::vector<uint64_t> unwritten =
      findUnwrittenElements(output, ElementType::F32);
  EXPECT_EQ(unwritten, (std::vector<uint64_t>{3, 7}));
}

TEST(GuardsTest, IntegerUnwrittenNeedsTwoRuns) {
  // The kernel legitimately writes the variant-0 sentinel into element 2 in
  // both runs and never writes element 5.
  int32_t sentinel;
  std::memcpy(&sentinel, getPoisonElement(ElementType::I32, 0).data(), 4);
  auto run = [&](unsigned variant) {
    std::vector<uint8_t> output =
        makePoisonedBuffer(ElementType::I32, 8, variant);
    for (int32_t i = 0; i < 8; ++i) {
      if (i == 5)
        continue;
      int32_t value = i == 2 ? sentinel : i * 10;
      std::memcpy(output.data() + 4 * i, &value, 4);
    }
    return output;
  };
  std::vector<uint8_t> first = run(0), second = run(1);
  // One run cannot tell the legal sentinel from poison...
  EXPECT_EQ(findUnwrittenElements(first, ElementType::I32),
            (std::vector<uint64_t>{2, 5}));
  // ...two runs with two patterns can.
  EXPECT_EQ(findUnwrittenElements(first, second, ElementType::I32),
            (std::vector<uint64_t>{5}));
}

TEST(GuardsTest, RedzoneLayoutKeepsAlignment) {
  RedzoneLayout layout = computeRedzoneLayout(1000, 100);
  EXPECT_EQ(layout.bufferOffset, 256u);
  EXPECT_EQ(layout.bufferBytes, 1000u);
  EXPECT_EQ(layout.trailingBytes, 100u);
  EXPECT_EQ(layout.totalBytes, 256u + 1000u + 100u);
  for (size_t redzone : {0, 1, 255, 256, 257, 4096}) {
    RedzoneLayout other = computeRedzoneLayout(7, redzone);
    EXPECT_EQ(other.bufferOffset % kBufferAlignment, 0u);
    EXPECT_GE(other.bufferOffset, redzone);
    EXPECT_LT(other.bufferOffset, redzone + kBufferAlignment);
  }
}

TEST(GuardsTest, RedzoneIntactWhenOnlyTheBufferIsWritten) {
  RedzoneLayout layout = computeRedzoneLayout(100, 64);
  std::vector<uint8_t> payload(100, 0x11);
  std::vector<uint8_t> allocation = makeGuardedAllocation(layout, payload);
  ASSERT_EQ(allocation.size(), layout.totalBytes);
  EXPECT_EQ(allocation[layout.bufferOffset], 0x11);
  for (size_t i = 0; i < layout.bufferBytes; ++i)
    allocation[layout.bufferOffset + i] = uint8_t(i);
  RedzoneCheck check = checkRedzone(allocation, layout);
  EXPECT_TRUE(check.intact);
  EXPECT_TRUE(check.message.empty());
}

TEST(GuardsTest, RedzoneCorruptionAtEitherEnd) {
  RedzoneLayout layout = computeRedzoneLayout(100, 64);
  const std::vector<uint8_t> clean =
      makeGuardedAllocation(layout, std::vector<uint8_t>(100));
  struct Case {
    size_t offset;
    int64_t fromBuffer;
  } cases[] = {
      {0, -int64_t(layout.bufferOffset)},             // First byte.
      {layout.bufferOffset - 1, -1},                  // Just before.
      {layout.bufferOffset + 100, 100},               // Just after.
      {layout.totalBytes - 1, int64_t(100 + 64 - 1)}, // Last byte.
  };
  for (const Case &c : cases) {
    std::vector<uint8_t> allocation = clean;
    allocation[c.offset] ^= 0x01;
    RedzoneCheck check = checkRedzone(allocation, layout);
    EXPECT_FALSE(check.intact) << c.offset;
    EXPECT_EQ(check.firstCorruptedOffset, c.offset);
    EXPECT_EQ(check.offsetFromBuffer, c.fromBuffer);
    EXPECT_EQ(check.numCorruptedBytes, 1u);
    EXPECT_FALSE(check.message.empty());
  }
  // Two corrupted bytes: the first one is reported.
  std::vector<uint8_t> allocation = clean;
  allocation[layout.totalBytes - 1] = ~allocation[layout.totalBytes - 1];
  allocation[10] = ~allocation[10];
  RedzoneCheck check = checkRedzone(allocation, layout);
  EXPECT_EQ(check.firstCorruptedOffset, 10u);
  EXPECT_EQ(check.numCorruptedBytes, 2u);
  // A short read-back is corrupted too.
  allocation = clean;
  allocation.pop_back();
  EXPECT_FALSE(checkRedzone(allocation, layout).intact);
}

TEST(GuardsTest, RedzonePatternDependsOnTheOffset) {
  // A guard copied 8 bytes over (or 1 byte over) would not match.
  size_t same8 = 0, same1 = 0;
  for (size_t i = 0; i < 4096; ++i) {
    same8 += getRedzoneByte(i) == getRedzoneByte(i + 8);
    same1 += getRedzoneByte(i) == getRedzoneByte(i + 1);
  }
  EXPECT_LT(same8, 64u);
  EXPECT_LT(same1, 64u);
}

TEST(GuardsTest, ChecksumIsFnv1a) {
  EXPECT_EQ(checksum(std::vector<uint8_t>{}), 0xcbf29ce484222325ull);
  std::string a = "a", foobar = "foobar";
  EXPECT_EQ(checksum(reinterpret_cast<const uint8_t *>(a.data()), a.size()),
            0xaf63dc4c8601ec8cull);
  EXPECT_EQ(
      checksum(reinterpret_cast<const uint8_t *>(foobar.data()), foobar.size()),
      0x85944171f73967e8ull);
}

TEST(GuardsTest, ChecksumChangesOnEveryOneBitFlip) {
  std::vector<uint8_t> bytes(64);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = uint8_t(i * 37);
  uint64_t original = checksum(bytes);
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    std::vector<uint8_t> flipped = bytes;
    flipped[bit / 8] ^= uint8_t(1u << (bit % 8));
    EXPECT_NE(checksum(flipped), original) << "bit " << bit;
  }
}

} // namespace
