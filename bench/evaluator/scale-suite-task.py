#!/usr/bin/env python3
#===- bench/evaluator/scale-suite-task.py - The suite's task at any size ---===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Writes the adversarial suite's task (out0 = in0 * in1 + in2 over f32),
# its baseline and its honest float4 candidate at ELEMENTS elements (a
# multiple of 1024) into OUTDIR, for kopt-evaluator-bench at KernelBench's
# sizes: 268435456 elements are 1 GiB per tensor.
#
# Usage: scale-suite-task.py ELEMENTS OUTDIR
#
#===------------------------------------------------------------------------===#
import json
import pathlib
import sys

SUITE = pathlib.Path(__file__).resolve().parents[2] / "test/Evaluator/adversarial"
ELEMENTS, VECTORS = 1048576, 262144


def scale(text: str, elements: int) -> str:
    # The counts appear as literals in the MLIR, the shapes and the kernels.
    return text.replace(str(ELEMENTS), str(elements)).replace(
        str(VECTORS), str(elements // 4))


def main() -> int:
    if len(sys.argv) != 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) % 1024:
        print(__doc__ or "usage: scale-suite-task.py ELEMENTS OUTDIR", file=sys.stderr)
        return 2
    elements, out = int(sys.argv[1]), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for name in ("task.json", "baseline.plan.json", "honest-vec4.plan.json"):
        text = scale((SUITE / name).read_text(), elements)
        json.loads(text)  # still JSON
        (out / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
