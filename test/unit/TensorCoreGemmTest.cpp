//===- TensorCoreGemmTest.cpp - Built-in 3xTF32 GEMM plans ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The built-in proposer's tensor-core GEMM plans: one kernel with the
// epilogue fused, for each tile configuration, declaring 3xtf32
// arithmetic; the operand layouts taken as stored; none under the
// fp32-ieee policy; none for groups that are not elementwise in the
// product. That the kernels compile is test/Tools/kopt-plan/tc-gemm.test's
// job, that they compute the product test/Runtime/cuda/TensorCoreGemmTest's.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Codegen/KernelTask.h"
#include "kopt/Codegen/Proposers.h"
#include "kopt/Codegen/TensorCoreGemm.h"

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;

namespace {

struct PlannedGroup {
  OwningOpRef<ModuleOp> module;
  func::FuncOp group;
  KernelTask task;
};

PlannedGroup planGroup(MLIRContext &context, llvm::StringRef source) {
  PlannedGroup planned;
  planned.module = parse(context, source);
  if (!planned.module)
    return planned;
  EXPECT_TRUE(succeeded(prepareModelGraph(*planned.module)));
  for (auto func : planned.module->getOps<func::FuncOp>())
    if (func->hasAttr(kFusionGroupAttrName))
      planned.group = func;
  EXPECT_TRUE(planned.group);
  if (!planned.group)
    return planned;
  auto task = buildKernelTask(planned.group);
  EXPECT_TRUE(static_cast<bool>(task)) << llvm::toString(task.takeError());
  if (task)
    planned.task = *task;
  return planned;
}

std::vector<const KernelPlan *> tensorCorePlans(const Proposal &proposal) {
  std::vector<const KernelPlan *> plans;
  for (const KernelPlan &plan : proposal.plans)
    if (llvm::StringRef(plan.variant).starts_with("tc3xtf32_"))
      plans.push_back(&plan);
  return plans;
}

/// relu(x @ w^T + bias) as torch-mlir writes nn.Linear: the weight [N, K]
/// through linalg.transpose.
constexpr llvm::StringLiteral kLinearBiasRelu = R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
func.func @linear(%x: tensor<100x72xf32>, %w: tensor<40x72xf32>, %bias: tensor<40xf32>) -> tensor<100x40xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<72x40xf32>
  %t = linalg.transpose ins(%w : tensor<40x72xf32>) outs(%et : tensor<72x40xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<100x40xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<100x40xf32>) -> tensor<100x40xf32>
  %0 = linalg.matmul ins(%x, %t : tensor<100x72xf32>, tensor<72x40xf32>) outs(%c : tensor<100x40xf32>) -> tensor<100x40xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%0, %bias : tensor<100x40xf32>, tensor<40xf32>) outs(%e : tensor<100x40xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<100x40xf32>
  return %1 : tensor<100x40xf32>
}
)mlir";

TEST(TensorCoreGemmTest, FusesTheEpilogueIntoOneKernelPerConfiguration) {
  auto context = makeContext();
  PlannedGroup planned = planGroup(*context, kLinearBiasRelu);
  ASSERT_TRUE(planned.group);
  Proposal proposal = proposeBuiltin(planned.group, planned.task);
  std::vector<const KernelPlan *> plans = tensorCorePlans(proposal);
  ASSERT_EQ(plans.size(), getTensorCoreGemmConfigs().size());
  for (const KernelPlan *plan : plans) {
    SCOPED_TRACE(plan->variant);
    EXPECT_EQ(plan->arithmetic, "3xtf32");
    EXPECT_TRUE(verifyPlan(*plan, planned.task).isOk());
    // One kernel: no transpose, no epilogue kernel.
    ASSERT_EQ(plan->steps.size(), 1u);
    const LaunchStep &launch = plan->steps[0].launch;
    EXPECT_EQ(plan->countLaunches(), 1u);
    EXPECT_EQ(plan->temporaries.size(), 0u);
    // x, the weight as stored, the bias, the output.
    ASSERT_EQ(launch.args.size(), 4u);
    std::vector<std::vector<int64_t>> shapes;
    for (const std::string &arg : launch.args)
      shapes.push_back(planned.task.findTensor(arg)->shape);
    EXPECT_EQ(shapes, (std::vector<std::vector<int64_t>>{
                          {100, 72}, {40, 72}, {40}, {100, 40}}));
    EXPECT_GT(launch.sharedBytes, 0);
    const std::string &code = plan->sources[0].code;
    EXPECT_NE(code.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
              std::string::npos);
    // B is [N, K]: the main loop reads it K-contiguous (TB = true), and
    // the epilogue computes from the accumulator.
    EXPECT_NE(code.find(", false, true, 4, 4, 100LL, 40LL, 72LL>"),
              std::string::npos);
    EXPECT_NE(code.find("kopt_c"), std::string::npos);
  }
  // A block has a warp per warp tile.
  for (auto [plan, config] : llvm::zip(plans, getTensorCoreGemmConfigs())) {
    EXPECT_EQ(plan->variant, config.getName());
    EXPECT_EQ(plan->steps[0].launch.block[0],
              std::to_string(config.getThreads()));
  }
  EXPECT_EQ(plans.front()->variant, "tc3xtf32_128x128x32_w8_s3");
}

