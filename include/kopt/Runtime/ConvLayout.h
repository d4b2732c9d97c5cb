//===- ConvLayout.h - Operand layouts of convolution steps ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A ConvStep names the layout of its operands as linalg names its
// convolution ops: the dimension letters of the input and of the filter,
// joined by `_`. `nchw_fchw` is linalg.conv_2d_nchw_fchw, `ngchw_gfchw`
// linalg.conv_2d_ngchw_gfchw, `nchw_chw` linalg.depthwise_conv_2d_nchw_chw.
// Letters: `n` batch, `g` group, `c` input channel (per group), `f` output
// feature (per group), `m` depthwise channel multiplier, `d` `h` `w`
// spatial. The output's letters follow from them: the input's with `c`
// replaced by `f` when the filter has an `f`; otherwise (depthwise) the
// input's with `m` after `c` when the filter has an `m`.
//
// describeConv reads a step's tensor shapes through its layout, checks
// every size, and returns the convolution as cuDNN computes it: a grouped
// cross-correlation on a packed channels-first (NC...) or channels-last
// (N...C) tensor, with the filter as cuDNN orders it.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CONVLAYOUT_H
#define KOPT_RUNTIME_CONVLAYOUT_H

#include "kopt/Runtime/TaskPlan.h"

#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime {

/// One operand layout a conv step accepts.
struct ConvLayout {
  /// The step's `layout` value, such as `nchw_fchw`.
  std::string name;
  /// Dimension letters of the input, the filter and the output.
  std::string input, filter, output;
  /// The spatial letters in order (`w`, `hw` or `dhw`).
  std::string spatial;
  /// Whether each input channel is its own group (the filter has no `f`).
  bool depthwise = false;
  /// Whether the channels come after the spatial dimensions.
  bool channelsLast = false;
};

/// Every layout a conv step accepts: linalg's 1-D, 2-D and 3-D
/// convolutions (plain, grouped and depthwise) on floats, and
/// `ngcdhw_gfcdhw`, the 3-D grouped form torch-mlir writes as a
/// linalg.generic for want of a named op.
const std::vector<ConvLayout> &getConvLayouts();

/// Returns the layout named `name`, or nullptr when there is none.
const ConvLayout *findConvLayout(std::string_view name);

/// A convolution as cuDNN computes it.
struct ConvProblem {
  bool channelsLast = false;
  int64_t batch = 1;
  int64_t groups = 1;
  /// Input channels and output features of one group.
  int64_t channelsPerGroup = 1;
  int64_t featuresPerGroup = 1;
  /// One entry per spatial dimension, in the layout's order.
  std::vector<int64_t> inputSpatial, filterSpatial, outputSpatial;
  std::vector<int64_t> strides, dilations;
  /// Zeros read before and after each spatial dimension.
  std::vector<int64_t> padding;
  /// The filter in cuDNN's order, with its groups and features apart:
  /// [groups][features][channels][spatial...] for channels first,
  /// [groups][features][spatial...][channels] for channels last. The size
  /// of each dimension and its stride, in elements, in the step's filter.
  std::vector<int64_t> filterSizes, filterStrides;

  /// Whether the step's filter is already in cuDNN's order (no copy).
  bool isFilterPacked() const;
};

/// Reads the shapes of `step`'s tensors through its layout. Fails with
/// InvalidArgument naming the step's tensors when the layout is unknown,
/// a rank or size disagrees with the others, the strides, dilations,
/// padding or groups do not fit, or a size is not positive.
Result<ConvProblem> describeConv(const ConvStep &step, const TensorSpec &input,
                                 const TensorSpec &filter,
                                 const TensorSpec &output);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CONVLAYOUT_H
