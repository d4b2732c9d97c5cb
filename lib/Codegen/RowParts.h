//===- RowParts.h - A row cut into parts that start on lines ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The long-row kernels give each block one part of a row (a chunk, a
// share). Equal parts of a row over a count that does not divide it (132
// blocks over 2M elements: 15,888 each) start in the middle of a 128-byte
// line for every other block, so that each warp's 512 bytes span five
// lines, not four: a fifth more of the SM's load and store work for those
// blocks, and the rows whose parts all finish together wait for them.
// Parts rounded up to whole lines start on one, the last taking what is
// left. On an H100 that made the softmax's groups of 11 blocks 2% faster
// and the GroupNorm waves' 132 chunks at most 0.7%
// (bench/results/2026-12-07-h100-lines-stages-ring.md).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_ROWPARTS_H
#define KOPT_LIB_CODEGEN_ROWPARTS_H

#include <cstdint>

namespace mlir::kopt {

/// Units of a 128-byte line: 32 fp32 elements, or 8 of their 16-byte
/// vectors.
inline constexpr int64_t kLineElements = 32;
inline constexpr int64_t kLineVectors = 8;

/// The length of each of `parts` parts of `length` units, the last part
/// taking what the others leave: their ceiling rounded up to a multiple of
/// `round` (16-byte groups of elements), then to one of `line` where the
/// rows start on lines too (`length` a multiple of it), the last part
/// still gets some and the part is at most `most` units (what the block's
/// shared memory holds of it); else the ceiling as rounded to `round`.
inline int64_t getLinePartLength(int64_t length, int64_t parts, int64_t line,
                                 int64_t round = 1, int64_t most = INT64_MAX) {
  int64_t part = (length + parts - 1) / parts;
  if (round > 1)
    part = (part + round - 1) / round * round;
  if (length % line != 0)
    return part;
  int64_t lined = (part + line - 1) / line * line;
  return (parts - 1) * lined < length && lined <= most ? lined : part;
}

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_ROWPARTS_H
