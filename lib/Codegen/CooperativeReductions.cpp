//===- CooperativeReductions.cpp - Reductions by a block's threads -------===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The part of TensorEmitter that reduces with every thread of a block:
// recognising an associative combiner, folding each thread's share, warp
// shuffles and the block's partials in shared memory, and the reductions
// one loop computes together.
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/TensorEmitter.h"

#include "AffineIndex.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::kopt;

/// Recognises an associative, commutative combiner in a single-output
/// reduction body whose accumulator is used only by that combiner.
static std::optional<ReductionCombiner> matchCombiner(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumResults() != 1)
    return std::nullopt;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Operation *combine = yield.getValues()[0].getDefiningOp();
  BlockArgument acc = body.getArguments().back();
  if (!combine || !acc.hasOneUse() || combine->getNumOperands() != 2 ||
      !llvm::is_contained(combine->getOperands(), Value(acc)))
    return std::nullopt;
  Type type = acc.getType();
  bool isDouble = type.isF64();
  std::string inf = isDouble ? "KOPT_INF_D" : "KOPT_INF_F";
  ReductionCombiner c;
  if (isa<arith::AddFOp>(combine))
    c = {isDouble ? "0.0" : "0.0f", "(%0 + %1)"};
  else if (isa<arith::MulFOp>(combine))
    c = {isDouble ? "1.0" : "1.0f", "(%0 * %1)"};
  else if (isa<arith::MaximumFOp>(combine))
    c = {"(-" + inf + ")", "kopt_maximumf(%0, %1)"};
  else if (isa<arith::MinimumFOp>(combine))
    c = {inf, "kopt_minimumf(%0, %1)"};
  else if (isa<arith::MaxNumFOp>(combine))
    c = {"(-" + inf + ")", isDouble ? "fmax(%0, %1)" : "fmaxf(%0, %1)"};
  else if (isa<arith::MinNumFOp>(combine))
    c = {inf, isDouble ? "fmin(%0, %1)" : "fminf(%0, %1)"};
  else if (isa<arith::AddIOp>(combine))
    c = {"0", "(%0 + %1)"};
  else if (isa<arith::MaxSIOp>(combine) && type.isInteger(32))
    c = {"(-2147483647 - 1)", "max(%0, %1)"};
  else if (isa<arith::MinSIOp>(combine) && type.isInteger(32))
    c = {"2147483647", "min(%0, %1)"};
  else
    return std::nullopt;
  // Shuffles need 32- or 64-bit values.
  if (!(type.isF32() || type.isF64() || type.isF16() || type.isBF16() ||
        type.isInteger(32) || type.isInteger(64)))
    return std::nullopt;
  return c;
}

std::optional<ReductionCombiner>
mlir::kopt::getReductionCombiner(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  return generic ? matchCombiner(generic) : std::nullopt;
}

bool mlir::kopt::hasAssociativeCombiner(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  return generic && matchCombiner(generic).has_value();
}

bool TensorEmitter::isCooperative(Operation *op,
                                  llvm::ArrayRef<AffineExpr> parallelIndex) {
  if (!threadDim)
    return false;
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !matchCombiner(generic))
    return false;
  // The index must be the same for every thread of the block and defined
  // at the kernel's top level.
  for (AffineExpr expr : parallelIndex) {
    if (!expr)
      continue;
    if (expr.isFunctionOfDim(*threadDim))
      return false;
    for (unsigned dim = numKernelDims; dim < dimNames.size(); ++dim)
      if (expr.isFunctionOfDim(dim))
        return false;
  }
  return true;
}

