//===- FusionPlanner.cpp - Form fusion groups -------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Greedy partitioning in three phases over the ops of one block (see
// docs/FusionGroups.md):
//
//   1. contractions and convolutions anchor groups and absorb their
//      elementwise epilogues (and, for convolutions, one pooling op and what
//      follows it on the pooled shape); a contraction also takes the
//      transposes of its operands' innermost dimensions, which GEMMs read
//      in place, and a convolution or pooling op the constant pad of its
//      input, which cuDNN and the generated kernels apply as they read; an
//      anchor also takes the broadcast (a bias) it accumulates into or that
//      its epilogue adds, which the epilogue then reads as the vector it is;
//   2. reductions and softmax anchor groups and absorb elementwise producers
//      and consumers and further reductions over the same rows;
//   3. the remaining elementwise ops form connected chains; a pooling op
//      left alone is a group with the pad of its input.
//
// Every op joins at most one group, so nothing is recomputed. Before an op
// joins, a reachability check makes sure no path leaves the grown group and
// comes back into it through an outside op, which would make the outlined
// group depend on its own result. The group had no such path before, so any
// new one starts or ends at the candidate: the check searches from the
// candidate only (backwards towards the group, forwards towards it), within
// the block positions the group spans, and its cost does not grow with the
// group. Growing visits each new member once per round, so a chain of N ops
// is planned in time linear in N.
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/FusionPlanner.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::kopt;

namespace {

/// True if `op` only broadcasts its one input: a `linalg.broadcast`, or a
/// parallel generic that yields its input read through a projection that
/// drops dimensions.
bool isBroadcast(Operation *op) {
  if (isa<linalg::BroadcastOp>(op))
    return true;
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() != 0)
    return false;
  Block &body = generic.getRegion().front();
  AffineMap in = generic.getMatchingIndexingMap(generic.getDpsInputOperand(0));
  AffineMap out = generic.getMatchingIndexingMap(generic.getDpsInitOperand(0));
  return body.getOperations().size() == 1 &&
         body.getTerminator()->getOperand(0) == body.getArgument(0) &&
         out.isIdentity() && in.isProjectedPermutation() &&
         in.getNumResults() < in.getNumDims();
}

int64_t countPoints(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

/// Per-op state of the planner.
struct Node {
  Operation *op = nullptr;
  OpClassification info;
  /// Position in the block, for reachability bounds.
  unsigned position = 0;
  /// Index of the group the op joined, or -1.
  int group = -1;
};

/// A group being grown.
struct Draft {
  OpKind kind;
  llvm::SetVector<Operation *> members;
  /// Contraction/convolution groups: the shape an epilogue op must iterate.
  SmallVector<int64_t> epilogueDomain;
  /// Convolution groups: whether the one pooling op was absorbed.
  bool hasPooling = false;
  /// Reduction groups: the full and row iteration spaces and reduced loops.
  SmallVector<int64_t> fullDomain;
  SmallVector<int64_t> rowDomain;
  SmallVector<bool> reducedLoops;
  /// First and last block positions of the members (a superset once
  /// reshapes are pruned, which keeps reachability bounds safe).
  unsigned firstPosition = ~0u;
  unsigned lastPosition = 0;
};

class Planner {
public:
  explicit Planner(Block &block) {
    for (Operation &op : block) {
      Node node;
      node.op = &op;
      node.info = classifyOp(&op);
      node.position = nodes.size();
      index[&op] = nodes.size();
      nodes.push_back(std::move(node));
    }
  }

  FusionPlan run();

private:
  Node *lookup(Operation *op) {
    auto it = index.find(op);
    return it == index.end() ? nullptr : &nodes[it->second];
  }

  /// Returns the op of this block that contains `op` (or `op` itself).
  Node *lookupInBlock(Operation *op) {
    while (op) {
      if (Node *node = lookup(op))
        return node;
      op = op->getParentOp();
    }
    return nullptr;
  }

  bool isFree(Node *node, OpKind kind) {
    return node && node->group < 0 && node->info.kind == kind;
  }

  bool createsCycle(const Draft &draft, Operation *candidate);
  bool tryAdd(Draft &draft, Operation *op);
  void pruneDanglingReshapes(Draft &draft);
  void commit(Draft &draft);

  void absorbOperandTransposes(Draft &draft, Node &anchor);
  void absorbInputPad(Draft &draft, Operation *member);
  void absorbInitBroadcast(Draft &draft, Node &anchor);
  void absorbOperandBroadcasts(Draft &draft, Operation *member);
  bool tryAddPaddedPooling(Draft &draft, Node *pad);
  void release(Draft &draft, Operation *op);
  void releaseCastsForReductions(Draft &draft, Operation *anchor);
  void growAnchor(Draft &draft);
  void growReduction(Draft &draft);
  void growElementwise(Draft &draft);

  /// Producers (in this block) of the operands of `op`, including values
  /// captured by its regions.
  SmallVector<Node *> producersOf(Operation *op);
  /// Users (in this block) of the results of `op`.
  SmallVector<Node *> usersOf(Operation *op);

  std::vector<Node> nodes;
  llvm::DenseMap<Operation *, unsigned> index;
  std::vector<Draft> groups;
};

} // namespace

