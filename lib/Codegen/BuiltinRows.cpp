//===- BuiltinRows.cpp - The built-in proposer's row kernels ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "BuiltinRows.h"
#include "BuiltinPlans.h"
#include "ClusterSoftmax.h"
#include "GroupSoftmax.h"
#include "SoftmaxForm.h"
#include "SplitRowPasses.h"
#include "TiledRowVariants.h"

#include "kopt/Codegen/LibraryCalls.h"
#include "kopt/Codegen/OnePassMoments.h"
#include "kopt/Codegen/PlanBuilder.h"
#include "kopt/Codegen/SharedRowKernel.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::builtins;

/// Dynamic shared memory a block of the `smem_*` variants holds its part
/// of the row in.
constexpr int64_t kSharedRowBytes = 200 * 1024;
/// The most dynamic shared memory a block alone on an SM takes for its part
/// of a row: of the 227 KB a Hopper block may have, 3 KB left for its
/// static shared memory.
constexpr int64_t kLargestSharedRowBytes = 224 * 1024;
/// Two blocks of this much fit an SM's 228 KB with their reserved 1 KB.
constexpr int64_t kHalfSmBytes = 112 * 1024;
/// About the blocks that fill a GPU a few times over.
constexpr int64_t kFillBlocks = 1024;
/// The SMs the forms that size their grid to the device assume (the H100's
/// and H200's 132).
constexpr int64_t kAssumedSms = 132;

/// Rows too few for a block each to fill the GPU, and long enough to split.
static bool isFewLongRows(int64_t rows, int64_t length) {
  return rows < kFillBlocks && length >= 8192;
}

/// Rows longer than the widest block's registers hold: a block per row
/// reads them again in every pass.
static bool isBeyondBlockRegisters(int64_t length) {
  return length > 1024 * int64_t(getRowCacheBudget(1024));
}

/// Few long rows that a block each would serve worst: fewer than two an SM,
/// or each beyond a block's registers.
static bool isSpreadFirst(int64_t rows, int64_t length) {
  return isFewLongRows(rows, length) &&
         (rows < 2 * kAssumedSms || isBeyondBlockRegisters(length));
}

static void proposeSplitRows(Proposal &proposal, func::FuncOp group,
                             const KernelTask &task, int64_t rows,
                             int64_t length, llvm::StringRef tag);
static void proposeBatchedSplitRows(Proposal &proposal, func::FuncOp group,
                                    const KernelTask &task, int64_t rows,
                                    int64_t length, llvm::StringRef tag);
static void proposePipelinedSplitRows(Proposal &proposal, func::FuncOp group,
                                      const KernelTask &task, int64_t rows,
                                      int64_t length, llvm::StringRef tag);
static void proposeWaveSplitRows(Proposal &proposal, func::FuncOp group,
                                 const KernelTask &task, int64_t rows,
                                 int64_t length, llvm::StringRef tag);

/// Variant `name` of the family `tag` names (none when empty): the tag after
/// the name's first part, `rows_bs256` of family `w` is `rows_w_bs256`.
static std::string variantName(llvm::StringRef name, llvm::StringRef tag) {
  if (tag.empty())
    return name.str();
  auto [first, rest] = name.split('_');
  return (first + "_" + tag + (rest.empty() ? "" : "_") + rest).str();
}

/// Declares the plan temporaries that hold split rows' partial results.
static void declarePartials(PlanBuilder &builder,
                            llvm::ArrayRef<PartialBuffer> partials) {
  for (const PartialBuffer &partial : partials)
    builder.declareTemporary(
        {partial.param, partial.elementType, partial.shape});
}

/// Several rows per block (TiledRowKernel.h): short rows, and reductions
/// over non-innermost dimensions.
static void proposeTiledRows(Proposal &proposal, func::FuncOp group,
                             const KernelTask &task, const RowSpace &space,
                             llvm::StringRef tag) {
  std::string comment = describeGroup(group);
  for (const TiledRowVariant &variant : getTiledRowVariants(space)) {
    PlanBuilder builder(task, group, "builtin", variantName(variant.name, tag));
    std::vector<KernelOutput> outputs = returnedOutputs(builder, group);
    std::vector<PartialBuffer> partials;
    llvm::Expected<std::vector<GeneratedKernel>> kernels =
        std::vector<GeneratedKernel>();
    if (variant.split > 1) {
      kernels = generateSplitTiledRowKernels(
          group.getContext(), builder.entryName("split"), comment, outputs,
          builder.leafFn(), space, variant.options.layout, variant.split,
          [](unsigned k) { return "rowpart" + std::to_string(k); }, partials);
    } else if (auto kernel = generateTiledRowKernel(
                   group.getContext(), builder.entryName("rows"), comment,
                   outputs, builder.leafFn(), space, variant.options)) {
      kernels->push_back(std::move(*kernel));
    } else {
      kernels = kernel.takeError();
    }
    if (!kernels) {
      addPlan(proposal, builder, task, group, kernels.takeError());
      return;
    }
    declarePartials(builder, partials);
    for (const GeneratedKernel &kernel : *kernels)
      builder.addKernel(kernel, comment);
    addPlan(proposal, builder, task, group, llvm::Error::success());
  }
}

