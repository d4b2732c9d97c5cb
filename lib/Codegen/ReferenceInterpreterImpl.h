//===- ReferenceInterpreterImpl.h - fp64 reference internals ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Codegen: what the files of the reference interpreter share.
// ReferenceInstructions.cpp compiles op bodies into scalar instructions and
// runs them; ReferenceGeneric.cpp builds and evaluates linalg.generic nodes;
// ReferenceInterpreter.cpp builds the graph of tensor nodes, evaluates the
// other kinds and holds the public interface (ReferenceInterpreter.h);
// ReferenceParallel.cpp spreads an evaluation of sampled points over threads;
// ReferenceDense.cpp evaluates every node whole, in order (`evaluateAll`).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_LIB_CODEGEN_REFERENCEINTERPRETERIMPL_H
#define KOPT_LIB_CODEGEN_REFERENCEINTERPRETERIMPL_H

#include "kopt/Codegen/ReferenceInterpreter.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/ThreadPool.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::kopt {
namespace reference {

//===----------------------------------------------------------------------===//
// Scalar instructions
//===----------------------------------------------------------------------===//

enum class Opcode : uint8_t {
  Unknown,
  Const,
  Index,
  Copy,
  // Floating point.
  AddF,
  SubF,
  MulF,
  DivF,
  RemF,
  NegF,
  MaximumF,
  MinimumF,
  MaxNumF,
  MinNumF,
  CmpF,
  Select,
  UIToFP,
  SIToFP,
  FPToSI,
  FPToUI,
  // Integer.
  AddI,
  SubI,
  MulI,
  DivSI,
  DivUI,
  RemSI,
  RemUI,
  CeilDivSI,
  FloorDivSI,
  AndI,
  OrI,
  XOrI,
  ShLI,
  ShRSI,
  ShRUI,
  MaxSI,
  MinSI,
  MaxUI,
  MinUI,
  CmpI,
  ExtSI,
  ExtUI,
  TruncI,
  IndexCast,
  IndexCastUI,
  AbsI,
  IPowI,
  // math.
  AbsF,
  Ceil,
  Floor,
  Round,
  RoundEven,
  Trunc,
  Exp,
  Exp2,
  ExpM1,
  Log,
  Log2,
  Log10,
  Log1p,
  Sqrt,
  Rsqrt,
  Cbrt,
  Tanh,
  Sinh,
  Cosh,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Asinh,
  Acosh,
  Atanh,
  Atan2,
  Erf,
  Erfc,
  PowF,
  FPowI,
  Fma,
  CopySign,
  IsNaN,
  IsInf,
  IsFinite,
  IsNormal,
  CeilDivUI,
  Ctlz,
  Cttz,
  Ctpop,
  Bitcast,
  /// tensor.extract: `attr` indexes `Program::extracts`.
  Extract,
};

/// One scalar operation: `slots[result] = op(slots[a], slots[b], slots[c])`.
struct Instr {
  Opcode code = Opcode::Unknown;
  int32_t result = 0;
  int32_t a = 0, b = 0, c = 0;
  /// Bit width of the integer result, or of the operands of cmpi.
  int32_t width = 64;
  /// Bit width of the integer operand of a cast.
  int32_t srcWidth = 64;
  /// Comparison predicate, or the dimension of linalg.index.
  int32_t attr = 0;
  double imm = 0.0;
};

struct TensorNode;

/// A `tensor.extract` in a body: the tensor read and the slots of its
/// coordinates, each clamped into its dimension as the CUDA code does.
struct ExtractSite {
  TensorNode *tensor = nullptr;
  SmallVector<int32_t> coordinates;
};

/// Writes the elements of a tensor node at `indices` to `values`, for
/// `tensor.extract` (`ReferenceInterpreter::Impl::gather`).
using GatherFn = llvm::function_ref<void(
    TensorNode *, ArrayRef<int64_t> indices, double *values)>;

/// A compiled op body: block arguments live in slots [0, numArgs), values
/// captured from outside the body in constant slots.
struct Program {
  std::vector<Instr> instrs;
  /// The `tensor.extract`s, indexed by their instructions' `attr`.
  std::vector<ExtractSite> extracts;
  /// Initial slot contents (the captured constants); each evaluating thread
  /// works on its own copy (`Frame::slots`).
  std::vector<double> slots;
  /// Slots of the yielded values.
  SmallVector<int32_t> yields;

