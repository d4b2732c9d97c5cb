//===- KernelGenerator.h - Generate whole CUDA kernels ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Two kernel shapes cover kopt's generated code:
//
// - a pointwise kernel computes one or more outputs of one shape, one
//   element (or one vector of elements) per thread in a grid-stride loop,
//   inlining every producer it needs (reductions as sequential loops);
// - a row kernel gives each block one row of a row-wise computation
//   (softmax, layernorm, a reduction with its prologue and epilogue): the
//   reductions over the row are computed cooperatively by the block, then
//   the row's outputs are written with a block-strided loop.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_KERNELGENERATOR_H
#define KOPT_CODEGEN_KERNELGENERATOR_H

#include "kopt/Codegen/KernelTask.h"
#include "kopt/Codegen/TensorEmitter.h"

namespace mlir::kopt {

/// A tensor a kernel writes.
struct KernelOutput {
  Value value;
  /// The plan tensor (and kernel parameter) name.
  std::string param;
  ElementType elementType = ElementType::F32;
  std::vector<int64_t> shape;
};

/// A generated kernel ready to become a launch step.
struct GeneratedKernel {
  std::string entry;
  /// The kernel's source, without the common preamble.
  std::string code;
  /// Launch configuration as plan expressions.
  std::array<std::string, 3> grid;
  std::array<std::string, 3> block;
  /// Parameter names in order (leaves read, then outputs written).
  std::vector<std::string> args;
  /// Dynamic shared memory per block, in bytes.
  int64_t sharedBytes = 0;
  /// Blocks per thread-block cluster set at launch (LaunchStep::cluster).
  unsigned cluster = 1;
  /// Launched cooperatively (LaunchStep::cooperative).
  bool cooperative = false;
};

/// Options of a pointwise kernel.
struct PointwiseOptions {
  unsigned blockSize = 256;
  /// Elements per thread along the innermost dimension (1 disables vector
  /// accesses); lowered automatically when the shape does not allow it.
  unsigned vectorWidth = 1;
  /// Upper bound on the grid; the kernel loops over the rest.
  int64_t maxBlocks = 65535;
};

/// Generates a pointwise kernel writing `outputs`, which must share one
/// shape. `comment` names the fused ops.
llvm::Expected<GeneratedKernel> generatePointwiseKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const PointwiseOptions &options);

/// Generates a row kernel: `numRows` blocks, each reducing over `rowLength`
/// elements. Every output has either `numRows` elements (one per row) or
/// `numRows * rowLength` with its row dimensions outermost. With
/// `cacheRegisters` > 0, the row's inputs are read from memory once and kept
/// in up to that many registers per thread.
llvm::Expected<GeneratedKernel>
generateRowKernel(MLIRContext *context, llvm::StringRef entry,
                  llvm::StringRef comment, llvm::ArrayRef<KernelOutput> outputs,
                  const TensorEmitter::LeafFn &leafOf, int64_t numRows,
                  int64_t rowLength, unsigned blockSize,
                  unsigned cacheRegisters = 0);

/// A buffer of per-chunk partial results a split row plan needs.
struct PartialBuffer {
  std::string param;
  ElementType elementType = ElementType::F32;
  std::vector<int64_t> shape;
};

/// Split rows a batch of rows at a time, so that a batch's rows stay in the
/// L2 cache from the first kernel's read to the last kernel's.
struct SplitRowBatching {
  /// Rows a launch covers; 0 covers them all at once. Otherwise every
  /// kernel takes the batch's first row as its last argument (written
  /// `i64:0` in GeneratedKernel::args, its grid for a whole batch), the
  /// first kernel's loads ask L2 to keep the row (`evict_last`), the last
  /// kernel's loads and stores are marked as streaming (`__ldcs`,
  /// `__stcs`), and the threads of a block combine the partial results
  /// together instead of each alone.
  int64_t rows = 0;
};

/// Kernels computing what one row kernel would, with each row split into
/// `chunks` pieces so that few long rows still fill the GPU: one kernel per
/// row-wide reduction (each block reduces its chunk and stores a partial
/// result; later kernels combine the partials of the reductions they
/// need), then one kernel writing the outputs chunk by chunk. `partialName`
/// names the partial buffers it asks for in `partials`.
llvm::Expected<std::vector<GeneratedKernel>> generateSplitRowKernels(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    int64_t numRows, int64_t rowLength, unsigned blockSize, int64_t chunks,
    const std::function<std::string(unsigned)> &partialName,
    std::vector<PartialBuffer> &partials,
    const SplitRowBatching &batching = {});