/// Rows too long for one block's registers: the row kept in shared memory,
/// a block per row or split over a thread-block cluster (SharedRowKernel.h),
/// so that it is read from DRAM once. Variants `smem_c<C>_bs<B>`: the
/// smallest cluster whose blocks hold the row, and twice as many blocks;
/// where a portable cluster's blocks would hold more than half an SM's
/// shared memory each, also clusters of 16 (non-portable), whose halves
/// of that let two blocks share an SM, one loading while the other
/// computes and stores. Each also as `_async`: the row copied with
/// `cp.async` (every copy in flight at once) and stored 16 bytes a time.
static void proposeSharedRows(Proposal &proposal, func::FuncOp group,
                              const KernelTask &task, int64_t rows,
                              int64_t length, llvm::StringRef tag) {
  constexpr int64_t kBytes = kSharedRowBytes;
  if (!isBeyondBlockRegisters(length))
    return;
  std::vector<unsigned> clusters;
  for (unsigned blocks : {1u, 2u, 4u, 8u})
    if (getSharedRowRange(length, blocks) * 4 <= kBytes && clusters.size() < 2)
      clusters.push_back(blocks);
  if (getSharedRowRange(length, 8) * 4 > kHalfSmBytes &&
      getSharedRowRange(length, 16) * 4 <= kBytes)
    clusters.push_back(16);
  std::string comment = describeGroup(group);
  for (bool async : {false, true})
    for (unsigned blocks : clusters)
      for (unsigned threads : {512u, 1024u}) {
        // Copies need no threads to hold them in flight: the widest block
        // only, but for the clusters of 16 whose blocks share SMs.
        if (async && threads < 1024 && blocks <= 8)
          continue;
        PlanBuilder builder(task, group, "builtin",
                            variantName("smem_c" + std::to_string(blocks) +
                                            "_bs" + std::to_string(threads) +
                                            (async ? "_async" : ""),
                                        tag));
        std::vector<KernelOutput> outputs = returnedOutputs(builder, group);
        SharedRowOptions options;
        options.blockSize = threads;
        options.clusterSize = blocks;
        options.sharedBytes = kBytes;
        options.asyncCopies = async;
        options.vectorStores = async;
        if (blocks > 8 && getSharedRowRange(length, blocks) * 4 <= kHalfSmBytes)
          options.minBlocksPerSM = 2;
        auto kernel = generateSharedRowKernel(
            group.getContext(), builder.entryName("rows"), comment, outputs,
            builder.leafFn(), rows, length, options);
        if (!kernel) {
          addPlan(proposal, builder, task, group, kernel.takeError());
          return;
        }
        builder.addKernel(*kernel, comment);
        addPlan(proposal, builder, task, group, llvm::Error::success());
      }
}

/// How a group kernel's blocks hold their ranges (SharedRowOptions): in
/// one buffer, two, one and the registers, or in one buffer of half an
/// SM's shared memory, two blocks of different groups sharing each SM.
enum class GroupBuffers { One, Two, Registers, Half };

/// The buffer of a `_h` group kernel's block, two an SM: half an SM's
/// shared memory less room for the static shared memory of reductions
/// (each 32 values a block), so that the device does hold two.
constexpr int64_t kHalfSmGroupBytes = 104 * 1024;

/// Threads and 16-byte register groups of each of a `_rg` group kernel's
/// threads: 128 KB of a block's range, half the registers of a thread
/// (127 KB a block for a LayerNorm over 4M elements on 132 SMs).
constexpr unsigned kRegisterRowThreads = 512;
constexpr unsigned kRegisterRowVectors = 16;