SmallVector<Node *> Planner::producersOf(Operation *op) {
  SmallVector<Node *> result;
  auto addValue = [&](Value value) {
    if (Operation *def = value.getDefiningOp())
      if (Node *node = lookupInBlock(def))
        if (!llvm::is_contained(result, node))
          result.push_back(node);
  };
  for (Value operand : op->getOperands())
    addValue(operand);
  op->walk([&](Operation *inner) {
    if (inner == op)
      return;
    for (Value operand : inner->getOperands())
      if (!op->isAncestor(operand.getParentBlock()->getParentOp()))
        addValue(operand);
  });
  return result;
}

SmallVector<Node *> Planner::usersOf(Operation *op) {
  SmallVector<Node *> result;
  for (Operation *user : op->getUsers())
    if (Node *node = lookupInBlock(user))
      if (!llvm::is_contained(result, node))
        result.push_back(node);
  return result;
}

bool Planner::createsCycle(const Draft &draft, Operation *candidate) {
  // Ops are in topological order, so a path between the group and the
  // candidate through outside ops stays within the positions the group
  // spans.
  auto isMember = [&](Node *node) { return draft.members.contains(node->op); };
  SmallVector<Node *> worklist;
  llvm::DenseSet<Node *> seen;

  // A path member -> outside... -> candidate: search backwards from the
  // candidate's outside producers for a member.
  for (Node *producer : producersOf(candidate))
    if (!isMember(producer) && producer->position > draft.firstPosition &&
        seen.insert(producer).second)
      worklist.push_back(producer);
  while (!worklist.empty()) {
    Node *node = worklist.pop_back_val();
    for (Node *producer : producersOf(node->op)) {
      if (isMember(producer))
        return true;
      if (producer->position > draft.firstPosition &&
          seen.insert(producer).second)
        worklist.push_back(producer);
    }
  }

  // A path candidate -> outside... -> member: search forwards from the
  // candidate's outside users for a member.
  seen.clear();
  for (Node *user : usersOf(candidate))
    if (!isMember(user) && user->position < draft.lastPosition &&
        seen.insert(user).second)
      worklist.push_back(user);
  while (!worklist.empty()) {
    Node *node = worklist.pop_back_val();
    for (Node *user : usersOf(node->op)) {
      if (isMember(user))
        return true;
      if (user->position < draft.lastPosition && seen.insert(user).second)
        worklist.push_back(user);
    }
  }
  return false;
}

bool Planner::tryAdd(Draft &draft, Operation *op) {
  if (draft.members.contains(op) || createsCycle(draft, op))
    return false;
  draft.members.insert(op);
  Node *node = lookup(op);
  node->group = groups.size(); // Reserved; released if not committed.
  draft.firstPosition = std::min(draft.firstPosition, node->position);
  draft.lastPosition = std::max(draft.lastPosition, node->position);
  return true;
}

void Planner::pruneDanglingReshapes(Draft &draft) {
  // A reshape that feeds no member is left out: outside the group it is as
  // free as inside, and the group's output keeps the producer's shape.
  bool dropped = true;
  while (dropped) {
    dropped = false;
    for (Operation *member :
         SmallVector<Operation *>(draft.members.begin(), draft.members.end())) {
      Node *node = lookup(member);
      if (node->info.kind != OpKind::Reshape)
        continue;
      bool feedsMember = llvm::any_of(usersOf(member), [&](Node *user) {
        return draft.members.contains(user->op);
      });
      if (!feedsMember) {
        draft.members.remove(member);
        node->group = -1;
        dropped = true;
      }
    }
  }
}

