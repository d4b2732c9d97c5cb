#!/usr/bin/env python3
# ===- gen_large_graph.py - A model graph of a few hundred linalg ops -----===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage: gen_large_graph.py [--layers N] [--tokens M] [-o FILE]
#
# Writes one function of N layers, each as examples/mlp_block.mlir and
# examples/layernorm_gelu.mlir write theirs: a matmul with a bias and a GELU
# (tanh form), then a LayerNorm (row sum, mean, centre, sum of squares,
# rsqrt, scale and shift). That is 11 linalg ops per layer (fills included),
# 198 for the default 18 layers. Each layer has its own widths, so its
# fusion groups have task keys of their own. For bench/compile-hit-bench.
#
# ===----------------------------------------------------------------------===#

import argparse
import sys

LAYER = """\
  // Layer {i}: {din} -> {dout}
  %e{i} = tensor.empty() : tensor<{m}x{dout}xf32>
  %er{i} = tensor.empty() : tensor<{m}xf32>
  %f{i} = linalg.fill ins(%zero : f32) outs(%e{i} : tensor<{m}x{dout}xf32>)
      -> tensor<{m}x{dout}xf32>
  %h{i} = linalg.matmul
      ins(%x{i}, %w{i} : tensor<{m}x{din}xf32>, tensor<{din}x{dout}xf32>)
      outs(%f{i} : tensor<{m}x{dout}xf32>) -> tensor<{m}x{dout}xf32>
  %hb{i} = linalg.generic {{indexing_maps = [#id, #cols, #id],
                           iterator_types = ["parallel", "parallel"]}}
      ins(%h{i}, %b{i} : tensor<{m}x{dout}xf32>, tensor<{dout}xf32>)
      outs(%e{i} : tensor<{m}x{dout}xf32>) {{
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    linalg.yield %s : f32
  }} -> tensor<{m}x{dout}xf32>
  %g{i} = linalg.generic {{indexing_maps = [#id, #id],
                          iterator_types = ["parallel", "parallel"]}}
      ins(%hb{i} : tensor<{m}x{dout}xf32>)
      outs(%e{i} : tensor<{m}x{dout}xf32>) {{
  ^bb0(%v: f32, %o: f32):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %k = arith.constant 0.7978845608 : f32
    %c = arith.constant 0.044715 : f32
    %v2 = arith.mulf %v, %v : f32
    %v3 = arith.mulf %v2, %v : f32
    %cv3 = arith.mulf %c, %v3 : f32
    %in = arith.addf %v, %cv3 : f32
    %kin = arith.mulf %k, %in : f32
    %t = math.tanh %kin : f32
    %onet = arith.addf %one, %t : f32
    %hv = arith.mulf %half, %v : f32
    %r = arith.mulf %hv, %onet : f32
    linalg.yield %r : f32
  }} -> tensor<{m}x{dout}xf32>
  %fr{i} = linalg.fill ins(%zero : f32) outs(%er{i} : tensor<{m}xf32>)
      -> tensor<{m}xf32>
  %sum{i} = linalg.generic {{indexing_maps = [#id, #rows],
                            iterator_types = ["parallel", "reduction"]}}
      ins(%g{i} : tensor<{m}x{dout}xf32>) outs(%fr{i} : tensor<{m}xf32>) {{
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  }} -> tensor<{m}xf32>
  %mean{i} = linalg.generic {{indexing_maps = [#vec, #vec],
                             iterator_types = ["parallel"]}}
      ins(%sum{i} : tensor<{m}xf32>) outs(%er{i} : tensor<{m}xf32>) {{
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant {dout}.0 : f32
    %r = arith.divf %s, %n : f32
    linalg.yield %r : f32
  }} -> tensor<{m}xf32>
  %c{i} = linalg.generic {{indexing_maps = [#id, #rows, #id],
                          iterator_types = ["parallel", "parallel"]}}
      ins(%g{i}, %mean{i} : tensor<{m}x{dout}xf32>, tensor<{m}xf32>)
      outs(%e{i} : tensor<{m}x{dout}xf32>) {{
  ^bb0(%v: f32, %mu: f32, %o: f32):
    %d = arith.subf %v, %mu : f32
    linalg.yield %d : f32
  }} -> tensor<{m}x{dout}xf32>
  %sq{i} = linalg.generic {{indexing_maps = [#id, #rows],
                           iterator_types = ["parallel", "reduction"]}}
      ins(%c{i} : tensor<{m}x{dout}xf32>) outs(%fr{i} : tensor<{m}xf32>) {{
  ^bb0(%d: f32, %acc: f32):
    %d2 = arith.mulf %d, %d : f32
    %s = arith.addf %acc, %d2 : f32
    linalg.yield %s : f32
  }} -> tensor<{m}xf32>
  %rstd{i} = linalg.generic {{indexing_maps = [#vec, #vec],
                             iterator_types = ["parallel"]}}
      ins(%sq{i} : tensor<{m}xf32>) outs(%er{i} : tensor<{m}xf32>) {{
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant {dout}.0 : f32
    %eps = arith.constant 1.0e-5 : f32
    %var = arith.divf %s, %n : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  }} -> tensor<{m}xf32>
  %x{next} = linalg.generic {{
      indexing_maps = [#id, #rows, #cols, #cols, #id],
      iterator_types = ["parallel", "parallel"]}}
      ins(%c{i}, %rstd{i}, %gamma{i}, %beta{i}
          : tensor<{m}x{dout}xf32>, tensor<{m}xf32>, tensor<{dout}xf32>,
            tensor<{dout}xf32>)
      outs(%e{i} : tensor<{m}x{dout}xf32>) {{
  ^bb0(%d: f32, %r: f32, %ga: f32, %be: f32, %o: f32):
    %n = arith.mulf %d, %r : f32
    %sc = arith.mulf %n, %ga : f32
    %sh = arith.addf %sc, %be : f32
    linalg.yield %sh : f32
  }} -> tensor<{m}x{dout}xf32>
"""