TEST(TensorCoreGemmTest, OffersWgmmaForKMajorOperandsOnSm90a) {
  auto context = makeContext();
  // K = 72 is no multiple of 32: the mma.sync kernels only.
  PlannedGroup odd = planGroup(*context, kLinearBiasRelu);
  ASSERT_TRUE(odd.group);
  for (const KernelPlan &plan : proposeBuiltin(odd.group, odd.task).plans)
    EXPECT_FALSE(llvm::StringRef(plan.variant).starts_with("wgmma"));

  // The same nn.Linear with K = 64.
  std::string linear64 = kLinearBiasRelu.str();
  for (size_t at = linear64.find("72"); at != std::string::npos;
       at = linear64.find("72", at))
    linear64.replace(at, 2, "64");
  PlannedGroup planned = planGroup(*context, linear64);
  ASSERT_TRUE(planned.group);
  Proposal proposal = proposeBuiltin(planned.group, planned.task);
  std::vector<const KernelPlan *> plans;
  for (const KernelPlan &plan : proposal.plans)
    if (llvm::StringRef(plan.variant).starts_with("wgmma3xtf32_"))
      plans.push_back(&plan);
  // N = 40: the 128x128 and 128x64 tiles, not the 128x256 one.
  llvm::SmallVector<WgmmaGemmConfig> configs = getWgmmaGemmConfigs(40);
  ASSERT_EQ(configs.size(), 2u);
  ASSERT_EQ(plans.size(), configs.size());
  for (auto [plan, config] : llvm::zip(plans, configs)) {
    SCOPED_TRACE(plan->variant);
    EXPECT_EQ(plan->variant, config.getName());
    EXPECT_EQ(plan->arithmetic, "3xtf32");
    EXPECT_EQ(plan->arch, "sm_90a");
    EXPECT_TRUE(verifyPlan(*plan, planned.task).isOk());
    ASSERT_EQ(plan->steps.size(), 1u);
    const LaunchStep &launch = plan->steps[0].launch;
    EXPECT_EQ(launch.block[0], "384");
    EXPECT_EQ(launch.sharedBytes, config.getSharedBytes());
    ASSERT_EQ(launch.args.size(), 4u);
    const std::string &code = plan->sources[0].code;
    EXPECT_NE(code.find("wgmma.mma_async.sync.aligned.m64n" +
                        std::to_string(config.partialN) + "k8.f32.tf32.tf32"),
              std::string::npos);
    EXPECT_NE(code.find("kopt_wg::Gemm<" + std::to_string(config.blockN) +
                        ", 32, " + std::to_string(config.stages) + ", " +
                        std::to_string(config.partialN) +
                        ", 100LL, 40LL, 64LL>"),
              std::string::npos);
    EXPECT_NE(code.find("kopt_c"), std::string::npos);
  }
  EXPECT_EQ(plans.front()->variant, "wgmma3xtf32_128x128x32_s3");
  EXPECT_EQ(plans.back()->variant, "wgmma3xtf32_128x64x32_s4");
  // After the mma.sync variants.
  EXPECT_TRUE(
      llvm::StringRef(proposal.plans.front().variant).starts_with("tc3xtf32_"));
}

