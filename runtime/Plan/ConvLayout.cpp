//===- ConvLayout.cpp - Operand layouts of convolution steps ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/ConvLayout.h"

using namespace kopt::runtime;

/// Builds the layout `name` (`INPUT_FILTER`) and derives the rest.
static ConvLayout makeLayout(std::string_view name) {
  ConvLayout layout;
  layout.name = std::string(name);
  size_t split = name.find('_');
  layout.input = std::string(name.substr(0, split));
  layout.filter = std::string(name.substr(split + 1));
  layout.depthwise = layout.filter.find('f') == std::string::npos;
  layout.output = layout.input;
  size_t channel = layout.output.find('c');
  if (!layout.depthwise)
    layout.output[channel] = 'f';
  else if (layout.filter.find('m') != std::string::npos)
    layout.output.insert(channel + 1, "m");
  for (char letter : layout.input)
    if (letter == 'd' || letter == 'h' || letter == 'w')
      layout.spatial += letter;
  layout.channelsLast = channel > layout.input.find(layout.spatial.front());
  return layout;
}

const std::vector<ConvLayout> &kopt::runtime::getConvLayouts() {
  static const std::vector<ConvLayout> layouts = [] {
    std::vector<ConvLayout> list;
    for (std::string_view name :
         {"ncw_fcw",     "nwc_wcf",     "nchw_fchw",     "nhwc_hwcf",
          "nhwc_fhwc",   "ngchw_gfchw", "ngchw_fgchw",   "nhwgc_gfhwc",
          "ncdhw_fcdhw", "ndhwc_dhwcf", "ngcdhw_gfcdhw", "ncw_cw",
          "nwc_wc",      "nwc_wcm",     "nchw_chw",      "nhwc_hwc",
          "nhwc_hwcm",   "ncdhw_cdhw",  "ndhwc_dhwc",    "ndhwc_dhwcm"})
      list.push_back(makeLayout(name));
    return list;
  }();
  return layouts;
}

const ConvLayout *kopt::runtime::findConvLayout(std::string_view name) {
  for (const ConvLayout &layout : getConvLayouts())
    if (layout.name == name)
      return &layout;
  return nullptr;
}

bool ConvProblem::isFilterPacked() const {
  int64_t stride = 1;
  for (size_t i = filterSizes.size(); i-- > 0;) {
    if (filterSizes[i] != 1 && filterStrides[i] != stride)
      return false;
    stride *= filterSizes[i];
  }
  return true;
}

static Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

namespace {
/// One operand read through its letters.
struct Operand {
  const TensorSpec &tensor;
  const std::string &letters;

  bool has(char letter) const {
    return letters.find(letter) != std::string::npos;
  }
  /// The size of dimension `letter`, 1 when the operand has none.
  int64_t size(char letter) const {
    size_t at = letters.find(letter);
    return at == std::string::npos ? 1 : tensor.shape[at];
  }
  /// The row-major stride of dimension `letter`, 0 when it has none.
  int64_t stride(char letter) const {
    size_t at = letters.find(letter);
    if (at == std::string::npos)
      return 0;
    int64_t stride = 1;
    for (size_t i = at + 1; i < tensor.shape.size(); ++i)
      stride *= tensor.shape[i];
    return stride;
  }
};
} // namespace

