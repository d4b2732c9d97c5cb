//===- TensorEmitter.cpp - Emit tensor values at symbolic -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/TensorEmitter.h"

#include "kopt/Codegen/TensorMoves.h"

#include "AffineIndex.h"
#include "BoundedAffine.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Support/DebugStringHelper.h"

using namespace mlir;
using namespace mlir::kopt;

/// `expr` with every `(x floordiv a) floordiv b` (a, b > 0) written as
/// `x floordiv (a * b)`: delinearised indices relinearise into such terms
/// (`(c floordiv 256) mod 256` becomes `(c floordiv 256) - ((c floordiv
/// 256) floordiv 256) * 256`), and folding them lets the terms of an
/// address cancel.
static AffineExpr foldFloorDivs(AffineExpr expr) {
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return expr;
  AffineExpr lhs = foldFloorDivs(binary.getLHS());
  AffineExpr rhs = foldFloorDivs(binary.getRHS());
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return lhs + rhs;
  case AffineExprKind::Mul:
    return lhs * rhs;
  case AffineExprKind::Mod:
    return lhs % rhs;
  case AffineExprKind::CeilDiv:
    return lhs.ceilDiv(rhs);
  case AffineExprKind::FloorDiv: {
    auto outer = dyn_cast<AffineConstantExpr>(rhs);
    auto inner = dyn_cast<AffineBinaryOpExpr>(lhs);
    if (outer && outer.getValue() > 0 && inner &&
        inner.getKind() == AffineExprKind::FloorDiv)
      if (auto first = dyn_cast<AffineConstantExpr>(inner.getRHS());
          first && first.getValue() > 0)
        return inner.getLHS().floorDiv(first.getValue() * outer.getValue());
    return lhs.floorDiv(rhs);
  }
  default:
    return expr;
  }
}

TensorEmitter::TensorEmitter(MLIRContext *context, CodeWriter &out,
                             std::vector<std::string> dimNames, LeafFn leafOf)
    : context(context), out(&out), dimNames(std::move(dimNames)),
      numKernelDims(this->dimNames.size()), leafOf(std::move(leafOf)) {
  scopes.emplace_back();
}

void TensorEmitter::setDimExtent(unsigned dim, int64_t extent) {
  if (dimExtents.size() <= dim)
    dimExtents.resize(dim + 1, 0);
  dimExtents[dim] = extent;
}

void TensorEmitter::enableCooperativeReductions(unsigned dim,
                                                unsigned threads) {
  threadDim = dim;
  blockSize = threads;
}

void TensorEmitter::enableVectorLanes(unsigned dim, unsigned width,
                                      CodeWriter &prologueWriter,
                                      llvm::StringRef baseName,
                                      llvm::StringRef lane) {
  laneDim = dim;
  vectorWidth = width;
  prologue = &prologueWriter;
  laneBase = baseName.str();
  laneName = lane.str();
}

std::string TensorEmitter::rowLane() const {
  return rowGroup ? rowGroup->lane : "threadIdx.x";
}

unsigned TensorEmitter::rowStride() const {
  return rowGroup ? rowGroup->threadsPerRow : blockSize;
}

void TensorEmitter::enableRowCache(int64_t length, unsigned budget,
                                   CodeWriter &prologueWriter) {
  // A thread's share of the row must fit the budget, or nothing is cached.
  if ((length + rowStride() - 1) / rowStride() > budget)
    return;
  cacheLength = length;
  cacheBudget = budget;
  cachePrologue = &prologueWriter;
}

void TensorEmitter::enableSharedRowCache(int64_t length, int64_t slot,
                                         int64_t bytes,
                                         CodeWriter &prologueWriter) {
  cacheLength = length;
  sharedSlot = slot;
  sharedBudget = bytes;
  cachePrologue = &prologueWriter;
}

bool TensorEmitter::readsRegisterRange(int64_t count) const {
  return registerVectors && rowRange && sharedSlot && cacheLength &&
         *cacheLength == count;
}

void TensorEmitter::openRowLoop(int64_t count) {
  const std::string &name = dimNames[*threadDim];
  std::string threads = std::to_string(rowStride());
  std::string lane = rowLane();
  bool shared = sharedSlot && cacheLength && *cacheLength == count;
  bool cached = !shared && !rowRange && cacheLength && *cacheLength == count;
  if (readsRegisterRange(count)) {
    // The thread's 16-byte groups of the range, each element in turn: the
    // same elements its register copies hold, at indices known at compile
    // time once both loops are unrolled.
    std::string group = out->fresh("kopt_j");
    std::string element = out->fresh("kopt_k");
    out->line("#pragma unroll");
    out->line("for (int " + group + " = 0; " + group + " < " +
              std::to_string(registerVectors) + "; ++" + group + ") {");
    out->indent();
    // The range is whole groups: one bound check for the group's four.
    out->line("if (" + lane + " + " + group + " * " + threads + "LL < (" +
              rowRange->second + " - " + rowRange->first + ") / 4) {");
    out->indent();
    out->line("#pragma unroll");
    out->line("for (int " + element + " = 0; " + element + " < 4; ++" +
              element + ") {");
    out->indent();
    out->line("const long long " + name + " = " + rowRange->first + " + (" +
              lane + " + " + group + " * " + threads + "LL) * 4 + " + element +
              ";");
    // Bodies reading only the registers leave it unused.
    out->line("(void)" + name + ";");
    registerElement = group + " * 4 + " + element;
    rowLoops.push_back(RowLoop::RegisterRange);
    scopes.emplace_back();
    ++loopDepth;
    return;
  }
  if (rowRange) {
    out->line("#pragma unroll " + std::to_string(rowRangeUnroll));
    out->line("for (long long " + name + " = " + rowRange->first + " + " +
              lane + "; " + name + " < " + rowRange->second + "; " + name +
              " += " + threads + ") {");
  } else if (cached) {
    int64_t perThread = (count + rowStride() - 1) / rowStride();
    out->line("#pragma unroll");
    out->line("for (int j = 0; j < " + std::to_string(perThread) + "; ++j) {");
    out->indent();
    out->line("const long long " + name + " = " + lane + " + j * " + threads +
              "LL;");
    out->line("if (" + name + " < " + std::to_string(count) + "LL) {");
  } else {
    // Unrolled, so that each thread has several loads in flight.
    out->line("#pragma unroll 4");
    out->line("for (long long " + name + " = " + lane + "; " + name + " < " +
              std::to_string(count) + "LL; " + name + " += " + threads + ") {");
  }
  out->indent();
  rowLoops.push_back(shared   ? RowLoop::SharedCache
                     : cached ? RowLoop::RegisterCache
                              : RowLoop::Plain);
  scopes.emplace_back();
  ++loopDepth;
}

