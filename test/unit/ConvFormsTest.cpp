//===- ConvFormsTest.cpp - Convolutions a conv step computes ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// matchConvForm on every form of test/Inputs/conv/forms.mlir (named and
// generic, 1-D to 3-D, grouped and depthwise) and on near misses; and the
// fp64 reference interpreter on the same functions against a loop written
// from the layout's letters alone.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Codegen/ConvForms.h"
#include "kopt/Codegen/ReferenceInterpreter.h"

#include "mlir/Parser/Parser.h"

#include <cctype>
#include <map>
#include <random>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

struct Expected {
  const char *function;
  const char *layout;
  std::vector<int64_t> strides, dilations;
  int64_t groups;
  /// Whether the function returns the convolution alone (no bias, no
  /// epilogue), so that the naive loop gives its result.
  bool plain;
};

const std::vector<Expected> kForms = {
    {"depthwise_nchw", "nchw_chw", {2, 2}, {1, 1}, 8, false},
    {"depthwise_nhwc_dilated", "nhwc_hwc", {1, 1}, {2, 2}, 8, true},
    {"depthwise_nhwc_multiplier", "nhwc_hwcm", {1, 1}, {1, 1}, 4, true},
    {"grouped_nchw", "ngchw_gfchw", {1, 1}, {1, 1}, 2, false},
    {"grouped_fgchw", "ngchw_fgchw", {1, 1}, {1, 1}, 2, true},
    {"grouped_nhwgc", "nhwgc_gfhwc", {1, 1}, {1, 1}, 2, true},
    {"conv1d_bias", "ncw_fcw", {2}, {2}, 1, false},
    {"conv1d_nwc", "nwc_wcf", {1}, {1}, 1, true},
    {"depthwise1d", "ncw_cw", {1}, {1}, 4, true},
    {"conv3d_bias_relu", "ncdhw_fcdhw", {1, 2, 2}, {1, 1, 1}, 1, false},
    {"conv3d_ndhwc", "ndhwc_dhwcf", {1, 1, 1}, {1, 1, 1}, 1, true},
    {"depthwise3d", "ncdhw_cdhw", {1, 1, 1}, {1, 1, 1}, 4, true},
    {"grouped3d_generic", "ngcdhw_gfcdhw", {1, 1, 1}, {1, 1, 1}, 2, true},
    {"conv2d_nhwc_fhwc", "nhwc_fhwc", {1, 1}, {1, 1}, 1, true},
    {"conv2d_strided_dilated", "nchw_fchw", {2, 1}, {1, 2}, 1, true},
};

OwningOpRef<ModuleOp> loadForms(MLIRContext &context) {
  std::string path =
      std::string(KOPT_SOURCE_DIR) + "/test/Inputs/conv/forms.mlir";
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(path, &context);
  EXPECT_TRUE(module) << "cannot parse " << path;
  return module;
}

/// The one op of `func` with a multiply-accumulate over two inputs.
linalg::LinalgOp findConvolution(func::FuncOp func) {
  linalg::LinalgOp found;
  func.walk([&](linalg::LinalgOp op) {
    if (!found && op.getNumDpsInputs() == 2 && op.getNumReductionLoops() > 0)
      found = op;
  });
  return found;
}

TEST(ConvFormsTest, RecognisesEveryFormOfTheForms) {
  auto context = makeContext();
  auto module = loadForms(*context);
  ASSERT_TRUE(module);
  for (const Expected &expected : kForms) {
    auto func = module->lookupSymbol<func::FuncOp>(expected.function);
    ASSERT_TRUE(func) << expected.function;
    linalg::LinalgOp op = findConvolution(func);
    ASSERT_TRUE(op) << expected.function;
    std::optional<ConvForm> form = matchConvForm(op);
    ASSERT_TRUE(form) << expected.function;
    EXPECT_EQ(form->layout->name, expected.layout) << expected.function;
    EXPECT_EQ(std::vector<int64_t>(form->strides.begin(), form->strides.end()),
              expected.strides)
        << expected.function;
    EXPECT_EQ(
        std::vector<int64_t>(form->dilations.begin(), form->dilations.end()),
        expected.dilations)
        << expected.function;
    EXPECT_EQ(form->groups, expected.groups) << expected.function;
  }
}

