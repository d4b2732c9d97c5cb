//===- TensorEmitter.h - Emit tensor values at symbolic ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Generated kernels compute tensors element by element. TensorEmitter emits
// the CUDA code for "the value of tensor %t at index (e0, e1, ...)", where
// each index is an affine expression over the kernel's index variables. It
// inlines producers (elementwise bodies at mapped indices, reductions as
// loops, reshapes and slices as re-indexing, pads, insert_slices and
// concatenations as selects, constants and fills as literals) until it
// reaches a leaf, a tensor the kernel reads from device memory. Values are
// memoised per index, so a producer read twice at one index is computed
// once.
//
// Two kinds of reductions exist. A reduction whose index does not depend on
// the thread-varying dimension can be computed cooperatively by the whole
// block (strided partial sums and a block reduction); such reductions are
// collected by a dry run and emitted up front, outside divergent loops.
// Every other reduction becomes a sequential loop in the thread.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_TENSOREMITTER_H
#define KOPT_CODEGEN_TENSOREMITTER_H

#include "kopt/Codegen/CudaEmitter.h"
#include "kopt/Codegen/RowGroup.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Value.h"

#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace mlir::kopt {

/// A tensor the kernel reads from device memory.
struct LeafTensor {
  /// The kernel parameter name.
  std::string param;
  ElementType elementType = ElementType::F32;
  std::vector<int64_t> shape;
};

/// A reduction the block computes cooperatively.
struct CooperativeReduction {
  Value result;
  llvm::SmallVector<AffineExpr> index;
};

/// True if `op` is a single-output reduction whose body combines into its
/// accumulator with an associative, commutative op kopt can split across
/// threads (add, mul, min, max).
bool hasAssociativeCombiner(Operation *op);

/// How such a reduction combines two partial results; none where
/// hasAssociativeCombiner is false.
std::optional<ReductionCombiner> getReductionCombiner(Operation *op);

class TensorEmitter {
public:
  /// Returns the leaf for `value` if the kernel reads it from memory.
  using LeafFn = std::function<std::optional<LeafTensor>(Value)>;

  /// `dimNames[i]` names kernel index dimension `i` in the code. If
  /// `threadDim` is set, reductions whose index does not involve it are
  /// cooperative (`cooperativeBlockSize` threads); otherwise all reductions
  /// are sequential.
  TensorEmitter(MLIRContext *context, CodeWriter &out,
                std::vector<std::string> dimNames, LeafFn leafOf);

  /// Enables cooperative reductions over `threadDim` in blocks of
  /// `blockSize` threads.
  void enableCooperativeReductions(unsigned threadDim, unsigned blockSize);

  /// Kernel dimension `dim` ranges over [0, `extent`): its reads' indices
  /// are simplified with that range (BoundedAffine.h), which removes the
  /// divisions a reshape's index would otherwise compute per element.
  void setDimExtent(unsigned dim, int64_t extent);

  /// Enables `width`-wide vector loads along dimension `laneDim`: a leaf
  /// read contiguous in it (and depending on no loop variable) is loaded as
  /// one KoptVec into `prologue` and read per lane inside the lane loop,
  /// where `laneDim` is named `laneName`; a leaf independent of it is loaded
  /// once into `prologue`.
  void enableVectorLanes(unsigned laneDim, unsigned width, CodeWriter &prologue,
                         llvm::StringRef baseName, llvm::StringRef laneName);

  /// Emits the value of tensor `value` at `index` and returns a scalar
  /// expression of its compute type.
  llvm::Expected<std::string> valueAt(Value value,
                                      llvm::ArrayRef<AffineExpr> index);

  /// Dry run: returns the cooperative reductions `valueAt(value, index)`
  /// needs, in an order where each comes after those it uses, without
  /// emitting anything.
  llvm::Expected<std::vector<CooperativeReduction>>
  collectCooperativeReductions(Value value, llvm::ArrayRef<AffineExpr> index);

  /// Emits a cooperative reduction (all threads must reach this point). With
  /// `partialStore` set (split rows), the block's combined partial result is
  /// stored there by thread 0 instead of being folded into the reduction's
  /// initial value.
  llvm::Error emitCooperative(const CooperativeReduction &reduction,
                              llvm::StringRef partialStore = "");

