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

llvm::Expected<GeneratedKernel> mlir::kopt::generateTiledRowKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const RowSpace &space, const TiledRowOptions &options) {
  const RowGroupLayout &layout = options.layout;
  unsigned blockSize = layout.getBlockSize();
  if (outputs.empty())
    return llvm::createStringError("a kernel needs an output");
  if (!llvm::isPowerOf2_32(layout.rowsPerBlock) ||
      !llvm::isPowerOf2_32(layout.threadsPerRow) || blockSize > 1024 ||
      blockSize < 32)
    return llvm::createStringError("%u rows of %u threads is no block",
                                   layout.rowsPerBlock, layout.threadsPerRow);
  auto indices = getRowSpaceIndices(context, outputs, space);
  if (!indices)
    return indices.takeError();

  CodeWriter body, caches;
  TensorEmitter emitter(context, body, {"row", "c"}, leafOf);
  emitter.enableCooperativeReductions(1, blockSize);
  emitter.setRowGroup(layout);
  if (options.cacheRegisters)
    emitter.enableRowCache(space.length, options.cacheRegisters, caches);

  // The row's reductions first, by all of its threads, outside divergent
  // code; each once, those that need none of the others in one pass.
  std::vector<Value> values;
  std::vector<SmallVector<AffineExpr>> outputIndices;
  for (auto [output, index] : llvm::zip(outputs, *indices)) {
    values.push_back(output.value);
    outputIndices.push_back(index.first);
  }
  auto levels = collectReductionLevels(emitter, values, outputIndices);
  if (!levels)
    return levels.takeError();
  if (llvm::Error error = emitReductionLevels(emitter, *levels))
    return std::move(error);

  // Then the outputs, by the threads of rows inside the space.
  body.line("if (kopt_valid) {");
  body.indent();
  emitter.pushScope();
  for (auto [i, output] : llvm::enumerate(outputs)) {
    const auto &[index, perRow] = (*indices)[i];
    if (perRow) {
      body.line("if (" + layout.lane + " == 0) {");
      body.indent();
      emitter.pushScope();
      auto value = emitter.valueAt(output.value, index);
      if (!value)
        return value.takeError();
      body.line(output.param + "[row] = " +
                convertFromCompute(output.elementType, *value) + ";");
      emitter.popScope();
      body.dedent();
      body.line("}");
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

  GeneratedKernel kernel;
  kernel.entry = entry.str();
  CodeWriter code;
  code.comment(comment);
  code.line(printKernelSignature(entry, blockSize, emitter.getLeaves(), outputs,
                                 kernel.args) +
            " {");
  code.indent();
  int64_t rows = space.getNumRows();
  std::string rowsText = std::to_string(rows) + "LL";
  code.line("const int " + layout.rowInBlock + " = " +
            layout.getRowInBlockExpr() + ";");
  code.line("const int " + layout.lane + " = " + layout.getLaneExpr() + ";");
  code.line("(void)" + layout.lane + ";");
  code.line("const long long kopt_first = (long long)blockIdx.x * " +
            std::to_string(layout.rowsPerBlock) + "LL + " + layout.rowInBlock +
            ";");
  // The threads of rows past the end work on the last row, so that they
  // take part in every reduction and read only inside the tensors, and
  // write nothing.
  code.line("const bool kopt_valid = kopt_first < " + rowsText + ";");
  code.line("const long long row = kopt_valid ? kopt_first : " +
            std::to_string(rows - 1) + "LL;");
  for (const std::string *text : {&caches.str(), &body.str()}) {
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(*text).split(lines, '\n', -1, false);
    for (llvm::StringRef line : lines)
      code.line(line);
  }
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  kernel.grid = {
      std::to_string((rows + layout.rowsPerBlock - 1) / layout.rowsPerBlock),
      "1", "1"};
  kernel.block = {std::to_string(blockSize), "1", "1"};
  return kernel;
}