void Planner::commit(Draft &draft) {
  pruneDanglingReshapes(draft);
  // Keep members in block order.
  SmallVector<Operation *> sorted(draft.members.begin(), draft.members.end());
  llvm::sort(sorted, [&](Operation *a, Operation *b) {
    return lookup(a)->position < lookup(b)->position;
  });
  draft.members = llvm::SetVector<Operation *>(sorted.begin(), sorted.end());
  groups.push_back(std::move(draft));
}

void Planner::absorbOperandTransposes(Draft &draft, Node &anchor) {
  // The one prologue a contraction takes: a transpose of an operand's two
  // innermost dimensions that nothing else uses. Every GEMM kopt emits
  // reads the operand as stored instead (a transpose flag), so inside the
  // group the transpose costs nothing; outside it would be a kernel.
  for (Node *producer : producersOf(anchor.op))
    if (producer->group < 0 && getInnermostTransposeSource(producer->op) &&
        llvm::all_of(usersOf(producer->op),
                     [&](Node *user) { return user == &anchor; }))
      tryAdd(draft, producer->op);
}

void Planner::absorbInputPad(Draft &draft, Operation *member) {
  // A constant pad of a convolution's or pooling op's input that nothing
  // else reads: cuDNN pads with zeros as it reads, and a generated kernel
  // reads the unpadded tensor with bounds checks, so inside the group the
  // pad costs nothing; outside it is a copy of the whole tensor.
  auto linalgOp = dyn_cast<linalg::LinalgOp>(member);
  if (!linalgOp || linalgOp.getNumDpsInputs() == 0)
    return;
  Operation *def = linalgOp.getDpsInputs()[0].getDefiningOp();
  Node *producer = def ? lookup(def) : nullptr;
  if (producer && producer->group < 0 && isFusiblePad(def) &&
      llvm::all_of(usersOf(def),
                   [&](Node *user) { return user->op == member; }))
    tryAdd(draft, def);
}

void Planner::absorbInitBroadcast(Draft &draft, Node &anchor) {
  // torch-mlir writes a convolution's bias as a broadcast of the bias
  // vector that the convolution accumulates into. Outside the group the
  // broadcast writes a tensor of the output's size; inside, the library
  // call starts from zeros and the epilogue adds the vector as it reads it
  // (prepareGroup, docs/Codegen.md).
  auto linalgOp = dyn_cast<linalg::LinalgOp>(anchor.op);
  if (!linalgOp || linalgOp.getNumDpsInits() != 1)
    return;
  Operation *def = linalgOp.getDpsInits()[0].getDefiningOp();
  Node *producer = def ? lookup(def) : nullptr;
  if (producer && isFree(producer, OpKind::Elementwise) && isBroadcast(def) &&
      llvm::all_of(usersOf(def), [&](Node *user) { return user == &anchor; }))
    tryAdd(draft, def);
}

void Planner::absorbOperandBroadcasts(Draft &draft, Operation *member) {
  // torch-mlir also writes a linear layer's bias as a broadcast of the
  // vector to the product's shape that an epilogue op then adds. Left
  // outside, the broadcast is a lone cheap op that no group takes: it
  // writes a tensor of the product's size that the group reads back;
  // inside, the epilogue reads the vector. Taken only when nothing else
  // reads it, so nothing is computed twice.
  for (Node *producer : producersOf(member))
    if (producer->group < 0 && isFree(producer, OpKind::Elementwise) &&
        isBroadcast(producer->op) &&
        llvm::all_of(usersOf(producer->op), [&](Node *user) {
          return draft.members.contains(user->op);
        }))
      tryAdd(draft, producer->op);
}

void Planner::release(Draft &draft, Operation *op) {
  // Positions stay as they were: a superset of the members' keeps the
  // reachability bounds safe.
  draft.members.remove(op);
  lookup(op)->group = -1;
}