/// Rows too long for a block's shared memory, each split over a group of
/// blocks that keep it in shared memory, the grid being what the device
/// holds at once (SharedRowKernel.h, generateGroupRowKernels): the row is
/// read from DRAM once however long it is, where a cluster's shared memory
/// holds at most 16 blocks' share. Variants `group<G>_bs1024`: the three
/// largest numbers of groups whose blocks hold their ranges on a device of
/// kAssumedSms SMs (a LayerNorm over 4M elements: one group of all the
/// SMs), at most one group a row; `group<G>_db_bs1024` the same with two
/// buffers, the next row's range copied into one while the block works on
/// the other (SharedRowOptions::doubleBuffer), where half the shared memory
/// holds a block's range; `group<G>_rg_bs512` with one buffer copied into
/// registers before the next row's range lands in it
/// (SharedRowOptions::registerVectors), where half the shared memory does
/// not hold a block's range and the registers do; `group<G>_h_bs512`,
/// blocks of 512 threads and half an SM's shared memory, two an SM, so
/// that each SM holds blocks of two groups and one group's reads go on
/// while the other's blocks wait at their barrier (the device holding
/// twice kAssumedSms blocks; a GroupNorm over rows of 2M: 3 groups of 88
/// blocks of 95 KB).
static void proposeGroupRows(Proposal &proposal, func::FuncOp group,
                             const KernelTask &task, int64_t rows,
                             int64_t length, llvm::StringRef tag,
                             GroupBuffers buffers) {
  if (length * 4 <= kSharedRowBytes || length % 4 != 0)
    return;
  std::vector<unsigned> counts;
  const bool half = buffers == GroupBuffers::Half;
  for (unsigned groups : {16u, 12u, 11u, 8u, 6u, 4u, 3u, 2u, 1u}) {
    int64_t blocks = (half ? 2 : 1) * kAssumedSms / groups;
    int64_t bytes = ((length + blocks - 1) / blocks + 3) / 4 * 4 * 4;
    bool fits = bytes <= kSharedRowBytes;
    if (buffers == GroupBuffers::Two)
      fits = bytes <= kSharedRowBytes / 2;
    if (half)
      fits = bytes <= kHalfSmGroupBytes;
    if (buffers == GroupBuffers::Registers)
      fits = fits && bytes > kSharedRowBytes / 2 &&
             bytes <= int64_t(kRegisterRowThreads) * kRegisterRowVectors * 16;
    if (groups <= rows && fits && counts.size() < (half ? 2u : 3u))
      counts.push_back(groups);
  }
  std::string comment = describeGroup(group);
  for (unsigned groups : counts) {
    bool registers = buffers == GroupBuffers::Registers;
    const char *form = buffers == GroupBuffers::Two ? "_db"
                       : registers                  ? "_rg"
                       : half                       ? "_h"
                                                    : "";
    unsigned threads = registers ? kRegisterRowThreads : half ? 512 : 1024;
    PlanBuilder builder(task, group, "builtin",
                        variantName("group" + std::to_string(groups) + form +
                                        "_bs" + std::to_string(threads),
                                    tag));
    std::vector<KernelOutput> outputs = returnedOutputs(builder, group);
    SharedRowOptions options;
    options.blockSize = threads;
    options.sharedBytes = half ? kHalfSmGroupBytes : kSharedRowBytes;
    options.minBlocksPerSM = half ? 2 : 0;
    options.asyncCopies = true;
    options.vectorStores = true;
    options.gridGroups = groups;
    options.doubleBuffer = buffers == GroupBuffers::Two;
    options.registerVectors = registers ? kRegisterRowVectors : 0;
    auto kernels = generateGroupRowKernels(
        group.getContext(), builder.entryName("group"), comment, outputs,
        builder.leafFn(), rows, length, options);
    if (!kernels) {
      addPlan(proposal, builder, task, group, kernels.takeError());
      return;
    }
    builder.declareTemporary({kernels->slots.param, kernels->slots.elementType,
                              kernels->slots.shape});
    for (const GeneratedKernel &kernel : kernels->kernels)
      builder.addKernel(kernel, comment);
    addPlan(proposal, builder, task, group, llvm::Error::success());
  }
}