/// Split rows as one kernel (after a kernel zeroing its counters): each
/// block takes a ticket and with it a task, one pass (SplitRowPasses.h) of
/// one chunk of one row, in steps of every pass's chunks, pass p of a step
/// on the row p * `lag` steps behind pass 0's: a row's later passes then
/// read it from L2 soon after its first pass read it from DRAM, and DRAM
/// reads it once. With a lag of a step, a pass's tasks mostly wait for
/// the previous pass's; with more, the rows between stay in L2 meanwhile. A
/// task of pass p > 0 waits until every chunk of its row's pass p - 1 has
/// counted itself done; it only ever waits for tasks holding earlier tickets,
/// which have all started, so any grid makes progress. `partials` gets the
/// partial buffers, `counters` the plan temporary of the ticket and the counts,
/// which the first kernel zeroes.
struct PipelinedSplitRowKernels {
  std::vector<GeneratedKernel> kernels;
  PartialBuffer counters;
};
llvm::Expected<PipelinedSplitRowKernels> generatePipelinedSplitRowKernels(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    int64_t numRows, int64_t rowLength, unsigned blockSize, int64_t chunks,
    int64_t lag, const std::function<std::string(unsigned)> &partialName,
    std::vector<PartialBuffer> &partials);

/// Split rows whose reductions take one pass, as one persistent kernel
/// (after a kernel zeroing its counts) of `chunks` blocks, each block's
/// chunk the same in every row. In each block the first `readers` threads
/// read their chunk of row after row (asking L2 to keep it), fold its
/// partials and count the chunk done (a release); the other `writers`
/// threads wait until a row's count reaches every chunk (an acquire),
/// combine the row's partials (the same order in every block) and write
/// the chunk's outputs, reading it again from L2. Nothing but the readers'
/// lead of at most `ahead` rows ties the two groups, so DRAM reads go on
/// while a row's partials settle. A cooperative launch of `chunks` blocks;
/// where the device holds fewer at once, each block takes every
/// gridDim.x-th chunk.
struct WaveSplitRowOptions {
  unsigned readers = 512;
  unsigned writers = 512;
  int64_t chunks = 132;
  int64_t ahead = 1;
  /// The times the readers' and writers' loops are unrolled.
  unsigned readUnroll = 32;
  unsigned writeUnroll = 16;
  /// With B > 0, the bytes of L2 the rows the readers lead by and the
  /// operands every row reads again (LayerNorm's weights) may take: more,
  /// and the kernel is not generated, since the writers would read the rows
  /// again from DRAM.
  int64_t l2Budget = 0;
  /// With H > 0, each block keeps its chunk of the rows in flight in
  /// dynamic shared memory (ahead + 1 slots) from the readers to the
  /// writers, which then read it there instead of again from L2: L2
  /// carries each byte once, as a copy's. Slots of more than H bytes, and
  /// the kernel is not generated.
  int64_t holdBudget = 0;
  /// With S > 0 (and a hold budget), no block owns a chunk: the rows are
  /// cut into `chunks` chunks each, and each block's readers claim the next
  /// chunk of all (one counter, in row order) whenever one of the block's S
  /// slots is free, so that a block on a faster SM takes more chunks instead
  /// of every row waiting for the slowest; the writers write the block's
  /// slots in the order they were claimed. `ahead` is then unused, and
  /// the grid is `claimBlocks` blocks (cut by the cooperative launch).
  int64_t claimSlots = 0;
  int64_t claimBlocks = 132;
};
struct WaveSplitRowKernels {
  std::vector<GeneratedKernel> kernels;
  PartialBuffer counts;
};
llvm::Expected<WaveSplitRowKernels> generateWaveSplitRowKernels(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    int64_t numRows, int64_t rowLength, const WaveSplitRowOptions &options,
    const std::function<std::string(unsigned)> &partialName,
    std::vector<PartialBuffer> &partials);

/// The kernel's declaration up to its body: `extern "C"`, launch bounds of
/// `blockSize` threads, the leaves as const inputs, then the outputs.
/// Appends the parameter names to `args`.
std::string printKernelSignature(llvm::StringRef entry, unsigned blockSize,
                                 llvm::ArrayRef<LeafTensor> leaves,
                                 llvm::ArrayRef<KernelOutput> outputs,
                                 std::vector<std::string> &args);

/// Registers per thread a row kernel of `blockSize` threads may spend on
/// row caches: at most 64, and few enough that two blocks fit an SM's 64K
/// registers with room for the rest of the kernel.
unsigned getRowCacheBudget(unsigned blockSize);

/// The widest vector (16 bytes at most) that divides `innermost` elements
/// of `type`.
unsigned getMaxVectorWidth(ElementType type, int64_t innermost);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_KERNELGENERATOR_H