std::string TensorEmitter::openWideRowLoop(int64_t count, unsigned width) {
  std::string start = rowRange ? rowRange->first : "0LL";
  std::string end = rowRange ? rowRange->second : std::to_string(count) + "LL";
  std::string w = std::to_string(width);
  std::string group = out->fresh("kopt_w");
  std::string first = out->fresh("kopt_first");
  if (readsRegisterRange(count) && width == 4) {
    // Unrolled over the thread's register copies (openRowLoop).
    registerGroup = out->fresh("kopt_j");
    out->line("#pragma unroll");
    out->line("for (int " + registerGroup + " = 0; " + registerGroup + " < " +
              std::to_string(registerVectors) + "; ++" + registerGroup + ") {");
    out->indent();
    out->line("const long long " + group + " = " + rowLane() + " + " +
              registerGroup + " * " + std::to_string(rowStride()) + "LL;");
    out->line("if (" + group + " < (" + end + " - " + start + ") / 4) {");
    out->indent();
    out->line("const long long " + first + " = " + start + " + " + group +
              " * 4;");
    return first;
  }
  if (wideRowLoops) {
    // Batches of U groups a thread, each group's loads under its own bound
    // check in a fully unrolled loop, so that all of a batch's are in
    // flight together: a loop unrolled U times over fewer than U
    // iterations a thread would run its remainder one load at a time.
    // The group indices in 32 bits where a row's groups fit them: fewer
    // instructions a group than 64-bit ones. The loops are written when
    // the batch closes (closeWideRowLoop), once its loads are known.
    WideBatch batch;
    batch.batch = std::max(1u, rowRangeUnroll / width);
    batch.stride = rowStride();
    batch.base = out->fresh("kopt_wb");
    batch.u = out->fresh("kopt_u");
    batch.groups = out->fresh("kopt_groups");
    batch.group = group;
    batch.first = first;
    batch.start = start;
    batch.width = w;
    bool narrow = count / width < (int64_t(1) << 31) -
                                      int64_t(batch.stride) * (batch.batch + 1);
    batch.indexType = narrow ? "int" : "long long";
    out->line("const " + batch.indexType + " " + batch.groups + " = (" +
              batch.indexType + ")((" + end + " - " + start + ") / " + w +
              ");");
    batch.aside = out->setAside();
    out->line("const long long " + first + " = " + start + " + " + group +
              " * " + w + "LL;");
    wideBatch = std::move(batch);
    return first;
  }
  out->line("for (long long " + group + " = " + rowLane() + "; " + group +
            " < (" + end + " - " + start + ") / " + w + "; " + group +
            " += " + std::to_string(rowStride()) + ") {");
  out->indent();
  out->line("const long long " + first + " = " + start + " + " + group + " * " +
            w + "LL;");
  return first;
}

std::string TensorEmitter::openLaneLoop(int64_t count, llvm::StringRef first,
                                        unsigned width) {
  const std::string &name = dimNames[*threadDim];
  bool shared = sharedSlot && cacheLength && *cacheLength == count;
  std::string k = out->fresh("kopt_k");
  out->line("#pragma unroll");
  out->line("for (int " + k + " = 0; " + k + " < " + std::to_string(width) +
            "; ++" + k + ") {");
  out->indent();
  out->line("const long long " + name + " = " + first.str() + " + " + k + ";");
  if (shared && !registerGroup.empty()) {
    registerElement = registerGroup + " * 4 + " + k;
    out->line("(void)" + name + ";");
  } else if (wideRowLoops) {
    // Bodies reading only 16-byte vectors leave it unused.
    out->line("(void)" + name + ";");
  }
  rowLoops.push_back(shared ? RowLoop::SharedCache : RowLoop::Plain);
  scopes.emplace_back();
  ++loopDepth;
  if (width == 4) {
    laneLoopFirst = first.str();
    laneLoopLane = k;
    laneLoopDepth = loopDepth;
  }
  return k;
}

void TensorEmitter::closeWideRowLoop() {
  if (!registerGroup.empty()) {
    registerGroup.clear();
    out->dedent();
    out->line("}");
  }
  if (wideBatch) {
    WideBatch batch = std::move(*wideBatch);
    wideBatch.reset();
    std::string body = out->takeAside(batch.aside);
    for (const std::string &load : batch.rowLoads)
      out->line(load);
    std::string stride = std::to_string(batch.stride);
    std::string count = std::to_string(batch.batch);
    auto openGroup = [&] {
      out->line("#pragma unroll");
      out->line("for (int " + batch.u + " = 0; " + batch.u + " < " + count +
                "; ++" + batch.u + ") {");
      out->indent();
      out->line("const " + batch.indexType + " " + batch.group + " = " +
                batch.base + " + " + batch.u + " * " + stride + ";");
      out->line("if (" + batch.group + " < " + batch.groups + ") {");
      out->indent();
    };
    auto closeGroup = [&] {
      for (int i = 0; i < 2; ++i) {
        out->dedent();
        out->line("}");
      }
    };
    out->line("for (" + batch.indexType + " " + batch.base + " = " + rowLane() +
              "; " + batch.base + " < " + batch.groups + "; " + batch.base +
              " += " + stride + " * " + count + ") {");
    out->indent();
    if (!batch.loads.empty()) {
      for (const BatchLoad &load : batch.loads)
        out->line(load.type + " " + load.array + "[" + count + "];");
      openGroup();
      out->line("const long long " + batch.first + " = " + batch.start + " + " +
                batch.group + " * " + batch.width + "LL;");
      for (const BatchLoad &load : batch.loads)
        out->line(load.array + "[" + batch.u + "] = " + load.load + ";");
      closeGroup();
      // The held vectors stored once all of the batch's loads are made: a
      // store in the loop above would wait for its load before the next.
      if (llvm::any_of(batch.loads,
                       [](const BatchLoad &load) { return load.held; })) {
        openGroup();
        for (const BatchLoad &load : batch.loads)
          if (load.held)
            out->line(rowHold->store + "(" + batch.group + ", " + load.array +
                      "[" + batch.u + "]);");
        closeGroup();
      }
    }
    openGroup();
    out->lines(body);
    closeGroup();
  }
  out->dedent();
  out->line("}");
}

