//===- ReductionLevels.cpp - Row reductions in dependency levels -*- C++ -*-=//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "ReductionLevels.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <map>

using namespace mlir;
using namespace mlir::kopt;

static bool isSame(const CooperativeReduction &a,
                   const CooperativeReduction &b) {
  return a.result == b.result && a.index == b.index;
}

int64_t mlir::kopt::getReductionLength(const CooperativeReduction &reduction) {
  auto generic = reduction.result.getDefiningOp<linalg::GenericOp>();
  int64_t count = 1;
  for (auto [range, iterator] : llvm::zip(generic.getStaticLoopRanges(),
                                          generic.getIteratorTypesArray()))
    if (iterator == utils::IteratorType::reduction)
      count *= range;
  return count;
}

llvm::Expected<std::vector<std::vector<CooperativeReduction>>>
mlir::kopt::collectReductionLevels(
    TensorEmitter &emitter, llvm::ArrayRef<Value> values,
    llvm::ArrayRef<SmallVector<AffineExpr>> indices) {
  // Every reduction once, each after those it needs.
  std::vector<CooperativeReduction> all;
  for (auto [value, index] : llvm::zip(values, indices)) {
    auto needed = emitter.collectCooperativeReductions(value, index);
    if (!needed)
      return needed.takeError();
    for (CooperativeReduction &reduction : *needed)
      if (llvm::none_of(all, [&](const CooperativeReduction &known) {
            return isSame(known, reduction);
          }))
        all.push_back(reduction);
  }
  // A reduction's level is one more than the highest of those it needs:
  // a dry run of its own value lists them before it.
  std::vector<unsigned> levelOf;
  std::vector<std::vector<CooperativeReduction>> levels;
  for (const CooperativeReduction &reduction : all) {
    auto needed =
        emitter.collectCooperativeReductions(reduction.result, reduction.index);
    if (!needed)
      return needed.takeError();
    unsigned level = 0;
    for (const CooperativeReduction &dependency : *needed) {
      if (isSame(dependency, reduction))
        continue;
      for (auto [known, knownLevel] : llvm::zip(all, levelOf))
        if (isSame(known, dependency))
          level = std::max(level, knownLevel + 1);
    }
    levelOf.push_back(level);
    if (levels.size() <= level)
      levels.resize(level + 1);
    levels[level].push_back(reduction);
  }
  return levels;
}

llvm::Error mlir::kopt::emitReductionLevels(
    TensorEmitter &emitter,
    llvm::ArrayRef<std::vector<CooperativeReduction>> levels) {
  for (const std::vector<CooperativeReduction> &level : levels) {
    // One loop per length, in order of first appearance.
    std::vector<int64_t> lengths;
    std::map<int64_t, std::vector<CooperativeReduction>> byLength;
    for (const CooperativeReduction &reduction : level) {
      int64_t length = getReductionLength(reduction);
      if (!byLength.count(length))
        lengths.push_back(length);
      byLength[length].push_back(reduction);
    }
    for (int64_t length : lengths)
      if (llvm::Error error = emitter.emitCooperatives(byLength[length]))
        return error;
  }
  return llvm::Error::success();
}

llvm::Error mlir::kopt::emitPerRowStore(TensorEmitter &emitter,
                                        CodeWriter &body,
                                        const KernelOutput &output,
                                        llvm::ArrayRef<AffineExpr> index,
                                        llvm::StringRef condition) {
  body.line("if (" + condition.str() + ") {");
  body.indent();
  emitter.pushScope();
  auto value = emitter.valueAt(output.value, index);
  if (!value)
    return value.takeError();
  body.line(output.param +
            "[row] = " + convertFromCompute(output.elementType, *value) + ";");
  emitter.popScope();
  body.dedent();
  body.line("}");
  return llvm::Error::success();
}

llvm::Error mlir::kopt::emitWideRowStore(
    TensorEmitter &emitter, CodeWriter &body, const KernelOutput &output,
    llvm::ArrayRef<AffineExpr> index, int64_t rowLength,
    llvm::StringRef rowStart, bool stream) {
  std::string first = emitter.openWideRowLoop(rowLength, 4);
  std::string vector = body.fresh("kopt_out");
  body.line("KoptVec<float, 4> " + vector + ";");
  std::string lane = emitter.openLaneLoop(rowLength, first, 4);
  auto value = emitter.valueAt(output.value, index);
  if (!value)
    return value.takeError();
  body.line(vector + ".v[" + lane + "] = " + *value + ";");
  emitter.closeRowLoop();
  std::string at = output.param + " + " + rowStart.str() + " + " + first;
  body.line(stream
                ? "__stcs(reinterpret_cast<float4 *>(" + at +
                      "), *reinterpret_cast<const float4 *>(&" + vector + "));"
                : "*reinterpret_cast<KoptVec<float, 4> *>(" + at +
                      ") = " + vector + ";");
  emitter.closeWideRowLoop();
  return llvm::Error::success();
}
