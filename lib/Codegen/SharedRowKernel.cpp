//===- SharedRowKernel.cpp - Rows kept in shared memory ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/SharedRowKernel.h"

#include "ReductionLevels.h"
#include "kopt/Codegen/TiledRowKernel.h"

using namespace mlir;
using namespace mlir::kopt;

/// What cluster kernels call, in PTX (sm_90): the cooperative_groups
/// header needs the C++ standard library headers NVRTC does not carry.
llvm::StringRef mlir::kopt::getClusterHelpers() {
  return R"cuda(#ifndef KOPT_CLUSTER_HELPERS
#define KOPT_CLUSTER_HELPERS
// Thread-block clusters: a barrier over the threads of all the cluster's
// blocks, and a read of another block's shared memory.
__device__ __forceinline__ void kopt_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned kopt_cluster_blocks() {
  unsigned blocks;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(blocks));
  return blocks;
}
__device__ __forceinline__ unsigned kopt_cluster_address(const void *local,
                                                         unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote)
               : "r"((unsigned)__cvta_generic_to_shared(local)), "r"(rank));
  return remote;
}
__device__ __forceinline__ float kopt_cluster_load(const float *local,
                                                   unsigned rank) {
  float value;
  asm volatile("ld.shared::cluster.f32 %0, [%1];"
               : "=f"(value) : "r"(kopt_cluster_address(local, rank)) : "memory");
  return value;
}
__device__ __forceinline__ double kopt_cluster_load(const double *local,
                                                    unsigned rank) {
  double value;
  asm volatile("ld.shared::cluster.f64 %0, [%1];"
               : "=d"(value) : "r"(kopt_cluster_address(local, rank)) : "memory");
  return value;
}
__device__ __forceinline__ int kopt_cluster_load(const int *local,
                                                 unsigned rank) {
  int value;
  asm volatile("ld.shared::cluster.s32 %0, [%1];"
               : "=r"(value) : "r"(kopt_cluster_address(local, rank)) : "memory");
  return value;
}
__device__ __forceinline__ long long kopt_cluster_load(const long long *local,
                                                       unsigned rank) {
  long long value;
  asm volatile("ld.shared::cluster.s64 %0, [%1];"
               : "=l"(value) : "r"(kopt_cluster_address(local, rank)) : "memory");
  return value;
}
#endif)cuda";
}

/// Copies of 16 bytes from global to shared memory that do not wait
/// (sm_80): all of a thread's are in flight until it waits for them.
static llvm::StringRef getAsyncCopyHelpers() {
  return R"cuda(#ifndef KOPT_ASYNC_COPY_HELPERS
#define KOPT_ASYNC_COPY_HELPERS
__device__ __forceinline__ void kopt_copy_async(float *shared,
                                                const float *global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
               :: "r"((unsigned)__cvta_generic_to_shared(shared)),
                  "l"(global) : "memory");
}
__device__ __forceinline__ void kopt_copy_async_wait() {
  asm volatile("cp.async.wait_all;" ::: "memory");
}
#endif)cuda";
}

/// What group kernels call: the group barrier, a copy L2 evicts first (the
/// rows, read once) and a prefetch into L2.
static llvm::StringRef getGroupHelpers() {
  return R"cuda(#ifndef KOPT_GROUP_HELPERS
#define KOPT_GROUP_HELPERS
// A barrier over the blocks of a group, all resident at once (a
// cooperative launch): thread 0 adds the block's arrival to the group's
// counter (a release) and waits until the counter holds every block's
// arrival at this barrier (an acquire); `target` counts them.
__device__ __forceinline__ void kopt_group_barrier(unsigned *counter,
                                                   unsigned &target,
                                                   unsigned blocks) {
  __syncthreads();
  if (threadIdx.x == 0) {
    target += blocks;
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;"
                 :: "l"(counter) : "memory");
    unsigned arrived;
    do {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                   : "=r"(arrived) : "l"(counter) : "memory");
    } while (arrived < target);
  }
  __syncthreads();
}
__device__ __forceinline__ void kopt_copy_async_stream(float *shared,
                                                       const float *global) {
  asm volatile("{\n\t.reg .b64 policy;\n\t"
               "createpolicy.fractional.L2::evict_first.b64 policy, 1.0;\n\t"
               "cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, "
               "policy;\n\t}"
               :: "r"((unsigned)__cvta_generic_to_shared(shared)),
                  "l"(global) : "memory");
}
// Asks L2 for `bytes` (a multiple of 16) from `global` (16-byte aligned),
// without waiting and without using shared memory.
__device__ __forceinline__ void kopt_prefetch_l2(const float *global,
                                                 long long bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;"
               :: "l"(global), "r"((unsigned)bytes) : "memory");
}
#endif)cuda";
}

