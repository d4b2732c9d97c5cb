//===- Guards.h - Poison, redzones and checksums for runs -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The host side of the memory checks around a candidate's run (docs/Design.md
// "Evaluator", point 4):
//
// - Poison. Outputs are filled with a poison pattern before each run and
//   every element must be overwritten. Float types use quiet NaNs with a
//   payload no arithmetic produces (0x7fc0dead for f32), so a poison element
//   left behind is unmistakable. An integer sentinel, though, may be a legal
//   result. So unwritten integers are found with two runs on the same inputs
//   with two different poison patterns (variants 0 and 1): an element equal
//   to variant 0's poison after the first run and to variant 1's after the
//   second was not written (a written element has the same value in both).
//   i1 sentinels (0xa5, 0x5a) are never legal booleans. The two-run check
//   works for every type; the one-run check is exact for floats and i1.
//
// - Redzones. Each device buffer is allocated with guard bytes before and
//   after it, filled with a fixed pseudo-random pattern that depends on the
//   byte's offset (so a shifted copy of the guard is still caught). The
//   buffer starts a multiple of 256 bytes into the allocation, keeping the
//   alignment cudaMalloc gives; the trailing guard starts right after the
//   buffer's last byte, so a one-byte overrun shows.
//
// - Checksums. Inputs are checksummed before and after the run (64-bit
//   FNV-1a): a changed checksum means the candidate wrote its inputs.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_EVALUATOR_GUARDS_H
#define KOPT_RUNTIME_EVALUATOR_GUARDS_H

#include "kopt/Runtime/Evaluator/ElementCodec.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kopt::runtime {

//===----------------------------------------------------------------------===//
// Poison
//===----------------------------------------------------------------------===//

/// The bytes of one poison element of `type`; `variant` 0 or 1 picks one of
/// two distinct patterns (other values are taken modulo 2).
std::vector<uint8_t> getPoisonElement(ElementType type, unsigned variant = 0);

/// `numElements` poison elements of `type`, ready to upload over an output.
std::vector<uint8_t> makePoisonedBuffer(ElementType type, uint64_t numElements,
                                        unsigned variant = 0);

/// Indices of the elements of `bytes` (an output of `type` after one run
/// poisoned with `variant`) still equal to the poison. Exact for float types
/// and i1; for other integers use the two-run overload.
std::vector<uint64_t> findUnwrittenElements(const std::vector<uint8_t> &bytes,
                                            ElementType type,
                                            unsigned variant = 0);

/// Indices of the elements unwritten in two runs on the same inputs, the
/// first poisoned with variant 0 (`firstRun`) and the second with variant 1
/// (`secondRun`): elements equal to their run's poison in both.
std::vector<uint64_t>
findUnwrittenElements(const std::vector<uint8_t> &firstRun,
                      const std::vector<uint8_t> &secondRun, ElementType type);

//===----------------------------------------------------------------------===//
// Redzones
//===----------------------------------------------------------------------===//

/// The alignment a buffer keeps inside its guarded allocation.
constexpr size_t kBufferAlignment = 256;
/// The default guard size on each side of a buffer.
constexpr size_t kDefaultRedzoneBytes = 1024;

/// Where a buffer sits in its guarded allocation.
struct RedzoneLayout {
  /// Offset of the buffer: the guard size rounded up to `kBufferAlignment`
  /// (so the leading guard may be longer than asked).
  size_t bufferOffset = 0;
  /// Bytes of the buffer itself.
  size_t bufferBytes = 0;
  /// Bytes of the trailing guard, right after the buffer.
  size_t trailingBytes = 0;
  /// The whole allocation: leading guard, buffer, trailing guard.
  size_t totalBytes = 0;
};

/// The layout of a `bufferBytes` buffer with at least `redzoneBytes` guard
/// bytes on each side.
RedzoneLayout computeRedzoneLayout(size_t bufferBytes,
                                   size_t redzoneBytes = kDefaultRedzoneBytes);

/// The guard byte at `offset` into an allocation (a fixed pseudo-random
/// function of the offset).
uint8_t getRedzoneByte(size_t offset);

/// A guarded allocation's initial contents: guard pattern everywhere, then
/// `buffer` (`layout.bufferBytes` bytes, or fewer, the rest left as pattern)
/// copied in at `layout.bufferOffset`.
std::vector<uint8_t> makeGuardedAllocation(const RedzoneLayout &layout,
                                           const std::vector<uint8_t> &buffer);

/// The verdict on the guards of one allocation.
struct RedzoneCheck {
  /// True when both guards hold their pattern.
  bool intact = true;
  /// Offset into the allocation of the first corrupted guard byte.
  size_t firstCorruptedOffset = 0;
  /// The same, relative to the buffer: negative before it, >= bufferBytes
  /// after it.
  int64_t offsetFromBuffer = 0;
  /// Corrupted guard bytes in all.
  size_t numCorruptedBytes = 0;
  /// One line naming the first corrupted byte; empty when intact.
  std::string message;
};

/// Checks the guards of `allocation` (read back after a run) laid out as
/// `layout`; an allocation of the wrong size counts as corrupted at the
/// first missing byte.
RedzoneCheck checkRedzone(const std::vector<uint8_t> &allocation,
                          const RedzoneLayout &layout);

//===----------------------------------------------------------------------===//
// Checksums
//===----------------------------------------------------------------------===//

/// 64-bit FNV-1a of `size` bytes at `data`.
uint64_t checksum(const uint8_t *data, size_t size);
/// 64-bit FNV-1a of `bytes`.
uint64_t checksum(const std::vector<uint8_t> &bytes);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_EVALUATOR_GUARDS_H
