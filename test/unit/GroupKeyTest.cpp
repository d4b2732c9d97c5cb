//===- GroupKeyTest.cpp - Tests of the canonical group key ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Analysis/GroupKey.h"

#include <algorithm>
#include <chrono>
#include <regex>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

/// A bias-add + exp group; the @NAME, SHAPE, TYPE, CONST and MAP markers are
/// replaced to build variants.
constexpr const char *kTemplate = R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#bcast = affine_map<(d0, d1) -> (BCAST)>
func.func @NAME(%x: tensor<SHAPExTYPE>, %b: tensor<BSHAPExTYPE>) -> tensor<SHAPExTYPE> {
  %init = tensor.empty() : tensor<SHAPExTYPE>
  %sum = linalg.generic {indexing_maps = [#map, #bcast, #map],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<SHAPExTYPE>, tensor<BSHAPExTYPE>) outs(%init : tensor<SHAPExTYPE>) {
  ^bb0(%in: TYPE, %bias: TYPE, %out: TYPE):
    %c = arith.constant CONST : TYPE
    %s = arith.addf %in, %bias : TYPE
    %t = arith.mulf %s, %c : TYPE
    linalg.yield %t : TYPE
  } -> tensor<SHAPExTYPE>
  %e = linalg.generic {indexing_maps = [#map, #map],
                       iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<SHAPExTYPE>) outs(%init : tensor<SHAPExTYPE>) {
  ^bb0(%in: TYPE, %out: TYPE):
    %r = OP %in : TYPE
    linalg.yield %r : TYPE
  } -> tensor<SHAPExTYPE>
  return %e : tensor<SHAPExTYPE>
}
)mlir";

struct Variant {
  std::string name = "group";
  std::string shape = "4x8";
  std::string biasShape = "8";
  std::string bcast = "d1";
  std::string type = "f32";
  std::string constant = "2.0";
  std::string op = "math.exp";
};

std::string instantiate(const Variant &v) {
  std::string text = kTemplate;
  auto replace = [&](const std::string &from, const std::string &to) {
    text = std::regex_replace(text, std::regex(from), to);
  };
  replace("BSHAPE", v.biasShape);
  replace("SHAPE", v.shape);
  replace("BCAST", v.bcast);
  replace("TYPE", v.type);
  replace("CONST", v.constant);
  replace("NAME", v.name);
  replace("OP", v.op);
  return text;
}

std::string keyOf(MLIRContext &context, const std::string &source) {
  OwningOpRef<ModuleOp> module = parse(context, source);
  if (!module)
    return "";
  return computeGroupKey(firstFunction(*module));
}

class GroupKeyTest : public ::testing::Test {
protected:
  std::unique_ptr<MLIRContext> context = makeContext();
  std::string base = keyOf(*context, instantiate(Variant{}));
};

TEST_F(GroupKeyTest, IsSha256Hex) {
  ASSERT_EQ(base.size(), 64u);
  EXPECT_TRUE(std::all_of(base.begin(), base.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) && !std::isupper(c);
  }));
}

TEST_F(GroupKeyTest, IgnoresValueNames) {
  std::string renamed = instantiate(Variant{});
  renamed = std::regex_replace(renamed, std::regex("%sum"), "%very_long_name");
  renamed = std::regex_replace(renamed, std::regex("%x\\b"), "%input0");
  renamed = std::regex_replace(renamed, std::regex("%in\\b"), "%lhs");
  EXPECT_EQ(keyOf(*context, renamed), base);
}

TEST_F(GroupKeyTest, IgnoresFunctionName) {
  Variant v;
  v.name = "some_other_function";
  EXPECT_EQ(keyOf(*context, instantiate(v)), base);
}

TEST_F(GroupKeyTest, IgnoresLocationsAndAttributeOrder) {
  std::string text = instantiate(Variant{});
  // Reorder the generic's attribute dictionary and add locations.
  text = std::regex_replace(
      text,
      std::regex("\\{indexing_maps = \\[#map, #map\\],\\s*iterator_types = "
                 "\\[\"parallel\", \"parallel\"\\]\\}"),
      "{iterator_types = [\"parallel\", \"parallel\"], indexing_maps = "
      "[#map, #map]}");
  text = std::regex_replace(text, std::regex("linalg.yield %r : (\\w+)"),
                            "linalg.yield %r : $1 loc(\"model.py\":12:3)");
  text = std::regex_replace(text, std::regex("return %e : (tensor<\\w+>)"),
                            "return %e : $1 loc(\"elsewhere.py\":99:1)");
  EXPECT_EQ(keyOf(*context, text), base);
}

TEST_F(GroupKeyTest, IgnoresOrderOfIndependentOps) {
  // Two independent elementwise ops on two arguments, in both orders and
  // with the arguments swapped.
  const char *first = R"mlir(
func.func @f(%a: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %init = tensor.empty() : tensor<16xf32>
  %e = linalg.exp ins(%a : tensor<16xf32>) outs(%init : tensor<16xf32>) -> tensor<16xf32>
  %n = linalg.negf ins(%b : tensor<16xf32>) outs(%init : tensor<16xf32>) -> tensor<16xf32>
  %s = linalg.add ins(%e, %n : tensor<16xf32>, tensor<16xf32>) outs(%init : tensor<16xf32>) -> tensor<16xf32>
  return %s, %e : tensor<16xf32>, tensor<16xf32>
}
)mlir";
  const char *second = R"mlir(
