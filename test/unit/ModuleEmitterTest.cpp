//===- ModuleEmitterTest.cpp - Runtime modules from graphs ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The module emitter behind `kopt compile --emit-module`, without a GPU or a
// database: every group gets its baseline plan, ops outside the groups
// become groups of one, and the entry's arguments keep their names.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Autotune/ModuleEmitter.h"
#include "passes/Passes.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::kopt;

namespace {

const char *kGraph = R"mlir(
func.func @bias_relu_sum(%x: tensor<64x128xf32>, %b: tensor<128xf32>) -> tensor<64xf32> {
  %init = tensor.empty() : tensor<64x128xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<64x128xf32>, tensor<128xf32>) outs(%init : tensor<64x128xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x128xf32>
  %zero = arith.constant 0.0 : f32
  %acc = tensor.empty() : tensor<64xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%acc : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.reduce ins(%0 : tensor<64x128xf32>) outs(%filled : tensor<64xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %t = arith.addf %in, %a : f32
      linalg.yield %t : f32
    }
  return %sum : tensor<64xf32>
}
)mlir";

TEST(ModuleEmitterTest, EmitsBaselinePlansWithoutDatabase) {
  auto context = mlir::kopt::testing::makeContext();
  OwningOpRef<ModuleOp> module = mlir::kopt::testing::parse(*context, kGraph);
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(prepareModelGraph(*module)));

  OwningOpRef<ModuleOp> copy(module->clone());
  llvm::Error prepared = prepareRuntimeModuleGraph(*copy);
  ASSERT_FALSE(static_cast<bool>(prepared))
      << llvm::toString(std::move(prepared));

  std::string notes;
  llvm::raw_string_ostream os(notes);
  ModuleEmitOptions options;
  auto emitted = emitRuntimeModule(*copy, options, /*database=*/nullptr,
                                   /*fingerprint=*/nullptr, os);
  ASSERT_TRUE(static_cast<bool>(emitted))
      << llvm::toString(emitted.takeError());
  EXPECT_EQ(emitted->name, "bias_relu_sum");
  ASSERT_FALSE(emitted->plans.empty());
  for (const auto &plan : emitted->plans) {
    ASSERT_TRUE(plan.plan.has_value()) << plan.function;
    EXPECT_EQ(plan.plan->proposer, "baseline") << plan.function;
    EXPECT_TRUE(plan.binaries.empty()) << "no architecture: sources only";
  }
  EXPECT_NE(notes.find("baseline/"), std::string::npos) << notes;
}

TEST(ModuleEmitterTest, RefusesAGraphWithSeveralEntries) {
  auto context = mlir::kopt::testing::makeContext();
  OwningOpRef<ModuleOp> module = mlir::kopt::testing::parse(*context, R"mlir(
func.func @a(%x: tensor<8xf32>) -> tensor<8xf32> { return %x : tensor<8xf32> }
func.func @b(%x: tensor<8xf32>) -> tensor<8xf32> { return %x : tensor<8xf32> }
)mlir");
  ASSERT_TRUE(module);
  llvm::Error error = prepareRuntimeModuleGraph(*module);
  ASSERT_TRUE(static_cast<bool>(error));
  EXPECT_NE(llvm::toString(std::move(error)).find("several public functions"),
            std::string::npos);
}

} // namespace
