//===- KernelGenerator.cpp - Generate whole CUDA kernels --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/KernelGenerator.h"

#include "ReductionLevels.h"
#include "SplitRowPasses.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineExpr.h"

using namespace mlir;
using namespace mlir::kopt;

unsigned mlir::kopt::getMaxVectorWidth(ElementType type, int64_t innermost) {
  unsigned width = 16 / getElementBytes(type);
  while (width > 1 && innermost % width != 0)
    width /= 2;
  return width;
}

unsigned mlir::kopt::getRowCacheBudget(unsigned blockSize) {
  return std::min(64u, 32768u / std::max(blockSize, 1u));
}

static int64_t product(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

std::string
mlir::kopt::printKernelSignature(llvm::StringRef entry, unsigned blockSize,
                                 llvm::ArrayRef<LeafTensor> leaves,
                                 llvm::ArrayRef<KernelOutput> outputs,
                                 std::vector<std::string> &args) {
  std::string signature = "extern \"C\" __global__ void __launch_bounds__(" +
                          std::to_string(blockSize) + ") " + entry.str() + "(";
  bool first = true;
  for (const LeafTensor &leaf : leaves) {
    signature += (first ? "" : ", ") + std::string("const ") +
                 getCudaStorageType(leaf.elementType).str() +
                 " *__restrict__ " + leaf.param;
    args.push_back(leaf.param);
    first = false;
  }
  for (const KernelOutput &output : outputs) {
    signature += (first ? "" : ", ") +
                 getCudaStorageType(output.elementType).str() +
                 " *__restrict__ " + output.param;
    args.push_back(output.param);
    first = false;
  }
  return signature + ")";
}

llvm::Expected<GeneratedKernel> mlir::kopt::generatePointwiseKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const PointwiseOptions &options) {
  if (outputs.empty())
    return llvm::createStringError("a kernel needs an output");
  std::vector<int64_t> shape = outputs.front().shape;
  for (const KernelOutput &output : outputs)
    if (output.shape != shape)
      return llvm::createStringError("pointwise outputs differ in shape");
  unsigned rank = shape.size();
  int64_t total = product(shape);
  unsigned width = options.vectorWidth;
  if (rank == 0)
    width = 1;
  for (const KernelOutput &output : outputs)
    width = std::min(
        width, getMaxVectorWidth(output.elementType, rank ? shape.back() : 1));

  // Index names: i0..i{n-1}; inside a lane loop the innermost is `iL`.
  std::vector<std::string> names;
  for (unsigned d = 0; d < rank; ++d)
    names.push_back("i" + std::to_string(d));
  std::string innermost = rank ? names.back() : "";
  if (width > 1)
    names.back() = "iL";

  CodeWriter prologue, body;
  TensorEmitter emitter(context, body, names, leafOf);
  for (unsigned d = 0; d < rank; ++d)
    emitter.setDimExtent(d, shape[d]);
  if (width > 1)
    emitter.enableVectorLanes(rank - 1, width, prologue, innermost, "iL");
  SmallVector<AffineExpr> index;
  for (unsigned d = 0; d < rank; ++d)
    index.push_back(getAffineDimExpr(d, context));
  std::vector<std::string> values;
  for (const KernelOutput &output : outputs) {
    auto value = emitter.valueAt(output.value, index);
    if (!value)
      return value.takeError();
    values.push_back(*value);
  }

  GeneratedKernel kernel;
  kernel.entry = entry.str();
  CodeWriter code;
  code.comment(comment);
  code.line(printKernelSignature(entry, options.blockSize, emitter.getLeaves(),
                                 outputs, kernel.args) +
            " {");
  code.indent();
  std::string count = std::to_string(total / width) + "LL";
  code.line("for (long long t = (long long)blockIdx.x * blockDim.x + "
            "threadIdx.x; t < " +
            count + "; t += (long long)gridDim.x * blockDim.x) {");
  code.indent();
  code.line("const long long base = t * " + std::to_string(width) + ";");
  // Only the indices the code reads are declared (NVRTC warns about the
  // others), and the linear index is divided down only as far as the
  // outermost of them. The lane loop always reads the innermost.
  int outermost = rank;
  for (unsigned d = 0; d < rank; ++d)
    if (emitter.usesDim(d) || (width > 1 && d == rank - 1)) {
      outermost = d;
      break;
    }
  if (outermost < int(rank)) {
    code.line("long long rest = base;");
    for (int d = rank - 1; d >= outermost; --d) {
      std::string name = d == int(rank) - 1 ? innermost : names[d];
      bool used = emitter.usesDim(d) || (width > 1 && d == int(rank) - 1);
      if (d == 0) {
        code.line("const long long " + name + " = rest;");
        continue;
      }
      if (used)
        code.line("const long long " + name + " = rest % " +
                  std::to_string(shape[d]) + "LL;");
      if (d > outermost)
        code.line("rest /= " + std::to_string(shape[d]) + "LL;");
    }
  }
  code.lines(prologue.str());
  if (width == 1) {
    code.lines(body.str());
    for (auto [output, value] : llvm::zip(outputs, values))
      code.line(output.param + "[base] = " +
                convertFromCompute(output.elementType, value) + ";");
  } else {
    for (auto [index, output] : llvm::enumerate(outputs))
      code.line("KoptVec<" + getCudaStorageType(output.elementType).str() +
                ", " + std::to_string(width) + "> o" + std::to_string(index) +
                ";");
    code.line("#pragma unroll");
    code.line("for (int lane = 0; lane < " + std::to_string(width) +
              "; ++lane) {");
    code.indent();
    code.line("const long long iL = " + innermost + " + lane;");
    code.line("(void)iL;");
    code.lines(body.str());
    for (auto [index, pair] : llvm::enumerate(llvm::zip(outputs, values)))
      code.line(
          "o" + std::to_string(index) + ".v[lane] = " +
          convertFromCompute(std::get<0>(pair).elementType, std::get<1>(pair)) +
          ";");
    code.dedent();
    code.line("}");
    for (auto [index, output] : llvm::enumerate(outputs))
      code.line("*reinterpret_cast<KoptVec<" +
                getCudaStorageType(output.elementType).str() + ", " +
                std::to_string(width) + "> *>(" + output.param +
                " + base) = o" + std::to_string(index) + ";");
  }
  code.dedent();
  code.line("}");
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  std::string threads = std::to_string(options.blockSize);
  kernel.grid = {"min(cdiv(" + std::to_string(total / width) + ", " + threads +
                     "), " + std::to_string(options.maxBlocks) + ")",
                 "1", "1"};
  kernel.block = {threads, "1", "1"};
  return kernel;
}