void Planner::releaseCastsForReductions(Draft &draft, Operation *anchor) {
  // An epilogue's widening cast that only reductions and ops outside the
  // group read (torch's cast to f64 before a GroupNorm's statistics) would
  // be written at twice the product's size and read back; left out, it
  // joins the reduction's group, which widens the product as it reads it.
  for (Operation *member :
       SmallVector<Operation *>(draft.members.begin(), draft.members.end())) {
    if (member == anchor || !isWideningCast(member))
      continue;
    SmallVector<Node *> users = usersOf(member);
    bool readInGroup = llvm::any_of(
        users, [&](Node *user) { return draft.members.contains(user->op); });
    bool readByReduction = llvm::any_of(
        users, [](Node *user) { return user->info.kind == OpKind::Reduction; });
    if (!readInGroup && readByReduction)
      release(draft, member);
  }
}

bool Planner::tryAddPaddedPooling(Draft &draft, Node *pad) {
  // A pooling op that reads the epilogue through a pad (torch-mlir's
  // max-pool with padding): the pad and the pooling join together.
  SmallVector<Node *> users = usersOf(pad->op);
  if (!isFusiblePad(pad->op) || users.size() != 1 ||
      !isFree(users.front(), OpKind::Pooling) ||
      cast<linalg::LinalgOp>(users.front()->op).getDpsInputs()[0] !=
          pad->op->getResult(0) ||
      !tryAdd(draft, pad->op))
    return false;
  if (tryAdd(draft, users.front()->op))
    return true;
  release(draft, pad->op);
  return false;
}

void Planner::growAnchor(Draft &draft) {
  // Absorb elementwise consumers over the anchor's output shape; a
  // convolution also takes one pooling op and the elementwise ops after it.
  bool changed = true;
  while (changed) {
    changed = false;
    // Members that join in this round are visited in it too (by index:
    // the set grows meanwhile).
    for (size_t i = 0; i < draft.members.size(); ++i) {
      Operation *member = draft.members[i];
      for (Node *user : usersOf(member)) {
        if (user->group >= 0)
          continue;
        // An epilogue iterates as many points as the anchor's output; the
        // shapes may differ by a reshape or a transpose.
        if ((user->info.kind == OpKind::Elementwise &&
             countPoints(user->info.domain) ==
                 countPoints(draft.epilogueDomain)) ||
            user->info.kind == OpKind::Reshape) {
          if (tryAdd(draft, user->op)) {
            changed = true;
            absorbOperandBroadcasts(draft, user->op);
          }
        } else if (draft.kind == OpKind::Convolution && !draft.hasPooling &&
                   (user->info.kind == OpKind::Pooling ||
                    isFusiblePad(user->op))) {
          bool added = user->info.kind == OpKind::Pooling
                           ? tryAdd(draft, user->op)
                           : tryAddPaddedPooling(draft, user);
          if (added) {
            draft.hasPooling = changed = true;
            Operation *pooling = draft.members.back();
            auto type = cast<ShapedType>(pooling->getResult(0).getType());
            draft.epilogueDomain.assign(type.getShape().begin(),
                                        type.getShape().end());
          }
        }
      }
    }
  }
}

void Planner::growReduction(Draft &draft) {
  // Ops fit when they iterate the group's rows or its whole domain, unit
  // dimensions aside (keepdim reductions and their broadcasts).
  SmallVector<int64_t> full = dropUnitDims(draft.fullDomain);
  SmallVector<int64_t> rows = dropUnitDims(draft.rowDomain);
  auto fits = [&](Node *node) {
    const OpClassification &info = node->info;
    if (info.kind == OpKind::Elementwise) {
      SmallVector<int64_t> domain = dropUnitDims(info.domain);
      return domain == full || domain == rows;
    }
    if (info.kind == OpKind::Reshape) {
      auto type = cast<ShapedType>(node->op->getResult(0).getType());
      SmallVector<int64_t> shape = dropUnitDims(type.getShape());
      return shape == full || shape == rows;
    }
    if (info.kind == OpKind::Reduction || info.kind == OpKind::Softmax)
      return dropUnitDims(info.domain) == full &&
             dropUnitDims(info.rowDomain) == rows;
    return false;
  };
  bool changed = true;
  while (changed) {
    changed = false;
    // Members that join in this round are visited in it too (by index:
    // the set grows meanwhile).
    for (size_t i = 0; i < draft.members.size(); ++i) {
      Operation *member = draft.members[i];
      for (Node *user : usersOf(member))
        if (user->group < 0 && fits(user))
          changed |= tryAdd(draft, user->op);
      // Producers join when they fit too: a reduction over other rows
      // anchors its own group.
      for (Node *producer : producersOf(member))
        if (producer->group < 0 && fits(producer))
          changed |= tryAdd(draft, producer->op);
    }
  }
}

