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

int64_t mlir::kopt::getSharedRowRange(int64_t rowLength, unsigned clusterSize) {
  int64_t range = (rowLength + clusterSize - 1) / clusterSize;
  return (range + 3) / 4 * 4;
}

llvm::Expected<GeneratedKernel> mlir::kopt::generateSharedRowKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    int64_t numRows, int64_t rowLength, const SharedRowOptions &options) {
  unsigned blocks = options.clusterSize;
  if (outputs.empty())
    return llvm::createStringError("a kernel needs an output");
  if (!llvm::is_contained({1u, 2u, 4u, 8u, 16u}, blocks))
    return llvm::createStringError("clusters of %u blocks are not supported",
                                   blocks);
  RowSpace space;
  space.outer = numRows;
  space.length = rowLength;
  auto indices = getRowSpaceIndices(context, outputs, space);
  if (!indices)
    return indices.takeError();
  int64_t range = getSharedRowRange(rowLength, blocks);

  CodeWriter body, caches;
  TensorEmitter emitter(context, body, {"row", "c"}, leafOf);
  emitter.setDimExtent(0, numRows);
  emitter.setDimExtent(1, rowLength);
  emitter.enableCooperativeReductions(1, options.blockSize);
  emitter.setRowRange("chunkStart", "chunkEnd");
  emitter.enableSharedRowCache(rowLength, range, options.sharedBytes, caches);
  emitter.enableClusterReductions(blocks);
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
  // The last level's one reduction: its loop may keep the value it reduces
  // in place of the row's cached input (keepReducedValue).
  struct KeptValue {
    Value value;
    SmallVector<AffineExpr> index;
    std::string cache;
  };
  std::optional<KeptValue> kept;
  bool keep = options.keepReducedValue && !levels->empty() &&
              levels->back().size() == 1;
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
      return generateSharedRowKernel(context, entry, comment, outputs, leafOf,
                                     numRows, rowLength, plain);
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
      // Every block's range starts and ends on a multiple of 4 elements.
      std::string first = emitter.openWideRowLoop(rowLength, 4);
      std::string vector = body.fresh("kopt_out");
      body.line("KoptVec<float, 4> " + vector + ";");
      std::string lane = emitter.openLaneLoop(rowLength, first, 4);
      auto value = emitter.valueAt(output.value, index);
      if (!value)
        return value.takeError();
      body.line(vector + ".v[" + lane + "] = " + *value + ";");
      emitter.closeRowLoop();
      body.line("*reinterpret_cast<KoptVec<float, 4> *>(" + output.param +
                " + " + rowStart + " + " + first + ") = " + vector + ";");
      emitter.closeWideRowLoop();
      continue;
    }
    emitter.openRowLoop(rowLength);
    auto value = emitter.valueAt(output.value, index);
    if (!value)
      return value.takeError();
    body.line(output.param + "[" + rowStart + " + c] = " +
              convertFromCompute(output.elementType, *value) + ";");
    emitter.closeRowLoop();
  }

  // The kept value replaced the input in shared memory: the outputs must
  // not read the input itself.
  if (kept && llvm::StringRef(body.str())
                  .drop_front(outputsStart)
                  .contains(kept->cache + "[")) {
    SharedRowOptions plain = options;
    plain.keepReducedValue = false;
    return generateSharedRowKernel(context, entry, comment, outputs, leafOf,
                                   numRows, rowLength, plain);
  }

  GeneratedKernel kernel;
  kernel.entry = entry.str();
  kernel.sharedBytes = emitter.getSharedCacheBytes();
  CodeWriter code;
  code.comment(comment);
  std::string signature = printKernelSignature(
      entry, options.blockSize, emitter.getLeaves(), outputs, kernel.args);
  if (blocks > 1)
    code.lines(getClusterHelpers());
  if (emitter.usesAsyncCopies())
    code.lines(getAsyncCopyHelpers());
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
    code.line("extern __shared__ __align__(16) unsigned char kopt_smem[];");
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
