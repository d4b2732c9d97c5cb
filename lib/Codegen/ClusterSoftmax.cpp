//===- ClusterSoftmax.cpp - A long-row softmax read once --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "ClusterSoftmax.h"
#include "OnlineSoftmax.h"
#include "SplitRowPasses.h"

#include "kopt/Codegen/CudaEmitter.h"
#include "kopt/Codegen/SharedRowKernel.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kopt;

/// Copies of 16 bytes in commit groups, and a wait for all but the newest
/// N groups of the thread's own copies (sm_80).
static constexpr llvm::StringLiteral kStagedCopyHelpers = R"cuda(
#ifndef KOPT_STAGED_COPY_HELPERS
#define KOPT_STAGED_COPY_HELPERS
__device__ __forceinline__ void kopt_copy_vector_async(float4 *shared,
                                                       const float4 *global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
               :: "r"((unsigned)__cvta_generic_to_shared(shared)),
                  "l"(global) : "memory");
}
__device__ __forceinline__ void kopt_copy_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N> __device__ __forceinline__ void kopt_copy_wait_newest() {
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}
#endif
)cuda";

/// The online normaliser of OnlineSoftmax.h, a 16-byte vector at a time
/// (one rescale a vector).
static constexpr llvm::StringLiteral kNormaliser = R"cuda(
float m = -KOPT_INF_F, s = 0.0f;
auto absorb = [&](const float4 v) {
  const float top = kopt_maximumf(kopt_maximumf(v.x, v.y),
                                  kopt_maximumf(v.z, v.w));
  const float grown = kopt_maximumf(m, top);
  const float rescale = grown == m ? 1.0f : expf(m - grown);
  s = s * rescale + ((expf(v.x - grown) + expf(v.y - grown)) +
                     (expf(v.z - grown) + expf(v.w - grown)));
  m = grown;
};
)cuda";

namespace {
/// A block's share of a row in 16-byte vectors: thread threadIdx.x takes
/// vectors threadIdx.x + i * threads, i < perThread, in `stages` commit
/// groups of consecutive i. The blocks take equal shares, but for the last
/// where the row's vectors do not divide among them: it takes what is left
/// (a cluster of 7 blocks over 393,216 elements). Emits the loops both
/// softmax kernels run over the share.
class StagedShare {
public:
  /// Fails unless the row is whole vectors and leaves the last of `blocks`
  /// some, the block is whole warps (its pair is merged by warps, then by
  /// the first warp over them) and a block's share fits `maxSharedBytes`.
  static llvm::Expected<StagedShare> create(unsigned blocks, unsigned threads,
                                            int64_t length,
                                            int64_t maxSharedBytes) {
    if (length % 4 != 0)
      return llvm::createStringError(
          "a row of %lld is not a whole number of 16-byte vectors",
          static_cast<long long>(length));
    int64_t vectors = (length / 4 + blocks - 1) / blocks;
    int64_t lastVectors = length / 4 - int64_t(blocks - 1) * vectors;
    if (lastVectors <= 0)
      return llvm::createStringError(
          "a row of %lld leaves the last of %u blocks nothing",
          static_cast<long long>(length), blocks);
    if (threads < 32 || threads > 1024 || threads % 32 != 0)
      return llvm::createStringError(
          "blocks of %u threads: whole warps, 1024 threads at most, are "
          "needed",
          threads);
    int64_t share = 4 * vectors;
    if (share * 4 > maxSharedBytes)
      return llvm::createStringError(
          "a block's %lld bytes of the row exceed its shared memory",
          static_cast<long long>(share * 4));
    return StagedShare(threads, share, lastVectors);
  }

  /// Declares the block's vectors (`kopt_vectors`) where the last block's
  /// differ, `rank` being the block's place in the row.
  void emitDeclarations(CodeWriter &code, llvm::StringRef rank,
                        unsigned blocks) const {
    if (lastVectors != vectors)
      code.line("const int kopt_vectors = " + rank.str() +
                " == " + std::to_string(blocks - 1) + "u ? " +
                std::to_string(lastVectors) + " : " + std::to_string(vectors) +
                ";");
  }

  /// Elements of the row a block holds.
  int64_t getShare() const { return share; }

  /// `statement` for each of the thread's vectors `v` in `stage`.
  void forStage(CodeWriter &code, int64_t stage,
                llvm::StringRef statement) const {
    code.line("#pragma unroll");
    code.line("for (int i = " + std::to_string(stageStart(stage)) + "; i < " +
              std::to_string(stageStart(stage + 1)) + "; ++i) {");
    code.indent();
    code.line("const int v = threadIdx.x + i * " + std::to_string(threads) +
              ";");
    if (lastVectors != vectors)
      code.line("if (v >= kopt_vectors) break;");
    else if (vectors % threads != 0)
      code.line("if (v >= " + std::to_string(vectors) + ") break;");
    code.lines(statement);
    code.dedent();
    code.line("}");
  }

  /// Every copy of the share from `from` issued, a commit group a stage.
  void emitCopies(CodeWriter &code, llvm::StringRef from) const {
    for (int64_t stage = 0; stage < stages; ++stage) {
      forStage(code, stage,
               "kopt_copy_vector_async(kept + v, " + from.str() + " + v);");
      code.line("kopt_copy_commit();");
    }
  }

  /// The row's statistics m and s declared and folded from the share as
  /// each stage lands: with `keep`, by emitKeepingFolds, else by the online
  /// normaliser a vector at a time (emitFolds).
  void emitStatistics(CodeWriter &code, bool keep) const {
    if (keep) {
      code.comment("Each stage's exponentials taken once, as it lands, and "
                   "kept in place of its elements.");
      emitKeepingFolds(code);
      return;
    }
    code.lines(kNormaliser);
    code.comment("Each stage folded as it lands: a thread reads only what "
                 "it copied itself, so no barrier is needed.");
    emitFolds(code);
  }