Result<ConvProblem> kopt::runtime::describeConv(const ConvStep &step,
                                                const TensorSpec &input,
                                                const TensorSpec &filter,
                                                const TensorSpec &output) {
  const ConvLayout *layout = findConvLayout(step.layout);
  if (!layout)
    return invalid("unknown conv layout '" + step.layout + "'");
  Operand in{input, layout->input}, fl{filter, layout->filter},
      out{output, layout->output};
  for (const Operand *operand : {&in, &fl, &out}) {
    const std::vector<int64_t> &shape = operand->tensor.shape;
    if (shape.size() != operand->letters.size())
      return invalid("conv tensor '" + operand->tensor.name + "' must be " +
                     std::to_string(operand->letters.size()) +
                     "-D for layout '" + layout->name + "'");
    for (int64_t size : shape)
      if (size < 1)
        return invalid("conv tensor '" + operand->tensor.name +
                       "' has a size below 1");
  }
  size_t rank = layout->spatial.size();
  if (step.strides.size() != rank || step.dilations.size() != rank)
    return invalid("conv layout '" + layout->name + "' needs " +
                   std::to_string(rank) + " strides and dilations");
  for (size_t i = 0; i < rank; ++i)
    if (step.strides[i] < 1 || step.dilations[i] < 1)
      return invalid("conv strides and dilations must be positive");
  if (!step.padding.empty() && step.padding.size() != rank)
    return invalid("conv layout '" + layout->name + "' needs " +
                   std::to_string(rank) + " paddings or none");
  for (int64_t padding : step.padding)
    if (padding < 0)
      return invalid("conv padding must not be negative");

  auto mismatch = [&](char letter, const Operand &a, const Operand &b) {
    return invalid("conv tensors '" + a.tensor.name + "' and '" +
                   b.tensor.name + "' disagree on dimension '" +
                   std::string(1, letter) + "' (" +
                   std::to_string(a.size(letter)) + " and " +
                   std::to_string(b.size(letter)) + ")");
  };
  ConvProblem problem;
  problem.channelsLast = layout->channelsLast;
  problem.batch = in.size('n');
  if (out.size('n') != problem.batch)
    return mismatch('n', in, out);
  // The letters of cuDNN's group, feature and channel dimensions.
  char groupLetter = layout->depthwise ? 'c' : 'g';
  char featureLetter = layout->depthwise ? 'm' : 'f';
  for (char letter : {'g', 'c', 'm', 'f'}) {
    if (in.has(letter) && fl.has(letter) && in.size(letter) != fl.size(letter))
      return mismatch(letter, in, fl);
    if (out.has(letter) && fl.has(letter) &&
        out.size(letter) != fl.size(letter))
      return mismatch(letter, fl, out);
  }
  problem.groups = in.size(groupLetter);
  problem.channelsPerGroup = layout->depthwise ? 1 : in.size('c');
  problem.featuresPerGroup = fl.size(featureLetter);
  if (step.groups != problem.groups)
    return invalid("conv step has " + std::to_string(step.groups) +
                   " groups; layout '" + layout->name +
                   "' and its tensors "
                   "make " +
                   std::to_string(problem.groups));

  for (size_t i = 0; i < rank; ++i) {
    char letter = layout->spatial[i];
    int64_t size = in.size(letter), kernel = fl.size(letter);
    int64_t outSize = out.size(letter);
    int64_t span = step.dilations[i] * (kernel - 1) + 1;
    int64_t padding = step.padding.empty() ? 0 : step.padding[i];
    // Both sizes are positive, so with padding below the size this cannot
    // overflow.
    if (padding > size)
      return invalid("conv padding of '" + input.name +
                     "' exceeds its size on dimension '" +
                     std::string(1, letter) + "'");
    int64_t padded = size + 2 * padding;
    if (padded < span || outSize != (padded - span) / step.strides[i] + 1)
      return invalid(
          "conv output '" + output.name + "' has " + std::to_string(outSize) +
          " for dimension '" + std::string(1, letter) + "'; input '" +
          input.name + "', filter '" + filter.name +
          (padding ? "', strides, dilations and padding make "
                   : "', strides and dilations make ") +
          (padded < span
               ? std::string("none")
               : std::to_string((padded - span) / step.strides[i] + 1)));
    problem.padding.push_back(padding);
    problem.inputSpatial.push_back(size);
    problem.filterSpatial.push_back(kernel);
    problem.outputSpatial.push_back(outSize);
  }
  problem.strides = step.strides;
  problem.dilations = step.dilations;

  std::string order = std::string(1, groupLetter) + featureLetter;
  // Depthwise filters have no channel dimension; `1`, a letter no operand
  // has, stands for cuDNN's (size 1, stride 0).
  char channelLetter = layout->depthwise ? '1' : 'c';
  order += layout->channelsLast ? layout->spatial + channelLetter
                                : channelLetter + layout->spatial;
  for (char letter : order) {
    problem.filterSizes.push_back(fl.size(letter));
    problem.filterStrides.push_back(fl.stride(letter));
  }
  return problem;
}
