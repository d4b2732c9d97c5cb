//===- BodyOpsTest.cpp - Classifier, CUDA and reference agree ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every op of the arith and math dialects is either accepted in a linalg
// body by the classifier, and then translated to CUDA (which NVRTC compiles)
// and evaluated by the fp64 reference, or refused by the classifier with a
// reason naming it.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Analysis/BodyOps.h"
#include "kopt/Analysis/OpClassification.h"
#include "kopt/Codegen/KernelGenerator.h"
#include "kopt/Codegen/ReferenceInterpreter.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

/// A body using one op: the ops before `%v`, and its type.
struct BodyCase {
  const char *name;
  const char *body;
  const char *type;
};

/// One case per op kopt translates (structure ops aside from linalg.yield,
/// which every body has). The body's arguments are %a, %b, %c (f32), %p, %q
/// (i32), %n (i64) and %h (f16); %x is an f32 tensor it may gather from.
const BodyCase kCases[] = {
    {"arith.constant", "%v = arith.constant 2.5 : f32", "f32"},
    {"arith.addf", "%v = arith.addf %a, %b : f32", "f32"},
    {"arith.subf", "%v = arith.subf %a, %b : f32", "f32"},
    {"arith.mulf", "%v = arith.mulf %a, %b : f32", "f32"},
    {"arith.divf", "%v = arith.divf %a, %b : f32", "f32"},
    {"arith.remf", "%v = arith.remf %a, %b : f32", "f32"},
    {"arith.negf", "%v = arith.negf %a : f32", "f32"},
    {"arith.maximumf", "%v = arith.maximumf %a, %b : f32", "f32"},
    {"arith.minimumf", "%v = arith.minimumf %a, %b : f32", "f32"},
    {"arith.maxnumf", "%v = arith.maxnumf %a, %b : f32", "f32"},
    {"arith.minnumf", "%v = arith.minnumf %a, %b : f32", "f32"},
    {"arith.cmpf", "%v = arith.cmpf ult, %a, %b : f32", "i1"},
    {"arith.select",
     "%s = arith.cmpf olt, %a, %b : f32\n%v = arith.select %s, %a, %c : f32",
     "f32"},
    {"arith.addi", "%v = arith.addi %p, %q : i32", "i32"},
    {"arith.subi", "%v = arith.subi %p, %q : i32", "i32"},
    {"arith.muli", "%v = arith.muli %p, %q : i32", "i32"},
    {"arith.divsi", "%v = arith.divsi %p, %q : i32", "i32"},
    {"arith.divui", "%v = arith.divui %p, %q : i32", "i32"},
    {"arith.remsi", "%v = arith.remsi %p, %q : i32", "i32"},
    {"arith.remui", "%v = arith.remui %p, %q : i32", "i32"},
    {"arith.ceildivsi", "%v = arith.ceildivsi %p, %q : i32", "i32"},
    {"arith.ceildivui", "%v = arith.ceildivui %p, %q : i32", "i32"},
    {"arith.floordivsi", "%v = arith.floordivsi %p, %q : i32", "i32"},
    {"arith.andi", "%v = arith.andi %p, %q : i32", "i32"},
    {"arith.ori", "%v = arith.ori %p, %q : i32", "i32"},
    {"arith.xori", "%v = arith.xori %p, %q : i32", "i32"},
    {"arith.shli", "%v = arith.shli %p, %q : i32", "i32"},
    {"arith.shrsi", "%v = arith.shrsi %p, %q : i32", "i32"},
    {"arith.shrui", "%v = arith.shrui %p, %q : i32", "i32"},
    {"arith.maxsi", "%v = arith.maxsi %p, %q : i32", "i32"},
    {"arith.minsi", "%v = arith.minsi %p, %q : i32", "i32"},
    {"arith.maxui", "%v = arith.maxui %p, %q : i32", "i32"},
    {"arith.minui", "%v = arith.minui %p, %q : i32", "i32"},
    {"arith.cmpi", "%v = arith.cmpi uge, %p, %q : i32", "i1"},
    {"arith.extf", "%v = arith.extf %h : f16 to f64", "f64"},
    {"arith.truncf", "%v = arith.truncf %a : f32 to f16", "f16"},
    {"arith.extsi", "%v = arith.extsi %p : i32 to i64", "i64"},
    {"arith.extui", "%v = arith.extui %p : i32 to i64", "i64"},
    {"arith.trunci", "%v = arith.trunci %n : i64 to i16", "i16"},
    {"arith.sitofp", "%v = arith.sitofp %n : i64 to f32", "f32"},
    {"arith.uitofp", "%v = arith.uitofp %p : i32 to f16", "f16"},
    {"arith.fptosi", "%v = arith.fptosi %a : f32 to i32", "i32"},
    {"arith.fptoui", "%v = arith.fptoui %a : f32 to i8", "i8"},
    {"arith.index_cast",
     "%w = arith.index_cast %p : i32 to index\n"
     "%v = arith.index_cast %w : index to i64",
     "i64"},
    {"arith.index_castui",
     "%w = arith.index_castui %p : i32 to index\n"
     "%v = arith.index_castui %w : index to i64",
     "i64"},
    {"arith.bitcast", "%v = arith.bitcast %a : f32 to i32", "i32"},
    {"math.absf", "%v = math.absf %a : f32", "f32"},
    {"math.absi", "%v = math.absi %p : i32", "i32"},
    {"math.acos", "%v = math.acos %a : f32", "f32"},
    {"math.acosh", "%v = math.acosh %a : f32", "f32"},
    {"math.asin", "%v = math.asin %a : f32", "f32"},
    {"math.asinh", "%v = math.asinh %a : f32", "f32"},
    {"math.atan", "%v = math.atan %a : f32", "f32"},
    {"math.atan2", "%v = math.atan2 %a, %b : f32", "f32"},
    {"math.atanh", "%v = math.atanh %a : f32", "f32"},
    {"math.cbrt", "%v = math.cbrt %a : f32", "f32"},
    {"math.ceil", "%v = math.ceil %a : f32", "f32"},
    {"math.copysign", "%v = math.copysign %a, %b : f32", "f32"},
    {"math.cos", "%v = math.cos %a : f32", "f32"},
    {"math.cosh", "%v = math.cosh %a : f32", "f32"},
    {"math.ctlz",
     "%w = arith.index_cast %p : i32 to index\n%v = math.ctlz %w : index",
     "index"},
    {"math.ctpop", "%v = math.ctpop %n : i64", "i64"},
    {"math.cttz", "%w = arith.trunci %p : i32 to i8\n%v = math.cttz %w : i8",
     "i8"},
    {"math.erf", "%v = math.erf %a : f32", "f32"},
    {"math.erfc", "%v = math.erfc %a : f32", "f32"},
    {"math.exp", "%v = math.exp %a : f32", "f32"},
    {"math.exp2", "%v = math.exp2 %a : f32", "f32"},
    {"math.expm1", "%v = math.expm1 %a : f32", "f32"},
    {"math.floor", "%v = math.floor %a : f32", "f32"},
    {"math.fma", "%v = math.fma %a, %b, %c : f32", "f32"},
    {"math.fpowi", "%v = math.fpowi %a, %p : f32, i32", "f32"},
    {"math.ipowi", "%v = math.ipowi %p, %q : i32", "i32"},
    {"math.isfinite", "%v = math.isfinite %a : f32", "i1"},
    {"math.isinf", "%v = math.isinf %a : f32", "i1"},
    {"math.isnan", "%v = math.isnan %a : f32", "i1"},
    {"math.isnormal", "%v = math.isnormal %h : f16", "i1"},
    {"math.log", "%v = math.log %a : f32", "f32"},
    {"math.log10", "%v = math.log10 %a : f32", "f32"},
    {"math.log1p", "%v = math.log1p %a : f32", "f32"},
    {"math.log2", "%v = math.log2 %a : f32", "f32"},
    {"math.powf", "%v = math.powf %a, %b : f32", "f32"},
    {"math.round", "%v = math.round %a : f32", "f32"},
    {"math.roundeven", "%v = math.roundeven %a : f32", "f32"},
    {"math.rsqrt", "%v = math.rsqrt %a : f32", "f32"},
    {"math.sin", "%v = math.sin %a : f32", "f32"},
    {"math.sinh", "%v = math.sinh %a : f32", "f32"},
    {"math.sqrt", "%v = math.sqrt %a : f32", "f32"},
    {"math.tan", "%v = math.tan %a : f32", "f32"},
    {"math.tanh", "%v = math.tanh %a : f32", "f32"},
    {"math.trunc", "%v = math.trunc %a : f32", "f32"},
    {"linalg.index",
     "%w = linalg.index 0 : index\n%v = arith.index_cast %w : index to i64",
     "i64"},
    {"tensor.extract",
     "%w = arith.index_cast %p : i32 to index\n"
     "%v = tensor.extract %x[%w] : tensor<8xf32>",
     "f32"},
    {"cf.assert",
     "%s = arith.cmpf olt, %a, %b : f32\ncf.assert %s, \"a < b\"\n"
     "%v = arith.addf %a, %b : f32",
     "f32"},
};

