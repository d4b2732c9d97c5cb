//===- GroupSoftmax.cpp - A long-row softmax in groups of blocks *- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "GroupSoftmax.h"
#include "OnlineSoftmax.h"
#include "SplitRowPasses.h"
#include "StagedShare.h"

#include "kopt/Codegen/CudaEmitter.h"

using namespace mlir;
using namespace mlir::kopt;

/// The synchronisation tensor's parameter of the grouped kernel.
static constexpr llvm::StringLiteral kGroupSyncParam = "groupsync";

llvm::Expected<ClaimingSoftmaxKernels>
mlir::kopt::generateGroupClaimingSoftmaxKernels(
    llvm::StringRef entry, llvm::StringRef comment, llvm::StringRef input,
    llvm::StringRef output, int64_t rows, int64_t length,
    const ClusterSoftmaxOptions &options, int64_t maxSharedBytes) {
  unsigned blocks = options.clusterSize, threads = options.blockSize;
  if (blocks < 2 || blocks > 32)
    return llvm::createStringError(
        "claiming groups of %u blocks are not supported", blocks);
  auto staged = StagedShare::create(blocks, threads, length, maxSharedBytes);
  if (!staged)
    return staged.takeError();
  int64_t share = staged->getShare();
  std::string t = std::to_string(threads), b = std::to_string(blocks);
  std::string n = std::to_string(rows) + "LL";
  std::string l = std::to_string(length) + "LL";
  std::string sync = kGroupSyncParam.str();

  // The tensor: the rows claimed past the first a group, each group's
  // count of its blocks' arrivals, then each group's two exchanges (one a
  // step's parity), `blocks` pairs and the row claimed next. There are at
  // most `rows` groups (the grid before the launch cuts it).
  int64_t counts = 1 + rows, exchange = blocks + 1;
  ClaimingSoftmaxKernels result;
  result.counter.param = sync;
  result.counter.elementType = ElementType::I64;
  result.counter.shape = {counts + rows * 2 * exchange};
  result.kernels.push_back(generateCountsReset(
      (entry + "_reset").str(), comment.str() + " (claims and arrivals reset)",
      sync, counts));

  GeneratedKernel kernel;
  kernel.entry = entry.str();
  kernel.sharedBytes = share * 4;
  kernel.args = {input.str(), output.str(), sync};
  kernel.block = {t, "1", "1"};
  // A cooperative grid, a group per row at most, cut by the runtime to the
  // blocks the device holds at once: every block of a group waits for the
  // others, so all must be resident.
  kernel.cooperative = true;
  kernel.grid = {std::to_string(rows * blocks), "1", "1"};

  CodeWriter code;
  code.comment(comment);
  code.lines(kStagedCopyHelpers);
  code.lines(getDeadlineHelper());
  code.lines(getPipelineHelpers());
  code.line("extern \"C\" __global__ void __launch_bounds__(" + t + ") " +
            entry.str() + "(const float *__restrict__ " + input.str() +
            ", float *__restrict__ " + output.str() + ", long long *" + sync +
            ") {");
  code.indent();
  code.line("extern __shared__ __align__(16) unsigned char kopt_smem[];");
  code.line("float4 *const kept = reinterpret_cast<float4 *>(kopt_smem);");
  code.line("__shared__ float kopt_pair[2];");
  code.line("__shared__ long long kopt_claimed;");
  code.line("const unsigned groups = gridDim.x / " + b + "u;");
  code.line("const unsigned group = blockIdx.x / " + b + "u;");
  code.comment("A grid cut below one group (a device of fewer SMs) would "
               "write nothing: it stops instead. Blocks past the last whole "
               "group take no rows.");
  code.line("if (groups == 0) __trap();");
  code.line("if (group >= groups) return;");
  code.line("const unsigned rank = blockIdx.x % " + b + "u;");
  code.line("const long long offset = (long long)rank * " +
            std::to_string(share) + "LL;");
  staged->emitDeclarations(code, "rank", blocks);
  code.line("long long *const arrived = " + sync + " + 1 + group;");
  code.line("long long *const exchange = " + sync + " + " +
            std::to_string(counts) + "LL + (long long)group * " +
            std::to_string(2 * exchange) + "LL;");
  code.comment("The first rows go one a group; the rest are claimed.");
  code.line("long long row = group;");
  code.line("{");
  code.line("  const float4 *__restrict__ x = reinterpret_cast<const float4 "
            "*>(" +
            input.str() + " + row * " + l + " + offset);");
  code.indent();
  staged->emitCopies(code, "x");
  code.dedent();
  code.line("}");
  code.line("#pragma unroll 1");
  code.line("for (long long step = 0; row < " + n + "; ++step) {");
  code.indent();
  code.comment("The next row claimed now, so that its copies can be issued "
               "as this row is written.");
  code.line("long long next = 0;");
  code.line("if (rank == 0 && threadIdx.x == 0) next = groups + "
            "(long long)atomicAdd(reinterpret_cast<unsigned long long *>(" +
            sync + "), 1ULL);");
  staged->emitStatistics(code, options.keepExponentials);
  code.lines(getBlockPairMerge());
  code.comment(
      "The block's pair (and the claim) published in this step's exchange, "
      "then every block of the group waited for: a block reuses an exchange "
      "two steps on, after all have passed the step between, so after all "
      "have read it.");
  code.line("long long *const slots = exchange + (step & 1) * " +
            std::to_string(exchange) + "LL;");
  code.line("if (threadIdx.x == 0) {");
  code.line("  __stcg(reinterpret_cast<float2 *>(slots) + rank, "
            "make_float2(m, s));");
  code.line("  if (rank == 0) __stcg(slots + " + b + ", next);");
  code.line("  asm volatile(\"red.release.gpu.global.add.u64 [%0], 1;\" :: "
            "\"l\"(arrived) : \"memory\");");
  code.line("  kopt_wait_count(arrived, (step + 1) * " + b + "LL);");
  code.line("}");
  code.line("__syncthreads();");
  code.comment("The group's pair: every block merges the blocks' pairs in "
               "rank order, so all divide by the same sum.");
  code.line("if (threadIdx.x < 32) {");
  code.indent();
  code.line("const float2 theirs = threadIdx.x < " + b +
            "u ? __ldcg(reinterpret_cast<const float2 *>(slots) + "
            "threadIdx.x) : make_float2(-KOPT_INF_F, 0.0f);");
  code.line("m = -KOPT_INF_F;");
  code.line("s = 0.0f;");
  code.line("#pragma unroll");
  code.line("for (unsigned q = 0; q < " + b +
            "u; ++q) merge(__shfl_sync(0xffffffffu, theirs.x, q), "
            "__shfl_sync(0xffffffffu, theirs.y, q));");
  code.line("if (threadIdx.x == 0) {");
  code.line("  kopt_pair[0] = m;");
  code.line("  kopt_pair[1] = s;");
  code.line("  kopt_claimed = __ldcg(slots + " + b + ");");
  code.line("}");
  code.dedent();
  code.line("}");
  code.line("__syncthreads();");
  code.line("m = kopt_pair[0];");
  code.line("s = kopt_pair[1];");
  code.line("next = kopt_claimed;");
  staged->emitClaimedRowOutputs(code, input, output, rows, length,
                                options.keepExponentials);
  code.dedent();
  code.line("}");
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  result.kernels.push_back(std::move(kernel));
  return result;
}