  /// Emits several cooperative reductions over the same number of
  /// elements with one loop, so that each element is read once for all of
  /// them; `partialStores`, empty or one per reduction, as above.
  llvm::Error emitCooperatives(llvm::ArrayRef<CooperativeReduction> reductions,
                               llvm::ArrayRef<std::string> partialStores = {});

  /// Split rows: emits the value of `reduction` as its initial value
  /// combined with the `count` partial results at `partials[first + s]`,
  /// and memoises it, so the rest of the kernel reads it like a reduction
  /// computed in place.
  /// With `together`, the block's threads read the partials strided and
  /// combine them as a cooperative reduction does (all threads must reach
  /// this point); otherwise each thread combines them all in order.
  llvm::Error emitCombinedPartials(const CooperativeReduction &reduction,
                                   llvm::StringRef partials,
                                   llvm::StringRef first, int64_t count,
                                   bool together = false);

  /// Loads f32 leaves through `function(pointer)` instead of plainly (a
  /// cache hint the kernel defines), or plainly again when empty. Caches
  /// and vector lanes load as before.
  void setLoadFunction(llvm::StringRef function) {
    loadFunction = function.str();
  }
  /// The same for the f32 leaves whose index does not depend on kernel
  /// dimension 0 (operands every row reads again), in place of the load
  /// function when not empty.
  void setBroadcastLoadFunction(llvm::StringRef function) {
    broadcastLoadFunction = function.str();
  }
  /// Whether the code emitted so far reads a leaf whose index does not
  /// depend on kernel dimension 0 (the row) from memory: an operand every
  /// row reads again (LayerNorm's weights).
  bool readsBroadcastLeaves() const { return broadcastLeavesRead; }
  /// Fills asynchronous shared caches through `function(shared, global)`
  /// instead of `kopt_copy_async` (a copy with another cache hint).
  void setAsyncCopyFunction(llvm::StringRef function) {
    asyncCopyFunction = function.str();
  }

  /// Split rows: row loops cover [`start`, `end`) (C expressions) instead of
  /// the whole row.
  void setRowRange(llvm::StringRef start, llvm::StringRef end) {
    rowRange = {start.str(), end.str()};
  }

  /// Split rows: the times a row loop over the range is unrolled, so that
  /// each thread has that many loads in flight (4 by default).
  void setRowRangeUnroll(unsigned times) { rowRangeUnroll = times; }

  /// Split rows whose range starts and ends on multiples of 4 elements:
  /// the cooperative reductions loop over 16-byte groups of the range, four
  /// elements a thread at a time, each f32 leaf read at the element plus a
  /// multiple of 4 loaded once for the four as a 16-byte vector
  /// (`KoptVec<float, 4>`), through `rowFunction` where the leaf's index
  /// depends on the row and `broadcastFunction` where it does not (C
  /// functions of a `const float *` returning the vector). Each thread
  /// takes a batch of groups at a time, and every load of the batch is
  /// made before any of its arithmetic (WideBatch below).
  void setWideRowLoops(llvm::StringRef rowFunction,
                       llvm::StringRef broadcastFunction) {
    wideRowLoops = true;
    vectorLoadFunction = rowFunction.str();
    broadcastVectorLoadFunction = broadcastFunction.str();
  }

  /// Wide row loops whose row-dependent vectors are held in shared memory
  /// between two passes (the wave form's held rows): each such load of a
  /// batch is, after all the batch's loads, handed to `store` (a C
  /// callable, `store(group, vector)`, the group's index in the range)
  /// when set; and made as `load(pointer, group)` instead of through the
  /// row function when `load` is set. Only batched loads are held:
  /// getHeldRowLoads and hasUnheldRowLoads say which were.
  struct RowHold {
    std::string store, load;
  };
  void setRowHold(RowHold hold) { rowHold = std::move(hold); }
  /// The row-dependent vector loads held (their leaf and index, one entry
  /// each), and whether any was made outside a batch, unheld.
  llvm::ArrayRef<std::string> getHeldRowLoads() const { return heldRowLoads; }
  bool hasUnheldRowLoads() const { return unheldRowLoads; }