TEST(ConvFormsTest, RefusesNearMisses) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
#in = affine_map<(n, f, h, w, c, kh, kw) -> (n, c, h + kh, w + kw)>
#offset = affine_map<(n, f, h, w, c, kh, kw) -> (n, c, kh + h, w * 2 + kw * 2 + 1)>
#filter = affine_map<(n, f, h, w, c, kh, kw) -> (f, c, kh, kw)>
#out = affine_map<(n, f, h, w, c, kh, kw) -> (n, f, h, w)>
func.func @max_body(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %o: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %r = linalg.generic {indexing_maps = [#in, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) outs(%o : tensor<1x4x6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %m = arith.maximumf %p, %acc : f32
    linalg.yield %m : f32
  } -> tensor<1x4x6x6xf32>
  return %r : tensor<1x4x6x6xf32>
}
func.func @offset_map(%x: tensor<1x3x8x16xf32>, %w: tensor<4x3x3x3xf32>, %o: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %r = linalg.generic {indexing_maps = [#offset, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x3x8x16xf32>, tensor<4x3x3x3xf32>) outs(%o : tensor<1x4x6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x4x6x6xf32>
  return %r : tensor<1x4x6x6xf32>
}
func.func @channel_parallel(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %o: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %r = linalg.generic {indexing_maps = [#in, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) outs(%o : tensor<1x4x6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x4x6x6xf32>
  return %r : tensor<1x4x6x6xf32>
}
func.func @pooling(%x: tensor<1x3x8x8xf32>, %k: tensor<3x3xf32>, %o: tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32> {
  %r = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %k : tensor<1x3x8x8xf32>, tensor<3x3xf32>) outs(%o : tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32>
  return %r : tensor<1x3x6x6xf32>
}
func.func @the_same_generic(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %o: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %r = linalg.generic {indexing_maps = [#in, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) outs(%o : tensor<1x4x6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %b, %a : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x4x6x6xf32>
  return %r : tensor<1x4x6x6xf32>
}
)mlir");
  ASSERT_TRUE(module);
  for (StringRef name : {"max_body", "offset_map", "channel_parallel"}) {
    auto func = module->lookupSymbol<func::FuncOp>(name);
    EXPECT_FALSE(matchConvForm(findConvolution(func))) << name.str();
  }
  auto pooling = module->lookupSymbol<func::FuncOp>("pooling");
  linalg::LinalgOp pool;
  pooling.walk([&](linalg::LinalgOp op) { pool = op; });
  EXPECT_FALSE(matchConvForm(pool));
  // The control: the same generic with a multiply-accumulate body matches.
  auto same = module->lookupSymbol<func::FuncOp>("the_same_generic");
  std::optional<ConvForm> form = matchConvForm(findConvolution(same));
  ASSERT_TRUE(form);
  EXPECT_EQ(form->layout->name, "nchw_fchw");
}

/// The convolution of `layout` on inputs `x` and `k` (row-major in the
/// layout's letters with the sizes of `op`'s operands), by its definition.
std::vector<double> naiveConvolution(const ::kopt::runtime::ConvLayout &layout,
                                     const Expected &expected,
                                     linalg::LinalgOp op,
                                     const std::vector<double> &x,
                                     const std::vector<double> &k) {
  auto shapeOf = [](Value value) {
    auto shape = cast<ShapedType>(value.getType()).getShape();
    return std::vector<int64_t>(shape.begin(), shape.end());
  };
  std::vector<int64_t> inShape = shapeOf(op.getDpsInputs()[0]);
  std::vector<int64_t> filterShape = shapeOf(op.getDpsInputs()[1]);
  std::vector<int64_t> outShape = shapeOf(op.getDpsInits()[0]);
  auto offsetOf = [](const std::string &letters,
                     const std::vector<int64_t> &shape,
                     std::map<char, int64_t> &at) {
    int64_t offset = 0;
    for (size_t i = 0; i < letters.size(); ++i)
      offset = offset * shape[i] + at[letters[i]];
    return offset;
  };
  // Visits every point of `shape`, a coordinate per letter.
  auto forEach = [](const std::string &letters,
                    const std::vector<int64_t> &shape, auto fn) {
    std::vector<int64_t> index(shape.size(), 0);
    while (true) {
      std::map<char, int64_t> at;
      for (size_t i = 0; i < letters.size(); ++i)
        at[letters[i]] = index[i];
      fn(at);
      size_t dim = shape.size();
      while (dim > 0 && ++index[dim - 1] == shape[dim - 1])
        index[--dim] = 0;
      if (dim == 0)
        return;
    }
  };
  // Reduced: the channels of a group (not depthwise) and the kernel
  // offsets, named by the spatial letters in capitals.
  std::string reduced;
  std::vector<int64_t> reducedShape;
  if (!layout.depthwise) {
    reduced += 'c';
    reducedShape.push_back(inShape[layout.input.find('c')]);
  }
  for (char letter : layout.spatial) {
    reduced += char(std::toupper(letter));
    reducedShape.push_back(filterShape[layout.filter.find(letter)]);
  }
  int64_t count = 1;
  for (int64_t size : outShape)
    count *= size;
  std::vector<double> result(size_t(count), 0.0);
  forEach(layout.output, outShape, [&](std::map<char, int64_t> out) {
    double sum = 0;
    forEach(reduced, reducedShape, [&](std::map<char, int64_t> red) {
      std::map<char, int64_t> in = out, fl = out;
      if (!layout.depthwise)
        in['c'] = fl['c'] = red['c'];
      for (auto [i, letter] : llvm::enumerate(layout.spatial)) {
        int64_t offset = red[char(std::toupper(letter))];
        in[letter] =
            out[letter] * expected.strides[i] + offset * expected.dilations[i];
        fl[letter] = offset;
      }
      sum += x[size_t(offsetOf(layout.input, inShape, in))] *
             k[size_t(offsetOf(layout.filter, filterShape, fl))];
    });
    result[size_t(offsetOf(layout.output, outShape, out))] = sum;
  });
  return result;
}

TEST(ConvFormsTest, ReferenceInterpreterComputesEveryForm) {
  auto context = makeContext();
  auto module = loadForms(*context);
  ASSERT_TRUE(module);
  for (const Expected &expected : kForms) {
    if (!expected.plain)
      continue;
    auto func = module->lookupSymbol<func::FuncOp>(expected.function);
    auto interpreter = ReferenceInterpreter::create(func);
    ASSERT_TRUE(bool(interpreter))
        << expected.function << ": " << llvm::toString(interpreter.takeError());
    std::mt19937 rng(7);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<std::vector<double>> inputs;
    for (unsigned i = 0; i < (*interpreter)->getNumInputs(); ++i) {
      inputs.emplace_back((*interpreter)->getInputNumElements(i));
      for (double &value : inputs.back())
        value = normal(rng);
    }
    auto outputs = (*interpreter)->evaluateAll(inputs);
    ASSERT_TRUE(bool(outputs))
        << expected.function << ": " << llvm::toString(outputs.takeError());
    // Reshapes around the convolution keep the memory order, so the
    // function's arguments and result are the convolution's operands.
    const ::kopt::runtime::ConvLayout *layout =
        ::kopt::runtime::findConvLayout(expected.layout);
    std::vector<double> reference = naiveConvolution(
        *layout, expected, findConvolution(func), inputs[0], inputs[1]);
    ASSERT_EQ((*outputs)[0].size(), reference.size()) << expected.function;
    for (size_t i = 0; i < reference.size(); ++i)
      ASSERT_NEAR((*outputs)[0][i], reference[i], 1e-9)
          << expected.function << " element " << i;
  }
}

} // namespace