llvm::Error TensorEmitter::emitCombinedPartials(const CooperativeReduction &red,
                                                llvm::StringRef partials,
                                                llvm::StringRef first,
                                                int64_t count, bool together) {
  auto generic = red.result.getDefiningOp<linalg::GenericOp>();
  std::optional<ReductionCombiner> combiner =
      generic ? matchCombiner(generic) : std::nullopt;
  if (!combiner)
    return llvm::createStringError("not a cooperative reduction");
  auto type = getCudaScalarType(getElementTypeOrSelf(red.result.getType()));
  if (!type)
    return type.takeError();
  // The initial value is read at the reduction's own index, like the
  // sequential definition.
  SmallVector<AffineExpr> loops(generic.getNumLoops());
  AffineMap outMap =
      generic.getIndexingMapMatchingResult(cast<OpResult>(red.result));
  for (auto [position, expr] : llvm::enumerate(outMap.getResults()))
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      loops[dim.getPosition()] = red.index[position];
  for (AffineExpr &loop : loops)
    if (!loop)
      loop = getAffineConstantExpr(0, context);
  std::string acc = out->fresh("part");
  out->line(*type + " " + acc + " = " + combiner->identity + ";");
  if (together) {
    if (rowGroup || clusterSize > 1)
      return llvm::createStringError(
          "partials are combined together by whole blocks only");
    out->line(
        "for (int s = threadIdx.x; s < " + std::to_string(count) +
        "; s += " + std::to_string(blockSize) + ") " + acc + " = " +
        combiner->combine(acc, partials.str() + "[" + first.str() + " + s]") +
        ";");
    if (llvm::Error error =
            finishCooperative(red, generic, *combiner, *type, acc, loops, ""))
      return error;
    out->line("(void)" + *lookupMemo(makeKey(red.result, red.index)) + ";");
    return llvm::Error::success();
  }
  std::string total = out->fresh("red");
  out->line(
      "for (int s = 0; s < " + std::to_string(count) + "; ++s) " + acc + " = " +
      combiner->combine(acc, partials.str() + "[" + first.str() + " + s]") +
      ";");
  OpOperand &init = generic.getDpsInitsMutable()[0];
  auto initValue = valueAt(
      init.get(), applyMap(generic.getMatchingIndexingMap(&init), loops));
  if (!initValue)
    return initValue.takeError();
  out->line("const " + *type + " " + total + " = " +
            combiner->combine(*initValue, acc) + ";");
  // Kernels combine partials they may not all read.
  out->line("(void)" + total + ";");
  memoize(makeKey(red.result, red.index), total);
  return llvm::Error::success();
}

llvm::Error TensorEmitter::emitCooperative(const CooperativeReduction &red,
                                           llvm::StringRef partialStore) {
  return emitCooperatives({red}, {partialStore.str()});
}

/// The line combining `value` over a warp's 32 lanes (XOR butterflies),
/// leaving the total in every lane.
static std::string warpAllReduce(const ReductionCombiner &combiner,
                                 const std::string &value) {
  return "for (int o = 16; o > 0; o >>= 1) " + value + " = " +
         combiner.combine(value,
                          "__shfl_xor_sync(0xffffffffu, " + value + ", o)") +
         ";";
}

