//===- BatchChunks.h - Running a batch as chunks of tuned sizes -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A module with a dynamic batch holds one program per tuned batch size. A
// batch of another size runs as consecutive chunks of the samples, each
// through the program of a tuned size, when the compiler proved the samples
// independent (docs/RuntimeModule.md). This plans the chunks; ModuleRunner
// runs them.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_BATCHCHUNKS_H
#define KOPT_RUNTIME_BATCHCHUNKS_H

#include <cstdint>
#include <vector>

namespace kopt::runtime {

/// One run of a program over consecutive samples of a batch.
struct BatchChunk {
  /// The tuned batch size whose program runs the chunk.
  int64_t size = 0;
  /// The chunk's first sample, and how many samples it holds: `size`, or
  /// fewer for a padded last chunk (the program's other samples are zeros
  /// and their results are dropped).
  int64_t start = 0;
  int64_t count = 0;

  bool operator==(const BatchChunk &other) const {
    return size == other.size && start == other.start && count == other.count;
  }
};

/// Splits `batch` samples into chunks of the tuned `sizes`: one chunk when
/// `batch` is a tuned size; else greedily, the largest size first, as often
/// as it fits, then the next (13 over {1, 8, 32} is 8 + 1 x 5). What is left
/// (fewer samples than the smallest size, when 1 is not tuned) runs padded
/// in the smallest size. Empty when `batch` is not positive or `sizes` is
/// empty; non-positive sizes are ignored.
std::vector<BatchChunk> planBatchChunks(int64_t batch,
                                        std::vector<int64_t> sizes);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_BATCHCHUNKS_H
