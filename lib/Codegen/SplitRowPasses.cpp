//===- SplitRowPasses.cpp - The passes of split rows ------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "SplitRowPasses.h"

#include "ReductionLevels.h"

#include "mlir/IR/AffineExpr.h"

using namespace mlir;
using namespace mlir::kopt;

/// `kopt_load_keep(p)`: an f32 load whose line L2 keeps before others
/// (evict_last), guarded so that several kernels of one source may each
/// include it.
llvm::StringRef mlir::kopt::getLoadKeepHelper() {
  return R"cuda(#ifndef KOPT_LOAD_KEEP
#define KOPT_LOAD_KEEP
// A load whose line L2 keeps before others (evict_last).
__device__ __forceinline__ float kopt_load_keep(const float *p) {
  float v;
  asm("{\n\t.reg .b64 policy;\n\t"
      "createpolicy.fractional.L2::evict_last.b64 policy, 1.0;\n\t"
      "ld.global.L2::cache_hint.f32 %0, [%1], policy;\n\t}"
      : "=f"(v) : "l"(p));
  return v;
}
#endif)cuda";
}

static int64_t product(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  return count;
}

llvm::Expected<std::vector<std::pair<SmallVector<AffineExpr>, bool>>>
mlir::kopt::getRowIndices(MLIRContext *context,
                          llvm::ArrayRef<KernelOutput> outputs, int64_t numRows,
                          int64_t rowLength) {
  AffineExpr row = getAffineDimExpr(0, context);
  AffineExpr col = getAffineDimExpr(1, context);
  std::vector<std::pair<SmallVector<AffineExpr>, bool>> result;
  for (const KernelOutput &output : outputs) {
    int64_t count = product(output.shape);
    if (count == numRows) {
      result.push_back({TensorEmitter::delinearize(row, output.shape), true});
      continue;
    }
    if (count != numRows * rowLength)
      return llvm::createStringError(
          "output of %lld elements fits neither %lld rows nor rows of %lld",
          (long long)count, (long long)numRows, (long long)rowLength);
    // Split the shape where the row dimensions end.
    size_t split = 0;
    int64_t outer = 1;
    while (split < output.shape.size() && outer < numRows)
      outer *= output.shape[split++];
    if (outer != numRows)
      return llvm::createStringError(
          "the row dimensions of an output are not outermost");
    std::vector<int64_t> rowShape(output.shape.begin(),
                                  output.shape.begin() + split);
    std::vector<int64_t> colShape(output.shape.begin() + split,
                                  output.shape.end());
    SmallVector<AffineExpr> index = TensorEmitter::delinearize(row, rowShape);
    SmallVector<AffineExpr> cols = TensorEmitter::delinearize(col, colShape);
    index.append(cols.begin(), cols.end());
    result.push_back({index, false});
  }
  return result;
}

llvm::Expected<SplitRowPlan> mlir::kopt::planSplitRows(
    MLIRContext *context, llvm::ArrayRef<KernelOutput> outputs,
    const TensorEmitter::LeafFn &leafOf, int64_t numRows, int64_t rowLength,
    unsigned blockSize, int64_t chunks,
    const std::function<std::string(unsigned)> &partialName) {
  SplitRowPlan plan;
  auto indices = getRowIndices(context, outputs, numRows, rowLength);
  if (!indices)
    return indices.takeError();
  plan.indices = std::move(*indices);

  // The row-wide reductions in levels: a pass per level, each computing
  // every reduction of its level.
  CodeWriter scratch;
  TensorEmitter finder(context, scratch, {"row", "c"}, leafOf);
  finder.enableCooperativeReductions(1, blockSize);
  std::vector<Value> values;
  std::vector<SmallVector<AffineExpr>> outputIndices;
  for (auto [output, index] : llvm::zip(outputs, plan.indices)) {
    values.push_back(output.value);
    outputIndices.push_back(index.first);
  }
  auto levels = collectReductionLevels(finder, values, outputIndices);
  if (!levels)
    return levels.takeError();
  plan.levels = std::move(*levels);
  if (plan.levels.empty())
    return llvm::createStringError("no row-wide reduction to split");
  for (const std::vector<CooperativeReduction> &level : plan.levels)
    for (const CooperativeReduction &reduction : level) {
      if (getReductionLength(reduction) != rowLength)
        return llvm::createStringError(
            "a reduction does not run over the whole row");
      plan.reductions.push_back(reduction);
    }
  for (auto [k, reduction] : llvm::enumerate(plan.reductions)) {
    PartialBuffer buffer;
    buffer.param = partialName(k);
    buffer.elementType =
        *getElementType(getElementTypeOrSelf(reduction.result.getType()));
    buffer.shape = {numRows, chunks};
    plan.partials.push_back(buffer);
  }
  return plan;
}