/// A group that is one softmax over long contiguous f32 rows as a cluster
/// per row, the row read once and its statistics folded while it lands
/// (ClusterSoftmax.h). Variants `softmax_c<C>[_r<R>]_bs<B>`: the smallest
/// cluster whose blocks hold the row and twice as many blocks, and clusters
/// of 16 (non-portable) where their halves of the row let two blocks share
/// an SM; each also taking 4 consecutive rows in turn where there are rows
/// enough (on the H200, 2 rows a cluster were never faster than 1 or 4) or
/// keeping the exponentials (`softmax_c<C>_ex_bs512`); and resident
/// clusters claiming rows (`softmax_c<C>_claim[_ex]_bs512`).
void builtins::proposeClusterSoftmax(Proposal &proposal, func::FuncOp group,
                                     const KernelTask &task) {
  SmallVector<Operation *> ops;
  for (Operation &op : group.getBody().front().without_terminator())
    if (!isInlinedOp(&op))
      ops.push_back(&op);
  if (ops.empty() || !ops.front()->hasAttr(kSoftmaxPartAttrName))
    return;
  std::optional<SoftmaxParts> softmax = findSoftmaxParts(ops.front(), ops);
  SmallVector<Value> returned = returnedValues(group);
  if (!softmax || softmax->ops.size() != ops.size() ||
      !softmax->contiguousInput || returned.size() != 1 ||
      returned.front() != softmax->result ||
      !isBeyondBlockRegisters(softmax->length))
    return;
  int64_t length = softmax->length;
  if (length % 4 != 0)
    return;
  // Equal shares of 16-byte vectors, the last block taking what the others
  // leave (StagedShare.h, which starts them on lines where that fits).
  auto shareBytes = [&](unsigned blocks) {
    return (length / 4 + blocks - 1) / blocks * 16;
  };
  std::vector<unsigned> clusters;
  for (unsigned blocks : {1u, 2u, 4u, 8u})
    if (shareBytes(blocks) <= kSharedRowBytes && clusters.size() < 2)
      clusters.push_back(blocks);
  if (shareBytes(16) <= kHalfSmBytes && shareBytes(8) > kHalfSmBytes)
    clusters.push_back(16);
  // Rows a cluster takes in turn, the block sizes each is tried with, and
  // whether the exponentials are kept (`_ex`, ClusterSoftmaxOptions).
  struct Form {
    int64_t perCluster;
    unsigned threads;
    bool keep;
  };
  std::vector<Form> forms = {
      {1, 512, false}, {1, 1024, false}, {4, 512, false}, {1, 512, true}};
  std::string comment = describeGroup(group);
  for (unsigned blocks : clusters)
    for (auto [perCluster, threads, keep] : forms) {
      if (softmax->rows % perCluster != 0 ||
          (perCluster > 1 && softmax->rows < 8 * perCluster))
        continue;
      PlanBuilder builder(
          task, group, "builtin",
          "softmax_c" + std::to_string(blocks) +
              (perCluster > 1 ? "_r" + std::to_string(perCluster) : "") +
              (keep ? "_ex" : "") + "_bs" + std::to_string(threads));
      ClusterSoftmaxOptions options;
      options.clusterSize = blocks;
      options.blockSize = threads;
      options.rowsPerCluster = perCluster;
      options.keepExponentials = keep;
      if (shareBytes(blocks) <= kHalfSmBytes && threads <= 512)
        options.minBlocksPerSM = 2;
      // The rows are read straight from a plan tensor: an input computed
      // in the group (inlined into its readers) has none.
      std::string input = builder.findBuffer(softmax->contiguousInput);
      if (input.empty())
        return;
      KernelOutput output = builder.outputFor(softmax->result);
      // Two blocks an SM keep to half its shared memory.
      auto kernel = generateClusterSoftmaxKernel(
          builder.entryName("softmax"), comment, input, output.param,
          softmax->rows, length, options,
          options.minBlocksPerSM == 2 ? kHalfSmBytes : kSharedRowBytes);
      if (!kernel) {
        addPlan(proposal, builder, task, group, kernel.takeError());
        continue;
      }
      builder.addKernel(*kernel, comment);
      addPlan(proposal, builder, task, group, llvm::Error::success());
    }
  // Resident clusters claiming rows (`softmax_c<C>_claim[_ex]_bs512`): the
  // grid cut at launch to the clusters the device holds, for the smallest
  // cluster whose blocks hold the row, where there are rows enough for
  // every cluster to take several. On the H200 (512 rows of 393,216) the
  // first took 458 us against softmax_c8_bs512's 466 (one run, 2026-12-05,
  // then named `_claim_np`).
  if (clusters.empty() || clusters.front() < 2 || softmax->rows < 64)
    return;
  // Each with the exponentials taken twice (as the row lands and as it is
  // written) and once, kept in shared memory (`_ex`); the two next smaller
  // clusters whose shares fit a block's largest shared memory, with them
  // kept only. Clusters of a GPC's SMs: the H200 holds 15 of 8
  // (120 of its 132 SMs), so 512 rows take 35 turns of which the last
  // keeps 2 clusters busy; another size may hold more SMs or divide the
  // rows better (the last block of a cluster of 7 takes a shorter share).
  // For rows of 393,216 none does on the H200: it holds 15 clusters of 7
  // too, and they took 541 us against 451
  // (bench/results/2026-12-06-h200-long-row-forms.md).
  struct Claim {
    unsigned blocks;
    bool keep;
  };
  std::vector<Claim> claims;
  // At most the two next smaller: where 16 is the smallest equal cluster,
  // every size from 9 to 15 might fit.
  for (unsigned blocks = clusters.front() - 1; blocks >= 2 && claims.size() < 2;
       --blocks)
    if (shareBytes(blocks) <= kLargestSharedRowBytes)
      claims.insert(claims.begin(), {blocks, true});
  claims.push_back({clusters.front(), false});
  claims.push_back({clusters.front(), true});
  // A claiming plan (a counter reset, then the rows) of `generate`'s
  // kernels; false where the rows have no plan tensor to be read from (an
  // input computed in the group, inlined into its readers).
  using ClaimingGenerator = decltype(&generateClaimingSoftmaxKernels);
  auto addClaimingPlan = [&](const std::string &variant, unsigned blocks,
                             bool keep, ClaimingGenerator generate) {
    PlanBuilder builder(task, group, "builtin", variant);
    ClusterSoftmaxOptions options;
    options.clusterSize = blocks;
    options.blockSize = 512;
    options.keepExponentials = keep;
    std::string input = builder.findBuffer(softmax->contiguousInput);
    if (input.empty())
      return false;
    KernelOutput output = builder.outputFor(softmax->result);
    auto kernels =
        generate(builder.entryName("softmax"), comment, input, output.param,
                 softmax->rows, length, options, kLargestSharedRowBytes);
    if (!kernels) {
      addPlan(proposal, builder, task, group, kernels.takeError());
      return true;
    }
    builder.declareTemporary({kernels->counter.param,
                              kernels->counter.elementType,
                              kernels->counter.shape});
    for (const GeneratedKernel &kernel : kernels->kernels)
      builder.addKernel(kernel, comment);
    addPlan(proposal, builder, task, group, llvm::Error::success());
    return true;
  };
  for (auto [blocks, keep] : claims)
    if (!addClaimingPlan("softmax_c" + std::to_string(blocks) + "_claim" +
                             (keep ? "_ex" : "") + "_bs512",
                         blocks, keep, generateClaimingSoftmaxKernels))
      return;
  // Groups of blocks claiming rows without clusters
  // (`softmax_g<B>_claim_ex_bs512`), their pairs exchanged through global
  // memory: of the smallest size whose blocks hold the row, of the
  // clusters' size, and of the smallest size from there that divides
  // kAssumedSms, so that every SM takes a part (the clusters of 8 leave 12
  // of the H200's 132 idle, and 512 rows take them 35 turns, the last with
  // 2 clusters busy).
  // The clusters' size holds the row, so the smallest size does too.
  unsigned smallest = 2;
  while (shareBytes(smallest) > kLargestSharedRowBytes)
    ++smallest;
  std::vector<unsigned> sizes = {smallest};
  if (clusters.front() > smallest)
    sizes.push_back(clusters.front());
  for (unsigned blocks = smallest; blocks <= 32; ++blocks)
    if (kAssumedSms % blocks == 0) {
      if (!llvm::is_contained(sizes, blocks))
        sizes.push_back(blocks);
      break;
    }
  for (unsigned blocks : sizes)
    addClaimingPlan("softmax_g" + std::to_string(blocks) + "_claim_ex_bs512",
                    blocks, true, generateGroupClaimingSoftmaxKernels);
}