llvm::Expected<GeneratedKernel> mlir::kopt::generateRowKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    int64_t numRows, int64_t rowLength, unsigned blockSize,
    unsigned cacheRegisters) {
  if (outputs.empty())
    return llvm::createStringError("a kernel needs an output");
  auto rowIndices = getRowIndices(context, outputs, numRows, rowLength);
  if (!rowIndices)
    return rowIndices.takeError();
  std::vector<SmallVector<AffineExpr>> indices;
  std::vector<bool> perRow;
  for (auto &[index, isPerRow] : *rowIndices) {
    indices.push_back(index);
    perRow.push_back(isPerRow);
  }

  CodeWriter body, caches;
  TensorEmitter emitter(context, body, {"row", "c"}, leafOf);
  emitter.setDimExtent(0, numRows);
  emitter.setDimExtent(1, rowLength);
  emitter.enableCooperativeReductions(1, blockSize);
  if (cacheRegisters)
    emitter.enableRowCache(rowLength, cacheRegisters, caches);

  // Reductions first, by the whole block, outside divergent code; those
  // that need none of the others in one pass over the row.
  std::vector<Value> values;
  for (const KernelOutput &output : outputs)
    values.push_back(output.value);
  auto levels = collectReductionLevels(emitter, values, indices);
  if (!levels)
    return levels.takeError();
  if (llvm::Error error = emitReductionLevels(emitter, *levels))
    return std::move(error);

  for (auto [i, output] : llvm::enumerate(outputs)) {
    if (perRow[i]) {
      body.line("if (threadIdx.x == 0) {");
      body.indent();
      emitter.pushScope();
      auto value = emitter.valueAt(output.value, indices[i]);
      if (!value)
        return value.takeError();
      body.line(output.param + "[row] = " +
                convertFromCompute(output.elementType, *value) + ";");
      emitter.popScope();
      body.dedent();
      body.line("}");
      continue;
    }
    emitter.openRowLoop(rowLength);
    auto value = emitter.valueAt(output.value, indices[i]);
    if (!value)
      return value.takeError();
    body.line(output.param + "[row * " + std::to_string(rowLength) +
              "LL + c] = " + convertFromCompute(output.elementType, *value) +
              ";");
    emitter.closeRowLoop();
  }

  GeneratedKernel kernel;
  kernel.entry = entry.str();
  CodeWriter code;
  code.comment(comment);
  code.line(printKernelSignature(entry, blockSize, emitter.getLeaves(), outputs,
                                 kernel.args) +
            " {");
  code.indent();
  code.line("const long long row = blockIdx.x;");
  code.lines(caches.str());
  code.lines(body.str());
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  kernel.grid = {std::to_string(numRows), "1", "1"};
  kernel.block = {std::to_string(blockSize), "1", "1"};
  return kernel;
}