  /// Several rows per block: row loops start at the thread's position in
  /// its row and stride by the row's threads, and cooperative reductions
  /// combine over the row's threads only (emitRowGroupReduction). The
  /// kernel defines the layout's C names. Not with split rows.
  void setRowGroup(const RowGroupLayout &layout) { rowGroup = layout; }

  /// Rows split over the `size` blocks of a thread-block cluster:
  /// cooperative reductions combine the blocks' totals through distributed
  /// shared memory (`kopt_cluster_sync` and `kopt_cluster_load`, which the
  /// kernel defines; it syncs the cluster before it ends, so that no block
  /// leaves while others read its shared memory).
  void enableClusterReductions(unsigned size) { clusterSize = size; }
  /// Rows split over a software group of co-resident blocks (a cooperative
  /// launch): the cooperative reductions of one emitCooperatives call each
  /// store the block's total in the group's slots in global memory, pass
  /// one group barrier together, then combine every block's total. The
  /// kernel defines `kopt_group_slots(k)` (reduction `k`'s slots, one per
  /// block of the group, `long long` each), `kopt_group_blocks`, `chunk`
  /// (the block's place in the group) and `kopt_group_sync()`.
  void enableGroupReductions() { groupReductions = true; }
  /// Group reductions emitted so far: each needs its slots.
  unsigned getGroupReductionCount() const { return groupReductionCount; }
  /// Reads through reshapes one dimension group at a time (an expanded
  /// dimension as the linear index of the dimensions it became, a collapsed
  /// one split back) instead of through the whole linear index: the same
  /// elements, in expressions that keep the other dimensions as they are.
  void enableStructuredReshapes() { structuredReshapes = true; }

  /// Makes `valueAt(value, index)` give `expr` in the current scope: a
  /// value the kernel computes itself (a GEMM's accumulator element).
  void bind(Value value, llvm::ArrayRef<AffineExpr> index, std::string expr) {
    memoize(makeKey(value, index), std::move(expr));
  }

  /// Adds a kernel parameter read like a leaf (a buffer of partial results).
  void addParameter(const LeafTensor &leaf) { leaves.push_back(leaf); }

  /// Keeps, in registers, the row-dependent leaves a row kernel reads along
  /// its thread dimension: each thread loads its `cdiv(length, blockSize)`
  /// elements once, in `prologue`, and the row loops (made fully unrolled)
  /// read them from there. At most `budget` registers per thread go to
  /// caches; leaves beyond that are read from memory.
  void enableRowCache(int64_t length, unsigned budget, CodeWriter &prologue);