std::string TensorEmitter::batchLoad(llvm::StringRef type, llvm::StringRef load,
                                     bool held) {
  for (const BatchLoad &known : wideBatch->loads)
    if (known.type == type && known.load == load)
      return known.array + "[" + wideBatch->u + "]";
  BatchLoad made{out->fresh("kopt_batch"), type.str(), load.str(), held};
  wideBatch->loads.push_back(made);
  return made.array + "[" + wideBatch->u + "]";
}

void TensorEmitter::closeRowLoop() {
  if (loopDepth == laneLoopDepth) {
    laneLoopFirst.clear();
    laneLoopLane.clear();
    laneLoopDepth = 0;
  }
  --loopDepth;
  scopes.pop_back();
  RowLoop loop = rowLoops.back();
  rowLoops.pop_back();
  registerElement.clear();
  unsigned braces = loop == RowLoop::RegisterRange   ? 3
                    : loop == RowLoop::RegisterCache ? 2
                                                     : 1;
  for (unsigned i = 0; i < braces; ++i) {
    out->dedent();
    out->line("}");
  }
}

SmallVector<AffineExpr>
TensorEmitter::delinearize(AffineExpr linear, llvm::ArrayRef<int64_t> shape) {
  SmallVector<AffineExpr> index(shape.size());
  int64_t stride = 1;
  for (int i = int(shape.size()) - 1; i >= 0; --i) {
    AffineExpr value = stride == 1 ? linear : linear.floorDiv(stride);
    index[i] = i == 0 ? value : value % shape[i];
    stride *= shape[i];
  }
  return index;
}

AffineExpr TensorEmitter::linearize(llvm::ArrayRef<AffineExpr> index,
                                    llvm::ArrayRef<int64_t> shape,
                                    MLIRContext *context) {
  AffineExpr linear = getAffineConstantExpr(0, context);
  for (auto [expr, size] : llvm::zip(index, shape))
    linear = linear * size + expr;
  return linear;
}

std::string TensorEmitter::print(AffineExpr expr) {
  expr = simplifyAffineExpr(expr, dimNames.size(), 0);
  return printAffineExpr(expr, [&](unsigned position) {
    noteUse(position);
    return dimNames[position];
  });
}

void TensorEmitter::noteUse(unsigned dim) {
  if (dim >= numKernelDims || dryRun)
    return;
  if (usedDims.size() < numKernelDims)
    usedDims.resize(numKernelDims, false);
  usedDims[dim] = true;
}

bool TensorEmitter::usesDim(unsigned dim) const {
  return dim < usedDims.size() && usedDims[dim];
}

TensorEmitter::Key
TensorEmitter::makeKey(Value value, llvm::ArrayRef<AffineExpr> index) const {
  Key key;
  key.first = value.getAsOpaquePointer();
  for (AffineExpr expr : index)
    key.second.push_back(
        simplifyAffineExpr(expr, dimNames.size(), 0).getAsOpaquePointer());
  return key;
}

std::optional<std::string> TensorEmitter::lookupMemo(const Key &key) const {
  for (auto scope = scopes.rbegin(); scope != scopes.rend(); ++scope) {
    auto it = scope->find(key);
    if (it != scope->end())
      return it->second;
  }
  return std::nullopt;
}

void TensorEmitter::memoize(const Key &key, std::string expr) {
  scopes.back()[key] = std::move(expr);
}

unsigned TensorEmitter::newLoopDim(llvm::StringRef prefix, int64_t extent) {
  dimNames.push_back(out->fresh(prefix));
  setDimExtent(dimNames.size() - 1, extent);
  return dimNames.size() - 1;
}

llvm::Expected<std::string>
TensorEmitter::valueAt(Value value, llvm::ArrayRef<AffineExpr> index) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getRank() != int64_t(index.size()))
    return llvm::createStringError("index of rank %zu for %s", index.size(),
                                   debugString(value.getType()).c_str());
  Key key = makeKey(value, index);
  if (std::optional<std::string> known = lookupMemo(key))
    return *known;

  std::string expr;
  if (std::optional<LeafTensor> leaf = leafOf(value)) {
    auto loaded = loadLeaf(*leaf, index);
    if (!loaded)
      return loaded.takeError();
    expr = *loaded;
  } else if (Operation *op = value.getDefiningOp()) {
    auto computed =
        valueOfOp(op, cast<OpResult>(value).getResultNumber(), index);
    if (!computed)
      return computed.takeError();
    expr = *computed;
  } else {
    return llvm::createStringError("no data for block argument %s",
                                   debugString(value).c_str());
  }
  memoize(key, expr);
  return expr;
}