/// The ops kopt refuses in a body, each for a reason it names.
const char *const kRefused[] = {"arith.addui_extended", "arith.mulsi_extended",
                                "arith.mului_extended", "arith.scaling_extf",
                                "arith.scaling_truncf", "math.clampf",
                                "math.sincos"};

/// A function whose one generic has `body` and yields %v of `type`.
std::string makeFunction(const BodyCase &c) {
  std::string type = c.type;
  return R"mlir(
#m = affine_map<(d0) -> (d0)>
func.func @body(%x: tensor<8xf32>, %y: tensor<8xf32>, %z: tensor<8xf32>,
                %i: tensor<8xi32>, %j: tensor<8xi32>, %k: tensor<8xi64>,
                %g: tensor<8xf16>) -> tensor<8x)mlir" +
         type + R"mlir(> {
  %e = tensor.empty() : tensor<8x)mlir" +
         type + R"mlir(>
  %r = linalg.generic {indexing_maps = [#m, #m, #m, #m, #m, #m, #m, #m],
                       iterator_types = ["parallel"]}
      ins(%x, %y, %z, %i, %j, %k, %g : tensor<8xf32>, tensor<8xf32>,
          tensor<8xf32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi64>,
          tensor<8xf16>) outs(%e : tensor<8x)mlir" +
         type + R"mlir(>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %p: i32, %q: i32, %n: i64, %h: f16,
       %o: )mlir" +
         type + "):\n" + c.body + "\n    linalg.yield %v : " + type +
         R"mlir(
  } -> tensor<8x)mlir" +
         type + R"mlir(>
  return %r : tensor<8x)mlir" +
         type + R"mlir(>
}
)mlir";
}