llvm::Expected<SplitPass>
mlir::kopt::emitSplitPass(MLIRContext *context, const SplitRowPlan &plan,
                          size_t pass, llvm::ArrayRef<KernelOutput> outputs,
                          const TensorEmitter::LeafFn &leafOf, int64_t numRows,
                          int64_t rowLength, unsigned blockSize, int64_t chunks,
                          const SplitPassOptions &options) {
  bool last = pass == plan.levels.size();
  // The partials of earlier levels' reductions, and this level's.
  size_t done = 0;
  for (size_t k = 0; k < pass; ++k)
    done += plan.levels[k].size();
  CodeWriter body;
  TensorEmitter emitter(context, body, {"row", "c"}, leafOf);
  emitter.setDimExtent(0, numRows);
  emitter.setDimExtent(1, rowLength);
  emitter.enableCooperativeReductions(1, blockSize);
  emitter.setRowRange("chunkStart", "chunkEnd");
  emitter.setRowRangeUnroll(options.unroll);
  const bool wide = options.wide && rowLength % 4 == 0;
  if (wide)
    emitter.setWideRowLoops(options.vectorLoadFunction,
                            options.broadcastVectorLoadFunction);
  if (wide && options.rowHold)
    emitter.setRowHold(*options.rowHold);
  if (!options.loadFunction.empty())
    emitter.setLoadFunction(options.loadFunction);
  if (!options.broadcastLoadFunction.empty())
    emitter.setBroadcastLoadFunction(options.broadcastLoadFunction);
  std::string s = std::to_string(chunks) + "LL";
  for (size_t i = 0; i < done; ++i) {
    const PartialBuffer &partial = plan.partials[i];
    std::string reader = options.partialReader
                             ? options.partialReader(partial.param)
                             : partial.param;
    emitter.addParameter({reader, partial.elementType, partial.shape});
    if (llvm::Error error = emitter.emitCombinedPartials(
            plan.reductions[i], reader, "row * " + s, chunks,
            options.combineTogether))
      return std::move(error);
  }
  SplitPass result;
  if (!last) {
    std::vector<std::string> stores;
    for (size_t i = 0; i < plan.levels[pass].size(); ++i) {
      result.stored.push_back(done + i);
      stores.push_back(plan.partials[done + i].param + "[row * " + s +
                       " + chunk]");
    }
    if (llvm::Error error = emitter.emitCooperatives(plan.levels[pass], stores))
      return std::move(error);
  } else {
    for (auto [i, output] : llvm::enumerate(outputs)) {
      const auto &[index, perRow] = plan.indices[i];
      if (perRow) {
        if (llvm::Error error = emitPerRowStore(
                emitter, body, output, index, "chunk == 0 && threadIdx.x == 0"))
          return error;
        continue;
      }
      std::string rowStart = "row * " + std::to_string(rowLength) + "LL";
      if (wide && output.elementType == ElementType::F32) {
        if (llvm::Error error =
                emitWideRowStore(emitter, body, output, index, rowLength,
                                 rowStart, options.streamStores))
          return error;
        continue;
      }
      emitter.openRowLoop(rowLength);
      auto value = emitter.valueAt(output.value, index);
      if (!value)
        return value.takeError();
      std::string at = output.param + "[" + rowStart + " + c]";
      std::string converted = convertFromCompute(output.elementType, *value);
      body.line(options.streamStores && output.elementType == ElementType::F32
                    ? "__stcs(&" + at + ", " + converted + ");"
                    : at + " = " + converted + ";");
      emitter.closeRowLoop();
    }
    result.written.assign(outputs.begin(), outputs.end());
  }
  result.body = body.str();
  result.leaves = emitter.getLeaves();
  llvm::append_range(result.heldRowLoads, emitter.getHeldRowLoads());
  result.unheldRowLoads = emitter.hasUnheldRowLoads();
  return result;
}

GeneratedKernel mlir::kopt::generateCountsReset(llvm::StringRef entry,
                                                llvm::StringRef comment,
                                                llvm::StringRef param,
                                                int64_t count) {
  GeneratedKernel reset;
  reset.entry = entry.str();
  CodeWriter code;
  code.comment(comment.str());
  code.line("extern \"C\" __global__ void " + reset.entry +
            "(long long *__restrict__ " + param.str() + ") {");
  code.line("  for (int i = threadIdx.x; i < " + std::to_string(count) +
            "; i += 256) " + param.str() + "[i] = 0;");
  code.line("}");
  reset.code = code.str();
  reset.grid = {"1", "1", "1"};
  reset.block = {"256", "1", "1"};
  reset.args = {param.str()};
  return reset;
}