std::optional<std::string>
TensorEmitter::readSharedCache(const LeafTensor &leaf, AffineExpr linear) {
  const std::string &c = dimNames[*threadDim];
  std::string start = rowRange ? rowRange->first : "0LL";
  std::string end =
      rowRange ? rowRange->second : std::to_string(*cacheLength) + "LL";
  std::string at = rowRange ? c + " - " + start : c;
  auto key = std::make_pair(leaf.param, linear.getAsOpaquePointer());
  // With register copies, the shared cache is the next row's by now: only
  // a loop over the registers may read the range.
  auto read = [&](const std::string &name) {
    if (!registerVectors)
      return name + "[" + at + "]";
    if (registerElement.empty())
      bulkFillFailed = true;
    return registerCopies[name] + "[" + registerElement + "]";
  };
  if (auto it = caches.find(key); it != caches.end())
    return read(it->second);
  // Each cache starts on a 16-byte boundary of the kernel's `kopt_smem`.
  int64_t elementBytes = getCudaComputeType(leaf.elementType) == "float" ? 4
                         : leaf.elementType == ElementType::I1
                             ? 1
                             : getElementBytes(leaf.elementType);
  int64_t offset = (sharedUsed + 15) / 16 * 16;
  if (offset + sharedSlot * elementBytes > sharedBudget)
    return std::nullopt;
  sharedUsed = offset + sharedSlot * elementBytes;
  std::string computeType = getCudaComputeType(leaf.elementType).str();
  std::string name = out->fresh("scache");
  std::string lane = rowLane(), stride = std::to_string(rowStride());
  CodeWriter &p = *cachePrologue;
  p.line(computeType + " *const " + name + " = reinterpret_cast<" +
         computeType + " *>(kopt_smem + " + std::to_string(offset) + ");");
  // f32 rows whose range starts 16-byte aligned: four elements a load.
  // The row loops read other threads' elements then, after the barrier
  // the kernel places after its caches.
  AffineExpr base = simplifyAffineExpr(
      linear - getAffineDimExpr(*threadDim, context), dimNames.size(), 0);
  bool vector = leaf.elementType == ElementType::F32 && sharedVectors &&
                !base.isFunctionOfDim(*threadDim) && base.isMultipleOf(4);
  if (bulkFills) {
    // The row's next range lands here by a bulk copy (16-byte aligned,
    // a multiple of 16 bytes): the kernel waits for it, so nothing is
    // loaded here.
    if (!vector) {
      bulkFillFailed = true;
    } else {
      CodeWriter &f = *bulkFills;
      f.line("{");
      f.indent();
      // The range's address in the row being filled.
      f.line("const long long " + dimNames[0] + " = kopt_fill_row;");
      f.line("const long long " + c + " = " + start + ";");
      f.line("kopt_bulk_fill(kopt_fill_smem + " + std::to_string(offset) +
             ", " + leaf.param + " + " + print(linear) + ", (" + end + " - " +
             start + ") * 4, kopt_fill_bar);");
      f.dedent();
      f.line("}");
      if (registerVectors)
        emitRegisterCopy(name, start, end);
    }
    caches[key] = name;
    sharedCacheNames.push_back(name);
    return read(name);
  }
  p.line("{");
  p.indent();
  std::string scalarFrom = start;
  if (vector) {
    p.line("const long long kopt_vectors = (" + end + " - " + start + ") / 4;");
    // Asynchronous copies need no unrolling to be in flight together.
    if (!sharedAsync)
      p.line("#pragma unroll 4");
    p.line("for (long long kopt_v = " + lane +
           "; kopt_v < kopt_vectors; "
           "kopt_v += " +
           stride + ") {");
    p.indent();
    p.line("const long long " + c + " = " + start + " + kopt_v * 4;");
    if (sharedAsync) {
      asyncCopiesUsed = true;
      p.line(asyncCopyFunction + "(" + name + " + kopt_v * 4, " + leaf.param +
             " + " + print(linear) + ");");
    } else {
      p.line("*reinterpret_cast<KoptVec<float, 4> *>(" + name +
             " + kopt_v * 4) = *reinterpret_cast<const KoptVec<float, 4> *>(" +
             leaf.param + " + " + print(linear) + ");");
    }
    p.dedent();
    p.line("}");
    scalarFrom = start + " + kopt_vectors * 4";
    if (prefetchRow) {
      prefetchUsed = true;
      p.line("if (threadIdx.x == 0 && " + prefetchRow->second + ") {");
      p.indent();
      p.line("const long long kopt_next_row = " + prefetchRow->first + ";");
      p.line("const long long kopt_next_start = " + start + ";");
      // The row's address with the next row's index.
      p.line("const long long " + dimNames[0] + " = kopt_next_row;");
      p.line("const long long " + c + " = kopt_next_start;");
      p.line("kopt_prefetch_l2(" + leaf.param + " + " + print(linear) + ", (" +
             end + " - " + start + ") * 4);");
      p.dedent();
      p.line("}");
    }
  }
  p.line("#pragma unroll 4");
  p.line("for (long long " + c + " = " + scalarFrom + " + " + lane + "; " + c +
         " < " + end + "; " + c + " += " + stride + ")");
  p.line("  " + name + "[" + at + "] = " +
         convertToCompute(leaf.elementType,
                          leaf.param + "[" + print(linear) + "]") +
         ";");
  p.dedent();
  p.line("}");
  caches[key] = name;
  sharedCacheNames.push_back(name);
  return name + "[" + at + "]";
}

void TensorEmitter::emitRegisterCopy(const std::string &cache,
                                     llvm::StringRef start,
                                     llvm::StringRef end) {
  std::string name = out->fresh("rcache");
  std::string vectors = std::to_string(registerVectors);
  CodeWriter &s = *registerStaging;
  s.line("float " + name + "[" + std::to_string(registerVectors * 4) + "];");
  s.line("#pragma unroll");
  s.line("for (int kopt_j = 0; kopt_j < " + vectors + "; ++kopt_j) {");
  s.indent();
  s.line("const long long kopt_v = " + rowLane() + " + kopt_j * " +
         std::to_string(rowStride()) + "LL;");
  s.line("const float4 kopt_x = kopt_v < (" + end.str() + " - " + start.str() +
         ") / 4 ? reinterpret_cast<const float4 *>(" + cache +
         ")[kopt_v] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);");
  s.line(name + "[kopt_j * 4] = kopt_x.x;");
  s.line(name + "[kopt_j * 4 + 1] = kopt_x.y;");
  s.line(name + "[kopt_j * 4 + 2] = kopt_x.z;");
  s.line(name + "[kopt_j * 4 + 3] = kopt_x.w;");
  s.dedent();
  s.line("}");
  registerCopies[cache] = name;
}