  /// Calls `fn` on each slot `in` reads: its operands, or the coordinates
  /// of a `tensor.extract`.
  template <typename Fn>
  void forEachOperand(const Instr &in, Fn fn) const {
    if (in.code == Opcode::Extract) {
      for (int32_t slot : extracts[in.attr].coordinates)
        fn(slot);
      return;
    }
    fn(in.a);
    fn(in.b);
    fn(in.c);
  }

  /// The slots holding captured constants: neither the first `numArgs`
  /// (the arguments) nor an instruction's result.
  SmallVector<int32_t> getConstantSlots(unsigned numArgs) const {
    std::vector<bool> written(slots.size(), false);
    for (const Instr &in : instrs)
      written[in.result] = true;
    SmallVector<int32_t> constants;
    for (size_t s = numArgs; s < slots.size(); ++s)
      if (!written[s])
        constants.push_back(int32_t(s));
    return constants;
  }
};

/// The opcode of the op named `name`, or `Opcode::Unknown`.
Opcode getOpcode(StringRef name);

/// Runs `program` on the working slots `slots` (a copy of its `slots`) at
/// loop point `ivs` (null outside a loop nest); `gather` reads the elements
/// its `tensor.extract`s read.
void run(const Program &program, double *slots, const int64_t *ivs,
         GatherFn gather = {});

/// Runs `in`, whose operands are `acc` and the lane `x` (`acc` first when
/// `accIsA`), over the `count` values of `x` in order, feeding each result
/// back as `acc`; returns the last. The values `run` would give.
double fold(const Instr &in, bool accIsA, double acc, const double *x,
            size_t count);

/// Runs `program` at `count` loop points at once, each instruction over all
/// of them: slot s of point i is `lanes[s][i]` (the caller fills the lanes of
/// the arguments and of the captured constants), and the loop indices of
/// point i are `ivs[i * numLoops ...]` (null when the body reads none); a
/// `tensor.extract` reads the elements of every point with one `gather`.
/// Every point gets the values `run` gives it.
void runBatch(const Program &program, ArrayRef<double *> lanes, size_t count,
              const int64_t *ivs, unsigned numLoops, GatherFn gather = {});

inline llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

inline std::string describe(Operation *op) {
  return "'" + op->getName().getStringRef().str() + "'";
}

/// Compiles scalar ops into a Program.
class ProgramBuilder {
public:
  /// `outer` maps scalar values defined outside the body to their values,
  /// `tensors` tensor values to their nodes (for `tensor.extract`).
  ProgramBuilder(Program &program, const DenseMap<Value, double> &outer,
                 const DenseMap<Value, TensorNode *> *tensors = nullptr)
      : program(program), outer(outer), tensors(tensors) {}

  /// Gives `value` a fresh argument slot.
  void addArgument(Value value) { slotOf[value] = newSlot(0.0); }

  /// Compiles `op` into an instruction; fails on an unsupported op or an
  /// operand not known before evaluation.
  llvm::Error addOp(Operation *op);

  /// Records the slots of the values `yield` returns.
  llvm::Error addYield(Operation *yield);

  /// The value of a scalar attribute (i1 reads as 0 or 1).
  static std::optional<double> getScalarAttrValue(Attribute attr);

private:
  int32_t newSlot(double initial) {
    program.slots.push_back(initial);
    return static_cast<int32_t>(program.slots.size() - 1);
  }

  llvm::Expected<int32_t> getSlot(Value value, Operation *user);

  llvm::Error addExtract(Operation *op);

  Program &program;
  const DenseMap<Value, double> &outer;
  const DenseMap<Value, TensorNode *> *tensors;
  DenseMap<Value, int32_t> slotOf;
};

//===----------------------------------------------------------------------===//
// Tensor nodes
//===----------------------------------------------------------------------===//

/// Elements gathered at a time: reduction points, softmax rows and outputs
/// of a full evaluation are read in blocks of this size.
constexpr int64_t kBlockSize = 512;

/// Memoised elements of one tensor, or for a softmax the maximum and the sum
/// of its rows (keyed by the row's first element): a dense array for full
/// evaluation (one thread), a hash map for sampled points, shared by the
/// threads, where one thread computes a key while the others wait for it.
struct Cache {
  bool dense = false;
  std::vector<double> values;
  /// One byte per element, so that threads may store distinct elements.
  std::vector<uint8_t> present;
  std::mutex mutex;
  std::condition_variable ready;
  DenseMap<int64_t, double> sparse;
  DenseMap<int64_t, std::pair<double, double>> rows;
  /// Keys being computed.
  DenseSet<int64_t> busy;

