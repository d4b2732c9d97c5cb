//===- ClusterSoftmax.cpp - A long-row softmax read once --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "ClusterSoftmax.h"
#include "OnlineSoftmax.h"
#include "StagedShare.h"

#include "kopt/Codegen/CudaEmitter.h"
#include "kopt/Codegen/SharedRowKernel.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kopt;

/// Every block merges the cluster's `blocks` pairs in rank order, so that
/// all divide by the same sum.
static void emitClusterPairMerge(CodeWriter &code, unsigned blocks) {
  code.line("m = -KOPT_INF_F;");
  code.line("s = 0.0f;");
  code.line("#pragma unroll");
  code.line("for (unsigned q = 0; q < " + std::to_string(blocks) +
            "u; ++q) merge(kopt_cluster_load(&kopt_pair[0], q), "
            "kopt_cluster_load(&kopt_pair[1], q));");
}

llvm::Expected<GeneratedKernel> mlir::kopt::generateClusterSoftmaxKernel(
    llvm::StringRef entry, llvm::StringRef comment, llvm::StringRef input,
    llvm::StringRef output, int64_t rows, int64_t length,
    const ClusterSoftmaxOptions &options, int64_t maxSharedBytes) {
  unsigned blocks = options.clusterSize, threads = options.blockSize;
  if (!llvm::is_contained({1u, 2u, 4u, 8u, 16u}, blocks))
    return llvm::createStringError("clusters of %u blocks are not supported",
                                   blocks);
  int64_t perCluster = options.rowsPerCluster;
  if (perCluster < 1 || rows % perCluster != 0)
    return llvm::createStringError("%lld rows do not go %lld to a cluster",
                                   static_cast<long long>(rows),
                                   static_cast<long long>(perCluster));
  auto staged = StagedShare::create(blocks, threads, length, maxSharedBytes);
  if (!staged)
    return staged.takeError();
  int64_t share = staged->getShare();
  std::string t = std::to_string(threads);

  GeneratedKernel kernel;
  kernel.entry = entry.str();
  kernel.sharedBytes = share * 4;
  kernel.args = {input.str(), output.str()};
  kernel.grid = {std::to_string(rows / perCluster * blocks), "1", "1"};
  kernel.block = {t, "1", "1"};

  CodeWriter code;
  code.comment(comment);
  if (blocks > 1)
    code.lines(getClusterHelpers());
  code.lines(kStagedCopyHelpers);
  std::string attributes =
      "__launch_bounds__(" + t +
      (options.minBlocksPerSM ? ", " + std::to_string(options.minBlocksPerSM)
                              : "") +
      ")";
  // A non-portable cluster is set at launch, not declared.
  if (blocks > 8)
    kernel.cluster = blocks;
  else if (blocks > 1)
    attributes =
        "__cluster_dims__(" + std::to_string(blocks) + ", 1, 1) " + attributes;
  code.line("extern \"C\" __global__ void " + attributes + " " + entry.str() +
            "(const float *__restrict__ " + input.str() +
            ", float *__restrict__ " + output.str() + ") {");
  code.indent();
  // Launched without its cluster, the kernel would read other blocks'
  // shared memory that does not exist: it stops instead.
  if (blocks > 8)
    code.line("if (kopt_cluster_blocks() != " + std::to_string(blocks) +
              "u) __trap();");
  code.line("extern __shared__ __align__(16) unsigned char kopt_smem[];");
  code.line("float4 *const kept = reinterpret_cast<float4 *>(kopt_smem);");
  code.line("__shared__ float kopt_pair[2];");
  std::string b = std::to_string(blocks), k = std::to_string(perCluster);
  std::string l = std::to_string(length) + "LL";
  code.line("const long long firstRow = (long long)(blockIdx.x / " + b +
            ") * " + k + ";");
  code.line("const long long offset = (long long)(blockIdx.x % " + b + ") * " +
            std::to_string(share) + "LL;");
  staged->emitDeclarations(code, "blockIdx.x % " + b + "u", blocks);
  auto rowPointer = [&](llvm::StringRef name, llvm::StringRef row, bool read) {
    std::string type = read ? "const float4" : "float4";
    std::string base = read ? input.str() : output.str();
    return type + " *__restrict__ " + name.str() + " = reinterpret_cast<" +
           type + " *>(" + base + " + (" + row.str() + ") * " + l +
           " + offset);";
  };
  code.line("{");
  code.indent();
  code.line(rowPointer("x", "firstRow", true));
  code.comment("Every copy in flight at once, a commit group a stage.");
  staged->emitCopies(code, "x");
  code.dedent();
  code.line("}");
  code.line("#pragma unroll 1");
  code.line("for (int j = 0; j < " + k + "; ++j) {");
  code.indent();
  code.line(rowPointer("y", "firstRow + j", false));
  code.comment("The next row's copies go where this row's outputs were read "
               "from, as they are written.");
  code.line(rowPointer("next", "firstRow + j + 1", true));
  code.line("const bool more = j + 1 < " + k + ";");
  staged->emitStatistics(code, options.keepExponentials);
  code.lines(getBlockPairMerge());
  if (blocks > 1) {
    code.comment("The previous row's pair read by every block before it is "
                 "overwritten.");
    code.line("if (j > 0)");
    code.line("  asm volatile(\"barrier.cluster.wait.acquire.aligned;\" ::: "
              "\"memory\");");
  }
  code.line("if (threadIdx.x == 0) {");
  code.line("  kopt_pair[0] = m;");
  code.line("  kopt_pair[1] = s;");
  code.line("}");
  if (blocks > 1) {
    code.comment("The cluster's pair: every block merges the blocks' pairs "
                 "in rank order, so all divide by the same sum.");
    code.line("kopt_cluster_sync();");
    emitClusterPairMerge(code, blocks);
    code.comment("Done with the other blocks' pairs; the wait is before the "
                 "next pair, or at the end, so that no block leaves early.");
    code.line("asm volatile(\"barrier.cluster.arrive.release.aligned;\" ::: "
              "\"memory\");");
  } else {
    code.line("__syncthreads();");
    code.line("m = kopt_pair[0];");
    code.line("s = kopt_pair[1];");
  }
  code.comment("A product by the reciprocal, not a quotient an element: "
               "the quotients' instructions were as many as the stores'.");
  code.line("const float inverse = 1.0f / s;");
  staged->emitOutputs(code, "next", options.keepExponentials);
  code.dedent();
  code.line("}");
  if (blocks > 1)
    code.line("asm volatile(\"barrier.cluster.wait.acquire.aligned;\" ::: "
              "\"memory\");");
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  return kernel;
}