/// What double-buffered group kernels call: mbarriers and the copy
/// engine's bulk copy from global to shared memory (sm_90).
static llvm::StringRef getBulkFillHelpers() {
  return R"cuda(#ifndef KOPT_BULK_FILL_HELPERS
#define KOPT_BULK_FILL_HELPERS
__device__ __forceinline__ unsigned kopt_shared_address(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void kopt_mbar_init(unsigned long long *bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;"
               :: "r"(kopt_shared_address(bar)) : "memory");
}
// Thread 0's one arrival, telling the barrier the bytes its copies bring:
// the phase completes when they have all landed.
__device__ __forceinline__ void kopt_mbar_arrive_expect(unsigned long long *bar,
                                                        long long bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               :: "r"(kopt_shared_address(bar)), "r"((unsigned)bytes)
               : "memory");
}
// Waits until the barrier's phase of this parity has completed; a copy
// that has not landed after 2 s stops the kernel (kopt_trap_when_late).
__device__ __forceinline__ void kopt_mbar_wait(unsigned long long *bar,
                                               unsigned parity) {
  unsigned long long started = 0;
  for (;;) {
    unsigned done;
    asm volatile("{\n\t.reg .pred done;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, done;\n\t}"
                 : "=r"(done) : "r"(kopt_shared_address(bar)), "r"(parity)
                 : "memory");
    if (done)
      return;
    kopt_trap_when_late(started);
  }
}
// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from
// global to shared memory on the copy engine, L2 evicting the lines first
// (the rows are read once), completing on the barrier's phase.
__device__ __forceinline__ void kopt_bulk_fill(unsigned char *shared,
                                               const float *global,
                                               long long bytes,
                                               unsigned long long *bar) {
  if (bytes <= 0)
    return;
  asm volatile("{\n\t.reg .b64 policy;\n\t"
               "createpolicy.fractional.L2::evict_first.b64 policy, 1.0;\n\t"
               "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
               "bytes.L2::cache_hint [%0], [%1], %2, [%3], policy;\n\t}"
               :: "r"(kopt_shared_address(shared)), "l"(global),
                  "r"((unsigned)bytes), "r"(kopt_shared_address(bar))
               : "memory");
}
#endif)cuda";
}

int64_t mlir::kopt::getSharedRowRange(int64_t rowLength, unsigned clusterSize) {
  int64_t range = (rowLength + clusterSize - 1) / clusterSize;
  return (range + 3) / 4 * 4;
}