TEST(TensorCoreGemmTest, OffersNothingUnderIeeeFp32) {
  auto context = makeContext();
  PlannedGroup planned = planGroup(*context, kLinearBiasRelu);
  ASSERT_TRUE(planned.group);
  planned.task.precision = "fp32-ieee";
  Proposal proposal = proposeBuiltin(planned.group, planned.task);
  EXPECT_TRUE(tensorCorePlans(proposal).empty());
  // The cuBLASLt plans stay.
  EXPECT_FALSE(proposal.plans.empty());
  // And a tensor-core plan does not verify under that policy.
  planned.task.precision = "fp32";
  Proposal fp32 = proposeBuiltin(planned.group, planned.task);
  ASSERT_FALSE(tensorCorePlans(fp32).empty());
  planned.task.precision = "fp32-ieee";
  EXPECT_FALSE(verifyPlan(*tensorCorePlans(fp32).front(), planned.task).isOk());
}

/// The product written transposed: C read at another element than the
/// one being computed.
constexpr llvm::StringLiteral kTransposedEpilogue = R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#mapt = affine_map<(d0, d1) -> (d1, d0)>
func.func @f(%x: tensor<64x32xf32>, %w: tensor<32x64xf32>, %r: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %0 = linalg.matmul ins(%x, %w : tensor<64x32xf32>, tensor<32x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = linalg.generic {indexing_maps = [#mapt, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%0, %r : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  return %1 : tensor<64x64xf32>
}
)mlir";

TEST(TensorCoreGemmTest, DeclinesEpiloguesThatReadTheProductElsewhere) {
  auto context = makeContext();
  PlannedGroup planned = planGroup(*context, kTransposedEpilogue);
  ASSERT_TRUE(planned.group);
  Proposal proposal = proposeBuiltin(planned.group, planned.task);
  EXPECT_TRUE(tensorCorePlans(proposal).empty());
  EXPECT_TRUE(llvm::any_of(proposal.remarks, [](const std::string &remark) {
    return remark.find("reads the product at another element") !=
           std::string::npos;
  })) << "a remark says why";
  // The cuBLASLt plans stay.
  EXPECT_FALSE(proposal.plans.empty());
}

/// GroupNorm's statistics need the product as [rows, groups, channels]:
/// the contraction group returns it through a reshape.
constexpr llvm::StringLiteral kReshapedOutput = R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @f(%x: tensor<64x32xf32>, %w: tensor<32x96xf32>, %bias: tensor<96xf32>) -> tensor<64x3x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %0 = linalg.matmul ins(%x, %w : tensor<64x32xf32>, tensor<32x96xf32>) outs(%c : tensor<64x96xf32>) -> tensor<64x96xf32>
  %1 = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%0, %bias : tensor<64x96xf32>, tensor<96xf32>) outs(%e : tensor<64x96xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<64x96xf32>
  %2 = tensor.expand_shape %1 [[0], [1, 2]] output_shape [64, 3, 32] : tensor<64x96xf32> into tensor<64x3x32xf32>
  return %2 : tensor<64x3x32xf32>
}
)mlir";

TEST(TensorCoreGemmTest, WritesOutputsThatAreReshapesOfTheProduct) {
  auto context = makeContext();
  PlannedGroup planned = planGroup(*context, kReshapedOutput);
  ASSERT_TRUE(planned.group);
  Proposal proposal = proposeBuiltin(planned.group, planned.task);
  std::vector<const KernelPlan *> plans = tensorCorePlans(proposal);
  ASSERT_FALSE(plans.empty());
  for (const KernelPlan *plan : plans) {
    EXPECT_EQ(plan->countLaunches(), 1u);
    EXPECT_TRUE(verifyPlan(*plan, planned.task).isOk());
    // The output is written at the product element's row-major position.
    EXPECT_NE(plan->sources[0].code.find("out0[(gb * 64LL + gi) * 96LL + gj]"),
              std::string::npos);
  }
}

} // namespace