llvm::Expected<std::string>
TensorEmitter::loadLeaf(const LeafTensor &leaf,
                        llvm::ArrayRef<AffineExpr> index) {
  // Record the leaf as a kernel parameter.
  if (llvm::none_of(leaves, [&](const LeafTensor &known) {
        return known.param == leaf.param;
      }))
    leaves.push_back(leaf);

  AffineExpr linear = simplifyAffineExpr(
      foldFloorDivs(simplifyAffineExpr(linearize(index, leaf.shape, context),
                                       dimNames.size(), 0)),
      dimNames.size(), 0);
  if (llvm::any_of(dimExtents, [](int64_t extent) { return extent > 0; }))
    linear = simplifyAffineExpr(simplifyWithDimExtents(linear, dimExtents),
                                dimNames.size(), 0);
  std::string storage = getCudaStorageType(leaf.elementType).str();
  std::string computeType = getCudaComputeType(leaf.elementType).str();

  bool usesLoopVars = false;
  for (unsigned dim = numKernelDims; dim < dimNames.size(); ++dim)
    usesLoopVars |= linear.isFunctionOfDim(dim);

  // Row caches: a leaf read along the row by a cached row loop.
  if (cacheLength && !rowLoops.empty() &&
      (rowLoops.back() == RowLoop::SharedCache ||
       rowLoops.back() == RowLoop::RegisterRange) &&
      !usesLoopVars && linear.isFunctionOfDim(*threadDim) &&
      linear.isFunctionOfDim(0))
    if (std::optional<std::string> cached = readSharedCache(leaf, linear))
      return *cached;
  if (cacheLength && !rowLoops.empty() &&
      rowLoops.back() == RowLoop::RegisterCache && !usesLoopVars &&
      linear.isFunctionOfDim(*threadDim) && linear.isFunctionOfDim(0)) {
    auto key = std::make_pair(leaf.param, linear.getAsOpaquePointer());
    auto it = caches.find(key);
    if (it != caches.end())
      return it->second + "[j]";
    unsigned perThread = (*cacheLength + rowStride() - 1) / rowStride();
    if (cacheUsed + perThread <= cacheBudget) {
      cacheUsed += perThread;
      std::string name = out->fresh("cache");
      const std::string &c = dimNames[*threadDim];
      cachePrologue->line(computeType + " " + name + "[" +
                          std::to_string(perThread) + "];");
      cachePrologue->line("#pragma unroll");
      cachePrologue->line("for (int j = 0; j < " + std::to_string(perThread) +
                          "; ++j) {");
      cachePrologue->indent();
      cachePrologue->line("const long long " + c + " = " + rowLane() +
                          " + j * " + std::to_string(rowStride()) + "LL;");
      cachePrologue->line(
          name + "[j] = " + c + " < " + std::to_string(*cacheLength) + "LL ? " +
          convertToCompute(leaf.elementType,
                           leaf.param + "[" + print(linear) + "]") +
          " : (" + computeType + ")0;");
      cachePrologue->dedent();
      cachePrologue->line("}");
      caches[key] = name;
      return name + "[j]";
    }
  }

  if (laneDim && !usesLoopVars && loopDepth == 0) {
    // Vector lanes: hoist what does not vary per lane, and read contiguous
    // leaves with one aligned access per thread.
    auto printAtBase = [&](AffineExpr expr) {
      expr = simplifyAffineExpr(expr, dimNames.size(), 0);
      return printAffineExpr(expr, [&](unsigned position) {
        noteUse(position);
        return position == *laneDim ? laneBase : dimNames[position];
      });
    };
    if (!linear.isFunctionOfDim(*laneDim)) {
      std::string name = out->fresh("x");
      prologue->line(
          "const " + computeType + " " + name + " = " +
          convertToCompute(leaf.elementType,
                           leaf.param + "[" + printAtBase(linear) + "]") +
          ";");
      return name;
    }
    AffineExpr laneExpr = getAffineDimExpr(*laneDim, context);
    if (!index.empty() && index.back() == laneExpr && !leaf.shape.empty() &&
        leaf.shape.back() % vectorWidth == 0) {
      std::string name = out->fresh("xv");
      std::string vecType =
          "KoptVec<" + storage + ", " + std::to_string(vectorWidth) + ">";
      prologue->line("const " + vecType + " " + name +
                     " = *reinterpret_cast<"
                     "const " +
                     vecType + " *>(" + leaf.param + " + " +
                     printAtBase(linear) + ");");
      return convertToCompute(leaf.elementType, name + ".v[lane]");
    }
  }
  if (!dryRun && !linear.isFunctionOfDim(0))
    broadcastLeavesRead = true;
  if (std::optional<std::string> lane = readLaneVector(leaf, linear))
    return *lane;
  std::string name = out->fresh("x");
  std::optional<std::string> laneInvariant = printLaneInvariant(linear);
  std::string at = laneInvariant.value_or(print(linear));
  std::string load = leaf.param + "[" + at + "]";
  // A value a group's four lanes share (a channel's weight) is read again
  // by the next groups: through L1, not as a row's streaming last read.
  const std::string &function =
      laneInvariant ? std::string()
      : !broadcastLoadFunction.empty() && !linear.isFunctionOfDim(0)
          ? broadcastLoadFunction
          : loadFunction;
  if (!function.empty() && leaf.elementType == ElementType::F32)
    load = function + "(" + leaf.param + " + " + at + ")";
  std::string value = convertToCompute(leaf.elementType, load);
  if (wideBatch && loopDepth == laneLoopDepth && !usesLoopVars) {
    // A group's channel weight with the batch's other loads; a value the
    // same for the whole row once, before the batch's loop.
    if (laneInvariant)
      return batchLoad(computeType, value);
    if (!linear.isFunctionOfDim(*threadDim)) {
      wideBatch->rowLoads.push_back("const " + computeType + " " + name +
                                    " = " + value + ";");
      return name;
    }
  }
  out->line("const " + computeType + " " + name + " = " + value + ";");
  return name;
}