/// The start of a group kernel: the block's group and range of the row,
/// and what the emitter's group reductions name (TensorEmitter.h).
static void emitGroupPrologue(CodeWriter &code, unsigned groups,
                              unsigned reductions, int64_t rowLength,
                              int64_t slot) {
  std::string g = std::to_string(groups) + "u";
  std::string length = std::to_string(rowLength) + "LL";
  code.line("constexpr unsigned kopt_groups = " + g + ";");
  code.line("const unsigned kopt_group_blocks = gridDim.x / kopt_groups;");
  code.line("if (kopt_group_blocks == 0) __trap();");
  code.line("const long long kopt_range = ((" + length +
            " + kopt_group_blocks - 1) / kopt_group_blocks + 3) / 4 * 4;");
  code.comment("Too few blocks at once for their ranges of the row to fit "
               "their shared memory.");
  code.line("if (kopt_range > " + std::to_string(slot) + "LL) __trap();");
  code.line("const unsigned kopt_group = blockIdx.x / kopt_group_blocks;");
  code.line("if (kopt_group >= kopt_groups) return;");
  code.line("const long long chunk = blockIdx.x % kopt_group_blocks;");
  code.line("const long long chunkStart = min(chunk * kopt_range, " + length +
            ");");
  code.line("const long long chunkEnd = min(chunkStart + kopt_range, " +
            length + ");");
  code.line(
      "long long *const kopt_group_base = " + std::string(kGroupSlotsParam) +
      " + " + g + " + (long long)kopt_group * kopt_group_blocks;");
  code.line("unsigned kopt_group_target = 0;");
  code.comment("Slots alternate between rows: a block may store the next "
               "row's totals while another still reads this row's.");
  code.line("int kopt_parity = 0;");
  code.line("auto kopt_group_slots = [&](int k) {");
  code.line("  return kopt_group_base + (kopt_parity * " +
            std::to_string(reductions) + " + k) * " +
            std::to_string(kGroupGridBlocks) + "LL;");
  code.line("};");
  code.line("auto kopt_group_sync = [&]() {");
  code.line("  kopt_group_barrier(reinterpret_cast<unsigned *>(" +
            std::string(kGroupSlotsParam) +
            " + kopt_group), kopt_group_target, kopt_group_blocks);");
  code.line("};");
}

/// The row loop of a group kernel whose ranges land by bulk copies, after
/// its prologue: thread 0 copies the block's range of the group's first
/// row into buffer 0, then that of each next row by bulk copies completing
/// on the buffer's mbarrier. With two buffers, the next row's copies go
/// into the other buffer at the start of each row; the threads wait for
/// this row's, work on it (`body`, reading the caches `caches` names in
/// `kopt_smem`, this row's buffer) and meet at a barrier before the next
/// row's copies overwrite it. With one, the threads copy the range into
/// registers (`staging`) once it has landed and meet at a barrier, and the
/// next row's copies go into the buffer while `body` reads the registers.
static void emitBulkFilledRows(CodeWriter &code, const CodeWriter &caches,
                               const CodeWriter &fills,
                               const CodeWriter &staging,
                               const CodeWriter &body,
                               const TensorEmitter &emitter, int64_t numRows,
                               int64_t buffer, unsigned buffers) {
  std::string rows = std::to_string(numRows) + "LL";
  code.line("__shared__ unsigned long long kopt_landed[" +
            std::to_string(buffers) + "];");
  code.line("if (threadIdx.x == 0) {");
  for (unsigned i = 0; i < buffers; ++i)
    code.line("  kopt_mbar_init(&kopt_landed[" + std::to_string(i) + "]);");
  code.line("  asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: "
            "\"memory\");");
  code.line("}");
  code.line("__syncthreads();");
  // Thread 0's arrival with the bytes to come, then its copies of row
  // `row`'s ranges into buffer `into`: every cache holds the same range.
  std::string bytes = std::to_string(emitter.getSharedCacheNames().size()) +
                      " * (chunkEnd - chunkStart) * 4";
  auto emitFills = [&](llvm::StringRef row, llvm::StringRef into) {
    code.line("if (threadIdx.x == 0 && " + row.str() + " < " + rows + ") {");
    code.indent();
    code.line("const long long kopt_fill_row = " + row.str() + ";");
    code.line("unsigned char *const kopt_fill_smem = kopt_buffers + (" +
              into.str() + ") * " + std::to_string(buffer) + "LL;");
    code.line("unsigned long long *const kopt_fill_bar = &kopt_landed[" +
              into.str() + "];");
    code.line("kopt_mbar_arrive_expect(kopt_fill_bar, " + bytes + ");");
    code.lines(fills.str());
    code.dedent();
    code.line("}");
  };
  emitFills("(long long)kopt_group", "0");
  code.line("unsigned kopt_turn = 0;");
  code.line("for (long long row = kopt_group; row < " + rows +
            "; row += kopt_groups, kopt_parity ^= 1, ++kopt_turn) {");
  code.indent();
  // The next row's copies overwrite what this row's threads read and
  // wrote (a kept value): the copy engine is another proxy, after a fence.
  auto emitRelease = [&] {
    code.line(
        "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");");
    code.line("__syncthreads();");
  };
  if (buffers == 1) {
    code.line("unsigned char *const kopt_smem = kopt_buffers;");
    code.lines(caches.str());
    code.comment("This row's copies: the buffer's turn-th phase.");
    code.line("kopt_mbar_wait(&kopt_landed[0], kopt_turn & 1u);");
    code.lines(staging.str());
    code.comment("Every thread holds its part of the range: the buffer is "
                 "the next row's.");
    emitRelease();
    emitFills("row + kopt_groups", "0");
    code.lines(body.str());
    code.line("__syncthreads();");
    code.dedent();
    code.line("}");
    return;
  }
  code.line("const unsigned kopt_buffer = kopt_turn & 1u;");
  emitFills("row + kopt_groups", "kopt_buffer ^ 1u");
  code.line("unsigned char *const kopt_smem = kopt_buffers + kopt_buffer * " +
            std::to_string(buffer) + "LL;");
  code.lines(caches.str());
  code.comment("This row's copies: the buffer's (turn / 2)-th phase.");
  code.line(
      "kopt_mbar_wait(&kopt_landed[kopt_buffer], (kopt_turn >> 1) & 1u);");
  code.lines(body.str());
  emitRelease();
  code.dedent();
  code.line("}");
}