linalg::GenericOp firstGeneric(func::FuncOp func) {
  linalg::GenericOp generic;
  func.walk([&](linalg::GenericOp op) { generic = op; });
  return generic;
}

TEST(BodyOpsTest, EveryArithAndMathOpIsTranslatedOrRefused) {
  auto context = makeContext();
  llvm::StringSet<> covered;
  for (const BodyCase &c : kCases)
    covered.insert(c.name);
  for (RegisteredOperationName name : context->getRegisteredOperations()) {
    StringRef dialect = name.getDialectNamespace();
    if (dialect != "arith" && dialect != "math")
      continue;
    StringRef opName = name.getStringRef();
    std::string refusal = getBodyOpRefusal(opName);
    if (covered.contains(opName)) {
      EXPECT_EQ(refusal, "") << opName.str();
      continue;
    }
    EXPECT_TRUE(llvm::is_contained(kRefused, opName))
        << opName.str() << " is neither translated (no case here) nor "
        << "refused on purpose";
    EXPECT_NE(refusal, "") << opName.str();
  }
}

TEST(BodyOpsTest, TranslatedOpsCompileAndEvaluate) {
  auto context = makeContext();
  std::string source = getKernelPreamble().str();
  unsigned index = 0;
  for (const BodyCase &c : kCases) {
    SCOPED_TRACE(c.name);
    auto module = parse(*context, makeFunction(c));
    ASSERT_TRUE(module);
    func::FuncOp func = firstFunction(*module);
    linalg::GenericOp generic = firstGeneric(func);
    OpClassification info = classifyOp(generic);
    EXPECT_EQ(info.kind, OpKind::Elementwise) << info.reason;

    // CUDA: a pointwise kernel reading the arguments.
    TensorEmitter::LeafFn leafOf =
        [&](Value value) -> std::optional<LeafTensor> {
      auto arg = dyn_cast<BlockArgument>(value);
      if (!arg)
        return std::nullopt;
      auto type = cast<RankedTensorType>(arg.getType());
      return LeafTensor{"in" + std::to_string(arg.getArgNumber()),
                        *getElementType(type.getElementType()),
                        {type.getShape().begin(), type.getShape().end()}};
    };
    auto type = cast<RankedTensorType>(generic.getResult(0).getType());
    KernelOutput output{generic.getResult(0),
                        "out",
                        *getElementType(type.getElementType()),
                        {type.getShape().begin(), type.getShape().end()}};
    auto kernel =
        generatePointwiseKernel(context.get(), "k" + std::to_string(index++),
                                c.name, {output}, leafOf, PointwiseOptions());
    ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
    source += kernel->code;

    // The fp64 reference.
    auto reference = ReferenceInterpreter::create(func);
    ASSERT_TRUE(bool(reference)) << llvm::toString(reference.takeError());
    std::vector<std::vector<double>> inputs;
    for (unsigned i = 0; i < (*reference)->getNumInputs(); ++i)
      inputs.emplace_back((*reference)->getInputNumElements(i), 1.5);
    auto outputs = (*reference)->evaluateAll(inputs);
    ASSERT_TRUE(bool(outputs)) << llvm::toString(outputs.takeError());
  }

  if (!::kopt::runtime::getNvrtcVersion())
    GTEST_SKIP() << "NVRTC is not available";
  ::kopt::runtime::NvrtcOptions options;
  options.warningsAsErrors = true;
  auto compiled =
      ::kopt::runtime::compileCuda(source, "body-ops.cu", "sm_90", options);
  EXPECT_TRUE(compiled.isOk()) << compiled.status().message();
}

