//===- BatchIndependence.h - Are a graph's samples independent? -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A graph exported with a dynamic batch runs at any batch size from the
// programs of a few tuned sizes only when each sample's results depend on
// that sample's slice of the inputs alone: then a batch runs as chunks of
// the tuned sizes. This proves it on the dynamic graph, or says which op
// stands in the way.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_ANALYSIS_BATCHINDEPENDENCE_H
#define KOPT_ANALYSIS_BATCHINDEPENDENCE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::kopt {

/// How a dynamic batch flows through a graph's entry function.
struct BatchAnalysis {
  /// Per argument and per result: whether its outermost dimension is the
  /// batch (dynamic in the signature).
  llvm::SmallVector<bool> arguments;
  llvm::SmallVector<bool> results;
  /// Whether every sample is proved to be computed from its own slice of
  /// the batched arguments and from the other arguments alone.
  bool independent = false;
  /// Why not, when not: the first op in the way, its location and what it
  /// does with the batch.
  std::string reason;
};

/// Whether an argument of `entry` has a dynamic dimension.
bool hasDynamicShape(func::FuncOp entry);

/// Analyses the dynamic batch of `entry`. Every dynamic dimension of its
/// arguments must be the outermost (the batch, one size for all of them);
/// fails naming the first argument with another. Samples are independent
/// when, following the batch through the sizes and shapes it flows into:
/// - it stays the outermost dimension of every tensor, times a constant
///   (reshapes keep it as the leading factor, pads and slices leave it
///   whole, concatenations are along other dimensions);
/// - every linalg op maps it to one parallel loop, which indexes only the
///   outermost dimension of batched operands and results and no dimension
///   of the others, and its body reads other tensors' samples only at that
///   loop's index;
/// - no value computed from the batch size reaches anything but sizes,
///   shapes and checks.
llvm::Expected<BatchAnalysis> analyzeBatch(func::FuncOp entry);

} // namespace mlir::kopt

#endif // KOPT_ANALYSIS_BATCHINDEPENDENCE_H