std::optional<std::string>
TensorEmitter::printLaneInvariant(AffineExpr linear) {
  if (!wideRowLoops || laneLoopFirst.empty() || loopDepth != laneLoopDepth ||
      !linear.isFunctionOfDim(*threadDim))
    return std::nullopt;
  // c = 4 * G + K, the group's first element and the lane K in [0, 4):
  // with the dimensions' ranges, an index such as a channel's,
  // c floordiv 131072 = G floordiv 32768, may not depend on K, and then
  // the four lanes read one element, at G = first / 4 (a multiple of 4).
  unsigned n = dimNames.size();
  AffineExpr group = getAffineDimExpr(n, context);
  AffineExpr lane = getAffineDimExpr(n + 1, context);
  SmallVector<AffineExpr> replacements;
  for (unsigned dim = 0; dim < n; ++dim)
    replacements.push_back(dim == *threadDim ? group * 4 + lane
                                             : getAffineDimExpr(dim, context));
  replacements.push_back(group);
  replacements.push_back(lane);
  std::vector<int64_t> extents = dimExtents;
  extents.resize(n + 2, 0);
  if (*threadDim < dimExtents.size() && dimExtents[*threadDim] > 0)
    extents[n] = (dimExtents[*threadDim] + 3) / 4;
  extents[n + 1] = 4;
  AffineExpr index = simplifyAffineExpr(
      simplifyWithDimExtents(
          simplifyAffineExpr(linear.replaceDimsAndSymbols(replacements, {}),
                             n + 2, 0),
          extents),
      n + 2, 0);
  if (index.isFunctionOfDim(n + 1))
    return std::nullopt;
  dimNames.push_back("(" + laneLoopFirst + " >> 2)");
  dimNames.push_back("0");
  std::string printed = print(index);
  dimNames.resize(n);
  return printed;
}

std::optional<std::string> TensorEmitter::readLaneVector(const LeafTensor &leaf,
                                                         AffineExpr linear) {
  const bool hinted = !loadFunction.empty() || !broadcastLoadFunction.empty();
  if (laneLoopFirst.empty() || loopDepth != laneLoopDepth ||
      leaf.elementType != ElementType::F32 || (hinted && !wideRowLoops))
    return std::nullopt;
  // The leaf at c + rest, rest a multiple of 4 not depending on c: the lane
  // loop's four elements are one aligned 16-byte vector at first + rest.
  AffineExpr c = getAffineDimExpr(*threadDim, context);
  AffineExpr rest = simplifyAffineExpr(linear - c, dimNames.size(), 0);
  for (unsigned dim = numKernelDims; dim < dimNames.size(); ++dim)
    if (rest.isFunctionOfDim(dim))
      return std::nullopt;
  if (rest.isFunctionOfDim(*threadDim) || rest.getLargestKnownDivisor() % 4)
    return std::nullopt;
  // The same load in each unrolled lane: the compiler keeps one.
  std::string name = out->fresh("xv");
  std::string at =
      leaf.param + " + " + laneLoopFirst + " + (" + print(rest) + ")";
  const bool rowDependent = linear.isFunctionOfDim(0);
  const std::string &function =
      rowDependent ? vectorLoadFunction : broadcastVectorLoadFunction;
  if (rowHold && rowDependent) {
    if (!wideBatch) {
      unheldRowLoads = true;
    } else {
      std::string key = leaf.param + " + (" + print(rest) + ")";
      if (!llvm::is_contained(heldRowLoads, key))
        heldRowLoads.push_back(key);
      std::string load =
          !rowHold->load.empty()
              ? rowHold->load + "(" + at + ", " + wideBatch->group + ")"
              : function + "(" + at + ")";
      return batchLoad("KoptVec<float, 4>", load, !rowHold->store.empty()) +
             ".v[" + laneLoopLane + "]";
    }
  }
  if (wideBatch)
    return batchLoad("KoptVec<float, 4>",
                     wideRowLoops && !function.empty()
                         ? function + "(" + at + ")"
                         : "*reinterpret_cast<const KoptVec<float, 4> *>(" +
                               at + ")") +
           ".v[" + laneLoopLane + "]";
  if (wideRowLoops && !function.empty())
    out->line("const KoptVec<float, 4> " + name + " = " + function + "(" + at +
              ");");
  else
    out->line("const KoptVec<float, 4> " + name +
              " = *reinterpret_cast<const KoptVec<float, 4> *>(" + at + ");");
  return name + ".v[" + laneLoopLane + "]";
}

llvm::Expected<std::string>
TensorEmitter::gatherAt(tensor::ExtractOp extract,
                        llvm::ArrayRef<std::string> coordinates) {
  // Each coordinate is clamped into its dimension, so an out-of-range index
  // (an embedding id past the table) reads the nearest element instead of
  // memory outside the tensor. It becomes a new index dimension named after
  // its variable, and the tensor is read there like any other value: a
  // leaf is loaded, a producer inlined.
  auto type = cast<RankedTensorType>(extract.getTensor().getType());
  SmallVector<AffineExpr> index;
  for (auto [dim, coordinate] : llvm::enumerate(coordinates)) {
    std::string name = out->fresh("at");
    out->line("const long long " + name + " = min(max((long long)(" +
              coordinate + "), 0LL), " +
              std::to_string(type.getDimSize(dim) - 1) + "LL);");
    dimNames.push_back(name);
    setDimExtent(dimNames.size() - 1, type.getDimSize(dim));
    index.push_back(getAffineDimExpr(dimNames.size() - 1, context));
  }
  return valueAt(extract.getTensor(), index);
}