/// A block per row, of each size up to twice the row, each reading the row
/// from memory in every pass (L1/L2 serve the later ones) or once into
/// registers when a thread's share fits the register budget (`_reg`).
static void proposeBlockRows(Proposal &proposal, func::FuncOp group,
                             const KernelTask &task, int64_t rows,
                             int64_t length, llvm::StringRef tag) {
  std::string comment = describeGroup(group);
  std::vector<std::pair<unsigned, bool>> variants;
  for (unsigned threads : {64u, 128u, 256u, 512u, 1024u}) {
    // More threads than twice the row leaves most of them idle.
    if (threads > 64 && threads > 2 * length)
      continue;
    variants.push_back({threads, false});
    if ((length + threads - 1) / threads <= getRowCacheBudget(threads))
      variants.push_back({threads, true});
  }
  for (auto [threads, cached] : variants) {
    PlanBuilder builder(task, group, "builtin",
                        variantName("rows_bs" + std::to_string(threads) +
                                        (cached ? "_reg" : ""),
                                    tag));
    std::vector<KernelOutput> outputs = returnedOutputs(builder, group);
    auto kernel =
        generateRowKernel(group.getContext(), builder.entryName("rows"),
                          comment, outputs, builder.leafFn(), rows, length,
                          threads, cached ? getRowCacheBudget(threads) : 0);
    if (!kernel) {
      addPlan(proposal, builder, task, group, kernel.takeError());
      return;
    }
    builder.addKernel(*kernel, comment);
    addPlan(proposal, builder, task, group, llvm::Error::success());
  }
}

/// Appends the families' plans in turn, the first of each, then the second
/// of each, and so on, and their remarks.
static void appendInTurn(Proposal &proposal,
                         llvm::MutableArrayRef<Proposal> families) {
  for (size_t i = 0;; ++i) {
    bool any = false;
    for (Proposal &family : families)
      if (i < family.plans.size()) {
        proposal.plans.push_back(std::move(family.plans[i]));
        any = true;
      }
    if (!any)
      break;
  }
  for (Proposal &family : families)
    llvm::append_range(proposal.remarks, family.remarks);
}

void builtins::proposeRows(Proposal &proposal, func::FuncOp group,
                           const KernelTask &task, linalg::GenericOp anchor,
                           llvm::StringRef tag) {
  // Over a non-innermost dimension, a block per row would read each row
  // with a stride: only column layouts.
  std::optional<RowSpace> space = getRowSpace(anchor);
  if (space && space->inner > 1) {
    proposeTiledRows(proposal, group, task, *space, tag);
    return;
  }
  int64_t rows = 1, length = 1;
  for (auto [range, iterator] :
       llvm::zip(anchor.getStaticLoopRanges(), anchor.getIteratorTypesArray()))
    (iterator == utils::IteratorType::reduction ? length : rows) *= range;
  if (!isSpreadFirst(rows, length)) {
    proposeBlockRows(proposal, group, task, rows, length, tag);
    if (space)
      proposeTiledRows(proposal, group, task, *space, tag);
    proposeSharedRows(proposal, group, task, rows, length, tag);
    proposeGroupRows(proposal, group, task, rows, length, tag,
                     GroupBuffers::Two);
    proposeGroupRows(proposal, group, task, rows, length, tag,
                     GroupBuffers::Registers);
    proposeGroupRows(proposal, group, task, rows, length, tag,
                     GroupBuffers::One);
    proposeGroupRows(proposal, group, task, rows, length, tag,
                     GroupBuffers::Half);
    proposePipelinedSplitRows(proposal, group, task, rows, length, tag);
    proposeWaveSplitRows(proposal, group, task, rows, length, tag);
    proposeSplitRows(proposal, group, task, rows, length, tag);
    return;
  }
  // Few long rows: a block per row leaves most of the GPU idle or reads the
  // row again in every pass, so the forms that spread a row over blocks
  // come first, in turn, because a round's candidates are capped
  // (--max-candidates): on the H200 a GroupNorm over 64 rows of 2M lost its
  // best plan (split16_w_bs256, 408 us) behind sixteen others and tuned to
  // group3_w_bs1024 (472 us).
  Proposal families[7];
  proposeSharedRows(families[0], group, task, rows, length, tag);
  proposePipelinedSplitRows(families[1], group, task, rows, length, tag);
  proposeSplitRows(families[2], group, task, rows, length, tag);
  proposeWaveSplitRows(families[3], group, task, rows, length, tag);
  proposeGroupRows(families[4], group, task, rows, length, tag,
                   GroupBuffers::Two);
  proposeGroupRows(families[4], group, task, rows, length, tag,
                   GroupBuffers::Registers);
  proposeGroupRows(families[5], group, task, rows, length, tag,
                   GroupBuffers::One);
  proposeGroupRows(families[6], group, task, rows, length, tag,
                   GroupBuffers::Half);
  appendInTurn(proposal, families);
  proposeBlockRows(proposal, group, task, rows, length, tag);
  if (space)
    proposeTiledRows(proposal, group, task, *space, tag);
}

