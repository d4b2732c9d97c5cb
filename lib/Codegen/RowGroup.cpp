//===- RowGroup.cpp - Rows shared out among a block's threads ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/RowGroup.h"

using namespace mlir;
using namespace mlir::kopt;

std::string RowGroupLayout::getRowInBlockExpr() const {
  if (rowsPerBlock == 1)
    return "0";
  return rowsFastest
             ? "(int)(threadIdx.x % " + std::to_string(rowsPerBlock) + "u)"
             : "(int)(threadIdx.x / " + std::to_string(threadsPerRow) + "u)";
}

std::string RowGroupLayout::getLaneExpr() const {
  if (threadsPerRow == 1)
    return "0";
  return rowsFastest
             ? "(int)(threadIdx.x / " + std::to_string(rowsPerBlock) + "u)"
             : "(int)(threadIdx.x % " + std::to_string(threadsPerRow) + "u)";
}

std::string ReductionCombiner::combine(llvm::StringRef a,
                                       llvm::StringRef b) const {
  std::string result;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      result += pattern[i + 1] == '0' ? a.str() : b.str();
      ++i;
    } else {
      result += pattern[i];
    }
  }
  return result;
}

std::string mlir::kopt::emitRowGroupReduction(CodeWriter &out,
                                              llvm::StringRef type,
                                              const ReductionCombiner &combiner,
                                              llvm::StringRef acc,
                                              const RowGroupLayout &layout) {
  unsigned rows = layout.rowsPerBlock, threads = layout.threadsPerRow;
  unsigned blockSize = layout.getBlockSize();
  auto shuffle = [&](unsigned from, unsigned to) {
    // XOR butterflies over lane offsets [from, to): the lanes they pair
    // belong to the same row.
    if (from >= to)
      return;
    out.line("#pragma unroll");
    out.line("for (int o = " + std::to_string(from) + "; o < " +
             std::to_string(to) + "; o <<= 1) " + acc.str() + " = " +
             combiner.combine(acc, "__shfl_xor_sync(0xffffffffu, " + acc.str() +
                                       ", o)") +
             ";");
  };
  // First within each warp, then across warps through shared memory:
  // `slots` partials per row, written by the lanes `writer` selects.
  unsigned slots = 1;
  std::string slot = "0", writer = "true";
  const std::string &lane = layout.lane;
  if (!layout.rowsFastest) {
    shuffle(1, std::min(threads, 32u));
    if (threads > 32) {
      slots = threads / 32;
      slot = "(" + lane + " >> 5)";
      writer = "(" + lane + " & 31) == 0";
    }
  } else if (rows >= 32) {
    // Each warp holds 32 rows, one thread of each.
    slots = threads;
    slot = lane;
  } else {
    // Each warp holds 32 / rows threads of each of its rows.
    shuffle(rows, 32);
    slots = blockSize / 32;
    slot = "(int)(threadIdx.x >> 5)";
    writer = "(threadIdx.x & 31) < " + std::to_string(rows) + "u";
  }
  if (slots == 1)
    return acc.str();

  std::string shared = out.fresh("kopt_rows");
  std::string total = out.fresh("red");
  std::string rowsText = std::to_string(rows);
  out.line("__shared__ " + type.str() + " " + shared + "[" +
           std::to_string(slots * rows) + "];");
  out.line("if (" + writer + ") " + shared + "[" + slot + " * " + rowsText +
           " + " + layout.rowInBlock + "] = " + acc.str() + ";");
  out.line("__syncthreads();");
  out.line(type.str() + " " + total + " = " + combiner.identity + ";");
  out.line("#pragma unroll");
  out.line("for (int s = 0; s < " + std::to_string(slots) + "; ++s) " + total +
           " = " +
           combiner.combine(total, shared + "[s * " + rowsText + " + " +
                                       layout.rowInBlock + "]") +
           ";");
  return total;
}