  /// Keeps the row-dependent leaves the row loops over `length` elements
  /// read in dynamic shared memory instead: `slot` elements each (the
  /// block's range of the row with split rows), up to `bytes` bytes in all,
  /// in the `unsigned char kopt_smem[]` the kernel declares, 16-byte
  /// aligned. The threads fill them in `prologue`, four f32 elements a load
  /// where the range allows when `vectors` is set; then the kernel must
  /// place a barrier, as a thread reads elements others loaded.
  void enableSharedRowCache(int64_t length, int64_t slot, int64_t bytes,
                            CodeWriter &prologue);
  void setSharedCacheVectors(bool vectors) { sharedVectors = vectors; }
  /// Fills the shared caches' 16-byte parts with `cp.async` copies
  /// (`kopt_copy_async`, which the kernel defines): every thread issues all
  /// its copies before any is waited for, and no register holds the data.
  /// The kernel then waits (`kopt_copy_async_wait`) before its barrier.
  void setSharedCacheAsync(bool async) { sharedAsync = async; }
  /// After filling a shared cache whose range is contiguous in memory, has
  /// thread 0 ask L2 for the same range of row `nextRow` (a C expression
  /// for kernel dimension 0) when `condition` holds, with
  /// `kopt_prefetch_l2(pointer, bytes)`, which the kernel defines: the
  /// next row's reads from DRAM then overlap this row's work.
  void setSharedCachePrefetch(llvm::StringRef nextRow,
                              llvm::StringRef condition) {
    prefetchRow = {nextRow.str(), condition.str()};
  }
  /// Whether a cache asked for the next row.
  bool usesPrefetch() const { return prefetchUsed; }
  /// Fills the shared caches by bulk copies of the next row instead of
  /// loads of this one (double-buffered group kernels): the prologue then
  /// only names each cache within `kopt_smem`, and `fills` gets, for each
  /// cache, thread 0's copy of its range of row `kopt_fill_row` into the
  /// same place within `kopt_fill_smem`, through
  /// `kopt_bulk_fill(shared, global, bytes, kopt_fill_bar)`, which the
  /// kernel defines along with those three names. Only f32 caches whose
  /// range is contiguous in memory can be filled so; another fails the
  /// kernel (bulkFillsFailed).
  void setSharedCacheBulkFills(CodeWriter &fills) { bulkFills = &fills; }
  /// Whether a cache could not be filled by a bulk copy.
  bool bulkFillsFailed() const { return bulkFillFailed; }
  /// With bulk fills into one buffer: each thread holds its `vectors`
  /// 16-byte groups of the block's range of every cache in registers,
  /// copied from shared memory by `staging` (which the kernel places once
  /// the range has landed, before the next row's copy may overwrite it),
  /// and every row loop over the range is unrolled over those groups and
  /// reads the registers. The kernel ensures the range fits: at most
  /// `vectors * 4 * blockSize` elements.
  void setSharedCacheRegisters(unsigned vectors, CodeWriter &staging) {
    registerVectors = vectors;
    registerStaging = &staging;
  }
  /// Whether a cache was filled with `cp.async` copies.
  bool usesAsyncCopies() const { return asyncCopiesUsed; }
  /// Bytes of shared memory the caches use so far.
  int64_t getSharedCacheBytes() const { return sharedUsed; }
  /// The shared caches made so far, in order: arrays of the compute type
  /// indexed like the row loops' reads of them.
  llvm::ArrayRef<std::string> getSharedCacheNames() const {
    return sharedCacheNames;
  }
  /// Called in a cooperative reduction's loop with each input the body
  /// reads, its index and its value there, after the value is computed.
  using ReductionInputSink = std::function<void(
      Value input, llvm::ArrayRef<AffineExpr> index, llvm::StringRef value)>;
  void setReductionInputSink(ReductionInputSink sink) {
    reductionInputSink = std::move(sink);
  }

  /// Opens a block-strided loop over [0, `count`) in the thread dimension,
  /// which names its variable; unrolled over the register caches when they
  /// cover it. Closed by `closeRowLoop`.
  void openRowLoop(int64_t count);
  void closeRowLoop();

  /// Opens a loop over [0, `count`) (or the row range) in which each thread
  /// takes `width` consecutive elements at a time, for one wide store:
  /// `width` must divide the range's start and end. Returns the C name of
  /// the group's first element. Inside it, `openLaneLoop` opens the
  /// unrolled loop over the group's elements, which names the thread
  /// dimension's variable, returns the C name of the element's place in
  /// the group and is closed by `closeRowLoop`; then
  /// `closeWideRowLoop` closes the groups' loop.
  std::string openWideRowLoop(int64_t count, unsigned width);
  std::string openLaneLoop(int64_t count, llvm::StringRef first,
                           unsigned width);
  void closeWideRowLoop();

  /// Opens and closes a scope of memoised values: code emitted inside a C
  /// block must not be referred to after it closes.
  void pushScope() { scopes.emplace_back(); }
  void popScope() { scopes.pop_back(); }

  /// Whether the code emitted so far reads kernel index dimension `dim`
  /// (a dry run does not count): a kernel declares only those it reads,
  /// since NVRTC warns about unused variables.
  bool usesDim(unsigned dim) const;

  /// The leaves read so far, in order of first use.
  const std::vector<LeafTensor> &getLeaves() const { return leaves; }

  /// An index vector naming each dimension of `shape` from a row-major
  /// linear index expression.
  static llvm::SmallVector<AffineExpr>
  delinearize(AffineExpr linear, llvm::ArrayRef<int64_t> shape);
  /// The row-major linear index of `index` in `shape`.
  static AffineExpr linearize(llvm::ArrayRef<AffineExpr> index,
                              llvm::ArrayRef<int64_t> shape,
                              MLIRContext *context);

private:
  using Key = std::pair<const void *, std::vector<const void *>>;

