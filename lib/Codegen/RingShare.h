//===- RingShare.h - A block's share of a long row, in a ring ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// StagedShare.h's share of a row, its exponentials kept, in a ring of
// shared-memory slots larger than the share: each thread owns `capacity`
// slots (slot j at kept[threadIdx.x + j * threads]) and a row's vector i
// sits in slot (base + i) % capacity, the next row's base `perThread`
// further on. The slots past this row's are free as the row begins, so
// the next row's first vectors (`early`) are copied there before this
// row's statistics are waited for: the block has copies in flight while
// the last of its row lands, while it folds it and while the group
// exchanges its pairs, when a block holding only one row has none. The
// rest of the next row (`late`) goes where this row's outputs were read
// from, as they are written.
//
// Commit groups, in the order issued: a row's early copies (as the row
// before it begins), then its late copies in `lateStages` groups (as the
// row before it is written). A row's statistics wait for its early group
// with the next row's early group and its own late groups newer, then for
// each late group in turn.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_RINGSHARE_H
#define KOPT_LIB_CODEGEN_RINGSHARE_H

#include "RowParts.h"

#include "kopt/Codegen/CudaEmitter.h"

#include "llvm/Support/Error.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace mlir::kopt {

class RingShare {
public:
  /// Fails unless the row is whole vectors that leave the last of `blocks`
  /// some, the block is whole warps, and the ring holds a share and more.
  static llvm::Expected<RingShare> create(unsigned blocks, unsigned threads,
                                          int64_t length,
                                          int64_t maxSharedBytes) {
    if (length % 4 != 0)
      return llvm::createStringError(
          "a row of %lld is not a whole number of 16-byte vectors",
          static_cast<long long>(length));
    if (threads < 32 || threads > 1024 || threads % 32 != 0)
      return llvm::createStringError(
          "blocks of %u threads: whole warps, 1024 threads at most, are "
          "needed",
          threads);
    int64_t vectors = getLinePartLength(length / 4, blocks, kLineVectors);
    int64_t lastVectors = length / 4 - int64_t(blocks - 1) * vectors;
    if (lastVectors <= 0)
      return llvm::createStringError(
          "a row of %lld leaves the last of %u blocks nothing",
          static_cast<long long>(length), blocks);
    int64_t perThread = (vectors + threads - 1) / threads;
    int64_t capacity = maxSharedBytes / (16 * int64_t(threads));
    if (capacity <= perThread)
      return llvm::createStringError(
          "a ring of %lld slots a thread holds no more than a share of %lld",
          static_cast<long long>(capacity), static_cast<long long>(perThread));
    return RingShare(threads, vectors, lastVectors, perThread, capacity);
  }

  /// Elements of the row a block holds, and the ring's bytes.
  int64_t getShare() const { return vectors * 4; }
  int64_t getSharedBytes() const { return capacity * threads * 16; }
  int64_t getEarly() const { return early; }

  /// Declares the block's vectors where the last block's differ, and the
  /// ring's base for the first row.
  void emitDeclarations(CodeWriter &code, llvm::StringRef rank,
                        unsigned blocks) const {
    if (lastVectors != vectors)
      code.line("const int kopt_vectors = " + rank.str() +
                " == " + std::to_string(blocks - 1) + "u ? " +
                std::to_string(lastVectors) + " : " + std::to_string(vectors) +
                ";");
    code.line("int kopt_base = 0;");
  }

  /// The first row's copies from `from`, early and late groups as if the
  /// row before had issued them.
  void emitFirstCopies(CodeWriter &code, llvm::StringRef from) const {
    forRange(code, 0, early, "0",
             "kopt_copy_vector_async(kept + slot, " + from.str() + " + v);");
    code.line("kopt_copy_commit();");
    for (int64_t k = 0; k < lateStages; ++k) {
      forRange(code, early + lateStart(k), early + lateStart(k + 1), "0",
               "kopt_copy_vector_async(kept + slot, " + from.str() + " + v);");
      code.line("kopt_copy_commit();");
    }
  }

  /// The next row's early copies from `from` into the slots past this
  /// row's, where `more`; the group is committed either way, so that the
  /// waits count the same groups in every row.
  void emitEarlyCopies(CodeWriter &code, llvm::StringRef from) const {
    code.line("if (more) {");
    code.indent();
    forRange(code, 0, early, "kopt_base + " + std::to_string(perThread),
             "kopt_copy_vector_async(kept + slot, " + from.str() + " + v);");
    code.dedent();
    code.line("}");
    code.line("kopt_copy_commit();");
  }

  /// The row's m and s, each stage's exponentials taken once as it lands
  /// and kept in its slots (StagedShare::emitKeepingFolds's folds); the
  /// stage's maximum kept in kopt_stage_max.
  void emitStatistics(CodeWriter &code) const {
    code.line("float m = -KOPT_INF_F, s = 0.0f;");
    code.line("float kopt_stage_max[" + std::to_string(lateStages + 1) + "];");
    for (int64_t stage = 0; stage <= lateStages; ++stage) {
      code.line("kopt_copy_wait_newest<" +
                std::to_string(lateStages + 1 - stage) + ">();");
      code.line("{");
      code.indent();
      code.line("float top = -KOPT_INF_F;");
      forStage(code, stage, "kopt_base",
               "const float4 e = kept[slot];\n"
               "top = kopt_maximumf(top, kopt_maximumf(kopt_maximumf(e.x, "
               "e.y), kopt_maximumf(e.z, e.w)));");
      code.line("const float grown = kopt_maximumf(m, top);");
      code.line("s = grown == m ? s : s * expf(m - grown);");
      code.line("m = grown;");
      code.line("kopt_stage_max[" + std::to_string(stage) + "] = grown;");
      code.line("const float shift = grown == -KOPT_INF_F ? 0.0f : grown;");
      forStage(code, stage, "kopt_base",
               "float4 e = kept[slot];\n"
               "e.x = expf(e.x - shift);\n"
               "e.y = expf(e.y - shift);\n"
               "e.z = expf(e.z - shift);\n"
               "e.w = expf(e.w - shift);\n"
               "s += (e.x + e.y) + (e.z + e.w);\n"
               "kept[slot] = e;");
      code.dedent();
      code.line("}");
    }
  }