TEST(BodyOpsTest, RefusedOpsAreNamed) {
  for (const char *name : kRefused)
    EXPECT_NE(getBodyOpRefusal(name), "") << name;
  auto context = makeContext();
  auto module = parse(
      *context,
      makeFunction({"math.sincos", "%v, %w = math.sincos %a : f32", "f32"}));
  ASSERT_TRUE(module);
  OpClassification info = classifyOp(firstGeneric(firstFunction(*module)));
  EXPECT_EQ(info.kind, OpKind::Unsupported);
  EXPECT_EQ(info.reason, "its body uses 'math.sincos', which has two results; "
                         "kopt translates single-result ops");
}

TEST(BodyOpsTest, BodyTypesAndGatherSourcesAreChecked) {
  auto context = makeContext();
  auto module = parse(*context, R"mlir(
#m = affine_map<(d0) -> (d0)>
func.func @f(%x: tensor<8xf32>, %t: tensor<?xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %v = tensor.extract %t[%i] : tensor<?xf32>
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %w = arith.extf %a : f32 to f128
    %v = arith.truncf %w : f128 to f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  return %s : tensor<8xf32>
}
)mlir");
  ASSERT_TRUE(module);
  SmallVector<linalg::GenericOp> generics;
  firstFunction(*module).walk(
      [&](linalg::GenericOp op) { generics.push_back(op); });
  ASSERT_EQ(generics.size(), 2u);
  EXPECT_EQ(classifyOp(generics[0]).reason,
            "its body uses 'tensor.extract' on tensor<?xf32>, a type kopt "
            "cannot generate code for");
  EXPECT_EQ(classifyOp(generics[1]).reason,
            "its body uses 'arith.extf' on f128, a type kopt cannot generate "
            "code for");
}

} // namespace