  /// Inside openLaneLoop's loop of 4, an f32 leaf read at the row's
  /// element plus a multiple of 4: its four lanes as one 16-byte load, the
  /// lane's element of it returned; nothing otherwise.
  /// Inside a wide row loop's lane loop, `linear` printed for the group's
  /// first element where the four lanes read the same element (a
  /// channel's weight), so that they make one load; none otherwise.
  std::optional<std::string> printLaneInvariant(AffineExpr linear);
  std::optional<std::string> readLaneVector(const LeafTensor &leaf,
                                            AffineExpr linear);
  llvm::Expected<std::string> loadLeaf(const LeafTensor &leaf,
                                       llvm::ArrayRef<AffineExpr> index);
  std::optional<std::string> readSharedCache(const LeafTensor &leaf,
                                             AffineExpr linear);
  /// Declares, in the register staging code, the thread's register copy of
  /// shared cache `cache` over the range [start, end) and copies it there.
  void emitRegisterCopy(const std::string &cache, llvm::StringRef start,
                        llvm::StringRef end);
  llvm::Expected<std::string> valueOfOp(Operation *op, unsigned resultNumber,
                                        llvm::ArrayRef<AffineExpr> index);
  llvm::Expected<std::string> inputAt(linalg::GenericOp generic,
                                      OpOperand *input,
                                      llvm::ArrayRef<AffineExpr> loops);
  llvm::Expected<std::string> emitPlacement(Operation *op,
                                            llvm::ArrayRef<AffineExpr> index);
  llvm::Expected<std::string> gatherAt(tensor::ExtractOp extract,
                                       llvm::ArrayRef<std::string> coordinates);
  llvm::Expected<std::string> emitGeneric(Operation *op, unsigned resultNumber,
                                          llvm::ArrayRef<AffineExpr> index);
  std::optional<std::string> lookupMemo(const Key &key) const;
  void memoize(const Key &key, std::string expr);
  Key makeKey(Value value, llvm::ArrayRef<AffineExpr> index) const;
  std::string print(AffineExpr expr);
  void noteUse(unsigned dim);
  bool isCooperative(Operation *op, llvm::ArrayRef<AffineExpr> parallelIndex);
  /// Emits the block-wide combination of each thread's `acc` and returns
  /// the shared array whose element 0 holds the block's total.
  std::string emitBlockTotal(const ReductionCombiner &combiner,
                             const std::string &type, const std::string &acc);
  /// Defines `total` as the reduction's initial value combined with
  /// `blockTotal` and memoises it as the reduction's value.
  llvm::Error
  foldInitial(const CooperativeReduction &reduction, linalg::GenericOp generic,
              const ReductionCombiner &combiner, const std::string &type,
              const std::string &blockTotal, const std::string &total,
              llvm::ArrayRef<AffineExpr> parallel);
  llvm::Error finishCooperative(const CooperativeReduction &reduction,
                                linalg::GenericOp generic,
                                const ReductionCombiner &combiner,
                                const std::string &type, const std::string &acc,
                                llvm::ArrayRef<AffineExpr> parallel,
                                llvm::StringRef partialStore);
  /// A new dimension named after `prefix`, ranging over [0, `extent`) (0:
  /// unknown).
  unsigned newLoopDim(llvm::StringRef prefix, int64_t extent = 0);

  MLIRContext *context;
  CodeWriter *out;
  std::vector<std::string> dimNames;
  /// Each dimension's extent where known, 0 elsewhere (or absent).
  std::vector<int64_t> dimExtents;
  unsigned numKernelDims;
  LeafFn leafOf;
  std::vector<LeafTensor> leaves;
  std::vector<std::map<Key, std::string>> scopes;
  /// Per kernel index dimension: whether emitted code reads it.
  std::vector<bool> usedDims;

  std::optional<unsigned> threadDim;
  unsigned blockSize = 256;
  bool dryRun = false;
  bool structuredReshapes = false;
  std::vector<CooperativeReduction> *collected = nullptr;