def main():
    parser = argparse.ArgumentParser(
        description="A chain of matmul + bias + GELU + LayerNorm layers"
    )
    parser.add_argument("--layers", type=int, default=18)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("-o", "--output", default="-")
    args = parser.parse_args()

    m = args.tokens
    widths = [256 + 32 * i for i in range(args.layers + 1)]
    params = [f"%x0: tensor<{m}x{widths[0]}xf32>"]
    for i in range(args.layers):
        din, dout = widths[i], widths[i + 1]
        params += [
            f"%w{i}: tensor<{din}x{dout}xf32>",
            f"%b{i}: tensor<{dout}xf32>",
            f"%gamma{i}: tensor<{dout}xf32>",
            f"%beta{i}: tensor<{dout}xf32>",
        ]
    last = widths[args.layers]
    text = (
        f"// {args.layers} layers of matmul, bias, GELU and LayerNorm "
        f"({11 * args.layers} linalg ops),\n"
        "// written by bench/gen_large_graph.py.\n"
        "#id = affine_map<(d0, d1) -> (d0, d1)>\n"
        "#rows = affine_map<(d0, d1) -> (d0)>\n"
        "#cols = affine_map<(d0, d1) -> (d1)>\n"
        "#vec = affine_map<(d0) -> (d0)>\n"
        "func.func @large("
        + ",\n                 ".join(params)
        + f") -> tensor<{m}x{last}xf32> {{\n"
        "  %zero = arith.constant 0.0 : f32\n"
    )
    for i in range(args.layers):
        text += LAYER.format(
            i=i, next=i + 1, m=m, din=widths[i], dout=widths[i + 1]
        )
    text += f"  return %x{args.layers} : tensor<{m}x{last}xf32>\n}}\n"
    out = sys.stdout if args.output == "-" else open(args.output, "w")
    out.write(text)
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
