#!/usr/bin/env python3
# ===- gen-graphs.py - Many small graphs with distinct fusion groups ------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage: gen-graphs.py OUTDIR FILES FUNCS
#
# Writes FILES graphs of FUNCS functions each into OUTDIR. Every function is
# an elementwise chain (add, scale, tanh) on its own shape, so it is one
# fusion group whose task key no other function shares: FILES * FUNCS
# distinct tasks.
#
# ===----------------------------------------------------------------------===#

import os
import sys

FUNC = """\
func.func @chain{index}(%a: tensor<{shape}xf32>, %b: tensor<{shape}xf32>)
    -> tensor<{shape}xf32> {{
  %e = tensor.empty() : tensor<{shape}xf32>
  %s = linalg.generic {{indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}}
      ins(%a, %b : tensor<{shape}xf32>, tensor<{shape}xf32>)
      outs(%e : tensor<{shape}xf32>) {{
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  }} -> tensor<{shape}xf32>
  %m = linalg.generic {{indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}}
      ins(%s : tensor<{shape}xf32>) outs(%e : tensor<{shape}xf32>) {{
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 0.5 : f32
    %r = arith.mulf %x, %c : f32
    linalg.yield %r : f32
  }} -> tensor<{shape}xf32>
  %t = linalg.generic {{indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}}
      ins(%m : tensor<{shape}xf32>) outs(%e : tensor<{shape}xf32>) {{
  ^bb0(%x: f32, %o: f32):
    %r = math.tanh %x : f32
    linalg.yield %r : f32
  }} -> tensor<{shape}xf32>
  return %t : tensor<{shape}xf32>
}}
"""


def main():
    out_dir, files, funcs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(out_dir, exist_ok=True)
    for f in range(files):
        text = "#id = affine_map<(d0, d1) -> (d0, d1)>\n"
        for g in range(funcs):
            index = f * funcs + g
            shape = f"{8 * (index + 1)}x64"
            text += FUNC.format(index=index, shape=shape)
        with open(os.path.join(out_dir, f"graph{f:03d}.mlir"), "w") as out:
            out.write(text)


if __name__ == "__main__":
    main()
