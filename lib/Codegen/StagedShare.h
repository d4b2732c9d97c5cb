//===- StagedShare.h - A block's share of a long row, staged ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What the read-once softmax kernels share (ClusterSoftmax.h,
// GroupSoftmax.h): a block's share of a row copied into shared memory in
// commit groups, its statistics folded as each lands, and its outputs
// written as the next row's copies go into the same places.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_STAGEDSHARE_H
#define KOPT_LIB_CODEGEN_STAGEDSHARE_H

#include "RowParts.h"

#include "kopt/Codegen/CudaEmitter.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace mlir::kopt {

/// Copies of 16 bytes in commit groups, and a wait for all but the newest
/// N groups of the thread's own copies (sm_80).
inline constexpr llvm::StringLiteral kStagedCopyHelpers = R"cuda(
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
inline constexpr llvm::StringLiteral kNormaliser = R"cuda(
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

/// A block's share of a row in 16-byte vectors: thread threadIdx.x takes
/// vectors threadIdx.x + i * threads, i < perThread, in `stages` commit
/// groups of consecutive i. The blocks take equal shares, starting on
/// 128-byte lines where the rows do (RowParts.h), but for the last where
/// the row's vectors do not divide among them: it takes what is left (a
/// cluster of 7 blocks over 393,216 elements). Emits the loops both
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
    // On lines where they fit, else as even as they come.
    int64_t vectors = getLinePartLength(length / 4, blocks, kLineVectors, 1,
                                        maxSharedBytes / 16);
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

  /// The claiming kernels' end of a row: its outputs scaled by the sum's
  /// reciprocal and written to row `row` of `output` while the copies of
  /// row `next` of `input` (where it is one of the `rows`) go into their
  /// places (emitOutputs), then `row` moved on to `next`.
  void emitClaimedRowOutputs(CodeWriter &code, llvm::StringRef input,
                             llvm::StringRef output, int64_t rows,
                             int64_t length, bool kept) const {
    std::string l = std::to_string(length) + "LL";
    code.line("const float inverse = 1.0f / s;");
    code.line("const bool more = next < " + std::to_string(rows) + "LL;");
    code.line("float4 *__restrict__ y = reinterpret_cast<float4 *>(" +
              output.str() + " + row * " + l + " + offset);");
    code.line("const float4 *__restrict__ following = reinterpret_cast<const "
              "float4 *>(" +
              input.str() + " + (more ? next : 0LL) * " + l + " + offset);");
    emitOutputs(code, "following", kept);
    code.line("row = next;");
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

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_STAGEDSHARE_H