llvm::Expected<std::string>
TensorEmitter::valueOfOp(Operation *op, unsigned resultNumber,
                         llvm::ArrayRef<AffineExpr> index) {
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return BodyEmitter::printConstant(
        constant.getValue(),
        cast<ShapedType>(constant.getType()).getElementType());
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    Value scalar = fill.getInputs()[0];
    Attribute attr;
    if (!matchPattern(scalar, m_Constant(&attr)))
      return llvm::createStringError("linalg.fill of a non-constant");
    return BodyEmitter::printConstant(attr, scalar.getType());
  }
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op)) {
    Value source = op->getOperand(0);
    auto resultShape = cast<ShapedType>(op->getResult(0).getType()).getShape();
    auto sourceShape = cast<ShapedType>(source.getType()).getShape();
    if (structuredReshapes) {
      SmallVector<AffineExpr> sourceIndex;
      if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
        for (const ReassociationIndices &group :
             expand.getReassociationIndices()) {
          SmallVector<AffineExpr> parts;
          SmallVector<int64_t> sizes;
          for (int64_t dim : group) {
            parts.push_back(index[dim]);
            sizes.push_back(resultShape[dim]);
          }
          sourceIndex.push_back(linearize(parts, sizes, context));
        }
      } else {
        auto collapse = cast<tensor::CollapseShapeOp>(op);
        for (auto [dim, group] :
             llvm::enumerate(collapse.getReassociationIndices())) {
          SmallVector<int64_t> sizes;
          for (int64_t sourceDim : group)
            sizes.push_back(sourceShape[sourceDim]);
          SmallVector<AffineExpr> parts = delinearize(index[dim], sizes);
          sourceIndex.append(parts.begin(), parts.end());
        }
      }
      return valueAt(source, sourceIndex);
    }
    AffineExpr linear = linearize(index, resultShape, context);
    return valueAt(source, delinearize(linear, sourceShape));
  }
  if (isa<tensor::EmptyOp>(op))
    return llvm::createStringError("reads an uninitialised tensor.empty");
  if (isPlacementOp(op))
    return emitPlacement(op, index);
  if (isa<tensor::ExtractSliceOp>(op)) {
    auto read = getSliceRead(op);
    if (!read)
      return read.takeError();
    SmallVector<AffineExpr> sourceIndex;
    for (auto [offset, stride, dim] :
         llvm::zip(read->offsets, read->strides, read->resultDims))
      sourceIndex.push_back(dim < 0 ? getAffineConstantExpr(offset, context)
                                    : index[dim] * stride + offset);
    return valueAt(read->source, sourceIndex);
  }
  if (isa<linalg::GenericOp>(op))
    return emitGeneric(op, resultNumber, index);
  return llvm::createStringError("no code generation for '%s' here",
                                 op->getName().getStringRef().str().c_str());
}

llvm::Expected<std::string>
TensorEmitter::emitPlacement(Operation *op, llvm::ArrayRef<AffineExpr> index) {
  auto placement = getPlacement(op);
  if (!placement)
    return placement.takeError();
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  auto type = getCudaScalarType(resultType.getElementType());
  if (!type)
    return type.takeError();
  // Elsewhere: the destination, the padding value, or (never read) zero.
  std::string value = "(" + *type + ")0";
  if (Value fallback = placement->fallback;
      fallback && !fallback.getDefiningOp<tensor::EmptyOp>()) {
    auto computed = valueAt(fallback, index);
    if (!computed)
      return computed.takeError();
    value = *computed;
  } else if (Value padding = placement->padding) {
    Attribute attr;
    if (!matchPattern(padding, m_Constant(&attr)))
      return llvm::createStringError("a padding value that is not constant");
    auto printed = BodyEmitter::printConstant(attr, padding.getType());
    if (!printed)
      return printed.takeError();
    value = *printed;
  }
  // The first piece that covers the element wins; each reads its source at
  // an index clamped into range, so that no read is out of bounds.
  for (const PlacedTensor &piece : llvm::reverse(placement->pieces)) {
    auto sourceShape =
        cast<RankedTensorType>(piece.source.getType()).getShape();
    SmallVector<AffineExpr> sourceIndex(sourceShape.size());
    std::string condition;
    auto require = [&](const std::string &test) {
      condition += (condition.empty() ? "" : " && ") + test;
    };
    for (auto [d, expr] : llvm::enumerate(index)) {
      int64_t offset = piece.offsets[d], stride = piece.strides[d];
      std::string at = print(expr);
      if (piece.sourceDims[d] < 0) {
        require(at + " == " + std::to_string(offset) + "LL");
        continue;
      }
      int64_t size = sourceShape[piece.sourceDims[d]];
      if (offset == 0 && stride == 1 && size == resultType.getDimSize(d)) {
        sourceIndex[piece.sourceDims[d]] = expr;
        continue;
      }
      std::string shifted =
          offset == 0 ? at : "(" + at + " - " + std::to_string(offset) + "LL)";
      require(shifted + " >= 0LL");
      require(shifted + " < " + std::to_string((size - 1) * stride + 1) + "LL");
      if (stride != 1)
        require(shifted + " % " + std::to_string(stride) + "LL == 0LL");
      std::string name = out->fresh("s");
      std::string quotient =
          stride == 1 ? shifted
                      : shifted + " / " + std::to_string(stride) + "LL";
      out->line("const long long " + name + " = min(max(" + quotient +
                ", 0LL), " + std::to_string(size - 1) + "LL);");
      dimNames.push_back(name);
      setDimExtent(dimNames.size() - 1, size);
      sourceIndex[piece.sourceDims[d]] =
          getAffineDimExpr(dimNames.size() - 1, context);
    }
    auto read = valueAt(piece.source, sourceIndex);
    if (!read)
      return read.takeError();
    value = condition.empty()
                ? *read
                : "((" + condition + ") ? " + *read + " : " + value + ")";
  }
  return value;
}