llvm::Error
TensorEmitter::emitCooperatives(llvm::ArrayRef<CooperativeReduction> reds,
                                llvm::ArrayRef<std::string> partialStores) {
  if (reds.empty())
    return llvm::Error::success();
  if (!partialStores.empty() && partialStores.size() != reds.size())
    return llvm::createStringError("one partial store per reduction");
  // What each reduction loops over and accumulates in.
  struct Pending {
    linalg::GenericOp generic;
    ReductionCombiner combiner;
    SmallVector<AffineExpr> loops, parallel;
    SmallVector<unsigned> reductionLoops;
    SmallVector<int64_t> sizes;
    std::string type, acc;
  };
  std::vector<Pending> pending;
  int64_t count = -1;
  for (const CooperativeReduction &red : reds) {
    Pending p;
    p.generic = red.result.getDefiningOp<linalg::GenericOp>();
    std::optional<ReductionCombiner> combiner =
        p.generic ? matchCombiner(p.generic) : std::nullopt;
    if (!combiner)
      return llvm::createStringError("not a cooperative reduction");
    p.combiner = *combiner;
    unsigned numLoops = p.generic.getNumLoops();
    p.loops.resize(numLoops);
    AffineMap outMap =
        p.generic.getIndexingMapMatchingResult(cast<OpResult>(red.result));
    for (auto [position, expr] : llvm::enumerate(outMap.getResults()))
      if (auto dim = dyn_cast<AffineDimExpr>(expr))
        p.loops[dim.getPosition()] = red.index[position];
    SmallVector<utils::IteratorType> iterators =
        p.generic.getIteratorTypesArray();
    SmallVector<int64_t> ranges = p.generic.getStaticLoopRanges();
    int64_t length = 1;
    for (unsigned loop = 0; loop < numLoops; ++loop) {
      if (iterators[loop] == utils::IteratorType::reduction) {
        p.reductionLoops.push_back(loop);
        p.sizes.push_back(ranges[loop]);
        length *= ranges[loop];
      } else if (!p.loops[loop]) {
        p.loops[loop] = getAffineConstantExpr(0, context);
      }
    }
    if (count >= 0 && length != count)
      return llvm::createStringError("reductions of different lengths");
    count = length;
    p.parallel = p.loops;
    auto type = getCudaScalarType(getElementTypeOrSelf(red.result.getType()));
    if (!type)
      return type.takeError();
    p.type = *type;
    p.acc = out->fresh("part");
    out->line(p.type + " " + p.acc + " = " + p.combiner.identity + ";");
    pending.push_back(std::move(p));
  }

  // One block-strided loop over the linearised reduction space, in the
  // kernel's thread dimension (so that its reads match the row's outputs'
  // and share their register caches), accumulating every reduction: each
  // element is read once for all of them.
  const bool wide = wideRowLoops && rowRange && count % 4 == 0;
  if (wide)
    openLaneLoop(count, openWideRowLoop(count, 4), 4);
  else
    openRowLoop(count);
  for (Pending &p : pending) {
    SmallVector<AffineExpr> coords =
        delinearize(getAffineDimExpr(*threadDim, context), p.sizes);
    for (auto [loop, coord] : llvm::zip(p.reductionLoops, coords))
      p.loops[loop] = coord;
    SmallVector<std::string> args;
    for (OpOperand *input : p.generic.getDpsInputOperands()) {
      auto value = inputAt(p.generic, input, p.loops);
      if (!value)
        return value.takeError();
      args.push_back(*value);
      if (reductionInputSink && p.generic.payloadUsesValueFromOperand(input))
        reductionInputSink(
            input->get(),
            applyMap(p.generic.getMatchingIndexingMap(input), p.loops), *value);
    }
    args.push_back(p.acc);
    BodyEmitter emitter(*out);
    emitter.setExtractHandler(
        [this](tensor::ExtractOp extract, llvm::ArrayRef<std::string> at) {
          return gatherAt(extract, at);
        });
    auto yielded =
        emitter.emit(p.generic.getRegion().front(), args,
                     [&](unsigned dim) { return print(p.loops[dim]); });
    if (!yielded)
      return yielded.takeError();
    out->line(p.acc + " = " + (*yielded)[0] + ";");
  }
  closeRowLoop();
  if (wide)
    closeWideRowLoop();

  if (groupReductions) {
    if (llvm::any_of(partialStores,
                     [](const std::string &store) { return !store.empty(); }))
      return llvm::createStringError("split rows take no group reductions");
    // Every block's totals into the group's slots, one barrier for them
    // all, then warp 0 combines each reduction's slots.
    std::vector<std::string> shared, slots;
    for (Pending &p : pending)
      shared.push_back(emitBlockTotal(p.combiner, p.type, p.acc));
    out->line("if (threadIdx.x == 0) {");
    out->indent();
    for (auto [i, p] : llvm::enumerate(pending)) {
      slots.push_back("kopt_group_slots(" +
                      std::to_string(groupReductionCount++) + ")");
      out->line("*reinterpret_cast<" + p.type + " *>(" + slots.back() +
                " + chunk) = " + shared[i] + "[0];");
    }
    out->dedent();
    out->line("}");
    out->line("kopt_group_sync();");
    // Reduction i's slots combined by warp i (modulo the block's warps), its
    // loads unrolled so that they are in flight together: one after another
    // they were an L2 round trip each under a full memory load, about 15 a
    // row of LayerNorm's one group.
    for (auto [i, p] : llvm::enumerate(pending)) {
      out->line("if ((threadIdx.x >> 5) == " + std::to_string(i) +
                "u % (blockDim.x >> 5)) {");
      out->indent();
      std::string total = out->fresh("kopt_group_total");
      out->line(p.type + " " + total + " = " + p.combiner.identity + ";");
      // Eight slots a lane at a time, each load's index clamped rather than
      // branched around, so that nothing orders them. Past L1, which may
      // hold the slots as an earlier row left them.
      out->line("for (unsigned kopt_base = 0; kopt_base < kopt_group_blocks; "
                "kopt_base += 256u) {");
      out->indent();
      out->line("#pragma unroll");
      out->line("for (unsigned kopt_u = 0; kopt_u < 8u; ++kopt_u) {");
      out->indent();
      out->line(
          "const unsigned q = kopt_base + (threadIdx.x & 31u) + 32u * kopt_u;");
      std::string slot = out->fresh("kopt_slot");
      out->line("const " + p.type + " " + slot +
                " = __ldcg(reinterpret_cast<const " + p.type + " *>(" +
                slots[i] + " + min(q, kopt_group_blocks - 1u)));");
      out->line(total + " = q < kopt_group_blocks ? " +
                p.combiner.combine(total, slot) + " : " + total + ";");
      out->dedent();
      out->line("}");
      out->dedent();
      out->line("}");
      out->line(warpAllReduce(p.combiner, total));
      out->line("if ((threadIdx.x & 31u) == 0) " + shared[i] +
                "[1] = " + total + ";");
      out->dedent();
      out->line("}");
    }
    out->line("__syncthreads();");
    for (auto [i, red] : llvm::enumerate(reds)) {
      Pending &p = pending[i];
      if (llvm::Error error =
              foldInitial(red, p.generic, p.combiner, p.type, shared[i] + "[1]",
                          out->fresh("red"), p.parallel))
        return error;
    }
    return llvm::Error::success();
  }

  if (!partialStores.empty() && !rowGroup && clusterSize == 1) {
    // Only the block's partials, stored by thread 0: every reduction's
    // warp totals behind one barrier, then warp 0 combines and stores each
    // (the block's other threads need none of them).
    unsigned warps = (blockSize + 31) / 32;
    std::vector<std::string> shared;
    for (Pending &p : pending) {
      shared.push_back(out->fresh("kopt_red"));
      out->line("__shared__ " + p.type + " " + shared.back() + "[32];");
      out->line(warpAllReduce(p.combiner, p.acc));
      out->line("if ((threadIdx.x & 31) == 0) " + shared.back() +
                "[threadIdx.x >> 5] = " + p.acc + ";");
    }
    out->line("__syncthreads();");
    out->line("if (threadIdx.x < 32) {");
    out->indent();
    for (auto [i, p] : llvm::enumerate(pending)) {
      out->line(p.acc + " = threadIdx.x < " + std::to_string(warps) + " ? " +
                shared[i] + "[threadIdx.x] : " + p.combiner.identity + ";");
      out->line(warpAllReduce(p.combiner, p.acc));
      out->line("if (threadIdx.x == 0) " + partialStores[i] + " = " + p.acc +
                ";");
    }
    out->dedent();
    out->line("}");
    return llvm::Error::success();
  }
  for (auto [i, red] : llvm::enumerate(reds)) {
    Pending &p = pending[i];
    llvm::StringRef partialStore =
        partialStores.empty() ? llvm::StringRef() : partialStores[i];
    if (llvm::Error error =
            finishCooperative(red, p.generic, p.combiner, p.type, p.acc,
                              p.parallel, partialStore))
      return error;
  }
  return llvm::Error::success();
}

