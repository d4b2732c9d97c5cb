//===- TiledPoolingKernel.cpp - Pooling through a shared-memory tile -----===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A 2-D pool of stride 1 reads each input element once per window position
// that covers it: 16 times for a 4x4 window. The sliding kernels of
// PoolingKernel.cpp share those reads between a thread's outputs (and a
// warp's, through shuffles), yet remain bound by the load and shuffle
// instructions they issue per output. Here a block copies the input tile its
// outputs' windows cover into shared memory with one coalesced load per
// element, many in flight per thread, and then folds every window from
// shared memory, where the repeated reads are cheap.
//
//===----------------------------------------------------------------------===//

#include "PoolingKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::kopt;

/// Input elements a thread loads before it stores them to shared memory:
/// enough bytes in flight, few registers.
static constexpr int64_t kLoadsInFlight = 40;

namespace {
/// A pool's input read straight from a kernel parameter, perhaps through a
/// constant pad: its loads computed here in 32-bit arithmetic (the
/// emitter's general form spends most of the kernel's integer
/// instructions on 64-bit clamps and tests).
struct DirectInput {
  LeafTensor leaf;
  /// The load of the element at input row `ih` and column `iw` (window
  /// point (0, 0) of output row and column `ih`, `iw`) from `plane`, the
  /// tile's plane of the parameter.
  std::string load;
};
} // namespace

/// `input` as a DirectInput when it is a parameter of the outputs' outer
/// shape (`shape`'s all but two innermost dimensions), or a constant pad of one
/// along its two innermost dimensions, read at `index` (the outer dimensions,
/// then dimensions `rank` and `rank` + 1 plus constants).
static std::optional<DirectInput>
matchDirectInput(Value input, llvm::ArrayRef<AffineExpr> index,
                 llvm::ArrayRef<int64_t> shape,
                 const TensorEmitter::LeafFn &leafOf) {
  unsigned rank = shape.size();
  if (index.size() != rank)
    return std::nullopt;
  MLIRContext *context = input.getContext();
  int64_t offsets[2];
  for (unsigned d = 0; d < rank; ++d) {
    if (d + 2 < rank) {
      if (index[d] != getAffineDimExpr(d, context))
        return std::nullopt;
      continue;
    }
    AffineExpr offset = simplifyAffineExpr(
        index[d] - getAffineDimExpr(d + 2, context), rank + 2, 0);
    auto constant = dyn_cast<AffineConstantExpr>(offset);
    if (!constant)
      return std::nullopt;
    offsets[d + 2 - rank] = constant.getValue();
  }
  std::string padValue;
  Value source = input;
  if (auto pad = input.getDefiningOp<tensor::PadOp>()) {
    ArrayRef<int64_t> low = pad.getStaticLow(), high = pad.getStaticHigh();
    for (unsigned d = 0; d < rank; ++d)
      if (ShapedType::isDynamic(low[d]) || ShapedType::isDynamic(high[d]) ||
          (d + 2 < rank && (low[d] != 0 || high[d] != 0)))
        return std::nullopt;
    Value value = pad.getConstantPaddingValue();
    auto constant = value ? value.getDefiningOp<arith::ConstantOp>() : nullptr;
    if (!constant)
      return std::nullopt;
    auto printed =
        BodyEmitter::printConstant(constant.getValue(), value.getType());
    if (!printed) {
      llvm::consumeError(printed.takeError());
      return std::nullopt;
    }
    padValue = *printed;
    offsets[0] -= low[rank - 2];
    offsets[1] -= low[rank - 1];
    source = pad.getSource();
  }
  std::optional<LeafTensor> leaf = leafOf(source);
  if (!leaf || leaf->shape.size() != rank ||
      !llvm::equal(llvm::ArrayRef(leaf->shape).drop_back(2),
                   shape.drop_back(2)))
    return std::nullopt;
  int64_t height = leaf->shape[rank - 2], width = leaf->shape[rank - 1];
  if (height * width >= (int64_t(1) << 31))
    return std::nullopt;
  auto shifted = [](llvm::StringRef name, int64_t offset) {
    if (offset == 0)
      return "(int)" + name.str();
    return "((int)" + name.str() + (offset < 0 ? " - " : " + ") +
           std::to_string(std::abs(offset)) + ")";
  };
  std::string row = shifted("ih", offsets[0]);
  std::string column = shifted("iw", offsets[1]);
  std::string element = convertToCompute(
      leaf->elementType,
      "plane[" + row + " * " + std::to_string(width) + " + " + column + "]");
  DirectInput direct{*leaf, element};
  if (!padValue.empty())
    direct.load = "((unsigned)" + row + " < " + std::to_string(height) +
                  "u && (unsigned)" + column + " < " + std::to_string(width) +
                  "u) ? " + element + " : " + padValue;
  return direct;
}

