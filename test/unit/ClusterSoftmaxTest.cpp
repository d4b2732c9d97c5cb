//===- ClusterSoftmaxTest.cpp - The read-once softmax kernel ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// generateClusterSoftmaxKernel's, generateClaimingSoftmaxKernels' and
// generateGroupClaimingSoftmaxKernels' launch shapes, and a clear error for
// each shape they cannot take. That the kernels
// compile and compute the softmax is test/Tools/kopt-plan/row-forms.test's and
// row-forms-run.test's job.
//
//===----------------------------------------------------------------------===//

#include "lib/Codegen/ClusterSoftmax.h"
#include "lib/Codegen/GroupSoftmax.h"

#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

using namespace mlir::kopt;

namespace {

constexpr int64_t kShared = 200 * 1024;

llvm::Expected<mlir::kopt::GeneratedKernel>
generate(int64_t rows, int64_t length, const ClusterSoftmaxOptions &options) {
  return generateClusterSoftmaxKernel("k", "softmax", "in0", "out0", rows,
                                      length, options, kShared);
}

std::string errorOf(int64_t rows, int64_t length,
                    const ClusterSoftmaxOptions &options) {
  auto kernel = generate(rows, length, options);
  if (kernel)
    return "";
  return llvm::toString(kernel.takeError());
}

TEST(ClusterSoftmax, PortableClusterDeclaredInTheSource) {
  ClusterSoftmaxOptions options;
  options.clusterSize = 8;
  options.blockSize = 512;
  auto kernel = generate(512, 393216, options);
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());
  EXPECT_EQ(kernel->grid[0], "4096");
  EXPECT_EQ(kernel->block[0], "512");
  EXPECT_EQ(kernel->sharedBytes, 393216 / 8 * 4);
  EXPECT_EQ(kernel->cluster, 1u);
  EXPECT_NE(kernel->code.find("__cluster_dims__(8, 1, 1)"), std::string::npos);
  EXPECT_EQ(kernel->args, (std::vector<std::string>{"in0", "out0"}));
}

TEST(ClusterSoftmax, ClustersOf16SetAtLaunchAndRowsInTurn) {
  ClusterSoftmaxOptions options;
  options.clusterSize = 16;
  options.blockSize = 512;
  options.rowsPerCluster = 4;
  options.minBlocksPerSM = 2;
  auto kernel = generate(512, 393216, options);
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());
  EXPECT_EQ(kernel->grid[0], "2048");
  EXPECT_EQ(kernel->cluster, 16u);
  EXPECT_EQ(kernel->code.find("__cluster_dims__"), std::string::npos);
  EXPECT_NE(kernel->code.find("__launch_bounds__(512, 2)"), std::string::npos);
  EXPECT_NE(kernel->code.find("if (kopt_cluster_blocks() != 16u) __trap();"),
            std::string::npos);
}

TEST(ClusterSoftmax, OneBlockNeedsNoCluster) {
  ClusterSoftmaxOptions options;
  options.clusterSize = 1;
  auto kernel = generate(3, 40000, options);
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());
  EXPECT_EQ(kernel->grid[0], "3");
  EXPECT_EQ(kernel->code.find("cluster"), std::string::npos);
}

TEST(ClusterSoftmax, RefusesShapesItCannotTake) {
  ClusterSoftmaxOptions options;
  options.clusterSize = 3;
  EXPECT_EQ(errorOf(4, 393216, options),
            "clusters of 3 blocks are not supported");
  options.clusterSize = 8;
  EXPECT_EQ(errorOf(4, 393218, options),
            "a row of 393218 is not a whole number of 16-byte vectors");
  // 9 vectors over 8 blocks: 2 a block leave the last none.
  EXPECT_EQ(errorOf(4, 36, options),
            "a row of 36 leaves the last of 8 blocks nothing");
  EXPECT_EQ(errorOf(4, 8 * 51208, options),
            "a block's 204832 bytes of the row exceed its shared memory");
  options.blockSize = 1056;
  EXPECT_EQ(errorOf(4, 393216, options),
            "blocks of 1056 threads: whole warps, 1024 threads at most, "
            "are needed");
  options.blockSize = 500;
  EXPECT_EQ(errorOf(4, 393216, options),
            "blocks of 500 threads: whole warps, 1024 threads at most, "
            "are needed");
  options.blockSize = 512;
  options.rowsPerCluster = 3;
  EXPECT_EQ(errorOf(4, 393216, options), "4 rows do not go 3 to a cluster");
  options.rowsPerCluster = 0;
  EXPECT_EQ(errorOf(4, 393216, options), "4 rows do not go 0 to a cluster");
}