  void reset(bool useDense, int64_t size) {
    dense = useDense;
    sparse.clear();
    rows.clear();
    busy.clear();
    values.clear();
    present.clear();
    if (dense) {
      values.assign(size, 0.0);
      present.assign(size, 0);
    }
  }
  bool lookup(int64_t index, double &value) {
    if (dense) {
      if (!present[index])
        return false;
      value = values[index];
      return true;
    }
    std::lock_guard<std::mutex> lock(mutex);
    auto it = sparse.find(index);
    if (it == sparse.end())
      return false;
    value = it->second;
    return true;
  }
  void store(int64_t index, double value) {
    if (dense) {
      values[index] = value;
      present[index] = 1;
      return;
    }
    std::lock_guard<std::mutex> lock(mutex);
    sparse[index] = value;
  }
  /// Waits while another thread computes `key`; then returns false when
  /// `done()` holds, and otherwise marks `key` busy and returns true: the
  /// caller computes it and calls `release`. `done` runs under the lock.
  template <typename Done>
  bool claim(int64_t key, Done done) {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      if (done())
        return false;
      if (busy.insert(key).second)
        return true;
      ready.wait(lock);
    }
  }
  void release(int64_t key) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      busy.erase(key);
    }
    ready.notify_all();
  }
};

struct GenericNode;

/// A tensor placed in a window of a Place node (`PlacedTensor`), or the
/// window a Slice node reads (`SliceRead`, whose `resultDims` are held in
/// `sourceDims`).
struct PlacedNode {
  TensorNode *source = nullptr;
  SmallVector<int64_t> offsets, strides, sourceDims;
};

/// One tensor value of the function.
struct TensorNode {
  enum class Kind {
    Input,
    Constant,
    Scalar,
    Alias,
    Generic,
    Softmax,
    Place,
    Slice
  };
  Kind kind = Kind::Scalar;
  /// Position in creation order, which is a topological order.
  unsigned id = 0;
  SmallVector<int64_t> shape;
  SmallVector<int64_t> strides;
  int64_t numElements = 1;
  /// Input: the argument number.
  unsigned inputIndex = 0;
  /// Constant: the elements.
  std::vector<double> constant;
  /// Scalar: every element; Place: the padding value.
  double scalar = 0.0;
  /// Alias, Softmax and Slice: the tensor read; Place: the tensor read
  /// where no piece covers the element (else `scalar`), or null.
  TensorNode *source = nullptr;
  /// Generic: the op and the result number.
  GenericNode *generic = nullptr;
  unsigned resultIndex = 0;
  /// Softmax: the reduced dimension.
  int64_t dimension = 0;
  /// Place: the pieces, the first covering an element giving it; Slice:
  /// the window read.
  SmallVector<PlacedNode> pieces;
  Cache cache;
  /// During a whole evaluation (`evaluateAll`): every element, once the
  /// node is computed; null before, after its last reader, and for Scalar
  /// nodes. Points into `storage`, into the source's (Alias), into
  /// `constant` or into the caller's argument.
  const double *data = nullptr;
  std::vector<double> storage;

  /// Whether an element is memoised when sampled points are evaluated: the
  /// elements of generics with reductions or evaluated whole, and softmax
  /// rows. Elementwise elements are recomputed instead.
  bool isMemoised() const;
};

/// How a generic's operand is read at a loop point.
struct OperandAccess {
  /// Null for a scalar operand.
  TensorNode *tensor = nullptr;
  double scalar = 0.0;
  /// Whether the body reads the block argument.
  bool used = true;
  /// Linear maps: index = offset + sum(coeffs[d] * iv[d]).
  bool linear = true;
  SmallVector<int64_t> coeffs;
  int64_t offset = 0;
  /// Other maps are evaluated per coordinate.
  AffineMap map;
};

/// For an elementwise generic, a linear operand index as a function of the
/// coordinates of one result's element: offset + sum(coeffs[c] * coord[c]).
struct CoordForm {
  SmallVector<int64_t> coeffs;
  int64_t offset = 0;
  /// Whether the operand index is the result element's index.
  bool identity = false;
};

/// How a reduction's body runs over a block of reduction points: the
/// instructions that do not depend on the accumulators (nor on
/// `linalg.index`) over the whole block at once (`runBatch`), then the others
/// point after point in loop order. Instructions that only feed unused
/// results are left out.
struct ReductionPlan {
  /// The results computed: the used ones and those they read.
  SmallVector<bool> liveOutputs;
  /// The instructions run over the whole block.
  Program batch;
  /// The instructions run point after point, and the slots they read or
  /// yield that the block computes (arguments and batch results).
  Program sequential;
  SmallVector<int32_t> lanesRead;
  /// When the sequential part is one instruction that folds a lane into
  /// the only computed accumulator (`acc = acc + x`): that instruction, the
  /// output it accumulates, and whether its first operand is the
  /// accumulator.
  std::optional<Instr> fold;
  unsigned foldOutput = 0;
  bool foldAccIsA = false;
};

