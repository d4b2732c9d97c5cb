//===- TiledRowKernel.cpp - Row kernels with several rows a block -*- C++ -*-=//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/TiledRowKernel.h"

#include "ReductionLevels.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::kopt;

std::optional<RowSpace> mlir::kopt::getRowSpace(linalg::GenericOp op) {
  RowSpace space;
  int phase = 0; // 0: outer parallel loops, 1: reduction loops, 2: inner.
  for (auto [range, iterator] :
       llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray())) {
    if (ShapedType::isDynamic(range) || range < 0)
      return std::nullopt;
    bool reduction = iterator == utils::IteratorType::reduction;
    if (reduction && phase == 2)
      return std::nullopt;
    if (reduction)
      phase = 1;
    else if (phase == 1)
      phase = 2;
    (phase == 0   ? space.outer
     : phase == 1 ? space.length
                  : space.inner) *= range;
  }
  if (phase == 0)
    return std::nullopt;
  return space;
}

static int64_t product(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

/// Splits `shape` into consecutive parts whose products are `sizes`, or
/// returns an empty list.
static std::vector<std::vector<int64_t>>
splitShape(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> sizes) {
  std::vector<std::vector<int64_t>> parts;
  size_t next = 0;
  for (int64_t size : sizes) {
    std::vector<int64_t> part;
    int64_t count = 1;
    // Unit dimensions go to the earliest part that can take them.
    while (next < shape.size() && count * shape[next] <= size &&
           (count < size || shape[next] == 1)) {
      count *= shape[next];
      part.push_back(shape[next++]);
    }
    if (count != size)
      return {};
    parts.push_back(std::move(part));
  }
  if (next != shape.size())
    return {};
  return parts;
}

llvm::Expected<std::vector<std::pair<SmallVector<AffineExpr>, bool>>>
mlir::kopt::getRowSpaceIndices(MLIRContext *context,
                               llvm::ArrayRef<KernelOutput> outputs,
                               const RowSpace &space) {
  AffineExpr row = getAffineDimExpr(0, context);
  AffineExpr col = getAffineDimExpr(1, context);
  AffineExpr outer = space.inner == 1 ? row : row.floorDiv(space.inner);
  AffineExpr inner =
      space.inner == 1 ? getAffineConstantExpr(0, context) : row % space.inner;
  std::vector<std::pair<SmallVector<AffineExpr>, bool>> result;
  for (const KernelOutput &output : outputs) {
    int64_t count = product(output.shape);
    if (count == space.getNumRows()) {
      result.push_back({TensorEmitter::delinearize(row, output.shape), true});
      continue;
    }
    if (count != space.getNumRows() * space.length)
      return llvm::createStringError(
          "output of %lld elements fits neither %lld rows nor rows of %lld",
          (long long)count, (long long)space.getNumRows(),
          (long long)space.length);
    // Outer dimensions, the row's, then inner ones, where the shape splits
    // so; any other shape through its row-major linear index.
    std::vector<std::vector<int64_t>> parts =
        splitShape(output.shape, {space.outer, space.length, space.inner});
    SmallVector<AffineExpr> index;
    if (parts.empty()) {
      AffineExpr linear = (outer * space.length + col) * space.inner + inner;
      index = TensorEmitter::delinearize(linear, output.shape);
    } else {
      AffineExpr positions[] = {outer, col, inner};
      for (auto [part, expr] : llvm::zip(parts, positions)) {
        SmallVector<AffineExpr> sub = TensorEmitter::delinearize(expr, part);
        index.append(sub.begin(), sub.end());
      }
    }
    result.push_back({index, false});
  }
  return result;
}

/// Checks `layout` makes a block.
static llvm::Error checkLayout(const RowGroupLayout &layout) {
  unsigned blockSize = layout.getBlockSize();
  if (!llvm::isPowerOf2_32(layout.rowsPerBlock) ||
      !llvm::isPowerOf2_32(layout.threadsPerRow) || blockSize > 1024 ||
      blockSize < 32)
    return llvm::createStringError("%u rows of %u threads is no block",
                                   layout.rowsPerBlock, layout.threadsPerRow);
  return llvm::Error::success();
}

/// Emits the stores of `outputs`, by the threads of rows inside the space;
/// per-row outputs by the row's first thread (of its first chunk, when
/// `firstChunk` names a condition).
static llvm::Error
emitOutputs(TensorEmitter &emitter, CodeWriter &body,
            llvm::ArrayRef<KernelOutput> outputs,
            llvm::ArrayRef<std::pair<SmallVector<AffineExpr>, bool>> indices,
            const RowSpace &space, const RowGroupLayout &layout,
            llvm::StringRef firstChunk) {
  body.line("if (" + layout.valid + ") {");
  body.indent();
  emitter.pushScope();
  for (auto [i, output] : llvm::enumerate(outputs)) {
    const auto &[index, perRow] = indices[i];
    if (perRow) {
      if (llvm::Error error = emitPerRowStore(
              emitter, body, output, index,
              layout.lane + " == 0" +
                  (firstChunk.empty() ? "" : " && " + firstChunk.str())))
        return error;
      continue;
    }
    emitter.openRowLoop(space.length);
    auto value = emitter.valueAt(output.value, index);
    if (!value)
      return value.takeError();
    // The element's linear index: (outer * length + c) * inner + inner.
    std::string at = space.inner == 1
                         ? "row * " + std::to_string(space.length) + "LL + c"
                         : "((row / " + std::to_string(space.inner) + "LL) * " +
                               std::to_string(space.length) + "LL + c) * " +
                               std::to_string(space.inner) + "LL + row % " +
                               std::to_string(space.inner) + "LL";
    body.line(output.param + "[" + at +
              "] = " + convertFromCompute(output.elementType, *value) + ";");
    emitter.closeRowLoop();
  }
  emitter.popScope();
  body.dedent();
  body.line("}");
  return llvm::Error::success();
}

namespace {
/// How a kernel's rows are split into chunks (one chunk: not split).
struct Chunks {
  int64_t count = 1;
  int64_t length = 0;
};
} // namespace

/// The kernel around `caches` and `body`: the thread's row and place in
/// it, and with chunks, its chunk and the chunk's range of the row.
static GeneratedKernel
assembleKernel(llvm::StringRef entry, llvm::StringRef comment,
               const RowGroupLayout &layout, std::string signature,
               std::vector<std::string> args, const CodeWriter &caches,
               const CodeWriter &body, const RowSpace &space, Chunks chunks) {
  GeneratedKernel kernel;
  kernel.entry = entry.str();
  kernel.args = std::move(args);
  CodeWriter code;
  code.comment(comment);
  code.line(signature + " {");
  code.indent();
  int64_t rows = space.getNumRows();
  code.line("const int " + layout.rowInBlock + " = " +
            layout.getRowInBlockExpr() + ";");
  code.line("const int " + layout.lane + " = " + layout.getLaneExpr() + ";");
  code.line("(void)" + layout.lane + ";");
  std::string block = "(long long)blockIdx.x";
  if (chunks.count > 1) {
    std::string s = std::to_string(chunks.count) + "LL";
    code.line("const long long chunk = (long long)blockIdx.x % " + s + ";");
    code.line("const long long chunkStart = chunk * " +
              std::to_string(chunks.length) + "LL;");
    code.line("const long long chunkEnd = min(chunkStart + " +
              std::to_string(chunks.length) + "LL, " +
              std::to_string(space.length) + "LL);");
    block = "((long long)blockIdx.x / " + s + ")";
  }
  code.line("const long long kopt_first = " + block + " * " +
            std::to_string(layout.rowsPerBlock) + "LL + " + layout.rowInBlock +
            ";");
  // The threads of rows past the end work on the last row, so that they
  // take part in every reduction and read only inside the tensors, and
  // write nothing.
  code.line("const bool " + layout.valid + " = kopt_first < " +
            std::to_string(rows) + "LL;");
  code.line("const long long row = " + layout.valid +
            " ? kopt_first : " + std::to_string(rows - 1) + "LL;");
  code.lines(caches.str());
  code.lines(body.str());
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  int64_t rowBlocks = (rows + layout.rowsPerBlock - 1) / layout.rowsPerBlock;
  kernel.grid = {std::to_string(rowBlocks * chunks.count), "1", "1"};
  kernel.block = {std::to_string(layout.getBlockSize()), "1", "1"};
  return kernel;
}

/// The outputs' values and indices, for collectReductionLevels.
static void
splitIndices(llvm::ArrayRef<KernelOutput> outputs,
             llvm::ArrayRef<std::pair<SmallVector<AffineExpr>, bool>> indices,
             std::vector<Value> &values,
             std::vector<SmallVector<AffineExpr>> &outputIndices) {
  for (auto [output, index] : llvm::zip(outputs, indices)) {
    values.push_back(output.value);
    outputIndices.push_back(index.first);
  }
}

llvm::Expected<GeneratedKernel> mlir::kopt::generateTiledRowKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const RowSpace &space, const TiledRowOptions &options) {
  const RowGroupLayout &layout = options.layout;
  if (outputs.empty())
    return llvm::createStringError("a kernel needs an output");
  if (llvm::Error error = checkLayout(layout))
    return std::move(error);
  auto indices = getRowSpaceIndices(context, outputs, space);
  if (!indices)
    return indices.takeError();

  CodeWriter body, caches;
  TensorEmitter emitter(context, body, {"row", "c"}, leafOf);
  emitter.setDimExtent(0, space.getNumRows());
  emitter.setDimExtent(1, space.length);
  emitter.enableCooperativeReductions(1, layout.getBlockSize());
  emitter.setRowGroup(layout);
  if (options.cacheRegisters)
    emitter.enableRowCache(space.length, options.cacheRegisters, caches);

  // The row's reductions first, by all of its threads, outside divergent
  // code; each once, those that need none of the others in one pass.
  std::vector<Value> values;
  std::vector<SmallVector<AffineExpr>> outputIndices;
  splitIndices(outputs, *indices, values, outputIndices);
  auto levels = collectReductionLevels(emitter, values, outputIndices);
  if (!levels)
    return levels.takeError();
  if (llvm::Error error = emitReductionLevels(emitter, *levels))
    return std::move(error);
  if (llvm::Error error =
          emitOutputs(emitter, body, outputs, *indices, space, layout, ""))
    return std::move(error);

  std::vector<std::string> args;
  std::string signature = printKernelSignature(
      entry, layout.getBlockSize(), emitter.getLeaves(), outputs, args);
  return assembleKernel(entry, comment, layout, signature, args, caches, body,
                        space, Chunks());
}

