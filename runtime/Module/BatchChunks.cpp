//===- BatchChunks.cpp - Running a batch as chunks of tuned sizes -*- C++ -*-//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/BatchChunks.h"

#include <algorithm>
#include <functional>

using namespace kopt::runtime;

std::vector<BatchChunk>
kopt::runtime::planBatchChunks(int64_t batch, std::vector<int64_t> sizes) {
  sizes.erase(std::remove_if(sizes.begin(), sizes.end(),
                             [](int64_t size) { return size < 1; }),
              sizes.end());
  std::vector<BatchChunk> chunks;
  if (batch < 1 || sizes.empty())
    return chunks;
  std::sort(sizes.begin(), sizes.end(), std::greater<int64_t>());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  int64_t start = 0;
  for (int64_t size : sizes)
    for (; batch - start >= size; start += size)
      chunks.push_back({size, start, size});
  if (start < batch)
    chunks.push_back({sizes.back(), start, batch - start});
  return chunks;
}