llvm::Expected<std::vector<GeneratedKernel>>
mlir::kopt::generateSplitRowKernels(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    int64_t numRows, int64_t rowLength, unsigned blockSize, int64_t chunks,
    const std::function<std::string(unsigned)> &partialName,
    std::vector<PartialBuffer> &partials, const SplitRowBatching &batching) {
  bool batched = batching.rows > 0;
  auto plan = planSplitRows(context, outputs, leafOf, numRows, rowLength,
                            blockSize, chunks, partialName);
  if (!plan)
    return plan.takeError();
  partials = plan->partials;

  int64_t chunkLength = (rowLength + chunks - 1) / chunks;
  std::string s = std::to_string(chunks) + "LL";
  // Unbatched, the last kernel, elementwise once the reductions are known,
  // where it writes along the rows takes chunks of about kOutputChunkLength
  // elements, the rows' blocks of one chunk next to each other: the blocks
  // running at a time then stream a few regions of the rows, and read an
  // operand broadcast along the rows (LayerNorm's weight) once for all rows
  // from L2, where 64 chunks of 4M-element rows, all in flight, wrote at 2.7
  // TB/s on an H200.
  constexpr int64_t kOutputChunkLength = 8192;
  int64_t outputFactor = 1;
  bool streamsRows = llvm::any_of(
      plan->indices, [](const auto &index) { return !index.second; });
  if (!batched && streamsRows)
    while (chunkLength / (2 * outputFactor) >= kOutputChunkLength)
      outputFactor *= 2;
  std::vector<GeneratedKernel> kernels;
  for (size_t k = 0; k <= plan->levels.size(); ++k) {
    bool last = k == plan->levels.size();
    bool regrouped = last && outputFactor > 1;
    int64_t kernelChunks = regrouped ? chunks * outputFactor : chunks;
    int64_t kernelChunkLength = (rowLength + kernelChunks - 1) / kernelChunks;
    SplitPassOptions options;
    // Batches: the first pass brings the rows into L2 to stay, the last
    // reads them for the last time and writes what nothing reads again.
    if (batched && k == 0)
      options.loadFunction = "kopt_load_keep";
    if (batched && last)
      options.loadFunction = "__ldcs";
    options.combineTogether = batched || regrouped;
    options.streamStores = batched;
    auto pass = emitSplitPass(context, *plan, k, outputs, leafOf, numRows,
                              rowLength, blockSize, chunks, options);
    if (!pass)
      return pass.takeError();

    GeneratedKernel kernel;
    kernel.entry = (entry + "_" + std::to_string(k)).str();
    std::string signature = printKernelSignature(
        kernel.entry, blockSize, pass->leaves, pass->written, kernel.args);
    // The partial buffers this kernel writes.
    for (size_t i : pass->stored) {
      signature.pop_back();
      signature += std::string(kernel.args.empty() ? "" : ", ") +
                   getCudaStorageType(partials[i].elementType).str() +
                   " *__restrict__ " + partials[i].param + ")";
      kernel.args.push_back(partials[i].param);
    }
    if (batched) {
      signature.pop_back();
      signature += std::string(kernel.args.empty() ? "" : ", ") +
                   "const long long rowBase)";
      kernel.args.push_back("i64:0");
    }
    CodeWriter code;
    if (batched && k == 0)
      code.lines(getLoadKeepHelper());
    code.comment(comment.str() +
                 (last ? std::string(" (outputs, split rows)")
                       : " (partial reductions, level " + std::to_string(k) +
                             ", split rows)"));
    code.line(signature + " {");
    code.indent();
    if (regrouped) {
      std::string r = std::to_string(numRows) + "LL";
      code.line("const long long row = blockIdx.x % " + r + ";");
      code.line("const long long chunk = blockIdx.x / " + r + ";");
    } else {
      code.line(std::string("const long long row = ") +
                (batched ? "rowBase + " : "") + "blockIdx.x / " + s + ";");
      code.line("const long long chunk = blockIdx.x % " + s + ";");
    }
    code.line("const long long chunkStart = chunk * " +
              std::to_string(kernelChunkLength) + "LL;");
    code.line("const long long chunkEnd = min(chunkStart + " +
              std::to_string(kernelChunkLength) + "LL, " +
              std::to_string(rowLength) + "LL);");
    code.lines(pass->body);
    code.dedent();
    code.line("}");
    kernel.code = code.str();
    kernel.grid = {
        std::to_string((batched ? std::min(batching.rows, numRows) : numRows) *
                       kernelChunks),
        "1", "1"};
    kernel.block = {std::to_string(blockSize), "1", "1"};
    kernels.push_back(std::move(kernel));
  }
  return kernels;
}
