//===- WaveSplitRows.cpp - Split rows read and written in waves -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "SplitRowPasses.h"

#include "kopt/Codegen/CudaEmitter.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::kopt;

/// The counts' plan temporary.
static constexpr llvm::StringLiteral kCountsParam = "waverows";

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
  if (readers % 32 || writers % 32 || readers + writers > 1024 ||
      options.ahead < 1 || chunks < 2)
    return llvm::createStringError(
        "a wave split needs whole warps of readers and writers, at most "
        "1024 threads, a lead of a row or more and two chunks or more");
  auto plan = planSplitRows(context, outputs, leafOf, numRows, rowLength,
                            readers, chunks, partialName);
  if (!plan)
    return plan.takeError();
  if (plan->levels.size() != 1)
    return llvm::createStringError(
        "a wave split reads a row once: its reductions must take one pass");
  partials = plan->partials;
  auto reader = [](llvm::StringRef name) { return "kopt_cg_" + name.str(); };

  SplitPassOptions passOptions;
  passOptions.combineTogether = true;
  passOptions.streamStores = true;
  passOptions.partialReader = reader;
  // The readers' loads ask L2 to keep the row for the writers, which read
  // it for the last time (streaming) and keep the operands every row reads
  // again (LayerNorm's weights).
  passOptions.loadFunction = "kopt_load_keep";
  passOptions.unroll = options.readUnroll;
  auto read = emitSplitPass(context, *plan, 0, outputs, leafOf, numRows,
                            rowLength, readers, chunks, passOptions);
  if (!read)
    return read.takeError();
  passOptions.loadFunction = "__ldcs";
  passOptions.broadcastLoadFunction = "kopt_load_keep";
  passOptions.unroll = options.writeUnroll;
  auto write = emitSplitPass(context, *plan, 1, outputs, leafOf, numRows,
                             rowLength, writers, chunks, passOptions);
  if (!write)
    return write.takeError();
  std::vector<LeafTensor> leaves;
  for (const SplitPass *pass : {&*read, &*write})
    for (const LeafTensor &leaf : pass->leaves)
      if (!llvm::StringRef(leaf.param).starts_with("kopt_cg_") &&
          llvm::none_of(leaves, [&](const LeafTensor &known) {
            return known.param == leaf.param;
          }))
        leaves.push_back(leaf);

  std::string r = std::to_string(readers), w = std::to_string(writers);
  std::string rows = std::to_string(numRows) + "LL";
  std::string s = std::to_string(chunks);
  std::string counts = kCountsParam.str();
  int64_t chunkLength = (rowLength + chunks - 1) / chunks;

  GeneratedKernel kernel;
  kernel.entry = entry.str();
  std::string signature = printKernelSignature(
      kernel.entry, readers + writers, leaves, outputs, kernel.args);
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
  code.comment(comment.str() + " (split rows, read and written in waves)");
  code.line(signature + " {");
  code.indent();
  code.comment("A chunk a block, the same in every row: a grid the device "
               "could not hold whole (cut at launch) would leave chunks "
               "undone.");
  code.line("if (gridDim.x != " + s + "u) __trap();");
  code.line("const long long chunk = blockIdx.x;");
  code.line("const long long chunkStart = chunk * " +
            std::to_string(chunkLength) + "LL;");
  code.line("const long long chunkEnd = min(chunkStart + " +
            std::to_string(chunkLength) + "LL, " + std::to_string(rowLength) +
            "LL);");
  for (const PartialBuffer &partial : partials) {
    std::string type = getCudaStorageType(partial.elementType).str();
    code.line("const KoptCoherentRead<" + type + "> " + reader(partial.param) +
              "{" + partial.param + "};");
    code.line("(void)" + reader(partial.param) + ";");
  }
  code.comment("Rows the writers have finished: the readers lead them by " +
               std::to_string(options.ahead) +
               " at most, so that L2 still holds a row when it is written.");
  code.line("__shared__ volatile long long kopt_written;");
  code.line("if (threadIdx.x == 0) kopt_written = 0;");
  code.line("__syncthreads();");
  code.line("if (threadIdx.x < " + r + "u) {");
  code.indent();
  code.line("const uint3 kopt_group_thread = make_uint3(threadIdx.x, 0u, 0u);");
  code.line("for (long long row = 0; row < " + rows + "; ++row) {");
  code.indent();
  code.line("if (threadIdx.x == 0) {");
  code.line("  unsigned long long started = 0;");
  code.line("  while (row - kopt_written > " + std::to_string(options.ahead) +
            "LL) kopt_trap_when_late(started);");
  code.line("}");
  code.line("asm volatile(\"bar.sync 1, " + r + ";\" ::: \"memory\");");
  emitGroupPass(code, read->body, 1, readers);
  code.comment("The chunk's partials stored (by this thread): counted done, "
               "a release.");
  code.line("if (threadIdx.x == 0)");
  code.line("  asm volatile(\"red.release.gpu.global.add.u64 [%0], 1;\" :: "
            "\"l\"(" +
            counts + " + row) : \"memory\");");
  code.dedent();
  code.line("}");
  code.dedent();
  code.line("} else {");
  code.indent();
  code.line("const uint3 kopt_group_thread = make_uint3(threadIdx.x - " + r +
            "u, 0u, 0u);");
  code.line("for (long long row = 0; row < " + rows + "; ++row) {");
  code.indent();
  code.comment("Every chunk of the row counted (an acquire).");
  code.line("if (threadIdx.x == " + r + "u) kopt_wait_count(" + counts +
            " + row, " + s + "LL);");
  code.line("asm volatile(\"bar.sync 2, " + w + ";\" ::: \"memory\");");
  emitGroupPass(code, write->body, 2, writers);
  code.line("asm volatile(\"bar.sync 2, " + w + ";\" ::: \"memory\");");
  code.line("if (threadIdx.x == " + r + "u) kopt_written = row + 1;");
  code.dedent();
  code.line("}");
  code.dedent();
  code.line("}");
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  kernel.cooperative = true;
  kernel.grid = {s, "1", "1"};
  kernel.block = {std::to_string(readers + writers), "1", "1"};

  GeneratedKernel reset;
  reset.entry = (entry + "_reset").str();
  {
    CodeWriter code;
    code.comment(comment.str() + " (wave counts reset)");
    code.line("extern \"C\" __global__ void " + reset.entry +
              "(long long *__restrict__ " + counts + ") {");
    code.line("  for (int i = threadIdx.x; i < " + std::to_string(numRows) +
              "; i += 256) " + counts + "[i] = 0;");
    code.line("}");
    reset.code = code.str();
  }
  reset.grid = {"1", "1", "1"};
  reset.block = {"256", "1", "1"};
  reset.args = {counts};

  WaveSplitRowKernels result;
  result.kernels = {std::move(reset), std::move(kernel)};
  result.counts.param = counts;
  result.counts.elementType = ElementType::I64;
  result.counts.shape = {numRows};
  return result;
}