llvm::Error TensorEmitter::finishCooperative(
    const CooperativeReduction &red, linalg::GenericOp generic,
    const ReductionCombiner &combiner, const std::string &type,
    const std::string &acc, llvm::ArrayRef<AffineExpr> parallel,
    llvm::StringRef partialStore) {
  if (clusterSize > 1 && !partialStore.empty())
    return llvm::createStringError("split rows take no clusters");
  if (rowGroup) {
    // Several rows per block: over the row's threads only.
    std::string rowTotal =
        emitRowGroupReduction(*out, type, combiner, acc, *rowGroup);
    if (!partialStore.empty()) {
      out->line("if (" + rowGroup->lane + " == 0 && " + rowGroup->valid + ") " +
                partialStore.str() + " = " + rowTotal + ";");
      return llvm::Error::success();
    }
    OpOperand &init = generic.getDpsInitsMutable()[0];
    auto initValue = valueAt(
        init.get(), applyMap(generic.getMatchingIndexingMap(&init), parallel));
    if (!initValue)
      return initValue.takeError();
    std::string total = out->fresh("red");
    out->line("const " + type + " " + total + " = " +
              combiner.combine(*initValue, rowTotal) + ";");
    memoize(makeKey(red.result, red.index), total);
    return llvm::Error::success();
  }

  std::string shared = emitBlockTotal(combiner, type, acc);
  std::string total = out->fresh("red");
  if (!partialStore.empty()) {
    out->line("if (threadIdx.x == 0) " + partialStore.str() + " = " + shared +
              "[0];");
    return llvm::Error::success();
  }

  std::string blockTotal = shared + "[0]";
  if (clusterSize > 1) {
    // Then over the blocks of the cluster, each reading every block's
    // total from its shared memory, in rank order.
    blockTotal = out->fresh("kopt_cluster_total");
    out->line("kopt_cluster_sync();");
    out->line(type + " " + blockTotal + " = " + combiner.identity + ";");
    out->line("#pragma unroll");
    out->line("for (unsigned q = 0; q < " + std::to_string(clusterSize) +
              "u; ++q) " + blockTotal + " = " +
              combiner.combine(blockTotal,
                               "kopt_cluster_load(&" + shared + "[0], q)") +
              ";");
  }
  return foldInitial(red, generic, combiner, type, blockTotal, total, parallel);
}