TEST(ClusterSoftmax, ClaimingClustersAreCooperativeWithACounter) {
  ClusterSoftmaxOptions options;
  options.clusterSize = 8;
  options.blockSize = 512;
  auto kernels = generateClaimingSoftmaxKernels("k", "softmax", "in0", "out0",
                                                512, 393216, options, kShared);
  ASSERT_TRUE(static_cast<bool>(kernels))
      << llvm::toString(kernels.takeError());
  EXPECT_EQ(kernels->counter.param, "rowstaken");
  EXPECT_EQ(kernels->counter.elementType, ElementType::I64);
  EXPECT_EQ(kernels->counter.shape, (std::vector<int64_t>{1}));
  ASSERT_EQ(kernels->kernels.size(), 2u);
  const GeneratedKernel &reset = kernels->kernels[0];
  EXPECT_EQ(reset.entry, "k_reset");
  EXPECT_EQ(reset.grid[0], "1");
  EXPECT_EQ(reset.args, (std::vector<std::string>{"rowstaken"}));
  const GeneratedKernel &rows = kernels->kernels[1];
  // A cluster a row at most; the runtime cuts it to the resident clusters.
  EXPECT_EQ(rows.grid[0], "4096");
  EXPECT_TRUE(rows.cooperative);
  EXPECT_EQ(rows.cluster, 8u);
  EXPECT_EQ(rows.sharedBytes, 393216 / 8 * 4);
  EXPECT_EQ(rows.args, (std::vector<std::string>{"in0", "out0", "rowstaken"}));
  EXPECT_EQ(rows.code.find("__cluster_dims__"), std::string::npos);
  EXPECT_NE(rows.code.find("if (kopt_cluster_blocks() != 8u) __trap();"),
            std::string::npos);
  // Two exponentials an element (as it lands and as it is written).
  EXPECT_EQ(rows.code.find("kopt_stage_max"), std::string::npos);
  EXPECT_NE(rows.code.find("e.x = expf(e.x - m) * inverse;"),
            std::string::npos);
  options.keepExponentials = true;
  kernels = generateClaimingSoftmaxKernels("k", "softmax", "in0", "out0", 512,
                                           393216, options, kShared);
  ASSERT_TRUE(static_cast<bool>(kernels))
      << llvm::toString(kernels.takeError());
  // One: kept in shared memory, scaled by a factor a stage when written.
  const std::string &kept = kernels->kernels[1].code;
  EXPECT_EQ(kept.find("expf(e.x - m)"), std::string::npos);
  EXPECT_NE(kept.find("e.x = expf(e.x - shift);"), std::string::npos);
  EXPECT_NE(kept.find("kept[v] = e;"), std::string::npos);
  EXPECT_NE(kept.find("const float factor3 = expf(kopt_stage_max[3] - m) * "
                      "inverse;"),
            std::string::npos);
  EXPECT_NE(kept.find("e.x *= factor3;"), std::string::npos);
}

TEST(ClusterSoftmax, LastBlockTakesWhatIsLeft) {
  // 98,304 vectors over 7 blocks: 14,044 rounded up to whole 128-byte lines
  // (8 vectors), 14,048 each, the last 14,016.
  ClusterSoftmaxOptions options;
  options.clusterSize = 7;
  options.blockSize = 512;
  options.keepExponentials = true;
  auto kernels = generateClaimingSoftmaxKernels(
      "k", "softmax", "in0", "out0", 512, 393216, options, 224 * 1024);
  ASSERT_TRUE(static_cast<bool>(kernels))
      << llvm::toString(kernels.takeError());
  const GeneratedKernel &rows = kernels->kernels[1];
  EXPECT_EQ(rows.grid[0], "3584");
  EXPECT_EQ(rows.cluster, 7u);
  EXPECT_EQ(rows.sharedBytes, 14048 * 16);
  EXPECT_NE(rows.code.find("const long long offset = (long long)rank * "
                           "56192LL;"),
            std::string::npos);
  EXPECT_NE(rows.code.find("const int kopt_vectors = rank == 6u ? 14016 : "
                           "14048;"),
            std::string::npos);
  EXPECT_NE(rows.code.find("if (v >= kopt_vectors) break;"), std::string::npos);
  // Where whole lines would not fit the shared memory, shares as even as
  // they come: 14,044 each, the last 14,040.
  kernels = generateClaimingSoftmaxKernels("k", "softmax", "in0", "out0", 512,
                                           393216, options, 14044 * 16);
  ASSERT_TRUE(static_cast<bool>(kernels))
      << llvm::toString(kernels.takeError());
  EXPECT_EQ(kernels->kernels[1].sharedBytes, 14044 * 16);
  EXPECT_NE(kernels->kernels[1].code.find(
                "const int kopt_vectors = rank == 6u ? 14040 : 14044;"),
            std::string::npos);
  // Equal shares need no count of their own.
  options.clusterSize = 8;
  kernels = generateClaimingSoftmaxKernels("k", "softmax", "in0", "out0", 512,
                                           393216, options, kShared);
  ASSERT_TRUE(static_cast<bool>(kernels))
      << llvm::toString(kernels.takeError());
  EXPECT_EQ(kernels->kernels[1].code.find("kopt_vectors"), std::string::npos);
}