/// The counter's plan tensor.
static constexpr llvm::StringLiteral kRowsTakenParam = "rowstaken";

llvm::Expected<ClaimingSoftmaxKernels>
mlir::kopt::generateClaimingSoftmaxKernels(
    llvm::StringRef entry, llvm::StringRef comment, llvm::StringRef input,
    llvm::StringRef output, int64_t rows, int64_t length,
    const ClusterSoftmaxOptions &options, int64_t maxSharedBytes) {
  unsigned blocks = options.clusterSize, threads = options.blockSize;
  if (blocks < 2 || blocks > 16)
    return llvm::createStringError(
        "claiming clusters of %u blocks are not supported", blocks);
  auto staged = StagedShare::create(blocks, threads, length, maxSharedBytes);
  if (!staged)
    return staged.takeError();
  int64_t share = staged->getShare();
  std::string t = std::to_string(threads);

  ClaimingSoftmaxKernels result;
  result.counter.param = kRowsTakenParam.str();
  result.counter.elementType = ElementType::I64;
  result.counter.shape = {1};

  GeneratedKernel reset;
  reset.entry = (entry + "_reset").str();
  reset.grid = {"1", "1", "1"};
  reset.block = {"32", "1", "1"};
  reset.args = {kRowsTakenParam.str()};
  {
    CodeWriter code;
    code.comment(comment.str() + " (rows claimed reset)");
    code.line("extern \"C\" __global__ void " + reset.entry +
              "(long long *__restrict__ " + kRowsTakenParam.str() + ") {");
    code.line("  if (threadIdx.x == 0) " + kRowsTakenParam.str() + "[0] = 0;");
    code.line("}");
    reset.code = code.str();
  }

  GeneratedKernel kernel;
  kernel.entry = entry.str();
  kernel.sharedBytes = share * 4;
  kernel.args = {input.str(), output.str(), kRowsTakenParam.str()};
  kernel.block = {t, "1", "1"};
  std::string attributes =
      "__launch_bounds__(" + t +
      (options.minBlocksPerSM ? ", " + std::to_string(options.minBlocksPerSM)
                              : "") +
      ")";
  // A cooperative grid, a cluster per row at most, cut by the runtime to
  // the clusters the device holds at once; the clusters are set at launch.
  kernel.cooperative = true;
  kernel.grid = {std::to_string(rows * blocks), "1", "1"};
  kernel.cluster = blocks;

  CodeWriter code;
  code.comment(comment);
  code.lines(getClusterHelpers());
  code.lines(kStagedCopyHelpers);
  std::string b = std::to_string(blocks), n = std::to_string(rows) + "LL";
  std::string l = std::to_string(length) + "LL", taken = kRowsTakenParam.str();
  code.line("extern \"C\" __global__ void " + attributes + " " + entry.str() +
            "(const float *__restrict__ " + input.str() +
            ", float *__restrict__ " + output.str() +
            ", long long *__restrict__ " + taken + ") {");
  code.indent();
  // Launched without its cluster, the kernel would read other blocks'
  // shared memory that does not exist: it stops instead.
  code.line("if (kopt_cluster_blocks() != " + b + "u) __trap();");
  code.line("extern __shared__ __align__(16) unsigned char kopt_smem[];");
  code.line("float4 *const kept = reinterpret_cast<float4 *>(kopt_smem);");
  code.line("__shared__ float kopt_pair[2];");
  code.line("__shared__ long long kopt_claimed;");
  code.line("const unsigned rank = blockIdx.x % " + b + "u;");
  code.line("const long long offset = (long long)rank * " +
            std::to_string(share) + "LL;");
  staged->emitDeclarations(code, "rank", blocks);
  code.line("auto claim = [&]() {");
  code.line("  return (long long)atomicAdd(reinterpret_cast<unsigned long "
            "long *>(" +
            taken + "), 1ULL);");
  code.line("};");
  code.comment("The cluster's first row, claimed by its first block. Every "
               "barrier.cluster arrive is paired with one wait, before the "
               "block next overwrites what the others read.");
  code.line("if (rank == 0 && threadIdx.x == 0) kopt_claimed = claim();");
  code.line("kopt_cluster_sync();");
  code.line("long long row = kopt_cluster_load(&kopt_claimed, 0u);");
  code.line("asm volatile(\"barrier.cluster.arrive.release.aligned;\" ::: "
            "\"memory\");");
  code.line("if (row < " + n + ") {");
  code.indent();
  code.line("const float4 *__restrict__ x = reinterpret_cast<const float4 *>(" +
            input.str() + " + row * " + l + " + offset);");
  staged->emitCopies(code, "x");
  code.dedent();
  code.line("}");
  code.line("#pragma unroll 1");
  code.line("while (row < " + n + ") {");
  code.indent();
  code.comment("The next row claimed now, so that its copies can be issued "
               "as this row is written.");
  code.line("long long next = 0;");
  code.line("if (rank == 0 && threadIdx.x == 0) next = claim();");
  staged->emitStatistics(code, options.keepExponentials);
  code.lines(getBlockPairMerge());
  code.line("asm volatile(\"barrier.cluster.wait.acquire.aligned;\" ::: "
            "\"memory\");");
  code.line("if (threadIdx.x == 0) {");
  code.line("  kopt_pair[0] = m;");
  code.line("  kopt_pair[1] = s;");
  code.line("  if (rank == 0) kopt_claimed = next;");
  code.line("}");
  code.line("kopt_cluster_sync();");
  emitClusterPairMerge(code, blocks);
  code.line("next = kopt_cluster_load(&kopt_claimed, 0u);");
  code.line("asm volatile(\"barrier.cluster.arrive.release.aligned;\" ::: "
            "\"memory\");");
  staged->emitClaimedRowOutputs(code, input, output, rows, length,
                                options.keepExponentials);
  code.dedent();
  code.line("}");
  code.line("asm volatile(\"barrier.cluster.wait.acquire.aligned;\" ::: "
            "\"memory\");");
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  result.kernels = {std::move(reset), std::move(kernel)};
  return result;
}