  /// The row's outputs to `y`, each stage's kept exponentials times one
  /// factor; while `more`, the next row's late vectors from `next` copied
  /// into the slots just read, a commit group a late stage (committed
  /// either way), then the base moved on to the next row's.
  void emitOutputs(CodeWriter &code, llvm::StringRef next) const {
    for (int64_t stage = 0; stage <= lateStages; ++stage)
      code.line("const float factor" + std::to_string(stage) +
                " = expf(kopt_stage_max[" + std::to_string(stage) +
                "] - m) * inverse;");
    // This row's vectors [0, perThread - early) carry the next row's late
    // ones [early, perThread), in its late stages' groups.
    auto factorOf = [&](int64_t i) {
      int64_t stage = 0;
      while (stage < lateStages && i >= early + lateStart(stage))
        ++stage;
      return "factor" + std::to_string(stage);
    };
    auto emitOutput = [&](int64_t i, bool carry) {
      code.line("{");
      code.indent();
      emitSlot(code, "kopt_base", std::to_string(i));
      code.line("const int v = threadIdx.x + " + std::to_string(i) + " * " +
                std::to_string(threads) + ";");
      std::string body = "float4 e = kept[slot];\n"
                         "const float f = " +
                         factorOf(i) +
                         ";\n"
                         "e.x *= f;\n"
                         "e.y *= f;\n"
                         "e.z *= f;\n"
                         "e.w *= f;\n"
                         "y[v] = e;";
      code.line("if (" + bound("v") + ") {");
      code.indent();
      code.lines(body);
      code.dedent();
      code.line("}");
      if (carry) {
        std::string w = "v + " + std::to_string(early * threads);
        code.line("if (more && " + bound(w) + ")");
        code.line("  kopt_copy_vector_async(kept + slot, " + next.str() +
                  " + " + w + ");");
      }
      code.dedent();
      code.line("}");
    };
    for (int64_t k = 0; k < lateStages; ++k) {
      for (int64_t i = lateStart(k); i < lateStart(k + 1); ++i)
        emitOutput(i, true);
      code.line("kopt_copy_commit();");
    }
    for (int64_t i = perThread - early; i < perThread; ++i)
      emitOutput(i, false);
    code.line("kopt_base += " + std::to_string(perThread) + ";");
    code.line("if (kopt_base >= " + std::to_string(capacity) +
              ") kopt_base -= " + std::to_string(capacity) + ";");
  }

private:
  RingShare(unsigned threads, int64_t vectors, int64_t lastVectors,
            int64_t perThread, int64_t capacity)
      : threads(threads), vectors(vectors), lastVectors(lastVectors),
        perThread(perThread), capacity(capacity),
        early(std::min(capacity - perThread, perThread)),
        lateStages(std::min<int64_t>(4, perThread - early)) {}

  /// The start of late stage k in the late vectors [0, perThread - early).
  int64_t lateStart(int64_t k) const {
    return lateStages ? k * (perThread - early) / lateStages : 0;
  }

  /// Whether vector `v` of the row is the block's.
  std::string bound(llvm::StringRef v) const {
    return v.str() + " < " +
           (lastVectors != vectors ? std::string("kopt_vectors")
                                   : std::to_string(vectors));
  }

  /// `slot`, the place of the row's vector `i` from `base`.
  void emitSlot(CodeWriter &code, llvm::StringRef base,
                llvm::StringRef i) const {
    std::string k = std::to_string(capacity);
    code.line("int j = " + base.str() + " + " + i.str() + ";");
    code.line("if (j >= " + k + ") j -= " + k + ";");
    code.line("const int slot = threadIdx.x + j * " + std::to_string(threads) +
              ";");
  }

  /// `statement` for each of the thread's vectors i in [from, to) of the
  /// row based at `base`, with its vector `v` and place `slot`.
  void forRange(CodeWriter &code, int64_t from, int64_t to,
                llvm::StringRef base, llvm::StringRef statement) const {
    if (from >= to)
      return;
    code.line("#pragma unroll");
    code.line("for (int i = " + std::to_string(from) + "; i < " +
              std::to_string(to) + "; ++i) {");
    code.indent();
    code.line("const int v = threadIdx.x + i * " + std::to_string(threads) +
              ";");
    code.line("if (!(" + bound("v") + ")) break;");
    emitSlot(code, base, "i");
    code.lines(statement);
    code.dedent();
    code.line("}");
  }

  /// A stage's vectors: 0 the early ones, k + 1 late stage k.
  void forStage(CodeWriter &code, int64_t stage, llvm::StringRef base,
                llvm::StringRef statement) const {
    if (stage == 0)
      forRange(code, 0, early, base, statement);
    else
      forRange(code, early + lateStart(stage - 1), early + lateStart(stage),
               base, statement);
  }

  unsigned threads;
  int64_t vectors, lastVectors, perThread, capacity, early, lateStages;
};

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_RINGSHARE_H
