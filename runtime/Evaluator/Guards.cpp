//===- Guards.cpp - Poison, redzones and checksums for runs -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/Guards.h"

#include "kopt/Runtime/Hash.h"

#include <algorithm>
#include <cstring>

using namespace kopt::runtime;

//===----------------------------------------------------------------------===//
// Poison
//===----------------------------------------------------------------------===//

std::vector<uint8_t> kopt::runtime::getPoisonElement(ElementType type,
                                                     unsigned variant) {
  bool second = variant % 2;
  // Quiet NaNs with payloads arithmetic never yields (CUDA's canonical NaN is
  // all ones), and integer sentinels with alternating bits.
  uint64_t bits = 0;
  switch (type) {
  case ElementType::F16:
    bits = second ? 0x7ebe : 0x7ead;
    break;
  case ElementType::BF16:
    bits = second ? 0x7fbe : 0x7fad;
    break;
  case ElementType::F32:
    bits = second ? 0x7fc0beef : 0x7fc0dead;
    break;
  case ElementType::F64:
    bits = second ? 0x7ff8beefbeefbeefull : 0x7ff8deaddeaddeadull;
    break;
  case ElementType::I1:
  case ElementType::I8:
  case ElementType::I16:
  case ElementType::I32:
  case ElementType::I64:
    bits = second ? 0x5a5a5a5a5a5a5a5aull : 0xa5a5a5a5a5a5a5a5ull;
    break;
  }
  std::vector<uint8_t> element(size_t(getElementBytes(type)));
  // Little-endian, as on every CUDA host.
  for (size_t i = 0; i < element.size(); ++i)
    element[i] = uint8_t(bits >> (8 * i));
  return element;
}

std::vector<uint8_t> kopt::runtime::makePoisonedBuffer(ElementType type,
                                                       uint64_t numElements,
                                                       unsigned variant) {
  std::vector<uint8_t> element = getPoisonElement(type, variant);
  std::vector<uint8_t> bytes(numElements * element.size());
  for (uint64_t i = 0; i < numElements; ++i)
    std::memcpy(bytes.data() + i * element.size(), element.data(),
                element.size());
  return bytes;
}

std::vector<uint64_t>
kopt::runtime::findUnwrittenElements(const std::vector<uint8_t> &bytes,
                                     ElementType type, unsigned variant) {
  std::vector<uint8_t> poison = getPoisonElement(type, variant);
  size_t width = poison.size();
  std::vector<uint64_t> unwritten;
  for (size_t i = 0; i < bytes.size() / width; ++i)
    if (std::memcmp(bytes.data() + i * width, poison.data(), width) == 0)
      unwritten.push_back(i);
  return unwritten;
}

std::vector<uint64_t>
kopt::runtime::findUnwrittenElements(const std::vector<uint8_t> &firstRun,
                                     const std::vector<uint8_t> &secondRun,
                                     ElementType type) {
  std::vector<uint8_t> first = getPoisonElement(type, 0);
  std::vector<uint8_t> second = getPoisonElement(type, 1);
  size_t width = first.size();
  size_t count = std::min(firstRun.size(), secondRun.size()) / width;
  std::vector<uint64_t> unwritten;
  for (size_t i = 0; i < count; ++i)
    if (std::memcmp(firstRun.data() + i * width, first.data(), width) == 0 &&
        std::memcmp(secondRun.data() + i * width, second.data(), width) == 0)
      unwritten.push_back(i);
  return unwritten;
}

//===----------------------------------------------------------------------===//
// Redzones
//===----------------------------------------------------------------------===//

RedzoneLayout kopt::runtime::computeRedzoneLayout(size_t bufferBytes,
                                                  size_t redzoneBytes) {
  RedzoneLayout layout;
  layout.bufferOffset = (redzoneBytes + kBufferAlignment - 1) /
                        kBufferAlignment * kBufferAlignment;
  layout.bufferBytes = bufferBytes;
  layout.trailingBytes = redzoneBytes;
  layout.totalBytes = layout.bufferOffset + bufferBytes + redzoneBytes;
  return layout;
}

uint8_t kopt::runtime::getRedzoneByte(size_t offset) {
  // One SplitMix64 finaliser per 8-byte word, fixed seed: cheap, and no two
  // nearby words share a pattern.
  uint64_t z = uint64_t(offset / 8) * 0x9e3779b97f4a7c15ull + 0x6b6f7074ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return uint8_t(z >> (8 * (offset % 8)));
}

std::vector<uint8_t>
kopt::runtime::makeGuardedAllocation(const RedzoneLayout &layout,
                                     const std::vector<uint8_t> &buffer) {
  std::vector<uint8_t> allocation(layout.totalBytes);
  for (size_t i = 0; i < allocation.size(); ++i)
    allocation[i] = getRedzoneByte(i);
  size_t copied = std::min(buffer.size(), layout.bufferBytes);
  if (copied)
    std::memcpy(allocation.data() + layout.bufferOffset, buffer.data(), copied);
  return allocation;
}

RedzoneCheck kopt::runtime::checkRedzone(const std::vector<uint8_t> &allocation,
                                         const RedzoneLayout &layout) {
  RedzoneCheck check;
  size_t bufferEnd = layout.bufferOffset + layout.bufferBytes;
  auto corrupt = [&](size_t offset) {
    if (check.intact) {
      check.intact = false;
      check.firstCorruptedOffset = offset;
    }
    ++check.numCorruptedBytes;
  };
  size_t leading = std::min(layout.bufferOffset, allocation.size());
  for (size_t i = 0; i < leading; ++i)
    if (allocation[i] != getRedzoneByte(i))
      corrupt(i);
  for (size_t i = bufferEnd; i < layout.totalBytes; ++i)
    if (i >= allocation.size() || allocation[i] != getRedzoneByte(i))
      corrupt(i);
  if (allocation.size() < layout.bufferOffset) {
    // Missing leading guard bytes: corrupted at the first missing one.
    if (check.intact)
      check.firstCorruptedOffset = allocation.size();
    check.intact = false;
  }
  if (check.intact)
    return check;
  check.offsetFromBuffer =
      int64_t(check.firstCorruptedOffset) - int64_t(layout.bufferOffset);
  bool before = check.offsetFromBuffer < 0;
  check.message = std::to_string(check.numCorruptedBytes) +
                  " guard bytes corrupted; " + "first at byte " +
                  std::to_string(before ? -check.offsetFromBuffer
                                        : check.offsetFromBuffer -
                                              int64_t(layout.bufferBytes)) +
                  (before ? " before the buffer" : " after the buffer's end");
  return check;
}

//===----------------------------------------------------------------------===//
// Checksums
//===----------------------------------------------------------------------===//

uint64_t kopt::runtime::checksum(const uint8_t *data, size_t size) {
  return fnv1a64(data, size);
}

uint64_t kopt::runtime::checksum(const std::vector<uint8_t> &bytes) {
  return checksum(bytes.data(), bytes.size());
}
