//===- ConvForms.h - Convolutions a conv step computes ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Recognises the linalg ops a ConvStep (a cuDNN call) can compute: named
// convolutions and convolution-shaped linalg.generic ops alike, by their
// indexing maps, iterator types and multiply-accumulate body, against the
// layouts kopt/Runtime/ConvLayout.h lists.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_CONVFORMS_H
#define KOPT_CODEGEN_CONVFORMS_H

#include "kopt/Runtime/ConvLayout.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace mlir::kopt {

/// A convolution in one of the layouts of a conv step.
struct ConvForm {
  const ::kopt::runtime::ConvLayout *layout = nullptr;
  /// One entry per spatial dimension, in the layout's order.
  SmallVector<int64_t> strides, dilations;
  /// The step's `groups`: the size of `g`, the channels of a depthwise
  /// layout, 1 otherwise.
  int64_t groups = 1;
  /// The tensor cuDNN reads: the op's input, or the source of the zero pad
  /// that produced it (`foldedPad`), padded by `padding` on both sides of
  /// each spatial dimension as cuDNN reads it.
  Value input;
  /// A `tensor.pad` of +0.0 that pads only spatial dimensions, by the same
  /// amount before and after; null when the input is not such a pad.
  Operation *foldedPad = nullptr;
  /// One entry per spatial dimension; zeros without a folded pad.
  SmallVector<int64_t> padding;
};

/// Returns the form of `op` when it is a convolution in a conv step's
/// layout: two inputs (input, filter) and one init with static shapes, maps
/// that index the input by `stride * output + dilation * kernel` on each
/// spatial dimension and every other dimension by one loop, reduction
/// loops exactly over the kernel and the input channels, and a body that
/// yields `acc + input * filter` on floats. std::nullopt otherwise. When
/// the input is a symmetric zero pad of spatial dimensions (torch-mlir's
/// padded convolution), the form reads the pad's source with cuDNN's own
/// padding.
std::optional<ConvForm> matchConvForm(Operation *op);

/// True if `op` is a `tensor.pad` that every user reads as the folded pad
/// of its convolution form (matchConvForm): a conv step reads its source
/// in place and the pad is never computed.
bool isFoldedIntoConvs(Operation *op);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_CONVFORMS_H