/// A linalg.generic and what it needs to run.
struct GenericNode {
  linalg::GenericOp op;
  /// Position among the generics: the index of its working slots.
  unsigned id = 0;
  SmallVector<int64_t> ranges;
  SmallVector<unsigned> reductionDims;
  SmallVector<OperandAccess> inputs;
  SmallVector<OperandAccess> outputs;
  SmallVector<TensorNode *> results;
  /// Whether each result is used: an unused one need not be computed.
  SmallVector<bool> liveResults;
  Program body;
  /// Whether the body reads `linalg.index`.
  bool usesIndex = false;
  /// `body.getConstantSlots` of the block arguments.
  SmallVector<int32_t> constantSlots;
  /// Whether an output element fixes the parallel loop point.
  bool lazy = true;
  /// For lazy ops, per output: per loop dimension, the output coordinate that
  /// gives it (-1 for reduction dimensions); and, per output coordinate, the
  /// constant it must equal (-1 when it is a dimension).
  SmallVector<SmallVector<int>> dimFromCoord;
  SmallVector<SmallVector<int64_t>> constCoord;
  /// For lazy ops with reductions.
  ReductionPlan reduction;
  /// For lazy ops without reductions, per result: the CoordForm of every
  /// linear operand, inputs then outputs (unset for others).
  SmallVector<SmallVector<std::optional<CoordForm>>> coordForms;
  /// Whole evaluation: done once, under the mutex.
  std::mutex wholeMutex;
  bool evaluated = false;

  /// Lazy and without reductions: an element costs one run of the body.
  bool isElementwise() const { return lazy && reductionDims.empty(); }
};

/// Splits the body of `node`, a lazy generic with reductions, into its
/// ReductionPlan.
void planReduction(GenericNode &node);

/// Whether `coords` lie on the constant coordinates of an output map.
inline bool onConstants(ArrayRef<int64_t> coords,
                        ArrayRef<int64_t> constCoord) {
  for (auto [coord, constant] : llvm::zip_equal(coords, constCoord))
    if (constant != -1 && coord != constant)
      return false;
  return true;
}

/// The loop point of a lazy generic's output element at `coords`; reduction
/// dimensions are left as they are.
inline void setParallelIvs(ArrayRef<int> dimFromCoord, ArrayRef<int64_t> coords,
                           MutableArrayRef<int64_t> ivs) {
  for (auto [d, c] : llvm::enumerate(dimFromCoord))
    if (c != -1)
      ivs[d] = coords[c];
}

/// Whether two operand accesses read the same elements at every loop point.
inline bool sameAccess(const OperandAccess &a, const OperandAccess &b) {
  if (!a.tensor || a.tensor != b.tensor || a.linear != b.linear)
    return false;
  if (a.linear)
    return a.offset == b.offset && a.coeffs == b.coeffs;
  return a.map == b.map;
}

/// What one evaluating thread owns: the working slots of every generic's
/// body and the first error it met.
struct Frame {
  std::vector<std::vector<double>> slots;
  /// Working lanes of a whole evaluation's reductions.
  std::vector<double> scratch;
  std::string error;

  void fail(const Twine &message) {
    if (error.empty())
      error = message.str();
  }
};

/// Runs `body(frame, item)` for every item below `count`, on one task per
/// frame of `pool` (each taking the next item from a shared counter), or on
/// the first frame alone when `pool` is null.
void forEachItem(llvm::ThreadPoolInterface *pool, std::vector<Frame> &frames,
                 int64_t count,
                 llvm::function_ref<void(Frame &, int64_t)> body);

} // namespace reference

struct ReferenceInterpreter::Impl {
  OwningOpRef<ModuleOp> module;
  std::deque<reference::TensorNode> tensors;
  std::deque<reference::GenericNode> generics;
  DenseMap<Value, reference::TensorNode *> nodeOf;
  DenseMap<Value, double> scalars;
  SmallVector<reference::TensorNode *> inputNodes;
  SmallVector<reference::TensorNode *> outputNodes;

  /// The caller's inputs during an evaluation, one per argument.
  SmallVector<const ReferenceInput *> inputs;