llvm::Expected<GeneratedKernel> mlir::kopt::generateTiledPoolingKernel(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const PoolingWindow &rows, const PoolingWindow &columns,
    const TiledPoolingOptions &options) {
  linalg::GenericOp op = rows.op;
  auto type = cast<RankedTensorType>(op.getResult(0).getType());
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  unsigned rank = shape.size();
  if (llvm::Error error = checkStrideOneWindows(rows, columns, "tiles hold"))
    return std::move(error);
  int64_t height = shape[rank - 2], width = shape[rank - 1];
  int64_t tileRows = options.tileRows;
  int64_t tileColumns = std::min(width, options.maxTileColumns);
  if (tileRows < 1 || height < tileRows || tileColumns < 1)
    return llvm::createStringError(
        "pooling: %lld output rows, fewer than a tile's %lld",
        (long long)height, (long long)tileRows);
  if (llvm::Error error = checkPoolOutputs(outputs, shape))
    return std::move(error);
  auto computeType =
      getCudaScalarType(getElementTypeOrSelf(op.getResult(0).getType()));
  if (!computeType)
    return computeType.takeError();
  // Floats are computed in float or double, integers in their own type.
  Type elementType = getElementTypeOrSelf(op.getResult(0).getType());
  if (!elementType.isIntOrFloat())
    return llvm::createStringError("pooling: tiles hold only numbers");
  int64_t elementBytes =
      elementType.isF64() ? 8
      : isa<FloatType>(elementType)
          ? 4
          : std::max<int64_t>(1, elementType.getIntOrFloatBitWidth() / 8);
  int64_t inputRows = tileRows + rows.size - 1;
  int64_t inputColumns = tileColumns + columns.size - 1;
  int64_t tileElements = inputRows * inputColumns;
  int64_t sharedBytes = tileElements * elementBytes;
  if (sharedBytes > kMaxTiledPoolingBytes)
    return llvm::createStringError(
        "pooling: a tile of %lld bytes, more than %lld", (long long)sharedBytes,
        (long long)kMaxTiledPoolingBytes);

  // Dimensions rank - 2 and rank - 1 are the tile's first output row and the
  // thread's output column; dimensions rank and rank + 1 the input row and
  // column a load reads at window point (0, 0).
  std::vector<std::string> names;
  for (unsigned d = 0; d < rank; ++d)
    names.push_back("i" + std::to_string(d));
  names[rank - 2] = "h0";
  names[rank - 1] = "w";
  names.push_back("ih");
  names.push_back("iw");
  CodeWriter load, fold;
  TensorEmitter loader(context, load, names, leafOf);
  TensorEmitter folder(context, fold, names, leafOf);

  AffineMap map = op.getMatchingIndexingMap(rows.input);
  SmallVector<AffineExpr> loops;
  for (unsigned loop = 0; loop < op.getNumLoops(); ++loop)
    loops.push_back(loop < rank ? getAffineDimExpr(loop, context)
                                : getAffineConstantExpr(0, context));
  loops[rank - 2] = getAffineDimExpr(rank, context);
  loops[rank - 1] = getAffineDimExpr(rank + 1, context);
  SmallVector<AffineExpr> inputIndex;
  for (AffineExpr result : map.getResults())
    inputIndex.push_back(simplifyAffineExpr(
        result.replaceDimsAndSymbols(loops, {}), rank + 2, 0));
  std::optional<DirectInput> direct =
      matchDirectInput(rows.input->get(), inputIndex, shape, leafOf);
  if (direct) {
    load.line("loaded = " + direct->load + ";");
  } else {
    auto element = loader.valueAt(rows.input->get(), inputIndex);
    if (!element)
      return element.takeError();
    load.line("loaded = " + *element + ";");
  }

  // Down the thread's column: each input row's window folded from shared
  // memory, each output's window rows from registers once its last is.
  std::vector<std::string> folded;
  for (int64_t row = 0; row < inputRows; ++row) {
    std::string at = "tile[" + std::to_string(row * inputColumns) + " + x";
    std::string acc = fold.fresh("fold");
    fold.line(*computeType + " " + acc + " = " + at + "];");
    for (int64_t k = 1; k < columns.size; ++k) {
      auto value =
          combineInto(fold, columns, at + " + " + std::to_string(k) + "]", acc);
      if (!value)
        return value.takeError();
      fold.line(acc + " = " + *value + ";");
    }
    folded.push_back(acc);
    int64_t out = row - (rows.size - 1);
    if (out < 0)
      continue;
    if (llvm::Error error = emitPoolOutputRow(fold, folder, rows, folded, out,
                                              width, outputs, *computeType))
      return std::move(error);
  }

  int64_t outer = 1;
  for (unsigned d = 0; d + 2 < rank; ++d)
    outer *= shape[d];
  int64_t rowTiles = (height + tileRows - 1) / tileRows;
  int64_t columnTiles = (width + tileColumns - 1) / tileColumns;
  int64_t tiles = outer * rowTiles * columnTiles;
  // Each of the tile's first `full` x `block` columns is one thread's: its
  // index terms (padding checks, clamps) are computed once for its rows.
  // The other columns' elements (the window's last columns past a
  // block-wide tile) are spread over the threads, a load each.
  int64_t block = options.blockSize;
  int64_t full = inputColumns / block;
  int64_t restColumns = inputColumns - full * block;
  int64_t restLoads = (inputRows * restColumns + block - 1) / block;
  int64_t batch =
      std::min(inputRows, std::max<int64_t>(1, kLoadsInFlight /
                                                   std::max<int64_t>(full, 1)));
  // The outer indices an emitter's code reads, declared in the current
  // scope from the tile's.
  auto declareRest = [&](CodeWriter &code, const TensorEmitter &emitter) {
    if (llvm::none_of(llvm::seq(0u, rank - 2),
                      [&](unsigned d) { return emitter.usesDim(d); }))
      return;
    code.line("long long rest = outer;");
    declareOuterIndices(code, emitter, names, shape, rank - 2);
  };
  std::string rowsText = std::to_string(inputRows);
  std::string columnsText = std::to_string(inputColumns);
  std::string blockText = std::to_string(block);
  std::string batchText = std::to_string(batch);
  std::string fullText = std::to_string(full);
  std::string restText = std::to_string(restColumns);
  std::string restCount = std::to_string(inputRows * restColumns);
  std::string restLoadsText = std::to_string(restLoads);
  std::string restStart = std::to_string(full * block);
  std::string loadCode = load.str();
  auto emitLoad = [&](CodeWriter &code, llvm::StringRef target) {
    code.line(*computeType + " loaded;");
    code.lines(loadCode);
    code.line(target.str() + " = loaded;");
  };
  // Loops over the rest columns' elements, one a thread each turn.
  auto openRestLoop = [&](CodeWriter &code) {
    code.line("#pragma unroll");
    code.line("for (int j = 0; j < " + restLoadsText + "; ++j) {");
    code.indent();
    code.line("const int e = threadIdx.x + j * " + blockText + ";");
    code.line("if (e >= " + restCount + ") break;");
  };
  // Loops over the thread's full columns (`perColumn` opening each) and
  // the batch's rows.
  auto openFullLoops = [&](CodeWriter &code, llvm::StringRef perColumn) {
    code.line("#pragma unroll");
    code.line("for (int s = 0; s < " + fullText + "; ++s) {");
    code.indent();
    if (!perColumn.empty())
      code.line(perColumn);
    code.line("#pragma unroll");
    code.line("for (int k = 0; k < " + batchText + "; ++k) {");
    code.indent();
    code.line("if (r0 + k >= " + rowsText + ") break;");
  };
  auto close = [](CodeWriter &code, int loops) {
    for (int i = 0; i < loops; ++i) {
      code.dedent();
      code.line("}");
    }
  };
  // Every output of the tile from shared memory, a column a thread.
  auto emitFold = [&](CodeWriter &code) {
    code.line("for (int x = threadIdx.x; x < " + std::to_string(tileColumns) +
              "; x += " + blockText + ") {");
    code.indent();
    code.line("const long long w = w0 + x;");
    code.line("const long long base = (outer * " + std::to_string(height) +
              "LL + h0) * " + std::to_string(width) + "LL + w;");
    declareRest(code, folder);
    code.lines(fold.str());
    code.dedent();
    code.line("}");
  };

  // The loads' leaves, then the folds' others (their parameter names are
  // the builder's, one per tensor).
  std::vector<LeafTensor> leaves = loader.getLeaves();
  if (direct)
    leaves.push_back(direct->leaf);
  for (const LeafTensor &leaf : folder.getLeaves())
    if (llvm::none_of(leaves, [&](const LeafTensor &other) {
          return other.param == leaf.param;
        }))
      leaves.push_back(leaf);

  GeneratedKernel kernel;
  kernel.entry = entry.str();
  kernel.sharedBytes = sharedBytes;
  CodeWriter code;
  code.comment(comment);
  code.comment("sliding-window pooling: tiles of " + std::to_string(tileRows) +
               " x " + std::to_string(tileColumns) +
               " outputs, their input in shared memory");
  code.line(printKernelSignature(entry, options.blockSize, leaves, outputs,
                                 kernel.args) +
            " {");
  code.indent();
  code.line("extern __shared__ __align__(16) unsigned char kopt_smem[];");
  code.line(*computeType + " *tile = reinterpret_cast<" + *computeType +
            " *>(kopt_smem);");
  std::string tilesText = std::to_string(tiles) + "LL";
  code.line("for (long long t = blockIdx.x; t < " + tilesText +
            "; t += gridDim.x) {");
  code.indent();
  std::string c = std::to_string(columnTiles) + "LL";
  std::string r = std::to_string(rowTiles) + "LL";
  code.line("const long long w0 = min((t % " + c + ") * " +
            std::to_string(tileColumns) + "LL, " +
            std::to_string(width - tileColumns) + "LL);");
  code.line("const long long h0 = min((t / " + c + " % " + r + ") * " +
            std::to_string(tileRows) + "LL, " +
            std::to_string(height - tileRows) + "LL);");
  code.line("const long long outer = t / " + c + " / " + r + ";");
  // A batch of rows' loads of all the thread's columns is in flight
  // before the first is stored; the rest columns' loads are issued first.
  code.line("{");
  code.indent();
  declareRest(code, loader);
  if (direct)
    code.line("const " + getCudaStorageType(direct->leaf.elementType).str() +
              " *plane = " + direct->leaf.param + " + outer * " +
              std::to_string(direct->leaf.shape[rank - 2] *
                             direct->leaf.shape[rank - 1]) +
              "LL;");
  if (restLoads)
    code.line(*computeType + " rest_value[" + restLoadsText + "];");
  code.line("int r0 = 0;");
  if (restLoads) {
    openRestLoop(code);
    code.line("const long long ih = h0 + e / " + restText + ";");
    code.line("const long long iw = w0 + " + restStart + " + e % " + restText +
              ";");
    emitLoad(code, "rest_value[j]");
    close(code, 1);
  }
  code.line("#pragma unroll 1");
  code.line("for (; r0 < " + rowsText + "; r0 += " + batchText + ") {");
  code.indent();
  if (full) {
    code.line(*computeType + " value[" + fullText + "][" + batchText + "];");
    openFullLoops(code, "const long long iw = w0 + threadIdx.x + s * " +
                            blockText + ";");
    code.line("const long long ih = h0 + r0 + k;");
    emitLoad(code, "value[s][k]");
    close(code, 2);
    openFullLoops(code, "");
    code.line("tile[(r0 + k) * " + columnsText + " + threadIdx.x + s * " +
              blockText + "] = value[s][k];");
    close(code, 2);
  }
  close(code, 1);
  if (restLoads) {
    openRestLoop(code);
    code.line("tile[e / " + restText + " * " + columnsText + " + " + restStart +
              " + e % " + restText + "] = rest_value[j];");
    close(code, 1);
  }
  close(code, 1);
  code.line("__syncthreads();");
  emitFold(code);
  // The next tile overwrites shared memory.
  code.line("__syncthreads();");
  code.dedent();
  code.line("}");
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  kernel.grid = {std::to_string(std::min(tiles, options.maxBlocks)), "1", "1"};
  kernel.block = {std::to_string(options.blockSize), "1", "1"};
  return kernel;
}
