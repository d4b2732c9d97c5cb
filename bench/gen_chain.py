#!/usr/bin/env python3
# ===- gen_chain.py - One long chain of elementwise linalg ops ------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage: gen_chain.py N [-o FILE]
#
# Writes one function whose body is a chain of N elementwise linalg ops
# (exp, negf, add with the input, in turn) on one small tensor: the fusion
# planner grows it into a single group, one op at a time, which is where a
# cycle check that looks at the whole group costs quadratic time. For
# bench/results/*-fusion-planner-chain.md and the planner's tests.
#
# ===----------------------------------------------------------------------===#

import argparse
import sys

SHAPE = "tensor<4x8xf32>"


def chain(count):
    lines = [
        f"func.func @chain(%x: {SHAPE}) -> {SHAPE} {{",
        f"  %init = tensor.empty() : {SHAPE}",
    ]
    previous = "%x"
    for i in range(count):
        if i % 3 == 0:
            op = f"linalg.exp ins({previous} : {SHAPE})"
        elif i % 3 == 1:
            op = f"linalg.negf ins({previous} : {SHAPE})"
        else:
            op = f"linalg.add ins({previous}, %x : {SHAPE}, {SHAPE})"
        lines.append(f"  %v{i} = {op} outs(%init : {SHAPE}) -> {SHAPE}")
        previous = f"%v{i}"
    lines += [f"  return {previous} : {SHAPE}", "}", ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("count", type=int, help="ops in the chain")
    parser.add_argument("-o", "--output", help="output file (default stdout)")
    args = parser.parse_args()
    text = chain(args.count)
    if args.output:
        with open(args.output, "w") as out:
            out.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