TEST(ClusterSoftmax, ClaimingRefusesShapesItCannotTake) {
  ClusterSoftmaxOptions options;
  auto errorOfClaiming = [&](int64_t length) -> std::string {
    auto kernels = generateClaimingSoftmaxKernels(
        "k", "softmax", "in0", "out0", 512, length, options, kShared);
    return kernels ? "" : llvm::toString(kernels.takeError());
  };
  options.clusterSize = 1;
  EXPECT_EQ(errorOfClaiming(40000),
            "claiming clusters of 1 blocks are not supported");
  options.clusterSize = 17;
  EXPECT_EQ(errorOfClaiming(393216),
            "claiming clusters of 17 blocks are not supported");
  options.clusterSize = 8;
  EXPECT_EQ(errorOfClaiming(393218),
            "a row of 393218 is not a whole number of 16-byte vectors");
  EXPECT_EQ(errorOfClaiming(8 * 51208),
            "a block's 204832 bytes of the row exceed its shared memory");
  options.blockSize = 48;
  EXPECT_EQ(errorOfClaiming(393216),
            "blocks of 48 threads: whole warps, 1024 threads at most, are "
            "needed");
}

TEST(ClusterSoftmax, ClaimingGroupsExchangeThroughGlobalMemory) {
  ClusterSoftmaxOptions options;
  options.clusterSize = 11;
  options.blockSize = 512;
  options.keepExponentials = true;
  auto kernels = generateGroupClaimingSoftmaxKernels(
      "k", "softmax", "in0", "out0", 512, 393216, options, 224 * 1024);
  ASSERT_TRUE(static_cast<bool>(kernels))
      << llvm::toString(kernels.takeError());
  // The claims and 512 groups' arrivals, then two exchanges a group of 11
  // pairs and a claim each.
  EXPECT_EQ(kernels->counter.param, "groupsync");
  EXPECT_EQ(kernels->counter.elementType, ElementType::I64);
  EXPECT_EQ(kernels->counter.shape,
            (std::vector<int64_t>{1 + 512 + 512 * 2 * 12}));
  ASSERT_EQ(kernels->kernels.size(), 2u);
  const GeneratedKernel &reset = kernels->kernels[0];
  EXPECT_EQ(reset.entry, "k_reset");
  // Only the counts are zeroed; an exchange is written before it is read.
  EXPECT_NE(reset.code.find("i < 513; i += 256) groupsync[i] = 0;"),
            std::string::npos);
  const GeneratedKernel &rows = kernels->kernels[1];
  // A group a row at most; the runtime cuts it to the resident blocks, and
  // the blocks past the last whole group leave.
  EXPECT_EQ(rows.grid[0], std::to_string(512 * 11));
  EXPECT_TRUE(rows.cooperative);
  EXPECT_EQ(rows.cluster, 1u);
  EXPECT_EQ(rows.args, (std::vector<std::string>{"in0", "out0", "groupsync"}));
  EXPECT_EQ(rows.code.find("kopt_cluster"), std::string::npos);
  // 98,304 vectors over 11 blocks: 8,937 rounded up to whole 128-byte
  // lines, 8,944 each, the last 8,864.
  EXPECT_EQ(rows.sharedBytes, 8944 * 16);
  EXPECT_NE(rows.code.find("const int kopt_vectors = rank == 10u ? 8864 : "
                           "8944;"),
            std::string::npos);
  EXPECT_NE(rows.code.find("if (groups == 0) __trap();\n  if (group >= "
                           "groups) return;"),
            std::string::npos);
  EXPECT_NE(rows.code.find("long long *const exchange = groupsync + 513LL + "
                           "(long long)group * 24LL;"),
            std::string::npos);
  EXPECT_NE(rows.code.find("kopt_wait_count(arrived, (step + 1) * 11LL);"),
            std::string::npos);
  EXPECT_NE(rows.code.find("for (unsigned q = 0; q < 11u; ++q) merge("),
            std::string::npos);

  auto errorOfGroups = [&](unsigned blocks, int64_t length) -> std::string {
    options.clusterSize = blocks;
    auto refused = generateGroupClaimingSoftmaxKernels(
        "k", "softmax", "in0", "out0", 512, length, options, kShared);
    return refused ? "" : llvm::toString(refused.takeError());
  };
  EXPECT_EQ(errorOfGroups(1, 40000),
            "claiming groups of 1 blocks are not supported");
  EXPECT_EQ(errorOfGroups(33, 393216),
            "claiming groups of 33 blocks are not supported");
  EXPECT_EQ(errorOfGroups(7, 393216),
            "a block's 224704 bytes of the row exceed its shared memory");
}

} // namespace