/// Split rows whose inputs do not fit the L2 cache (50 MB on the H100 and
/// H200) a batch of rows at a time: each kernel of the split form is
/// launched once per batch, so that the later kernels of a batch read its
/// rows from L2 and the rows go through DRAM once for reading, once for
/// writing. Variants `split<S>_b<R>_bs<B>`: R rows a batch, the most whose
/// f32 rows fill at most 32 MB, and half as many.
static void proposeBatchedSplitRows(Proposal &proposal, func::FuncOp group,
                                    const KernelTask &task, int64_t rows,
                                    int64_t length, llvm::StringRef tag) {
  constexpr int64_t kBatchBytes = 32 << 20;
  int64_t rowBytes = length * 4;
  int64_t most = std::min(rows - 1, kBatchBytes / rowBytes);
  // Rows a cluster's shared memory holds are read once already (smem_*).
  if (rows * rowBytes <= 2 * kBatchBytes || most < 1 ||
      getSharedRowRange(length, 16) * 4 <= kSharedRowBytes)
    return;
  std::vector<int64_t> batches = {most};
  if (most / 2 >= 1)
    batches.push_back(most / 2);
  std::string comment = describeGroup(group);
  for (int64_t batch : batches) {
    // A launch's blocks fill the GPU with the batch alone.
    int64_t chunks = std::clamp<int64_t>(kFillBlocks / batch, 2, 1024);
    for (unsigned threads : {256u, 512u}) {
      if (batch != most && threads != 512)
        continue;
      PlanBuilder builder(task, group, "builtin",
                          variantName("split" + std::to_string(chunks) + "_b" +
                                          std::to_string(batch) + "_bs" +
                                          std::to_string(threads),
                                      tag));
      std::vector<KernelOutput> outputs = returnedOutputs(builder, group);
      std::vector<PartialBuffer> partials;
      SplitRowBatching batching;
      batching.rows = batch;
      auto kernels = generateSplitRowKernels(
          group.getContext(), builder.entryName("split"), comment, outputs,
          builder.leafFn(), rows, length, threads, chunks,
          [](unsigned k) { return "rowpart" + std::to_string(k); }, partials,
          batching);
      if (!kernels) {
        addPlan(proposal, builder, task, group, kernels.takeError());
        return;
      }
      declarePartials(builder, partials);
      for (int64_t first = 0; first < rows; first += batch)
        for (GeneratedKernel kernel : *kernels) {
          kernel.args.back() = "i64:" + std::to_string(first);
          kernel.grid[0] =
              std::to_string(std::min(batch, rows - first) * chunks);
          std::string what =
              comment + " (rows " + std::to_string(first) + " to " +
              std::to_string(std::min(first + batch, rows) - 1) + ")";
          if (first == 0)
            builder.addKernel(kernel, what);
          else
            builder.addLaunch(kernel, what);
        }
      addPlan(proposal, builder, task, group, llvm::Error::success());
    }
  }
}

/// Few long rows: each row split over several blocks, so that the GPU
/// fills (a layernorm of 16 rows of 4M elements gets about 1024 blocks, not
/// 16). One kernel per row-wide reduction plus one for the outputs.
static void proposeSplitRows(Proposal &proposal, func::FuncOp group,
                             const KernelTask &task, int64_t rows,
                             int64_t length, llvm::StringRef tag) {
  if (!isFewLongRows(rows, length))
    return;
  int64_t chunks = std::clamp<int64_t>((kFillBlocks + rows - 1) / rows, 2, 64);
  std::string comment = describeGroup(group);
  for (unsigned threads : {256u, 512u}) {
    PlanBuilder builder(task, group, "builtin",
                        variantName("split" + std::to_string(chunks) + "_bs" +
                                        std::to_string(threads),
                                    tag));
    std::vector<KernelOutput> outputs = returnedOutputs(builder, group);
    std::vector<PartialBuffer> partials;
    auto kernels = generateSplitRowKernels(
        group.getContext(), builder.entryName("split"), comment, outputs,
        builder.leafFn(), rows, length, threads, chunks,
        [](unsigned k) { return "rowpart" + std::to_string(k); }, partials);
    if (!kernels) {
      addPlan(proposal, builder, task, group, kernels.takeError());
      return;
    }
    declarePartials(builder, partials);
    for (const GeneratedKernel &kernel : *kernels)
      builder.addKernel(kernel, comment);
    addPlan(proposal, builder, task, group, llvm::Error::success());
  }
  proposeBatchedSplitRows(proposal, group, task, rows, length, tag);
}

