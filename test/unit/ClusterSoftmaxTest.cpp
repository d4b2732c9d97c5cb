//===- ClusterSoftmaxTest.cpp - The read-once softmax kernel ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// generateClusterSoftmaxKernel's launch shapes, and a clear error for each
// shape it cannot take. That the kernels compile and compute the softmax is
// test/Tools/kopt-plan/row-forms.test's and row-forms-run.test's job.
//
//===----------------------------------------------------------------------===//

#include "lib/Codegen/ClusterSoftmax.h"

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
  EXPECT_EQ(errorOf(4, 393220, options),
            "a row of 393220 does not split into 16-byte vectors over 8 "
            "blocks");
  EXPECT_EQ(errorOf(4, 8 * 51208, options),
            "a block's 204832 bytes of the row exceed its shared memory");
  options.blockSize = 1056;
  EXPECT_EQ(errorOf(4, 393216, options),
            "blocks of 1056 threads: whole warps, at most 32, are needed");
  options.blockSize = 500;
  EXPECT_EQ(errorOf(4, 393216, options),
            "blocks of 500 threads: whole warps, at most 32, are needed");
  options.blockSize = 512;
  options.rowsPerCluster = 3;
  EXPECT_EQ(errorOf(4, 393216, options), "4 rows do not go 3 to a cluster");
  options.rowsPerCluster = 0;
  EXPECT_EQ(errorOf(4, 393216, options), "4 rows do not go 0 to a cluster");
}

} // namespace
