//===- TiledPoolingTest.cpp - Pooling through shared-memory tiles -*- C++
//-*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// generateTiledPoolingKernel's tiles and launch shape, which of its two
// loads it takes (straight from a parameter's planes, or through the
// input's producers), and a clear error for each pool it cannot take. That
// the kernels compile and compute the pool is test/Tools/kopt-plan/
// pooling.test's and pooling-run.test's job.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "lib/Codegen/PoolingKernel.h"

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

/// A max pool in generic form over `input` padded by `pad` (channel, row
/// and column pads, low and high alike), window `window`, stride `stride`.
std::string poolSource(llvm::ArrayRef<int64_t> input, int64_t channelPad,
                       int64_t pad, int64_t window, int64_t stride) {
  auto shape = [](llvm::ArrayRef<int64_t> dims) {
    std::string text;
    for (int64_t dim : dims)
      text += std::to_string(dim) + "x";
    return text + "f32";
  };
  std::vector<int64_t> padded = {input[0], input[1] + 2 * channelPad,
                                 input[2] + 2 * pad, input[3] + 2 * pad};
  std::vector<int64_t> output = {padded[0], padded[1],
                                 (padded[2] - window) / stride + 1,
                                 (padded[3] - window) / stride + 1};
  std::string s = std::to_string(stride);
  std::string in = "tensor<" + shape(input) + ">";
  std::string pd = "tensor<" + shape(padded) + ">";
  std::string out = "tensor<" + shape(output) + ">";
  std::string win = "tensor<" + shape({window, window}) + ">";
  std::string low = "[0, " + std::to_string(channelPad) + ", " +
                    std::to_string(pad) + ", " + std::to_string(pad) + "]";
  return "#in = affine_map<(n, c, h, w, kh, kw) -> (n, c, h * " + s +
         " + kh, w * " + s +
         " + kw)>\n"
         "#win = affine_map<(n, c, h, w, kh, kw) -> (kh, kw)>\n"
         "#out = affine_map<(n, c, h, w, kh, kw) -> (n, c, h, w)>\n"
         "func.func @pool(%x: " +
         in + ") -> " + out +
         " {\n"
         "  %ninf = arith.constant 0xFF800000 : f32\n"
         "  %padded = tensor.pad %x low" +
         low + " high" + low +
         " {\n"
         "  ^bb0(%i: index, %j: index, %k: index, %l: index):\n"
         "    tensor.yield %ninf : f32\n"
         "  } : " +
         in + " to " + pd +
         "\n"
         "  %e = tensor.empty() : " +
         out +
         "\n"
         "  %f = linalg.fill ins(%ninf : f32) outs(%e : " +
         out + ") -> " + out +
         "\n"
         "  %w = tensor.empty() : " +
         win +
         "\n"
         "  %p = linalg.generic {indexing_maps = [#in, #win, #out], "
         "iterator_types = [\"parallel\", \"parallel\", \"parallel\", "
         "\"parallel\", \"reduction\", \"reduction\"]} ins(%padded, %w : " +
         pd + ", " + win + ") outs(%f : " + out +
         ") {\n"
         "  ^bb0(%a: f32, %b: f32, %o: f32):\n"
         "    %m = arith.maximumf %o, %a : f32\n"
         "    linalg.yield %m : f32\n"
         "  } -> " +
         out +
         "\n"
         "  return %p : " +
         out + "\n}\n";
}

/// Generates the tiled kernel of the pool in `source`, or its error.
class TiledPoolingTest : public ::testing::Test {
protected:
  llvm::Expected<GeneratedKernel> generate(const std::string &source,
                                           const TiledPoolingOptions &options) {
    module = parse(*context, source);
    if (!module)
      return llvm::createStringError("no module");
    func::FuncOp func = firstFunction(*module);
    linalg::GenericOp op = findPoolingOp(func);
    if (!op)
      return llvm::createStringError("no pool");
    unsigned rank = cast<ShapedType>(op.getResult(0).getType()).getRank();
    auto rows = matchPoolingWindow(op, rank - 2);
    if (!rows)
      return rows.takeError();
    auto columns = matchPoolingWindow(op, rank - 1);
    if (!columns)
      return columns.takeError();
    auto type = cast<RankedTensorType>(op.getResult(0).getType());
    KernelOutput output{
        op.getResult(0), "out0", ElementType::F32,
        std::vector<int64_t>(type.getShape().begin(), type.getShape().end())};
    auto leafOf = [](Value value) -> std::optional<LeafTensor> {
      auto arg = dyn_cast<BlockArgument>(value);
      if (!arg)
        return std::nullopt;
      auto shape = cast<RankedTensorType>(arg.getType()).getShape();
      return LeafTensor{"in0", ElementType::F32,
                        std::vector<int64_t>(shape.begin(), shape.end())};
    };
    return generateTiledPoolingKernel(context.get(), "k", "pool", {output},
                                      leafOf, *rows, *columns, options);
  }

