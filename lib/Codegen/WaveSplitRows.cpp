//===- WaveSplitRows.cpp - Split rows read and written in waves -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RowParts.h"
#include "SplitRowPasses.h"

#include "kopt/Codegen/CudaEmitter.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::kopt;

/// The counts' plan temporary.
static constexpr llvm::StringLiteral kCountsParam = "waverows";

/// A row's combined partial for a pass written to combine one partial a
/// row (the writers' totals, combined once for the whole block).
static constexpr llvm::StringLiteral kWaveHelpers = R"cuda(
#ifndef KOPT_WAVE_HELPERS
#define KOPT_WAVE_HELPERS
template <typename T> struct KoptRowTotal {
  T value;
  __device__ __forceinline__ T operator[](long long) const { return value; }
};
// 16-byte loads: one whose lines L2 keeps before others (evict_last), one
// reading them for the last time (streaming). Not volatile, so that the
// same load in each of a group's four lanes is made once.
__device__ __forceinline__ KoptVec<float, 4> kopt_load_keep4(const float *p) {
  KoptVec<float, 4> v;
  asm("{\n\t.reg .b64 policy;\n\t"
      "createpolicy.fractional.L2::evict_last.b64 policy, 1.0;\n\t"
      "ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], policy;\n\t}"
      : "=f"(v.v[0]), "=f"(v.v[1]), "=f"(v.v[2]), "=f"(v.v[3]) : "l"(p));
  return v;
}
// A 16-byte load under an L2 policy made by createpolicy.
__device__ __forceinline__ KoptVec<float, 4>
kopt_load_policy4(const float *p, unsigned long long policy) {
  KoptVec<float, 4> v;
  asm("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
      : "=f"(v.v[0]), "=f"(v.v[1]), "=f"(v.v[2]), "=f"(v.v[3])
      : "l"(p), "l"(policy));
  return v;
}
__device__ __forceinline__ KoptVec<float, 4> kopt_load_last4(const float *p) {
  KoptVec<float, 4> v;
  asm("ld.global.cs.v4.f32 {%0, %1, %2, %3}, [%4];"
      : "=f"(v.v[0]), "=f"(v.v[1]), "=f"(v.v[2]), "=f"(v.v[3]) : "l"(p));
  return v;
}
#endif
)cuda";

/// Emits `body`, a pass written for a block of `threads` threads, where
/// only `threads` threads of a larger block run it: inside it `threadIdx`
/// names the thread's index in its group (`kopt_group_thread`, which the
/// caller defines) and `__syncthreads()` the group's own named barrier
/// `barrier`, so that the other group is neither counted nor waited for.
static void emitGroupPass(CodeWriter &code, llvm::StringRef body,
                          unsigned barrier, unsigned threads) {
  std::string sync = "asm volatile(\"bar.sync " + std::to_string(barrier) +
                     ", " + std::to_string(threads) + ";\" ::: \"memory\")";
  code.line("#define threadIdx kopt_group_thread");
  code.line("#define __syncthreads() " + sync);
  code.line("{");
  code.indent();
  code.lines(body);
  code.dedent();
  code.line("}");
  code.line("#undef __syncthreads");
  code.line("#undef threadIdx");
}