std::string TensorEmitter::emitBlockTotal(const ReductionCombiner &combiner,
                                          const std::string &type,
                                          const std::string &acc) {
  // Warp shuffles, then one warp over the warps' partials.
  std::string shared = out->fresh("kopt_red");
  unsigned warps = (blockSize + 31) / 32;
  out->line("__shared__ " + type + " " + shared + "[32];");
  out->line(warpAllReduce(combiner, acc));
  out->line("if ((threadIdx.x & 31) == 0) " + shared +
            "[threadIdx.x >> 5] = " + acc + ";");
  out->line("__syncthreads();");
  out->line("if (threadIdx.x < 32) {");
  out->indent();
  out->line(acc + " = threadIdx.x < " + std::to_string(warps) + " ? " + shared +
            "[threadIdx.x] : " + combiner.identity + ";");
  out->line(warpAllReduce(combiner, acc));
  out->line("if (threadIdx.x == 0) " + shared + "[0] = " + acc + ";");
  out->dedent();
  out->line("}");
  out->line("__syncthreads();");
  return shared;
}

llvm::Error TensorEmitter::foldInitial(const CooperativeReduction &red,
                                       linalg::GenericOp generic,
                                       const ReductionCombiner &combiner,
                                       const std::string &type,
                                       const std::string &blockTotal,
                                       const std::string &total,
                                       llvm::ArrayRef<AffineExpr> parallel) {
  // Fold in the initial value, as the sequential definition starts there.
  OpOperand &init = generic.getDpsInitsMutable()[0];
  auto initValue = valueAt(
      init.get(), applyMap(generic.getMatchingIndexingMap(&init), parallel));
  if (!initValue)
    return initValue.takeError();
  out->line("const " + type + " " + total + " = " +
            combiner.combine(*initValue, blockTotal) + ";");
  memoize(makeKey(red.result, red.index), total);
  return llvm::Error::success();
}

llvm::Expected<std::vector<CooperativeReduction>>
TensorEmitter::collectCooperativeReductions(Value value,
                                            llvm::ArrayRef<AffineExpr> index) {
  std::vector<CooperativeReduction> result;
  CodeWriter scratch;
  CodeWriter *savedOut = out;
  CodeWriter *savedPrologue = prologue;
  auto savedScopes = scopes;
  auto savedNames = dimNames;
  auto savedLeaves = leaves;
  auto savedCaches = caches;
  auto savedSharedCacheNames = sharedCacheNames;
  unsigned savedCacheUsed = cacheUsed;
  int64_t savedSharedUsed = sharedUsed;
  bool savedAsyncCopiesUsed = asyncCopiesUsed;
  unsigned savedGroupReductionCount = groupReductionCount;
  CodeWriter *savedCachePrologue = cachePrologue;
  CodeWriter *savedBulkFills = bulkFills;
  bool savedBulkFillFailed = bulkFillFailed;
  CodeWriter *savedRegisterStaging = registerStaging;
  auto savedRegisterCopies = registerCopies;
  if (cachePrologue)
    cachePrologue = &scratch;
  if (bulkFills)
    bulkFills = &scratch;
  if (registerStaging)
    registerStaging = &scratch;
  out = &scratch;
  if (prologue)
    prologue = &scratch;
  dryRun = true;
  collected = &result;
  auto ignored = valueAt(value, index);
  dryRun = false;
  collected = nullptr;
  out = savedOut;
  prologue = savedPrologue;
  scopes = std::move(savedScopes);
  dimNames = std::move(savedNames);
  leaves = std::move(savedLeaves);
  caches = std::move(savedCaches);
  sharedCacheNames = std::move(savedSharedCacheNames);
  cacheUsed = savedCacheUsed;
  sharedUsed = savedSharedUsed;
  asyncCopiesUsed = savedAsyncCopiesUsed;
  groupReductionCount = savedGroupReductionCount;
  cachePrologue = savedCachePrologue;
  bulkFills = savedBulkFills;
  bulkFillFailed = savedBulkFillFailed;
  registerStaging = savedRegisterStaging;
  registerCopies = std::move(savedRegisterCopies);
  if (!ignored)
    return ignored.takeError();
  return result;
}
