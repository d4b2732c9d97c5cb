//===- ConvLayoutTest.cpp - Tests of conv step layouts ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/ConvLayout.h"

#include "gtest/gtest.h"

using namespace kopt::runtime;

namespace {

TensorSpec f32(const std::string &name, std::vector<int64_t> shape) {
  return TensorSpec{name, ElementType::F32, std::move(shape)};
}

TEST(ConvLayoutTest, DerivesOutputLettersAsLinalgDoes) {
  struct Expected {
    const char *name, *output, *spatial;
    bool depthwise, channelsLast;
  };
  for (const Expected &expected :
       std::vector<Expected>{{"nchw_fchw", "nfhw", "hw", false, false},
                             {"nhwc_hwcf", "nhwf", "hw", false, true},
                             {"ngchw_gfchw", "ngfhw", "hw", false, false},
                             {"ngchw_fgchw", "ngfhw", "hw", false, false},
                             {"nhwgc_gfhwc", "nhwgf", "hw", false, true},
                             {"ncw_fcw", "nfw", "w", false, false},
                             {"ndhwc_dhwcf", "ndhwf", "dhw", false, true},
                             {"ngcdhw_gfcdhw", "ngfdhw", "dhw", false, false},
                             {"nchw_chw", "nchw", "hw", true, false},
                             {"nhwc_hwcm", "nhwcm", "hw", true, true},
                             {"nwc_wcm", "nwcm", "w", true, true},
                             {"ncdhw_cdhw", "ncdhw", "dhw", true, false}}) {
    const ConvLayout *layout = findConvLayout(expected.name);
    ASSERT_NE(layout, nullptr) << expected.name;
    EXPECT_EQ(layout->output, expected.output) << expected.name;
    EXPECT_EQ(layout->spatial, expected.spatial) << expected.name;
    EXPECT_EQ(layout->depthwise, expected.depthwise) << expected.name;
    EXPECT_EQ(layout->channelsLast, expected.channelsLast) << expected.name;
  }
  EXPECT_EQ(findConvLayout("nchw"), nullptr);
  EXPECT_EQ(findConvLayout("nchw_hwcf"), nullptr);
}

TEST(ConvLayoutTest, EveryLayoutKeepsChannelsPackedForCudnn) {
  // cuDNN reads the input and output as packed N, C, spatial (or N,
  // spatial, C) with channel = group * per-group + index: every layout's
  // input and output letters must allow that.
  for (const ConvLayout &layout : getConvLayouts()) {
    for (const std::string &letters : {layout.input, layout.output}) {
      std::string channels;
      for (char letter : letters)
        if (letter != 'n' && layout.spatial.find(letter) == std::string::npos)
          channels += letter;
      std::string packed = layout.channelsLast
                               ? "n" + layout.spatial + channels
                               : "n" + channels + layout.spatial;
      EXPECT_EQ(letters, packed) << layout.name;
      EXPECT_TRUE(channels == "c" || channels == "f" || channels == "gc" ||
                  channels == "gf" || channels == "cm")
          << layout.name << ": " << channels;
    }
  }
}

TEST(ConvLayoutTest, DescribesAGroupedConvolution) {
  ConvStep step{"x", "k", "y", "ngchw_gfchw", {2, 1}, {1, 2}, 2};
  auto problem =
      describeConv(step, f32("x", {3, 2, 4, 11, 13}), f32("k", {2, 5, 4, 3, 2}),
                   f32("y", {3, 2, 5, 5, 11}));
  ASSERT_TRUE(problem.isOk()) << problem.status().message();
  EXPECT_FALSE(problem->channelsLast);
  EXPECT_EQ(problem->batch, 3);
  EXPECT_EQ(problem->groups, 2);
  EXPECT_EQ(problem->channelsPerGroup, 4);
  EXPECT_EQ(problem->featuresPerGroup, 5);
  EXPECT_EQ(problem->inputSpatial, (std::vector<int64_t>{11, 13}));
  EXPECT_EQ(problem->filterSpatial, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(problem->outputSpatial, (std::vector<int64_t>{5, 11}));
  EXPECT_EQ(problem->filterSizes, (std::vector<int64_t>{2, 5, 4, 3, 2}));
  EXPECT_TRUE(problem->isFilterPacked());
}

TEST(ConvLayoutTest, DescribesDepthwiseFiltersInCudnnOrder) {
  // HWCM: cuDNN wants [C][M][1][H][W] read from H, W, C, M.
  ConvStep step{"x", "k", "y", "nhwc_hwcm", {1, 1}, {1, 1}, 4};
  auto problem =
      describeConv(step, f32("x", {1, 9, 9, 4}), f32("k", {3, 3, 4, 2}),
                   f32("y", {1, 7, 7, 4, 2}));
  ASSERT_TRUE(problem.isOk()) << problem.status().message();
  EXPECT_TRUE(problem->channelsLast);
  EXPECT_EQ(problem->groups, 4);
  EXPECT_EQ(problem->channelsPerGroup, 1);
  EXPECT_EQ(problem->featuresPerGroup, 2);
  // Channels last: [C][M][H][W][1].
  EXPECT_EQ(problem->filterSizes, (std::vector<int64_t>{4, 2, 3, 3, 1}));
  EXPECT_EQ(problem->filterStrides, (std::vector<int64_t>{2, 1, 24, 8, 0}));
  EXPECT_FALSE(problem->isFilterPacked());

  step = {"x", "k", "y", "nchw_chw", {1, 1}, {1, 1}, 4};
  problem = describeConv(step, f32("x", {1, 4, 9, 9}), f32("k", {4, 3, 3}),
                         f32("y", {1, 4, 7, 7}));
  ASSERT_TRUE(problem.isOk()) << problem.status().message();
  EXPECT_EQ(problem->filterSizes, (std::vector<int64_t>{4, 1, 1, 3, 3}));
  EXPECT_TRUE(problem->isFilterPacked());
}

TEST(ConvLayoutTest, KnowsWhichFiltersNeedACopy) {
  struct Case {
    const char *layout;
    std::vector<int64_t> input, filter, output;
    bool packed;
  };
  for (const Case &c : std::vector<Case>{
           {"nchw_fchw", {1, 3, 5, 5}, {4, 3, 3, 3}, {1, 4, 3, 3}, true},
           {"nhwc_hwcf", {1, 5, 5, 3}, {3, 3, 3, 4}, {1, 3, 3, 4}, false},
           {"nhwc_fhwc", {1, 5, 5, 3}, {4, 3, 3, 3}, {1, 3, 3, 4}, true},
           {"ngchw_fgchw",
            {1, 2, 3, 5, 5},
            {4, 2, 3, 3, 3},
            {1, 2, 4, 3, 3},
            false},
           {"nhwgc_gfhwc",
            {1, 5, 5, 2, 3},
            {2, 4, 3, 3, 3},
            {1, 3, 3, 2, 4},
            true},
           {"nwc_wcf", {1, 5, 3}, {3, 3, 4}, {1, 3, 4}, false},
           {"ncw_cw", {1, 3, 5}, {3, 3}, {1, 3, 3}, true},
           {"nhwc_hwc", {1, 5, 5, 3}, {3, 3, 3}, {1, 3, 3, 3}, false},
           {"ndhwc_dhwc",
            {1, 5, 5, 5, 3},
            {3, 3, 3, 3},
            {1, 3, 3, 3, 3},
            false}}) {
    const ConvLayout *layout = findConvLayout(c.layout);
    ASSERT_NE(layout, nullptr) << c.layout;
    ConvStep step{"x", "k", "y", c.layout};
    step.strides.assign(layout->spatial.size(), 1);
    step.dilations.assign(layout->spatial.size(), 1);
    step.groups = layout->depthwise ? c.input[layout->input.find('c')]
                  : layout->input.find('g') != std::string::npos
                      ? c.input[layout->input.find('g')]
                      : 1;
    auto problem = describeConv(step, f32("x", c.input), f32("k", c.filter),
                                f32("y", c.output));
    ASSERT_TRUE(problem.isOk())
        << c.layout << ": " << problem.status().message();
    EXPECT_EQ(problem->isFilterPacked(), c.packed) << c.layout;
  }
}

TEST(ConvLayoutTest, RefusesSizesThatDisagree) {
  ConvStep step{"x", "k", "y", "ncw_fcw", {1}, {1}};
  auto rank = describeConv(step, f32("x", {1, 3, 5, 1}), f32("k", {4, 3, 3}),
                           f32("y", {1, 4, 3}));
  ASSERT_FALSE(rank.isOk());
  EXPECT_EQ(rank.status().message(),
            "conv tensor 'x' must be 3-D for layout 'ncw_fcw'");
  auto batch = describeConv(step, f32("x", {2, 3, 5}), f32("k", {4, 3, 3}),
                            f32("y", {1, 4, 3}));
  ASSERT_FALSE(batch.isOk());
  EXPECT_EQ(batch.status().message(),
            "conv tensors 'x' and 'y' disagree on dimension 'n' (2 and 1)");
  auto tooShort = describeConv(step, f32("x", {1, 3, 2}), f32("k", {4, 3, 3}),
                               f32("y", {1, 4, 1}));
  ASSERT_FALSE(tooShort.isOk());
  EXPECT_EQ(tooShort.status().message(),
            "conv output 'y' has 1 for dimension 'w'; input 'x', filter 'k', "
            "strides and dilations make none");
  step.dilations = {0};
  auto dilation = describeConv(step, f32("x", {1, 3, 5}), f32("k", {4, 3, 3}),
                               f32("y", {1, 4, 3}));
  ASSERT_FALSE(dilation.isOk());
  EXPECT_EQ(dilation.status().message(),
            "conv strides and dilations must be positive");
}

} // namespace