llvm::Expected<WaveSplitRowKernels> mlir::kopt::generateWaveSplitRowKernels(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    int64_t numRows, int64_t rowLength, const WaveSplitRowOptions &options,
    const std::function<std::string(unsigned)> &partialName,
    std::vector<PartialBuffer> &partials) {
  const unsigned readers = options.readers, writers = options.writers;
  const int64_t chunks = options.chunks;
  const bool claim = options.claimSlots > 0;
  if (readers % 32 || writers % 32 || readers + writers > 1024 ||
      options.ahead < 1 || chunks < 2)
    return llvm::createStringError(
        "a wave split needs whole warps of readers and writers, at most "
        "1024 threads, a lead of a row or more and two chunks or more");
  if (claim && options.holdBudget <= 0)
    return llvm::createStringError(
        "a claiming wave split holds its chunks in shared memory");
  auto plan = planSplitRows(context, outputs, leafOf, numRows, rowLength,
                            readers, chunks, partialName);
  if (!plan)
    return plan.takeError();
  if (plan->levels.size() != 1)
    return llvm::createStringError(
        "a wave split reads a row once: its reductions must take one pass");
  partials = plan->partials;

  // The held slots: each a chunk's 16-byte groups, the one of row r at
  // r % slots (claiming: the block's n-th claim at n % slots).
  const bool hold = options.holdBudget > 0;
  const int64_t slots = claim ? options.claimSlots : options.ahead + 1;
  // On lines where the held slots still fit, else as even as they come.
  const int64_t chunkLength = getLinePartLength(
      rowLength, chunks, kLineElements, rowLength % 4 == 0 ? 4 : 1,
      hold ? options.holdBudget / (slots * 4) : INT64_MAX);
  const int64_t holdBytes = hold ? slots * chunkLength * 4 : 0;
  if (hold && (rowLength % 4 || holdBytes > options.holdBudget))
    return llvm::createStringError(
        "a held wave split needs rows of whole 16-byte groups and its %lld "
        "rows' chunks (%lld bytes) to fit a block's shared memory",
        static_cast<long long>(slots), static_cast<long long>(holdBytes));

  SplitPassOptions passOptions;
  passOptions.streamStores = true;
  // The readers' loads ask L2 to keep the row for the writers, which read
  // it for the last time (streaming) and keep the operands every row reads
  // again (LayerNorm's weights).
  passOptions.loadFunction = "kopt_load_keep";
  passOptions.unroll = options.readUnroll;
  // 16-byte groups where the chunks are whole groups (chunkLength below).
  passOptions.wide = rowLength % 4 == 0;
  passOptions.vectorLoadFunction = "kopt_load_keep4";
  passOptions.broadcastVectorLoadFunction = "kopt_load_keep4";
  if (hold) {
    // Held rows are read once from L2 (evict_first) and put in the slot
    // (the kernel's callables below).
    passOptions.vectorLoadFunction = "kopt_hold_load4";
    passOptions.rowHold = TensorEmitter::RowHold{"kopt_hold_put", ""};
  }
  auto read = emitSplitPass(context, *plan, 0, outputs, leafOf, numRows,
                            rowLength, readers, chunks, passOptions);
  if (!read)
    return read.takeError();
  // The writers' pass reads each reduction's total for the row, which
  // the kernel combines once for the block before it (one partial a row).
  auto total = [](llvm::StringRef name) { return "kopt_total_" + name.str(); };
  passOptions.loadFunction = "__ldcs";
  passOptions.broadcastLoadFunction = "kopt_load_keep";
  passOptions.unroll = options.writeUnroll;
  passOptions.vectorLoadFunction = "kopt_load_last4";
  passOptions.combineTogether = false;
  passOptions.partialReader = total;
  if (hold)
    passOptions.rowHold = TensorEmitter::RowHold{"", "kopt_held_get"};
  auto write = emitSplitPass(context, *plan, 1, outputs, leafOf, numRows,
                             rowLength, writers, 1, passOptions);
  if (!write)
    return write.takeError();
  // What the writers read from the slots must be what the readers put
  // there: one row operand, read by the readers in batches only.
  if (hold && (read->unheldRowLoads || read->heldRowLoads.size() != 1 ||
               llvm::any_of(write->heldRowLoads, [&](const std::string &load) {
                 return load != read->heldRowLoads.front();
               })))
    return llvm::createStringError(
        "a held wave split needs one row operand read as 16-byte vectors by "
        "both passes");
  std::vector<ReductionCombiner> combiners;
  for (auto [reduction, partial] :
       llvm::zip(plan->reductions, plan->partials)) {
    std::optional<ReductionCombiner> combiner =
        getReductionCombiner(reduction.result.getDefiningOp());
    if (!combiner || (partial.elementType != ElementType::F32 &&
                      partial.elementType != ElementType::F64))
      return llvm::createStringError(
          "a wave split combines f32 and f64 partials only");
    combiners.push_back(*combiner);
  }
  std::vector<LeafTensor> leaves;
  for (const SplitPass *pass : {&*read, &*write})
    for (const LeafTensor &leaf : pass->leaves)
      if (!llvm::StringRef(leaf.param).starts_with("kopt_total_") &&
          llvm::none_of(leaves, [&](const LeafTensor &known) {
            return known.param == leaf.param;
          }))
        leaves.push_back(leaf);
  if (options.l2Budget > 0) {
    // The rows in L2 at once (the one written and those read ahead, f32 or
    // wider), and every operand that is not a row (all of it, read again
    // each row). Claimed chunks wait on chip, not in L2, but the same
    // budget keeps the claiming form from a LayerNorm over rows of 4M with
    // 32 MB of weights, where on an H100 it took 384 us against the split's
    // 294 (bench/results/2026-12-06-h100-claim-rows.md).
    int64_t bytes = (options.ahead + 1) * rowLength * 4;
    for (const LeafTensor &leaf : leaves) {
      int64_t elements = 1;
      for (int64_t extent : leaf.shape)
        elements *= extent;
      if (elements != numRows * rowLength)
        bytes += elements * getElementBytes(leaf.elementType);
    }
    if (bytes > options.l2Budget)
      return llvm::createStringError(
          "a wave split's rows in flight and operands read every row (%lld "
          "bytes) do not fit its L2 budget",
          static_cast<long long>(bytes));
  }

  std::string r = std::to_string(readers), w = std::to_string(writers);
  std::string rows = std::to_string(numRows) + "LL";
  std::string s = std::to_string(chunks);
  std::string counts = kCountsParam.str();

  GeneratedKernel kernel;
  kernel.entry = entry.str();
  std::string signature = printKernelSignature(kernel.entry, readers + writers,
                                               leaves, outputs, kernel.args);
  signature.pop_back();
  for (const PartialBuffer &partial : partials) {
    signature += ", " + getCudaStorageType(partial.elementType).str() +
                 " *__restrict__ " + partial.param;
    kernel.args.push_back(partial.param);
  }
  signature += ", long long *__restrict__ " + counts + ")";
  kernel.args.push_back(counts);

  CodeWriter code;
  code.lines(getLoadKeepHelper());
  code.lines(getDeadlineHelper());
  code.lines(getPipelineHelpers());
  code.lines(kWaveHelpers);
  code.comment(comment.str() + " (split rows, read and written in waves)");
  code.line(signature + " {");
  code.indent();
  // A chunk a block on a device that holds the whole grid at once (132
  // SMs); where the cooperative launch cuts it (fewer SMs, a MIG slice)
  // each block takes every gridDim.x-th chunk, so that none is left undone.
  auto defineChunkRange = [&] {
    code.line("const long long chunkStart = chunk * " +
              std::to_string(chunkLength) + "LL;");
    code.line("const long long chunkEnd = min(chunkStart + " +
              std::to_string(chunkLength) + "LL, " + std::to_string(rowLength) +
              "LL);");
  };
  auto openChunkLoop = [&] {
    code.line("for (long long chunk = blockIdx.x; chunk < " + s +
              "LL; chunk += gridDim.x) {");
    code.indent();
    defineChunkRange();
  };
  auto closeChunkLoop = [&] {
    code.dedent();
    code.line("}");
  };
  // The writers' totals of the row's partials.
  std::vector<std::string> types;
  for (const PartialBuffer &partial : partials)
    types.push_back(getCudaStorageType(partial.elementType).str());
  // The readers' chunk done, once thread 0 has stored its partials.
  auto emitChunkCounted = [&] {
    code.comment("The chunk's partials stored (by this thread): counted done, "
                 "a release.");
    code.line("if (threadIdx.x == 0)");
    code.line("  asm volatile(\"red.release.gpu.global.add.u64 [%0], 1;\" :: "
              "\"l\"(" +
              counts + " + row) : \"memory\");");
  };
  // The writers' group, after the readers' (`threadIdx.x < readers`).
  auto openWriters = [&] {
    code.line("} else {");
    code.indent();
    code.line("const uint3 kopt_group_thread = make_uint3(threadIdx.x - " + r +
              "u, 0u, 0u);");
    code.line("const unsigned kopt_warp = (threadIdx.x - " + r +
              "u) >> 5, kopt_lane = threadIdx.x & 31u;");
    for (auto [k, type] : llvm::enumerate(types))
      code.line("__shared__ " + type + " kopt_sum" + std::to_string(k) + ";");
  };
  // The writers' release of what they wrote (`done` items finished), and
  // the ends of their loop and their branch.
  auto closeWriters = [&](const std::string &done) {
    code.line("asm volatile(\"bar.sync 2, " + w + ";\" ::: \"memory\");");
    code.line("if (threadIdx.x == " + r + "u) kopt_written = " + done + ";");
    code.dedent();
    code.line("}");
    code.dedent();
    code.line("}");
  };
  // The writers' wait for every chunk of `row`, then its totals in the
  // `kopt_sum` slots.
  auto emitGather = [&] {
    code.comment("Every chunk of the row counted (an acquire).");
    code.line("if (threadIdx.x == " + r + "u) kopt_wait_count(" + counts +
              " + row, " + s + "LL);");
    code.line("asm volatile(\"bar.sync 2, " + w + ";\" ::: \"memory\");");
    code.comment("Each reduction's partials combined by a warp, every "
                 "lane's loads in flight together, in one fixed order: "
                 "every block gets the same totals, in every run.");
    unsigned warps = writers / 32;
    std::string perLane = std::to_string((chunks + 31) / 32);
    for (auto [k, partial] : llvm::enumerate(partials)) {
      const ReductionCombiner &combiner = combiners[k];
      std::string sum = "kopt_sum" + std::to_string(k);
      code.line("if (kopt_warp == " + std::to_string(k % warps) + "u) {");
      code.indent();
      code.line(types[k] + " kopt_acc = " + combiner.identity + ";");
      code.line("#pragma unroll");
      code.line("for (unsigned kopt_u = 0; kopt_u < " + perLane +
                "u; ++kopt_u) {");
      code.line("  const unsigned q = kopt_lane + 32u * kopt_u;");
      code.line("  const " + types[k] + " v = __ldcg(" + partial.param +
                " + row * " + s + "LL + min(q, " + std::to_string(chunks - 1) +
                "u));");
      code.line("  kopt_acc = q < " + s + "u ? " +
                combiner.combine("kopt_acc", "v") + " : kopt_acc;");
      code.line("}");
      code.line("for (int o = 16; o > 0; o >>= 1) kopt_acc = " +
                combiner.combine("kopt_acc",
                                 "__shfl_xor_sync(0xffffffffu, kopt_acc, o)") +
                ";");
      code.line("if (kopt_lane == 0) " + sum + " = kopt_acc;");
      code.dedent();
      code.line("}");
    }
    code.line("asm volatile(\"bar.sync 2, " + w + ";\" ::: \"memory\");");
  };
  auto defineTotals = [&] {
    for (auto [k, partial] : llvm::enumerate(partials))
      code.line("const KoptRowTotal<" + types[k] + "> " + total(partial.param) +
                "{kopt_sum" + std::to_string(k) + "};");
  };
  // The claiming form (WaveSplitRowOptions::claimSlots): the readers'
  // n-th claim goes to slot n % slots, and the writers take the slots in
  // the same order.
  auto emitClaimingWaves = [&] {
    const std::string slotsText = std::to_string(slots) + "LL";
    const std::string items = std::to_string(numRows * chunks) + "LL";
    const std::string slotGroups = std::to_string(chunkLength / 4);
    code.comment("Fewer slots in the grid than a row has chunks, and the "
                 "rows held could wait for a chunk no slot is free for.");
    code.line("if ((long long)gridDim.x * " + slotsText + " < " + s +
              "LL) __trap();");
    code.line("extern __shared__ float4 kopt_held_raw[];");
    code.line("KoptVec<float, 4> *const kopt_held = "
              "reinterpret_cast<KoptVec<float, 4> *>(kopt_held_raw);");
    code.line("unsigned long long kopt_evict_first;");
    code.line("asm(\"createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\" "
              ": \"=l\"(kopt_evict_first));");
    code.comment("The block's claims the writers have finished and the "
                 "readers have put in their slots, and the chunk of each "
                 "slot (past the last, none is left).");
    code.line("__shared__ volatile long long kopt_written, kopt_read;");
    code.line("__shared__ long long kopt_item[" + slotsText + "];");
    code.line("if (threadIdx.x == 0) { kopt_written = 0; kopt_read = 0; }");
    code.line("__syncthreads();");
    auto defineItem = [&] {
      code.line("const long long row = kopt_claim / " + s +
                "LL, chunk = "
                "kopt_claim % " +
                s + "LL;");
      defineChunkRange();
      code.line("KoptVec<float, 4> *const kopt_slot = kopt_held + (n % " +
                slotsText + ") * " + slotGroups + "LL;");
    };
    code.line("if (threadIdx.x < " + r + "u) {");
    code.indent();
    code.line(
        "const uint3 kopt_group_thread = make_uint3(threadIdx.x, 0u, 0u);");
    code.comment("A chunk is claimed only once a slot is free for it: a "
                 "claim waiting for a slot could be the chunk the rows in "
                 "every slot wait for. The next claim is made ahead where "
                 "its slot is free already, so that its round trip overlaps "
                 "this chunk's loads.");
    code.line("long long kopt_next = -1;");
    code.line("for (long long n = 0;; ++n) {");
    code.indent();
    code.line("if (threadIdx.x == 0) {");
    code.indent();
    code.line("if (kopt_next < 0) {");
    code.line("  unsigned long long started = 0;");
    code.line("  while (n - kopt_written >= " + slotsText +
              ") kopt_trap_when_late(started);");
    code.line("  kopt_next = (long long)atomicAdd((unsigned long long *)(" +
              counts + " + " + rows + "), 1ull);");
    code.line("}");
    code.line("kopt_item[n % " + slotsText + "] = kopt_next;");
    code.line("kopt_next = kopt_next < " + items +
              " && n + 1 - kopt_written "
              "< " +
              slotsText +
              " ? (long long)atomicAdd((unsigned long "
              "long *)(" +
              counts + " + " + rows + "), 1ull) : -1;");
    code.dedent();
    code.line("}");
    code.comment("Every reader past the claim, and past the last chunk's "
                 "reductions, whose shared memory this one reuses.");
    code.line("asm volatile(\"bar.sync 1, " + r + ";\" ::: \"memory\");");
    code.line("const long long kopt_claim = kopt_item[n % " + slotsText + "];");
    code.line("if (kopt_claim < " + items + ") {");
    code.indent();
    defineItem();
    code.line("auto kopt_hold_load4 = [&](const float *p) { return "
              "kopt_load_policy4(p, kopt_evict_first); };");
    code.line("auto kopt_hold_put = [&](long long g, const KoptVec<float, 4> "
              "&v) { kopt_slot[g] = v; };");
    emitGroupPass(code, read->body, 1, readers);
    emitChunkCounted();
    code.dedent();
    code.line("}");
    code.comment("Every reader's part of the slot in place for the "
                 "writers (or the end of the claims passed on).");
    code.line("asm volatile(\"bar.sync 1, " + r + ";\" ::: \"memory\");");
    code.line("if (threadIdx.x == 0) { __threadfence_block(); kopt_read = n "
              "+ 1; }");
    code.line("if (kopt_claim >= " + items + ") break;");
    code.dedent();
    code.line("}");
    code.dedent();
    openWriters();
    code.line("long long kopt_summed = -1; // the row whose totals are in");
    code.line("for (long long n = 0;; ++n) {");
    code.indent();
    code.line("if (threadIdx.x == " + r + "u) {");
    code.line("  unsigned long long started = 0;");
    code.line("  while (kopt_read <= n) kopt_trap_when_late(started);");
    code.line("}");
    code.line("asm volatile(\"bar.sync 2, " + w + ";\" ::: \"memory\");");
    code.line("const long long kopt_claim = kopt_item[n % " + slotsText + "];");
    code.line("if (kopt_claim >= " + items + ") break;");
    defineItem();
    code.line("if (row != kopt_summed) {");
    code.indent();
    emitGather();
    code.line("kopt_summed = row;");
    code.dedent();
    code.line("}");
    defineTotals();
    code.line("auto kopt_held_get = [&](const float *, long long g) { return "
              "kopt_slot[g]; };");
    emitGroupPass(code, write->body, 2, writers);
    code.comment("Every writer past the slot (and past the totals, which "
                 "the next row's gather overwrites).");
    closeWriters("n + 1");
  };
  if (claim) {
    emitClaimingWaves();
  } else {
    code.comment("Rows the writers have finished: the readers lead them by " +
                 std::to_string(options.ahead) +
                 (hold ? " at most, so that a row's slot is free when read."
                       : " at most, so that L2 still holds a row when it is "
                         "written."));
    code.line("__shared__ volatile long long kopt_written;");
    const std::string slotGroups = std::to_string(chunkLength / 4);
    // Where a block takes more chunks than its first (a cut cooperative
    // grid), the others go through L2 as in the form without slots.
    auto defineHold = [&](bool reader) {
      if (!hold)
        return;
      code.line("const bool kopt_holding = chunk == (long long)blockIdx.x;");
      code.line("KoptVec<float, 4> *const kopt_slot = kopt_held + (row % " +
                std::to_string(slots) + "LL) * " + slotGroups + "LL;");
      if (reader) {
        code.line("const unsigned long long kopt_read_policy = kopt_holding ? "
                  "kopt_evict_first : kopt_evict_last;");
        code.line("auto kopt_hold_load4 = [&](const float *p) { return "
                  "kopt_load_policy4(p, kopt_read_policy); };");
        code.line("auto kopt_hold_put = [&](long long g, const KoptVec<float, "
                  "4> &v) { if (kopt_holding) kopt_slot[g] = v; };");
      } else {
        code.line(
            "auto kopt_held_get = [&](const float *p, long long g) { "
            "return kopt_holding ? kopt_slot[g] : kopt_load_last4(p); };");
      }
    };
    if (hold) {
      code.comment("Each row's chunk from the readers to the writers.");
      code.line("extern __shared__ float4 kopt_held_raw[];");
      code.line("KoptVec<float, 4> *const kopt_held = "
                "reinterpret_cast<KoptVec<float, 4> *>(kopt_held_raw);");
      code.line("unsigned long long kopt_evict_first, kopt_evict_last;");
      code.line("asm(\"createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\" "
                ": \"=l\"(kopt_evict_first));");
      code.line("asm(\"createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\" "
                ": \"=l\"(kopt_evict_last));");
    }
    code.line("if (threadIdx.x == 0) kopt_written = 0;");
    code.line("__syncthreads();");
    code.line("if (threadIdx.x < " + r + "u) {");
    code.indent();
    code.line(
        "const uint3 kopt_group_thread = make_uint3(threadIdx.x, 0u, 0u);");
    code.line("for (long long row = 0; row < " + rows + "; ++row) {");
    code.indent();
    code.line("if (threadIdx.x == 0) {");
    code.line("  unsigned long long started = 0;");
    code.line("  while (row - kopt_written > " + std::to_string(options.ahead) +
              "LL) kopt_trap_when_late(started);");
    code.line("}");
    openChunkLoop();
    code.comment("Every reader past the row's throttle, and past the last "
                 "chunk's reductions, whose shared memory this one reuses.");
    code.line("asm volatile(\"bar.sync 1, " + r + ";\" ::: \"memory\");");
    defineHold(true);
    emitGroupPass(code, read->body, 1, readers);
    emitChunkCounted();
    closeChunkLoop();
    code.dedent();
    code.line("}");
    code.dedent();
    openWriters();
    code.line("for (long long row = 0; row < " + rows + "; ++row) {");
    code.indent();
    emitGather();
    defineTotals();
    openChunkLoop();
    defineHold(false);
    emitGroupPass(code, write->body, 2, writers);
    closeChunkLoop();
    closeWriters("row + 1");
  }
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  kernel.cooperative = true;
  kernel.grid = {claim ? std::to_string(options.claimBlocks) : s, "1", "1"};
  kernel.block = {std::to_string(readers + writers), "1", "1"};
  kernel.sharedBytes = holdBytes;

  // Claiming, the last count is the chunks claimed.
  const int64_t numCounts = claim ? numRows + 1 : numRows;
  GeneratedKernel reset = generateCountsReset(
      (entry + "_reset").str(), comment.str() + " (wave counts reset)", counts,
      numCounts);

  WaveSplitRowKernels result;
  result.kernels = {std::move(reset), std::move(kernel)};
  result.counts.param = counts;
  result.counts.elementType = ElementType::I64;
  result.counts.shape = {numCounts};
  return result;
}