/// Few long rows split as in proposeSplitRows, every pass in one kernel
/// whose blocks take a pass of a chunk of a row in ticket order, a row's
/// later passes some steps behind its first
/// (generatePipelinedSplitRowKernels): they read the row from L2, so that
/// DRAM reads it once, where the split kernels read it from DRAM in every
/// pass, where the rows do not fit half of L2 (25 MB of the H200's 50).
/// Chunks of 16K elements (64 KB of f32); variants
/// `pipe<S>_l<L>_bs512`: a lag of one step, and a lag of as many steps as
/// the blocks an H200 holds at once (four of 512 threads an SM) take, so
/// that a row's pass is mostly done before its next starts, where the rows
/// between fit half of L2.
static void proposePipelinedSplitRows(Proposal &proposal, func::FuncOp group,
                                      const KernelTask &task, int64_t rows,
                                      int64_t length, llvm::StringRef tag) {
  constexpr unsigned kThreads = 512;
  constexpr int64_t kChunkElements = 16384;
  constexpr int64_t kResidentBlocks = 4 * kAssumedSms;
  constexpr int64_t kHalfL2Bytes = 25 << 20;
  // Rows that fit half of L2 are read from it by the split kernels' later
  // passes already.
  if (!isFewLongRows(rows, length) || rows * length * 4 <= kHalfL2Bytes)
    return;
  int64_t chunks = std::clamp<int64_t>(
      (length + kChunkElements - 1) / kChunkElements, 2, 1024);
  auto partialName = [](unsigned k) { return "rowpart" + std::to_string(k); };
  // The passes (a level of reductions each, then the outputs), from a plan
  // of the split not kept.
  int64_t passes = 0;
  {
    PlanBuilder probe(task, group, "builtin", "pipe");
    std::vector<KernelOutput> outputs;
    for (Value value : returnedValues(group))
      outputs.push_back(probe.outputFor(value));
    auto plan = planSplitRows(group.getContext(), outputs, probe.leafFn(), rows,
                              length, kThreads, chunks, partialName);
    if (!plan) {
      llvm::consumeError(plan.takeError());
      return;
    }
    passes = plan->levels.size() + 1;
  }
  std::vector<int64_t> lags = {1};
  // Past the rows, a lag only adds empty tickets.
  int64_t lag = std::min(rows, (kResidentBlocks + passes * chunks - 1) /
                                   (passes * chunks));
  if (lag > 1 && lag * (passes - 1) * length * 4 <= kHalfL2Bytes)
    lags.push_back(lag);
  std::string comment = describeGroup(group);
  for (int64_t lag : lags) {
    PlanBuilder builder(task, group, "builtin",
                        variantName("pipe" + std::to_string(chunks) + "_l" +
                                        std::to_string(lag) + "_bs" +
                                        std::to_string(kThreads),
                                    tag));
    std::vector<KernelOutput> outputs = returnedOutputs(builder, group);
    std::vector<PartialBuffer> partials;
    auto kernels = generatePipelinedSplitRowKernels(
        group.getContext(), builder.entryName("pipe"), comment, outputs,
        builder.leafFn(), rows, length, kThreads, chunks, lag, partialName,
        partials);
    if (!kernels) {
      addPlan(proposal, builder, task, group, kernels.takeError());
      return;
    }
    declarePartials(builder, partials);
    declarePartials(builder, {kernels->counters});
    for (const GeneratedKernel &kernel : kernels->kernels)
      builder.addKernel(kernel, comment);
    addPlan(proposal, builder, task, group, llvm::Error::success());
  }
}

/// The reduction a row kernel's layout follows: the group's first that
/// threads can split and no library call takes.
linalg::GenericOp builtins::findRowAnchor(func::FuncOp group) {
  for (auto generic : group.getBody().front().getOps<linalg::GenericOp>())
    if (!isLibraryCandidate(generic) && generic.getNumReductionLoops() > 0 &&
        hasAssociativeCombiner(generic))
      return generic;
  return nullptr;
}

/// The one-pass twins of a row group's plans (OnePassMoments.h): where the
/// group sums squared deviations from its rows' means, the same variants of
/// the group rewritten to get them in the mean's pass, named with `_w`
/// (`split16_w_bs512`). Each twin comes right before its plan, so that a
/// round's cap (--max-candidates) keeps both or the twin, which reads the
/// rows once less; a twin without a plan of its own (the wave forms, for
/// one-pass reductions only) keeps its place among the twins, so that it
/// is not left behind every plan and past the cap.
void builtins::proposeOnePassTwins(Proposal &proposal, func::FuncOp group,
                                   const KernelTask &task) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(group.getLoc());
  auto twin = cast<func::FuncOp>(group->clone());
  module->push_back(twin);
  linalg::GenericOp anchor;
  if (rewriteOnePassMoments(twin) == 0 || !(anchor = findRowAnchor(twin)))
    return;
  Proposal twins;
  proposeRows(twins, twin, task, anchor, "w");
  // Both orders kept: before each plan, the twins up to its own.
  std::vector<KernelPlan> plans;
  size_t next = 0;
  for (KernelPlan &plan : proposal.plans) {
    std::string name = variantName(plan.variant, "w");
    auto own = llvm::find_if(
        llvm::drop_begin(twins.plans, next),
        [&](const KernelPlan &twinPlan) { return twinPlan.variant == name; });
    if (own != twins.plans.end()) {
      size_t end = own - twins.plans.begin() + 1;
      for (; next < end; ++next)
        plans.push_back(std::move(twins.plans[next]));
    }
    plans.push_back(std::move(plan));
  }
  for (; next < twins.plans.size(); ++next)
    plans.push_back(std::move(twins.plans[next]));
  proposal.plans = std::move(plans);
  llvm::append_range(proposal.remarks, twins.remarks);
}