/// The kernel of generateSharedRowKernel, or with `options.gridGroups`
/// the group kernel of generateGroupRowKernels, which sets
/// `groupReductions` to the number of reductions needing slots.
static llvm::Expected<GeneratedKernel> generateRowKernelInSharedMemory(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    int64_t numRows, int64_t rowLength, const SharedRowOptions &options,
    unsigned &groupReductions) {
  unsigned blocks = options.clusterSize;
  unsigned groups = options.gridGroups;
  if (outputs.empty())
    return llvm::createStringError("a kernel needs an output");
  if (!llvm::is_contained({1u, 2u, 4u, 8u, 16u}, blocks))
    return llvm::createStringError("clusters of %u blocks are not supported",
                                   blocks);
  if (groups && (blocks != 1 || groups > kMaxGridGroups))
    return llvm::createStringError(
        "groups of blocks take no clusters and are at most %u", kMaxGridGroups);
  RowSpace space;
  space.outer = numRows;
  space.length = rowLength;
  auto indices = getRowSpaceIndices(context, outputs, space);
  if (!indices)
    return indices.takeError();
  if (options.registerVectors && (!groups || options.doubleBuffer))
    return llvm::createStringError(
        "register copies take groups of blocks and one buffer");
  // A group's blocks are known at launch: each block's range of the row
  // then, which must fit the one slot of shared memory a block has (and
  // its threads' registers, with register copies).
  bool doubleBuffer = groups && options.doubleBuffer;
  bool bulkFilled = doubleBuffer || options.registerVectors;
  int64_t bufferBytes =
      doubleBuffer ? options.sharedBytes / 2 / 16 * 16 : options.sharedBytes;
  int64_t range =
      groups ? bufferBytes / 4 / 4 * 4 : getSharedRowRange(rowLength, blocks);
  if (options.registerVectors)
    range = std::min<int64_t>(range, int64_t(options.registerVectors) * 4 *
                                         options.blockSize);

  CodeWriter body, caches, fills, staging;
  TensorEmitter emitter(context, body, {"row", "c"}, leafOf);
  emitter.setDimExtent(0, numRows);
  emitter.setDimExtent(1, rowLength);
  emitter.enableCooperativeReductions(1, options.blockSize);
  emitter.setRowRange("chunkStart", "chunkEnd");
  emitter.enableSharedRowCache(rowLength, range, bufferBytes, caches);
  if (bulkFilled)
    emitter.setSharedCacheBulkFills(fills);
  if (options.registerVectors)
    emitter.setSharedCacheRegisters(options.registerVectors, staging);
  if (groups) {
    // The rows are read once: their copies tell L2 to evict them first.
    emitter.enableGroupReductions();
    emitter.setAsyncCopyFunction("kopt_copy_async_stream");
    if (options.prefetchNextRow && !bulkFilled)
      emitter.setSharedCachePrefetch("row + kopt_groups",
                                     "row + kopt_groups < " +
                                         std::to_string(numRows) + "LL");
  } else {
    emitter.enableClusterReductions(blocks);
  }
  emitter.setSharedCacheAsync(options.asyncCopies);

  std::vector<Value> values;
  std::vector<SmallVector<AffineExpr>> outputIndices;
  for (auto [output, index] : llvm::zip(outputs, *indices)) {
    values.push_back(output.value);
    outputIndices.push_back(index.first);
  }
  auto levels = collectReductionLevels(emitter, values, outputIndices);
  if (!levels)
    return levels.takeError();
  if (groups)
    for (const std::vector<CooperativeReduction> &level : *levels)
      for (const CooperativeReduction &reduction : level)
        if (getReductionLength(reduction) != rowLength)
          return llvm::createStringError(
              "a reduction does not run over the whole row");
  // The last level's one reduction: its loop may keep the value it reduces
  // in place of the row's cached input (keepReducedValue).
  struct KeptValue {
    Value value;
    SmallVector<AffineExpr> index;
    std::string cache;
  };
  std::optional<KeptValue> kept;
  // Not with register copies: the buffer holds the next row by then.
  bool keep = options.keepReducedValue && !options.registerVectors &&
              !levels->empty() && levels->back().size() == 1;
  if (keep) {
    std::vector<std::vector<CooperativeReduction>> before(levels->begin(),
                                                          levels->end() - 1);
    if (llvm::Error error = emitReductionLevels(emitter, before))
      return std::move(error);
    int reads = 0;
    emitter.setReductionInputSink([&](Value input,
                                      llvm::ArrayRef<AffineExpr> index,
                                      llvm::StringRef value) {
      ++reads;
      llvm::ArrayRef<std::string> names = emitter.getSharedCacheNames();
      if (leafOf(input) || names.size() != 1 ||
          !getElementTypeOrSelf(input.getType()).isF32())
        return;
      kept = KeptValue{input, SmallVector<AffineExpr>(index), names.front()};
      body.line(names.front() + "[c - chunkStart] = " + value.str() + ";");
    });
    if (llvm::Error error = emitReductionLevels(emitter, {levels->back()}))
      return std::move(error);
    emitter.setReductionInputSink(nullptr);
    // A reduction of two inputs would overwrite the cache with the first.
    if (reads != 1)
      kept.reset();
    if (!kept) {
      SharedRowOptions plain = options;
      plain.keepReducedValue = false;
      return generateRowKernelInSharedMemory(context, entry, comment, outputs,
                                             leafOf, numRows, rowLength, plain,
                                             groupReductions);
    }
    body.comment("The last reduction's operand took the row's place in " +
                 kept->cache + ".");
    body.line("float *const kopt_kept = " + kept->cache + ";");
    emitter.bind(kept->value, kept->index, "kopt_kept[c - chunkStart]");
  } else if (llvm::Error error = emitReductionLevels(emitter, *levels)) {
    return std::move(error);
  }
  size_t outputsStart = body.str().size();

  for (auto [i, output] : llvm::enumerate(outputs)) {
    const auto &[index, perRow] = (*indices)[i];
    if (perRow) {
      if (llvm::Error error = emitPerRowStore(emitter, body, output, index,
                                              "chunk == 0 && threadIdx.x == 0"))
        return error;
      continue;
    }
    std::string rowStart = "row * " + std::to_string(rowLength) + "LL";
    if (options.vectorStores && output.elementType == ElementType::F32 &&
        rowLength % 4 == 0) {
      // Every block's range starts and ends on a multiple of 4 elements;
      // groups stream their outputs past L2's kept lines (__stcs).
      if (llvm::Error error = emitWideRowStore(emitter, body, output, index,
                                               rowLength, rowStart, groups))
        return error;
      continue;
    }
    emitter.openRowLoop(rowLength);
    auto value = emitter.valueAt(output.value, index);
    if (!value)
      return value.takeError();
    std::string at = output.param + "[" + rowStart + " + c]";
    std::string converted = convertFromCompute(output.elementType, *value);
    body.line(groups && output.elementType == ElementType::F32
                  ? "__stcs(&" + at + ", " + converted + ");"
                  : at + " = " + converted + ";");
    emitter.closeRowLoop();
  }

  // The kept value replaced the input in shared memory: the outputs must
  // not read the input itself.
  if (kept && llvm::StringRef(body.str())
                  .drop_front(outputsStart)
                  .contains(kept->cache + "[")) {
    SharedRowOptions plain = options;
    plain.keepReducedValue = false;
    return generateRowKernelInSharedMemory(context, entry, comment, outputs,
                                           leafOf, numRows, rowLength, plain,
                                           groupReductions);
  }

  // The prefetched rows would push out of L2 what every row reads again:
  // on the H200, a LayerNorm over 16 rows of 4M elements took 428 us with
  // the prefetches and 342 without.
  if (groups && emitter.usesPrefetch() && emitter.readsBroadcastLeaves()) {
    SharedRowOptions plain = options;
    plain.prefetchNextRow = false;
    return generateRowKernelInSharedMemory(context, entry, comment, outputs,
                                           leafOf, numRows, rowLength, plain,
                                           groupReductions);
  }

  if (emitter.bulkFillsFailed())
    return llvm::createStringError(
        "bulk-filled buffers take f32 inputs read over the row's range in "
        "order, and register copies only loops over whole 16-byte groups");

  GeneratedKernel kernel;
  kernel.entry = entry.str();
  kernel.sharedBytes = emitter.getSharedCacheBytes();
  // Two buffers, each the caches' bytes rounded to 16.
  int64_t buffer = (kernel.sharedBytes + 15) / 16 * 16;
  if (bulkFilled)
    kernel.sharedBytes = (doubleBuffer ? 2 : 1) * buffer;
  CodeWriter code;
  code.comment(comment);
  std::string signature = printKernelSignature(
      entry, options.blockSize, emitter.getLeaves(), outputs, kernel.args);
  if (blocks > 1)
    code.lines(getClusterHelpers());
  if (emitter.usesAsyncCopies())
    code.lines(getAsyncCopyHelpers());
  if (bulkFilled) {
    code.lines(getDeadlineHelper());
    code.lines(getBulkFillHelpers());
  }
  if (groups) {
    code.lines(getGroupHelpers());
    signature.pop_back();
    signature +=
        ", long long *__restrict__ " + std::string(kGroupSlotsParam) + ")";
    kernel.args.push_back(kGroupSlotsParam);
  }
  if (options.minBlocksPerSM) {
    std::string bounds =
        "__launch_bounds__(" + std::to_string(options.blockSize);
    signature.replace(signature.find(bounds), bounds.size(),
                      bounds + ", " + std::to_string(options.minBlocksPerSM));
  }
  if (blocks > 8) {
    // A non-portable cluster is set at launch, not declared.
    kernel.cluster = blocks;
  } else if (blocks > 1) {
    std::string attribute = "__global__ void ";
    signature.replace(signature.find(attribute), attribute.size(),
                      attribute + "__cluster_dims__(" + std::to_string(blocks) +
                          ", 1, 1) ");
  }
  code.line(signature + " {");
  code.indent();
  // Launched without its cluster, the kernel would read other blocks'
  // shared memory that does not exist: it stops instead.
  if (blocks > 8)
    code.line("if (kopt_cluster_blocks() != " + std::to_string(blocks) +
              "u) __trap();");
  if (kernel.sharedBytes)
    code.line(std::string("extern __shared__ __align__(16) unsigned char ") +
              (bulkFilled ? "kopt_buffers[];" : "kopt_smem[];"));
  if (groups) {
    groupReductions = emitter.getGroupReductionCount();
    if (groupReductions == 0)
      return llvm::createStringError("no row-wide reduction to split");
    emitGroupPrologue(code, groups, groupReductions, rowLength, range);
    if (bulkFilled) {
      emitBulkFilledRows(code, caches, fills, staging, body, emitter, numRows,
                         buffer, doubleBuffer ? 2 : 1);
    } else {
      code.line("for (long long row = kopt_group; row < " +
                std::to_string(numRows) +
                "LL; row += kopt_groups, kopt_parity ^= 1) {");
      code.indent();
      code.lines(caches.str());
      if (emitter.usesAsyncCopies())
        code.line("kopt_copy_async_wait();");
      code.line("__syncthreads();");
      code.lines(body.str());
      // The next row's copies overwrite what this row's threads read.
      code.line("__syncthreads();");
      code.dedent();
      code.line("}");
    }
    code.dedent();
    code.line("}");
    kernel.code = code.str();
    // At most the blocks the device holds at once (a cooperative launch).
    kernel.grid = {std::to_string(kGroupGridBlocks), "1", "1"};
    kernel.block = {std::to_string(options.blockSize), "1", "1"};
    kernel.cooperative = true;
    return kernel;
  }
  std::string b = std::to_string(blocks) + "LL";
  code.line("const long long row = blockIdx.x / " + b + ";");
  code.line("const long long chunk = blockIdx.x % " + b + ";");
  code.line("(void)chunk;");
  code.line("const long long chunkStart = chunk * " + std::to_string(range) +
            "LL;");
  code.line("const long long chunkEnd = min(chunkStart + " +
            std::to_string(range) + "LL, " + std::to_string(rowLength) +
            "LL);");
  code.lines(caches.str());
  // The caches are filled with wide loads: threads read others' elements.
  if (emitter.usesAsyncCopies())
    code.line("kopt_copy_async_wait();");
  if (kernel.sharedBytes)
    code.line("__syncthreads();");
  code.lines(body.str());
  // No block leaves while others may still read its shared memory.
  if (blocks > 1)
    code.line("kopt_cluster_sync();");
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  kernel.grid = {std::to_string(numRows * blocks), "1", "1"};
  kernel.block = {std::to_string(options.blockSize), "1", "1"};
  return kernel;
}