llvm::Expected<std::string>
TensorEmitter::inputAt(linalg::GenericOp generic, OpOperand *input,
                       llvm::ArrayRef<AffineExpr> loops) {
  // An input the body never reads (a pooling window, say) is not loaded.
  if (!generic.payloadUsesValueFromOperand(input)) {
    auto type = getCudaScalarType(getElementTypeOrSelf(input->get().getType()));
    if (!type)
      return type.takeError();
    return "(" + *type + ")0";
  }
  return valueAt(input->get(),
                 applyMap(generic.getMatchingIndexingMap(input), loops));
}

llvm::Expected<std::string>
TensorEmitter::emitGeneric(Operation *op, unsigned resultNumber,
                           llvm::ArrayRef<AffineExpr> index) {
  auto generic = cast<linalg::GenericOp>(op);
  unsigned numLoops = generic.getNumLoops();
  SmallVector<AffineExpr> loops(numLoops);
  AffineMap outMap = generic.getIndexingMapMatchingResult(
      cast<OpResult>(op->getResult(resultNumber)));
  for (auto [position, expr] : llvm::enumerate(outMap.getResults())) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      loops[dim.getPosition()] = index[position];
      continue;
    }
    auto constant = dyn_cast<AffineConstantExpr>(expr);
    if (!constant || constant.getValue() != 0)
      return llvm::createStringError("output map %s is not invertible",
                                     debugString(outMap).c_str());
  }
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
  for (unsigned loop = 0; loop < numLoops; ++loop) {
    bool reduction = iterators[loop] == utils::IteratorType::reduction;
    if (!reduction && !loops[loop]) {
      if (ranges[loop] != 1)
        return llvm::createStringError(
            "parallel loop %u is not indexed by the output", loop);
      loops[loop] = getAffineConstantExpr(0, context);
    }
  }
  SmallVector<AffineExpr> parallel = loops;

  Block &body = generic.getRegion().front();
  auto indexOf = [&](unsigned dim) { return print(loops[dim]); };
  auto memoResults = [&](llvm::ArrayRef<std::string> values) {
    for (OpResult result : op->getResults()) {
      AffineMap map = generic.getIndexingMapMatchingResult(result);
      memoize(makeKey(result, applyMap(map, parallel)),
              values[result.getResultNumber()]);
    }
  };
  auto emitBody = [&](llvm::ArrayRef<std::string> outArgs)
      -> llvm::Expected<SmallVector<std::string>> {
    SmallVector<std::string> args;
    for (OpOperand *input : generic.getDpsInputOperands()) {
      auto value = inputAt(generic, input, loops);
      if (!value)
        return value.takeError();
      args.push_back(*value);
    }
    args.append(outArgs.begin(), outArgs.end());
    BodyEmitter emitter(*out);
    emitter.setExtractHandler(
        [this](tensor::ExtractOp extract, llvm::ArrayRef<std::string> at) {
          return gatherAt(extract, at);
        });
    return emitter.emit(body, args, indexOf);
  };
  auto initOf = [&](OpOperand &init) -> llvm::Expected<std::string> {
    if (!generic.payloadUsesValueFromOperand(&init)) {
      auto type = getCudaScalarType(getElementTypeOrSelf(init.get().getType()));
      if (!type)
        return type.takeError();
      return "(" + *type + ")0";
    }
    return valueAt(init.get(),
                   applyMap(generic.getMatchingIndexingMap(&init), parallel));
  };

  if (generic.getNumReductionLoops() == 0) {
    SmallVector<std::string> outArgs;
    for (OpOperand &init : generic.getDpsInitsMutable()) {
      auto value = initOf(init);
      if (!value)
        return value.takeError();
      outArgs.push_back(*value);
    }
    auto yielded = emitBody(outArgs);
    if (!yielded)
      return yielded.takeError();
    memoResults(*yielded);
    return (*yielded)[resultNumber];
  }

  if (isCooperative(op, parallel)) {
    if (!dryRun)
      return llvm::createStringError(
          "internal: cooperative reduction used before it was emitted");
    CooperativeReduction reduction{op->getResult(0), {}};
    reduction.index.append(index.begin(), index.end());
    if (!llvm::any_of(*collected, [&](const CooperativeReduction &known) {
          return makeKey(known.result, known.index) ==
                 makeKey(reduction.result, reduction.index);
        })) {
      // Its element expression first: reductions it needs come before it.
      if (llvm::Error error = emitCooperative(reduction))
        return std::move(error);
      collected->push_back(reduction);
    }
    return std::string("0");
  }

  // A sequential reduction in this thread.
  SmallVector<std::string> accumulators;
  for (OpOperand &init : generic.getDpsInitsMutable()) {
    auto value = initOf(init);
    if (!value)
      return value.takeError();
    auto type = getCudaScalarType(getElementTypeOrSelf(init.get().getType()));
    if (!type)
      return type.takeError();
    std::string name = out->fresh("acc");
    out->line(*type + " " + name + " = " + *value + ";");
    accumulators.push_back(name);
  }
  unsigned opened = 0;
  for (unsigned loop = 0; loop < numLoops; ++loop) {
    if (iterators[loop] != utils::IteratorType::reduction)
      continue;
    unsigned dim = newLoopDim("r", ranges[loop]);
    loops[loop] = getAffineDimExpr(dim, context);
    out->line("for (long long " + dimNames[dim] + " = 0; " + dimNames[dim] +
              " < " + std::to_string(ranges[loop]) + "LL; ++" + dimNames[dim] +
              ") {");
    out->indent();
    ++opened;
  }
  scopes.emplace_back();
  ++loopDepth;
  auto yielded = emitBody(accumulators);
  if (!yielded)
    return yielded.takeError();
  for (auto [acc, value] : llvm::zip(accumulators, *yielded))
    out->line(acc + " = " + value + ";");
  --loopDepth;
  scopes.pop_back();
  for (unsigned i = 0; i < opened; ++i) {
    out->dedent();
    out->line("}");
  }
  memoResults(accumulators);
  return accumulators[resultNumber];
}
