//===- Passes.td - kopt pass declarations ------------------*- tablegen -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_PASSES_TD
#define KOPT_PASSES_TD

include "mlir/Pass/PassBase.td"

def FoldTensorCastsPass : Pass<"kopt-fold-tensor-casts", "mlir::func::FuncOp"> {
  let summary = "Fold casts that only hide static sizes into tensor.concat";
  let description = [{
    torch-mlir writes `torch.roll` (Swin's shifted windows) as two
    `tensor.extract_slice`s, each cast to a type with the rolled dimension
    dynamic, concatenated back into a static tensor. Each operand of a
    `tensor.concat` that is a `tensor.cast` from a more static type is
    replaced by the cast's source, and casts left without users are
    erased, so that no value of the graph has a dynamic size: kopt's
    kernels, runtime modules and fp64 reference need static shapes. Upstream
    canonicalisation does not fold such casts into a concatenation.

    Before:
    ```mlir
    %a = tensor.extract_slice %x[0, 3] [1, 53] [1, 1] : tensor<1x56xf32> to tensor<1x53xf32>
    %ac = tensor.cast %a : tensor<1x53xf32> to tensor<1x?xf32>
    %b = tensor.extract_slice %x[0, 0] [1, 3] [1, 1] : tensor<1x56xf32> to tensor<1x3xf32>
    %bc = tensor.cast %b : tensor<1x3xf32> to tensor<1x?xf32>
    %r = tensor.concat dim(1) %ac, %bc : (tensor<1x?xf32>, tensor<1x?xf32>) -> tensor<1x56xf32>
    ```
    After:
    ```mlir
    %r = tensor.concat dim(1) %a, %b : (tensor<1x53xf32>, tensor<1x3xf32>) -> tensor<1x56xf32>
    ```
  }];
  let dependentDialects = ["mlir::tensor::TensorDialect"];
}

def FoldConstantGathersPass
    : Pass<"kopt-fold-constant-gathers", "mlir::func::FuncOp"> {
  let summary = "Replace gathers through constant index tables that only "
                "reshape by reshapes";
  let description = [{
    torch-mlir writes GroupNorm's per-channel scale and shift as gathers: a
    `linalg.generic` whose body reads the per-group values with
    `tensor.extract` at indices computed, with a few integer ops
    (`arith.cmpi`, `arith.addi`, `arith.select`, `arith.index_cast`, ...),
    from constant index tables. The indices are evaluated for every element
    (tables of at most 65536 elements); when every element of the result
    reads the source's element at the same row-major position, the gather
    is replaced by a `tensor.collapse_shape` of the source into one
    dimension and a `tensor.expand_shape` into the result's shape, which
    fusion sees through; the tables, and the scalar constants the indices
    read, are erased when nothing else reads them. Any other gather is left
    as it is.

    Before:
    ```mlir
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%table : tensor<8x64xi64>) outs(%e : tensor<8x64xf32>) {
    ^bb0(%i: i64, %out: f32):
      ...
      %v = tensor.extract %stats[%n, %g, %c, %zero] : tensor<8x8x8x1xf32>
      linalg.yield %v : f32
    } -> tensor<8x64xf32>
    ```
    After:
    ```mlir
    %flat = tensor.collapse_shape %stats [[0, 1, 2, 3]] : tensor<8x8x8x1xf32> into tensor<512xf32>
    %g = tensor.expand_shape %flat [[0, 1]] output_shape [8, 64] : tensor<512xf32> into tensor<8x64xf32>
    ```
  }];
  let dependentDialects = ["mlir::tensor::TensorDialect"];
}

def AlignReductionDomainsPass
    : Pass<"kopt-align-reduction-domains", "mlir::func::FuncOp"> {
  let summary = "Rewrite elementwise ops over a reduction's domain when they "
                "read its tensors through reshapes";
  let description = [{
    torch-mlir writes GroupNorm's statistics over a reshaped view of the
    input, `[N, G, C/G, H*W]`, and its normalisation over the input's own
    shape, `[N, C, H, W]`, with the per-channel scale and shift over
    `[N, G, C/G, 1]` in between; a GroupNorm over a 2-D input normalises
    over `[N, G, C/G]` and applies the affine weights over `[N, C]`. The
    fusion planner joins to a reduction's group only the ops over its rows
    or its whole domain, so the normalisation became a second kernel that
    reads the input again. This pass rewrites:

    1. every all-parallel `linalg.generic` that reads, through reshapes, a
       tensor laid out over a reduction's domain (the reduction's input, or
       the result of an op over that domain) of as many elements, over that
       domain: its operands are reshaped through the finest shape both
       domains are views of (an operand broadcast along part of a dimension
       of one that is not a whole dimension of the other stops the
       rewrite), and its results reshaped back for their users. The
       rewritten op's results are tensors of the domain in turn, so the
       chain of consumers follows;
    2. into each all-parallel op over a reduction's domain, the smaller
       all-parallel ops producing its inputs over neither that reduction's
       rows nor its domain (GroupNorm's per-channel scale and shift) are
       fused and recomputed at every point: left alone, they would sit
       between the statistics and the normalisation and keep them in
       separate groups.

    Ops that read a contraction's or a convolution's result directly, read a
    loop index, or have dynamic shapes are left alone.

    Before (the statistics reduce `%x` over `[8, 8, 8, 262144]`):
    ```mlir
    %v = tensor.expand_shape %flat [[0], [1, 2], [3]] output_shape [8, 8, 8, 262144]
    %y = linalg.generic {indexing_maps = [#id, #per_channel, #id], ...}
        ins(%x, %scale : tensor<8x64x512x512xf32>, tensor<8x64x1x1xf32>) ...
    ```
    After:
    ```mlir
    %y = linalg.generic {indexing_maps = [#id, #per_group_channel, #id], ...}
        ins(%v, %scale_groups : tensor<8x8x8x262144xf32>, tensor<8x8x8x1xf32>) ...
    %y_flat = tensor.collapse_shape %y [[0, 1, 2, 3]]
    %y_nchw = tensor.expand_shape %y_flat [[0, 1, 2, 3]] output_shape [8, 64, 512, 512]
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def CollapseBeforeTransposePass
    : Pass<"kopt-collapse-before-transpose", "mlir::func::FuncOp"> {
  let summary = "Collapse a transpose's source rather than its result";
  let description = [{
    torch-mlir writes `q @ k.transpose(-2, -1)` over attention heads as a
    `linalg.transpose` of the 4-D `k`, a `tensor.collapse_shape` of its
    batch and head dimensions and a `linalg.batch_matmul`. A contraction's
    group reads a transpose of an operand's two innermost dimensions as
    stored (a transpose flag), but not through a reshape. When the
    transpose moves whole groups of the collapse and keeps the order within
    each, the source is collapsed first and the collapsed tensor transposed:
    the same values, with the transpose next to its consumer. A transpose
    with other users, or a collapse that mixes moved dimensions, is left
    as it is.

    Before:
    ```mlir
    %t = linalg.transpose ins(%k : tensor<16x16x1024x64xf32>)
           outs(%e : tensor<16x16x64x1024xf32>) permutation = [0, 1, 3, 2]
    %c = tensor.collapse_shape %t [[0, 1], [2], [3]]
           : tensor<16x16x64x1024xf32> into tensor<256x64x1024xf32>
    ```
    After:
    ```mlir
    %c = tensor.collapse_shape %k [[0, 1], [2], [3]]
           : tensor<16x16x1024x64xf32> into tensor<256x1024x64xf32>
    %t = linalg.transpose ins(%c : tensor<256x1024x64xf32>)
           outs(%e : tensor<256x64x1024xf32>) permutation = [0, 2, 1]
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def FormFusionGroupsPass
    : Pass<"kopt-form-fusion-groups", "mlir::func::FuncOp"> {
  let summary = "Partition linalg ops into fusion groups worth tuning";
  let description = [{
    Classifies every linalg op of the function (elementwise, reduction,
    contraction, convolution, pooling, softmax) and partitions them into
    fusion groups, tagging each member with `kopt.group_id` and
    `kopt.group_kind`. Groups are formed greedily in this order:

    1. a contraction (matmul, batch_matmul) or a convolution anchors a
       group and absorbs its elementwise epilogue (bias, scale, activation,
       residual add) and the broadcast (a bias) it accumulates into; a
       convolution group also absorbs the constant `tensor.pad` of its input
       (nothing else reading it), one pooling op (with its input's pad) and
       the elementwise ops after it; a widening cast (`arith.extf`) that
       only a reduction and no member reads is left to the reduction;
    2. a reduction or `linalg.softmax` anchors a group and absorbs its
       elementwise producers and consumers and further reductions over the
       same rows (softmax, layernorm, rmsnorm, logsumexp forms);
    3. the remaining elementwise ops (with broadcasts and transposes) form
       connected chains;
    Reshapes (`tensor.expand_shape`, `tensor.collapse_shape`) join a group
    only to connect its members; they never start one.
    4. a heavy op left alone (a reduction, softmax, pooling, contraction)
       is a group of one (a pooling op with the constant pad of its input);
       a lone cheap op is left ungrouped.

    No op is duplicated: every op belongs to at most one group, and a value
    used outside its group becomes a group output. No merge may create a
    cycle between groups. An op with a dynamic shape or an unsupported form
    is left to the default lowering with a remark that says why. Each
    `cf.assert` (torch-mlir's bounds and zero checks) gets a remark too:
    kopt's kernels do not check it.

    Before:
    ```mlir
    %0 = linalg.matmul ins(%a, %b : ...) outs(%fill : ...) -> tensor<8x64xf32>
    %1 = linalg.generic {...} ins(%0, %bias : ...) { arith.addf } -> ...
    ```
    After:
    ```mlir
    %0 = linalg.matmul {kopt.group_id = 0 : i64,
                        kopt.group_kind = "contraction"} ...
    %1 = linalg.generic {kopt.group_id = 0 : i64,
                         kopt.group_kind = "contraction", ...} ...
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
  let options = [
    Option<"emitRemarks", "emit-remarks", "bool", /*default=*/"true",
           "Emit a remark for every op left out of fusion and why">
  ];
}

def OutlineFusionGroupsPass
    : Pass<"kopt-outline-fusion-groups", "mlir::ModuleOp"> {
  let summary = "Outline each fusion group into a private function";
  let description = [{
    Moves the members of every fusion group formed by
    `kopt-form-fusion-groups` into a private `func.func` named
    `@<parent>_kopt_g<id>_<kind>` and replaces them with a `func.call`.
    Values defined outside the group become arguments; values used outside
    the group become results. Cheap constants (scalars, splats,
    `tensor.empty` and fills of constants) are cloned into the function
    rather than passed. The function is put in canonical form (operations,
    arguments and results in a canonical order) and both the function and
    the call are tagged with the group's SHA-256 key (`kopt.key`) and its
    description (`kopt.fusion_group`). The outlined body keeps its linalg
    ops, so any compiler can still lower it.

    After:
    ```mlir
    %r = func.call @mlp_kopt_g0_contraction(%a, %b, %bias)
        {kopt.fusion_group = 0 : i64, kopt.key = "3f1c..."} : (...) -> ...
    func.func private @mlp_kopt_g0_contraction(...) -> ...
        attributes {kopt.fusion_group = {id = 0 : i64, kind = "contraction",
                                         parent = "mlp"},
                    kopt.key = "3f1c..."} { ... }
    ```
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def SpecializeBatchPass : Pass<"kopt-specialize-batch", "mlir::ModuleOp"> {
  let summary = "Give the entry function's dynamic batch a static size";
  let description = [{
    Rewrites the graph's entry function (its only public function with a
    body) for one batch size: every argument whose outermost dimension is
    dynamic gets that dimension set to `batch`, and the static shapes are
    propagated through the function. The arguments are cast back to their
    dynamic types, then the canonicalisations of the tensor, linalg,
    affine and arith ops fold the casts into their users, `tensor.dim` into
    constants, and `tensor.empty`, reshapes, pads and linalg ops into static
    forms; the shape checks the exporter wrote (`cf.assert` over
    `tensor.dim`) fold away. The results are made static last.

    Only the top-level ops are canonicalised (and the ops the patterns
    create), so the bodies of the linalg ops stay as written. An argument
    with a dynamic dimension other than the outermost is an error naming
    it; so is an op left with a dynamic shape, and a shape check that fails
    at this size.

    Before:
    ```mlir
    func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
      %c0 = arith.constant 0 : index
      %d = tensor.dim %x, %c0 : tensor<?x8xf32>
      %e = tensor.empty(%d) : tensor<?x8xf32>
      %r = linalg.generic {...} ins(%x : tensor<?x8xf32>)
                                outs(%e : tensor<?x8xf32>) {...}
      return %r : tensor<?x8xf32>
    }
    ```
    After (`batch=4`):
    ```mlir
    func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
      %e = tensor.empty() : tensor<4x8xf32>
      %r = linalg.generic {...} ins(%x : tensor<4x8xf32>)
                                outs(%e : tensor<4x8xf32>) {...}
      return %r : tensor<4x8xf32>
    }
    ```
  }];
  let dependentDialects = ["mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect"];
  let options = [
    Option<"batch", "batch", "int64_t", /*default=*/"1",
           "The batch size the dynamic outermost dimension takes">
  ];
}

#endif // KOPT_PASSES_TD