llvm::Expected<GeneratedKernel> mlir::kopt::generateSharedRowKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    int64_t numRows, int64_t rowLength, const SharedRowOptions &options) {
  if (options.gridGroups)
    return llvm::createStringError("groups of blocks take two kernels");
  unsigned unused = 0;
  return generateRowKernelInSharedMemory(context, entry, comment, outputs,
                                         leafOf, numRows, rowLength, options,
                                         unused);
}

llvm::Expected<GroupRowKernels> mlir::kopt::generateGroupRowKernels(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    int64_t numRows, int64_t rowLength, const SharedRowOptions &options) {
  if (!options.gridGroups)
    return llvm::createStringError("no groups of blocks");
  unsigned reductions = 0;
  auto rows = generateRowKernelInSharedMemory(context, (entry + "_rows").str(),
                                              comment, outputs, leafOf, numRows,
                                              rowLength, options, reductions);
  if (!rows)
    return rows.takeError();
  unsigned groups = options.gridGroups;
  GroupRowKernels result;
  result.slots.param = kGroupSlotsParam;
  result.slots.elementType = ElementType::I64;
  result.slots.shape = {groups + 2 * int64_t(reductions) * kGroupGridBlocks};

  // The counters start every launch at zero.
  GeneratedKernel reset;
  reset.entry = (entry + "_reset").str();
  CodeWriter code;
  code.comment(comment.str() + " (group barriers reset)");
  code.line("extern \"C\" __global__ void " + reset.entry +
            "(long long *__restrict__ " + kGroupSlotsParam + ") {");
  code.line("  if (threadIdx.x < " + std::to_string(groups) + "u) " +
            kGroupSlotsParam + "[threadIdx.x] = 0;");
  code.line("}");
  reset.code = code.str();
  reset.grid = {"1", "1", "1"};
  reset.block = {"32", "1", "1"};
  reset.args = {kGroupSlotsParam};
  result.kernels = {std::move(reset), std::move(*rows)};
  return result;
}