llvm::Expected<std::vector<GeneratedKernel>>
mlir::kopt::generateSplitTiledRowKernels(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const RowSpace &space, const RowGroupLayout &layout, int64_t chunkCount,
    const std::function<std::string(unsigned)> &partialName,
    std::vector<PartialBuffer> &partials) {
  if (outputs.empty())
    return llvm::createStringError("a kernel needs an output");
  if (llvm::Error error = checkLayout(layout))
    return std::move(error);
  auto indices = getRowSpaceIndices(context, outputs, space);
  if (!indices)
    return indices.takeError();

  // The row-wide reductions in levels: a kernel per level.
  std::vector<std::vector<CooperativeReduction>> levels;
  {
    CodeWriter scratch;
    TensorEmitter finder(context, scratch, {"row", "c"}, leafOf);
    finder.enableCooperativeReductions(1, layout.getBlockSize());
    finder.setRowGroup(layout);
    std::vector<Value> values;
    std::vector<SmallVector<AffineExpr>> outputIndices;
    splitIndices(outputs, *indices, values, outputIndices);
    auto found = collectReductionLevels(finder, values, outputIndices);
    if (!found)
      return found.takeError();
    levels = std::move(*found);
  }
  if (levels.empty())
    return llvm::createStringError("no row-wide reduction to split");
  std::vector<CooperativeReduction> reductions;
  for (const std::vector<CooperativeReduction> &level : levels)
    for (const CooperativeReduction &reduction : level) {
      if (getReductionLength(reduction) != space.length)
        return llvm::createStringError(
            "a reduction does not run over the whole row");
      reductions.push_back(reduction);
    }
  partials.clear();
  for (auto [k, reduction] : llvm::enumerate(reductions)) {
    PartialBuffer buffer;
    buffer.param = partialName(k);
    buffer.elementType =
        *getElementType(getElementTypeOrSelf(reduction.result.getType()));
    buffer.shape = {space.getNumRows(), chunkCount};
    partials.push_back(buffer);
  }

  Chunks chunks;
  chunks.count = chunkCount;
  chunks.length = (space.length + chunkCount - 1) / chunkCount;
  std::string s = std::to_string(chunkCount) + "LL";
  std::vector<GeneratedKernel> kernels;
  size_t done = 0;
  for (size_t k = 0; k <= levels.size(); ++k) {
    bool last = k == levels.size();
    CodeWriter body;
    TensorEmitter emitter(context, body, {"row", "c"}, leafOf);
    emitter.setDimExtent(0, space.getNumRows());
    emitter.setDimExtent(1, space.length);
    emitter.enableCooperativeReductions(1, layout.getBlockSize());
    emitter.setRowGroup(layout);
    emitter.setRowRange("chunkStart", "chunkEnd");
    for (size_t i = 0; i < done; ++i) {
      emitter.addParameter(
          {partials[i].param, partials[i].elementType, partials[i].shape});
      if (llvm::Error error = emitter.emitCombinedPartials(
              reductions[i], partials[i].param, "row * " + s, chunkCount))
        return std::move(error);
    }
    std::vector<KernelOutput> written;
    std::vector<size_t> stored;
    if (!last) {
      std::vector<std::string> stores;
      for (size_t i = 0; i < levels[k].size(); ++i) {
        stored.push_back(done + i);
        stores.push_back(partials[done + i].param + "[row * " + s +
                         " + chunk]");
      }
      if (llvm::Error error = emitter.emitCooperatives(levels[k], stores))
        return std::move(error);
      done += levels[k].size();
    } else {
      if (llvm::Error error = emitOutputs(emitter, body, outputs, *indices,
                                          space, layout, "chunk == 0"))
        return std::move(error);
      written.assign(outputs.begin(), outputs.end());
    }

    std::string name = (entry + "_" + std::to_string(k)).str();
    std::vector<std::string> args;
    std::string signature = printKernelSignature(
        name, layout.getBlockSize(), emitter.getLeaves(), written, args);
    // The partial buffers this kernel writes.
    for (size_t i : stored) {
      signature.pop_back();
      signature += std::string(args.empty() ? "" : ", ") +
                   getCudaStorageType(partials[i].elementType).str() +
                   " *__restrict__ " + partials[i].param + ")";
      args.push_back(partials[i].param);
    }
    kernels.push_back(assembleKernel(
        name,
        comment.str() + (last ? std::string(" (outputs, split rows)")
                              : " (partial reductions, level " +
                                    std::to_string(k) + ", split rows)"),
        layout, signature, args, CodeWriter(), body, space, chunks));
  }
  return kernels;
}