  /// Each stage folded into the normaliser as soon as it lands.
  void emitFolds(CodeWriter &code) const {
    for (int64_t stage = 0; stage < stages; ++stage) {
      code.line("kopt_copy_wait_newest<" + std::to_string(stages - 1 - stage) +
                ">();");
      forStage(code, stage, "absorb(kept[v]);");
    }
  }

  /// Each stage, as it lands, first searched for its maximum, then its
  /// exponentials at the running maximum m taken once, added to s and
  /// written back over the stage; the stage's m kept (kopt_stage_max) for
  /// emitOutputs with `kept`. A stage whose running maximum is -inf is all
  /// -inf: its exponentials are taken at 0, so that they are 0, not NaN.
  void emitKeepingFolds(CodeWriter &code) const {
    code.line("float m = -KOPT_INF_F, s = 0.0f;");
    code.line("float kopt_stage_max[" + std::to_string(stages) + "];");
    for (int64_t stage = 0; stage < stages; ++stage) {
      code.line("kopt_copy_wait_newest<" + std::to_string(stages - 1 - stage) +
                ">();");
      code.line("{");
      code.indent();
      code.line("float top = -KOPT_INF_F;");
      forStage(code, stage,
               "const float4 e = kept[v];\n"
               "top = kopt_maximumf(top, kopt_maximumf(kopt_maximumf(e.x, "
               "e.y), kopt_maximumf(e.z, e.w)));");
      code.line("const float grown = kopt_maximumf(m, top);");
      code.line("s = grown == m ? s : s * expf(m - grown);");
      code.line("m = grown;");
      code.line("kopt_stage_max[" + std::to_string(stage) + "] = grown;");
      code.line("const float shift = grown == -KOPT_INF_F ? 0.0f : grown;");
      forStage(code, stage,
               "float4 e = kept[v];\n"
               "e.x = expf(e.x - shift);\n"
               "e.y = expf(e.y - shift);\n"
               "e.z = expf(e.z - shift);\n"
               "e.w = expf(e.w - shift);\n"
               "s += (e.x + e.y) + (e.z + e.w);\n"
               "kept[v] = e;");
      code.dedent();
      code.line("}");
    }
  }

  /// exp(x - m) * inverse stored to `y`; where `more`, each vector's copy
  /// of the next row from `next` is issued into the place it was read from.
  /// With `kept`, the shared memory holds exp(x - m_stage) from
  /// emitKeepingFolds and a stage's outputs are those times one factor
  /// exp(m_stage - m) * inverse: an exponential a stage, not an element.
  void emitOutputs(CodeWriter &code, llvm::StringRef next,
                   bool kept = false) const {
    for (int64_t stage = 0; stage < stages; ++stage) {
      std::string scale = "inverse";
      if (kept) {
        code.line("const float factor" + std::to_string(stage) +
                  " = expf(kopt_stage_max[" + std::to_string(stage) +
                  "] - m) * inverse;");
        scale = "factor" + std::to_string(stage);
      }
      std::string scaled =
          kept ? "e.x *= " + scale + ";\n" + "e.y *= " + scale + ";\n" +
                     "e.z *= " + scale + ";\n" + "e.w *= " + scale + ";\n"
               : "e.x = expf(e.x - m) * inverse;\n"
                 "e.y = expf(e.y - m) * inverse;\n"
                 "e.z = expf(e.z - m) * inverse;\n"
                 "e.w = expf(e.w - m) * inverse;\n";
      forStage(code, stage,
               "float4 e = kept[v];\n" + scaled +
                   "y[v] = e;\n"
                   "if (more)\n"
                   "  kopt_copy_vector_async(kept + v, " +
                   next.str() + " + v);");
      code.line("if (more)");
      code.line("  kopt_copy_commit();");
    }
  }

private:
  StagedShare(unsigned threads, int64_t share, int64_t lastVectors)
      : threads(threads), share(share), vectors(share / 4),
        lastVectors(lastVectors), perThread((vectors + threads - 1) / threads),
        stages(std::min<int64_t>(4, perThread)) {}

  int64_t stageStart(int64_t stage) const { return stage * perThread / stages; }

  unsigned threads;
  int64_t share, vectors, lastVectors, perThread, stages;
};
} // namespace

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
  code.line("const float inverse = 1.0f / s;");
  code.line("const bool more = next < " + n + ";");
  code.line("float4 *__restrict__ y = reinterpret_cast<float4 *>(" +
            output.str() + " + row * " + l + " + offset);");
  code.line("const float4 *__restrict__ following = reinterpret_cast<const "
            "float4 *>(" +
            input.str() + " + (more ? next : 0LL) * " + l + " + offset);");
  staged->emitOutputs(code, "following", options.keepExponentials);
  code.line("row = next;");
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
  code.line("const float inverse = 1.0f / s;");
  code.line("const bool more = next < " + n + ";");
  code.line("float4 *__restrict__ y = reinterpret_cast<float4 *>(" +
            output.str() + " + row * " + l + " + offset);");
  code.line("const float4 *__restrict__ following = reinterpret_cast<const "
            "float4 *>(" +
            input.str() + " + (more ? next : 0LL) * " + l + " + offset);");
  staged->emitOutputs(code, "following", options.keepExponentials);
  code.line("row = next;");
  code.dedent();
  code.line("}");
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  result.kernels.push_back(std::move(kernel));
  return result;
}
