//===- GroupSoftmax.h - A long-row softmax in groups of blocks --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_GROUPSOFTMAX_H
#define KOPT_LIB_CODEGEN_GROUPSOFTMAX_H

#include "ClusterSoftmax.h"

namespace mlir::kopt {

/// The claiming softmax without clusters: groups of `options.clusterSize`
/// blocks (2 to 32) share a row, each block its part in shared memory as
/// in generateClaimingSoftmaxKernels, and exchange their pairs through
/// global memory (a count of arrivals a group, an acquire spin, the pairs
/// merged in rank order). A group may be any number of blocks, so that the
/// groups fill SMs that no cluster of the row's size is placed on (the
/// H200 holds 15 clusters of 8 on its 132 SMs). The first rows go one a
/// group, the rest are claimed; `counter` is the claims', arrivals' and
/// exchanges' tensor, zeroed in part by the first kernel.
llvm::Expected<ClaimingSoftmaxKernels> generateGroupClaimingSoftmaxKernels(
    llvm::StringRef entry, llvm::StringRef comment, llvm::StringRef input,
    llvm::StringRef output, int64_t rows, int64_t length,
    const ClusterSoftmaxOptions &options, int64_t maxSharedBytes);

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_GROUPSOFTMAX_H