  /// This thread's first position in a row loop and the loop's stride.
  std::string rowLane() const;
  unsigned rowStride() const;

  std::optional<RowGroupLayout> rowGroup;
  unsigned clusterSize = 1;
  bool groupReductions = false;
  unsigned groupReductionCount = 0;
  bool broadcastLeavesRead = false;
  std::string asyncCopyFunction = "kopt_copy_async";
  std::optional<std::pair<std::string, std::string>> rowRange;
  unsigned rowRangeUnroll = 4;
  bool wideRowLoops = false;
  /// An open batch of a wide row loop (openWideRowLoop): its body is set
  /// aside until it closes, because the loads of every group of the batch
  /// are made first, in a loop of their own, so that all are in flight
  /// together: loads written inside the body each wait for the one before,
  /// since the group's arithmetic and stores come between them.
  struct BatchLoad {
    std::string array, type, load;
    /// Handed to the row hold's store once loaded.
    bool held = false;
  };
  struct WideBatch {
    CodeWriter::Aside aside;
    /// The loops' C names (batch base, unrolled index, group, group count,
    /// group's first element), the group index's C type, the range's
    /// start and the group's width.
    std::string base, u, group, groups, first, indexType, start, width;
    unsigned batch = 1, stride = 1;
    /// Each group's loads, made in the first loop into `array[u]`.
    std::vector<BatchLoad> loads;
    /// Loads the same for every group (a row's shift), made before the
    /// loop.
    std::vector<std::string> rowLoads;
  };
  std::optional<WideBatch> wideBatch;
  /// Inside a batch's lane loop, a load of `type` (`load`, a C expression
  /// of the group's first element) made once for each group before the
  /// batch's arithmetic; the expression that reads it for this group.
  std::string batchLoad(llvm::StringRef type, llvm::StringRef load,
                        bool held = false);
  std::optional<RowHold> rowHold;
  std::vector<std::string> heldRowLoads;
  bool unheldRowLoads = false;
  std::string vectorLoadFunction, broadcastVectorLoadFunction;
  std::optional<int64_t> cacheLength;
  unsigned cacheBudget = 0;
  unsigned cacheUsed = 0;
  CodeWriter *cachePrologue = nullptr;
  std::map<std::pair<std::string, const void *>, std::string> caches;
  int64_t sharedSlot = 0, sharedBudget = 0, sharedUsed = 0;
  std::vector<std::string> sharedCacheNames;
  ReductionInputSink reductionInputSink;
  bool sharedVectors = true;
  bool sharedAsync = false, asyncCopiesUsed = false;
  std::optional<std::pair<std::string, std::string>> prefetchRow;
  bool prefetchUsed = false;
  CodeWriter *bulkFills = nullptr;
  bool bulkFillFailed = false;
  unsigned registerVectors = 0;
  CodeWriter *registerStaging = nullptr;
  /// Each shared cache's copy in registers (setSharedCacheRegisters).
  std::map<std::string, std::string> registerCopies;
  /// In a row loop over registers: the element's index in the thread's
  /// register copies, and the open wide loop's group index.
  std::string registerElement, registerGroup;
  /// Inside openLaneLoop's loop of 4: its first element, its lane variable,
  /// and the loop depth it opened (0 outside one).
  std::string laneLoopFirst, laneLoopLane;
  unsigned laneLoopDepth = 0;
  /// Whether the replacement for this row's range after
  /// setSharedCacheRegisters is in effect for a loop over `count`.
  bool readsRegisterRange(int64_t count) const;
  std::string loadFunction, broadcastLoadFunction;
  /// For each open row loop: which caches it reads.
  /// RegisterRange: a loop over the thread's register copies of a shared
  /// cache (setSharedCacheRegisters), two loops and a bound check deep.
  enum class RowLoop { Plain, RegisterCache, SharedCache, RegisterRange };
  std::vector<RowLoop> rowLoops;

  std::optional<unsigned> laneDim;
  unsigned vectorWidth = 1;
  CodeWriter *prologue = nullptr;
  std::string laneBase, laneName;
  unsigned loopDepth = 0;
};

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_TENSOREMITTER_H