func.func @g(%q: tensor<16xf32>, %p: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %init = tensor.empty() : tensor<16xf32>
  %n = linalg.negf ins(%q : tensor<16xf32>) outs(%init : tensor<16xf32>) -> tensor<16xf32>
  %e = linalg.exp ins(%p : tensor<16xf32>) outs(%init : tensor<16xf32>) -> tensor<16xf32>
  %s = linalg.add ins(%e, %n : tensor<16xf32>, tensor<16xf32>) outs(%init : tensor<16xf32>) -> tensor<16xf32>
  return %e, %s : tensor<16xf32>, tensor<16xf32>
}
)mlir";
  std::string a = keyOf(*context, first);
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a, keyOf(*context, second));
}

TEST_F(GroupKeyTest, CanonicalizeIsIdempotentAndStable) {
  OwningOpRef<ModuleOp> module = parse(*context, instantiate(Variant{}));
  ASSERT_TRUE(module);
  func::FuncOp func = firstFunction(*module);
  canonicalizeGroupFunction(func);
  std::string once = printCanonicalGroup(func);
  GroupPermutation second = canonicalizeGroupFunction(func);
  EXPECT_EQ(printCanonicalGroup(func), once);
  for (auto [index, old] : llvm::enumerate(second.argOrder))
    EXPECT_EQ(index, old);
  EXPECT_EQ(computeGroupKey(func), base);
}

TEST_F(GroupKeyTest, DependsOnShape) {
  Variant v;
  v.shape = "4x16";
  v.biasShape = "16";
  EXPECT_NE(keyOf(*context, instantiate(v)), base);
}

TEST_F(GroupKeyTest, DependsOnElementType) {
  Variant v;
  v.type = "f16";
  EXPECT_NE(keyOf(*context, instantiate(v)), base);
}

TEST_F(GroupKeyTest, DependsOnConstant) {
  Variant v;
  v.constant = "3.0";
  EXPECT_NE(keyOf(*context, instantiate(v)), base);
}

TEST_F(GroupKeyTest, DependsOnIndexingMap) {
  // Broadcast the bias along rows instead of columns (square shape, so
  // only the map differs).
  Variant square;
  square.shape = "8x8";
  Variant rows = square;
  rows.bcast = "d0";
  EXPECT_NE(keyOf(*context, instantiate(rows)),
            keyOf(*context, instantiate(square)));
}

TEST_F(GroupKeyTest, DependsOnOp) {
  Variant v;
  v.op = "math.tanh";
  EXPECT_NE(keyOf(*context, instantiate(v)), base);
}

/// A chain of `count` elementwise ops reading the argument again every third
/// op, as bench/gen_chain.py writes it.
std::string makeChain(unsigned count) {
  const char *shape = "tensor<4x8xf32>";
  std::string text = std::string("func.func @chain(%x: ") + shape + ") -> " +
                     shape + " {\n  %init = tensor.empty() : " + shape + "\n";
  std::string previous = "%x";
  for (unsigned i = 0; i < count; ++i) {
    std::string value = "%v" + std::to_string(i);
    if (i % 3 == 2)
      text += "  " + value + " = linalg.add ins(" + previous +
              ", %x : " + shape + ", " + shape + ") outs(%init : " + shape +
              ") -> " + shape + "\n";
    else
      text += "  " + value + " = " + (i % 3 ? "linalg.negf" : "linalg.exp") +
              " ins(" + previous + " : " + shape + ") outs(%init : " + shape +
              ") -> " + shape + "\n";
    previous = value;
  }
  return text + "  return " + previous + " : " + shape + "\n}\n";
}

/// Seconds `computeGroupKey` takes on a chain of `count` ops.
double timeChainKey(MLIRContext &context, unsigned count) {
  OwningOpRef<ModuleOp> module = parse(context, makeChain(count));
  if (!module)
    return 0;
  auto start = std::chrono::steady_clock::now();
  std::string key = computeGroupKey(firstFunction(*module));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_EQ(key.size(), 64u);
  return seconds;
}

TEST_F(GroupKeyTest, KeysALongChainInLinearTime) {
  // The canonical schedule once scanned every waiting op at each step:
  // `kopt analyze` took 109 s on a chain of 30,000 ops. Eight times the ops
  // must now take well under the 64 times a quadratic schedule would: about
  // 10 times here (0.038 s, then 0.39 s), and half the 64 leaves room for a
  // test running beside it on the same cores (CI runs two at a time; once
  // the larger chain took 0.42 s against 0.045). The fastest of three runs
  // each, so that a short burst of load does not decide.
  auto fastest = [&](int ops) {
    double best = timeChainKey(*context, ops);
    for (int i = 0; i < 2; ++i)
      best = std::min(best, timeChainKey(*context, ops));
    return best;
  };
  double small = fastest(3000);
  double large = fastest(24000);
  EXPECT_LT(large, 32 * small + 0.1) << small << " s, then " << large << " s";
  EXPECT_LT(timeChainKey(*context, 30000), 10.0);
}

} // namespace