  // Building (ReferenceInterpreter.cpp, ReferenceGeneric.cpp).
  llvm::Error build(func::FuncOp func);
  llvm::Expected<reference::TensorNode *>
  newTensor(Value value, reference::TensorNode::Kind kind);
  llvm::Expected<reference::TensorNode *> getNode(Value value, Operation *user);
  llvm::Error addGeneric(linalg::GenericOp op);
  llvm::Error addOperand(reference::GenericNode &node, OpOperand &operand,
                         reference::OperandAccess &access);
  void addCoordForms(reference::GenericNode &node);

  // Evaluation (ReferenceInterpreter.cpp).
  void begin(ArrayRef<const ReferenceInput *> inputs, bool dense);
  reference::Frame makeFrame() const;
  /// Writes the elements of `node` at `indices` to `values`.
  void gather(reference::Frame &frame, reference::TensorNode *node,
              ArrayRef<int64_t> indices, double *values);
  double valueAt(reference::Frame &frame, reference::TensorNode *node,
                 int64_t index);
  /// The `reference::GatherFn` of the `tensor.extract`s of bodies run in
  /// `frame`.
  auto gatherIn(reference::Frame &frame) {
    return [this, &frame](reference::TensorNode *node,
                          ArrayRef<int64_t> indices, double *values) {
      gather(frame, node, indices, values);
    };
  }
  /// A memoised element: looked up, or computed once.
  double memoisedAt(reference::Frame &frame, reference::TensorNode *node,
                    int64_t index);
  /// Place and Slice: where element `index` of `node` comes from (a
  /// tensor and its element), or nothing for the padding value.
  static std::optional<std::pair<reference::TensorNode *, int64_t>>
  locateMoved(const reference::TensorNode *node, int64_t index);
  void gatherMoved(reference::Frame &frame, reference::TensorNode *node,
                   ArrayRef<int64_t> indices, double *values);
  void gatherSoftmax(reference::Frame &frame, reference::TensorNode *node,
                     ArrayRef<int64_t> indices, double *values);
  /// The maximum and the sum of exponentials of the softmax row at `base`.
  std::pair<double, double> softmaxRow(reference::Frame &frame,
                                       reference::TensorNode *node,
                                       int64_t base);
  /// The first element of the softmax row holding `index`.
  static int64_t softmaxRowBase(const reference::TensorNode *node,
                                int64_t index);

  // Generics (ReferenceGeneric.cpp).
  int64_t linearIndex(reference::Frame &frame,
                      const reference::OperandAccess &access,
                      const int64_t *ivs);
  void gatherElementwise(reference::Frame &frame, reference::GenericNode &node,
                         unsigned result, ArrayRef<int64_t> indices,
                         double *values);
  void computeGenericPoint(reference::Frame &frame,
                           reference::GenericNode &node, unsigned result,
                           int64_t index);
  void computeGenericWhole(reference::Frame &frame,
                           reference::GenericNode &node);
  /// The memoised elements that `index` of `node` reads through elementwise
  /// nodes (itself, when memoised), added once to `demand`.
  void collectDemand(
      reference::TensorNode *node, int64_t index,
      DenseSet<std::pair<reference::TensorNode *, int64_t>> &seen,
      std::vector<std::pair<reference::TensorNode *, int64_t>> &demand);

  // Threads (ReferenceParallel.cpp).
  /// Evaluates `node` at `points` into `values` on up to `numThreads`
  /// threads; the first error met, if any.
  std::string evaluateInParallel(reference::TensorNode *node,
                                 ArrayRef<int64_t> points, double *values,
                                 unsigned numThreads);

  // Whole evaluation (ReferenceDense.cpp).
  /// Computes every node the outputs need, in order, each into its `data`
  /// (`arguments`: the elements of each argument), on up to `numThreads`
  /// threads; frees each node's elements after its last reader but the
  /// outputs'. The first error met, if any.
  std::string evaluateDense(ArrayRef<const double *> arguments,
                            unsigned numThreads);
  void computeGenericDense(reference::GenericNode &node,
                           llvm::ThreadPoolInterface *pool,
                           std::vector<reference::Frame> &frames);
  /// A lazy reduction that folds one result (`ReductionPlan::fold`) over
  /// linear operands: tiles of output elements along the output's last
  /// dimension, each folded a block of reduction points at a time. False
  /// when the generic does not qualify.
  bool foldDense(reference::GenericNode &node, llvm::ThreadPoolInterface *pool,
                 std::vector<reference::Frame> &frames);
};

} // namespace mlir::kopt

#endif // KOPT_LIB_CODEGEN_REFERENCEINTERPRETERIMPL_H