  std::string errorOf(const std::string &source,
                      const TiledPoolingOptions &options) {
    auto kernel = generate(source, options);
    if (kernel)
      return "";
    return llvm::toString(kernel.takeError());
  }

  std::unique_ptr<MLIRContext> context = makeContext();
  OwningOpRef<ModuleOp> module;
};

bool contains(const std::string &text, llvm::StringRef part) {
  return text.find(part.str()) != std::string::npos;
}

TEST_F(TiledPoolingTest, TilesOfAPaddedParameterReadItsPlanes) {
  // 4x4, stride 1, padding 1 on 38x601: outputs 37x600, tiles of 8 x 128,
  // 5 down and 5 across (the last at 29 and 472, overlapping).
  TiledPoolingOptions options;
  auto kernel = generate(poolSource({1, 2, 38, 601}, 0, 1, 4, 1), options);
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());
  EXPECT_EQ(kernel->grid[0], "50");
  EXPECT_EQ(kernel->block[0], "128");
  EXPECT_EQ(kernel->sharedBytes, (8 + 3) * (128 + 3) * 4);
  EXPECT_EQ(kernel->args, (std::vector<std::string>{"in0", "out0"}));
  EXPECT_TRUE(contains(kernel->code, "min((t % 5LL) * 128LL, 472LL)"));
  EXPECT_TRUE(contains(kernel->code, "min((t / 5LL % 5LL) * 8LL, 29LL)"));
  EXPECT_TRUE(contains(kernel->code, "plane = in0 + outer * 22838LL;"));
  EXPECT_TRUE(contains(kernel->code, "(unsigned)((int)ih - 1) < 38u"));
  EXPECT_TRUE(contains(kernel->code, "(-KOPT_INF_F)"));
  // The 3 halo columns' 33 elements, one a thread.
  EXPECT_TRUE(contains(kernel->code, "if (e >= 33) break;"));
}

TEST_F(TiledPoolingTest, OtherInputsGoThroughTheEmitter) {
  // A pad along the channels too: the planes do not hold the input.
  TiledPoolingOptions options;
  auto kernel = generate(poolSource({1, 2, 38, 601}, 1, 1, 4, 1), options);
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());
  EXPECT_FALSE(contains(kernel->code, "plane"));
  EXPECT_TRUE(contains(kernel->code, "in0["));
}

TEST_F(TiledPoolingTest, WholeRowsUpToTheTileWidth) {
  TiledPoolingOptions options;
  options.blockSize = 256;
  options.tileRows = 16;
  options.maxTileColumns = 512;
  auto kernel = generate(poolSource({1, 1, 40, 300}, 0, 1, 4, 1), options);
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());
  // Rows of 299 outputs in one tile of 302 input columns: one full column
  // slot of 256 threads, the other 46 x 19 elements spread over them.
  EXPECT_EQ(kernel->sharedBytes, (16 + 3) * (299 + 3) * 4);
  EXPECT_TRUE(contains(kernel->code, "if (e >= 874) break;"));
  EXPECT_TRUE(contains(kernel->code, "x < 299;"));
}

TEST_F(TiledPoolingTest, RefusesPoolsItCannotTake) {
  TiledPoolingOptions options;
  EXPECT_EQ(errorOf(poolSource({1, 2, 38, 601}, 0, 1, 3, 2), options),
            "pooling: tiles hold only windows of stride 1 and dilation 1");
  options.tileRows = 64;
  EXPECT_EQ(errorOf(poolSource({1, 2, 38, 601}, 0, 1, 4, 1), options),
            "pooling: 37 output rows, fewer than a tile's 64");
  options.tileRows = 32;
  options.maxTileColumns = 1024;
  options.blockSize = 512;
  EXPECT_EQ(errorOf(poolSource({1, 1, 40, 1100}, 0, 1, 4, 1), options),
            "pooling: a tile of 143780 bytes, more than 114688");
}

} // namespace