void Planner::growElementwise(Draft &draft) {
  bool changed = true;
  while (changed) {
    changed = false;
    // Members that join in this round are visited in it too (by index:
    // the set grows meanwhile).
    for (size_t i = 0; i < draft.members.size(); ++i) {
      Operation *member = draft.members[i];
      for (Node *user : usersOf(member))
        if (isFree(user, OpKind::Elementwise) || isFree(user, OpKind::Reshape))
          changed |= tryAdd(draft, user->op);
      for (Node *producer : producersOf(member))
        if (isFree(producer, OpKind::Elementwise))
          changed |= tryAdd(draft, producer->op);
    }
  }
}

FusionPlan Planner::run() {
  // Phase 1: contractions and convolutions with their epilogues.
  for (Node &node : nodes) {
    if (node.group >= 0 || (node.info.kind != OpKind::Contraction &&
                            node.info.kind != OpKind::Convolution))
      continue;
    Draft draft{node.info.kind, {}, {}, false, {}, {}, {}};
    auto type = cast<ShapedType>(node.op->getResult(0).getType());
    draft.epilogueDomain.assign(type.getShape().begin(), type.getShape().end());
    tryAdd(draft, node.op);
    if (node.info.kind == OpKind::Contraction)
      absorbOperandTransposes(draft, node);
    else
      absorbInputPad(draft, node.op);
    absorbInitBroadcast(draft, node);
    growAnchor(draft);
    releaseCastsForReductions(draft, node.op);
    commit(draft);
  }

  // Phase 2: reductions and softmax with their producers and consumers.
  for (Node &node : nodes) {
    if (node.group >= 0 || (node.info.kind != OpKind::Reduction &&
                            node.info.kind != OpKind::Softmax))
      continue;
    Draft draft{node.info.kind,
                {},
                {},
                false,
                node.info.domain,
                node.info.rowDomain,
                node.info.reducedLoops};
    tryAdd(draft, node.op);
    growReduction(draft);
    // A group of several ops around a reduction is a reduction group, even
    // when it is anchored on a linalg.softmax.
    if (draft.members.size() > 1)
      draft.kind = OpKind::Reduction;
    commit(draft);
  }

  // Phase 3: elementwise chains; pooling alone.
  for (Node &node : nodes) {
    if (node.group >= 0)
      continue;
    if (node.info.kind == OpKind::Pooling) {
      Draft draft{OpKind::Pooling, {}, {}, false, {}, {}, {}};
      tryAdd(draft, node.op);
      absorbInputPad(draft, node.op);
      commit(draft);
      continue;
    }
    if (node.info.kind != OpKind::Elementwise)
      continue;
    Draft draft{OpKind::Elementwise, {}, {}, false, {}, {}, {}};
    tryAdd(draft, node.op);
    growElementwise(draft);
    pruneDanglingReshapes(draft);
    unsigned computeOps = llvm::count_if(draft.members, [&](Operation *op) {
      return lookup(op)->info.kind != OpKind::Reshape;
    });
    if (computeOps < 2) {
      // A lone cheap op gains nothing from tuning: release the draft.
      for (Operation *member : draft.members)
        lookup(member)->group = -1;
      continue;
    }
    commit(draft);
  }

  // Renumber groups in block order of their first member.
  llvm::sort(groups, [&](const Draft &a, const Draft &b) {
    return lookup(a.members.front())->position <
           lookup(b.members.front())->position;
  });
  FusionPlan plan;
  for (Draft &draft : groups) {
    FusionGroup group;
    group.kind = draft.kind;
    group.ops.assign(draft.members.begin(), draft.members.end());
    plan.groups.push_back(std::move(group));
  }
  for (Node &node : nodes)
    if (node.info.kind == OpKind::Unsupported)
      plan.skipped.push_back({node.op, node.info.reason});
  return plan;
}

FusionPlan mlir::kopt::planFusionGroups(Block &block) {
  return Planner(block).run();
}