/// Few long rows whose reductions take one pass (a GroupNorm's or
/// LayerNorm's moments) read once from DRAM and written once, by a
/// persistent block an SM whose reader warps stream its chunk of row after
/// row while its writer warps write the chunk of a row whose partials
/// every block has counted, reading it again from L2
/// (generateWaveSplitRowKernels). Variants `wave_a<A>[_r<R>][_held]_bs<B>`: the
/// readers leading by A rows, where A + 1 rows and the operands every row
/// reads again fit kWaveL2Bytes (not a LayerNorm over rows of 4M with its
/// 32 MB of weights), R readers (512 unless named) and B - R writers,
/// `_held` keeping each row's chunk in shared memory between them, and
/// `wave_claim_s<S>_r<R>_bs<B>`, chunks of 32 KB claimed by any block into
/// one of its S slots (WaveSplitRowOptions::claimSlots). On
/// an H100 a GroupNorm over 64 rows of 2M took 437 us as
/// wave_a1_r256_bs768, the two-pass split 546-556 and the best group form
/// 475-481; the probe this form came from (bench/long_rows/waves.cu), 415
/// (bench/results/2026-12-06-h100-wave-batches.md). On an H200 the same
/// plan took 367 us and group2_w_rg_bs512 427
/// (bench/results/2026-12-06-h200-waves.md).
static void proposeWaveSplitRows(Proposal &proposal, func::FuncOp group,
                                 const KernelTask &task, int64_t rows,
                                 int64_t length, llvm::StringRef tag) {
  // The rows the readers lead by stay in L2 (50 MB on the H100, 60 on the
  // H200) beside the outputs on their way out: on the H100 a lead of 3
  // rows of 8 MB read nearly every row again from DRAM, and a LayerNorm
  // over rows of 16 MB with 32 MB of weights read 1.07 GB from DRAM for
  // its 0.3 GB of input and weights.
  constexpr int64_t kWaveL2Bytes = 32 << 20;
  constexpr int64_t kLeastChunk = 4096;
  if (!isFewLongRows(rows, length) || rows < 2 ||
      (length + kAssumedSms - 1) / kAssumedSms < kLeastChunk)
    return;
  struct Form {
    int64_t ahead;
    unsigned readers, writers;
    bool hold = false;
    int64_t claimSlots = 0;
  };
  // Claiming, chunks of 32 KB: six fit a block's shared memory, and the
  // grid's slots hold several rows' chunks. In the probe on an H100, 16 KB
  // chunks in 12 slots took 518 us and 64 KB in 2 took 505, against 428
  // for 32 KB in 6; the generated form took 493 against wave_a1_r256's 435
  // (bench/results/2026-12-06-h100-claim-rows.md). It is offered for the
  // H200, where the fixed-range probe stopped at 73% of the copy.
  constexpr int64_t kClaimChunk = 8192;
  std::string comment = describeGroup(group);
  // Measured on an H100 (GroupNorm over 64 rows of 2M): 8 reader warps
  // and 16 writer warps 437 us, 16 and 16 451, 20 and 12 451, 8 and 24
  // 455; writers loading 8 vectors a batch instead of 4, 447; a lead of 2
  // rows, 451-455 (bench/results/2026-12-06-h100-wave-batches.md). Held
  // in shared memory, 16 and 16 leading by 2 rows, the readers loading 4
  // vectors a batch: 435 us, and at the profiler's base clocks 438
  // against 467 (the readers loading 8, 441; 8 reader warps, 491 and 527;
  // writers loading 8, 591 with 64 registers a thread;
  // bench/results/2026-12-06-h100-held-waves.md).
  for (auto [ahead, readers, writers, hold, claimSlots] :
       {Form{1, 256, 512}, Form{2, 512, 512, true}, Form{1, 512, 512},
        Form{2, 256, 512}, Form{1, 256, 512, true, 6}}) {
    WaveSplitRowOptions options;
    options.ahead = ahead;
    options.readers = readers;
    options.writers = writers;
    options.chunks = kAssumedSms;
    options.l2Budget = kWaveL2Bytes;
    if (hold) {
      options.holdBudget = kLargestSharedRowBytes;
      options.readUnroll = 16;
    }
    std::string form = "wave_a" + std::to_string(ahead);
    if (claimSlots > 0) {
      // A batch of 8 vectors a reader (32 KB of loads in flight a block,
      // as wave_a1_r256's), where the held form's 1024 threads afford 4.
      options.readUnroll = 32;
      options.claimSlots = claimSlots;
      options.claimBlocks = kAssumedSms;
      options.chunks = (length + kClaimChunk - 1) / kClaimChunk;
      if (options.chunks > claimSlots * kAssumedSms)
        continue; // fewer slots in the grid than a row's chunks
      form = "wave_claim_s" + std::to_string(claimSlots);
    }
    PlanBuilder builder(
        task, group, "builtin",
        variantName(form +
                        (readers != 512 ? "_r" + std::to_string(readers) : "") +
                        (hold && !claimSlots ? "_held" : "") + "_bs" +
                        std::to_string(readers + writers),
                    tag));
    std::vector<KernelOutput> outputs = returnedOutputs(builder, group);
    std::vector<PartialBuffer> partials;
    auto kernels = generateWaveSplitRowKernels(
        group.getContext(), builder.entryName("wave"), comment, outputs,
        builder.leafFn(), rows, length, options,
        [](unsigned k) { return "rowpart" + std::to_string(k); }, partials);
    if (!kernels) {
      // Reductions of more than one pass, or more in L2 than it holds:
      // not this form.
      llvm::consumeError(kernels.takeError());
      continue;
    }
    declarePartials(builder, partials);
    declarePartials(builder, {kernels->counts});
    for (const GeneratedKernel &kernel : kernels->kernels)
      builder.addKernel(kernel, comment);
    addPlan(proposal, builder, task, group, llvm::Error::success());
  }
}
