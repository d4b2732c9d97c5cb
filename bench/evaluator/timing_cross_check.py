#!/usr/bin/env python3
# ===- bench/evaluator/timing_cross_check.py - Events against CUPTI -------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
"""Tunes out = a * b + c at several sizes and prints, for each size, the
winner's event median beside CUPTI's kernel time of a run that also started
with L2 flushed (the record's `validation.evidence.timing_cross_check`), and
the physical floor of the bytes moved.

Usage: timing_cross_check.py [--kopt dist/bin/kopt] [--bandwidth 4.26e12]
                             [--work DIR] [SIZE...]
Sizes are element counts; the default runs 1M, 4M and 16M. Needs a GPU.
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

MODEL = """func.func @fma(%a: tensor<{n}xf32>, %b: tensor<{n}xf32>,
               %c: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %0 = tensor.empty() : tensor<{n}xf32>
  %1 = linalg.mul ins(%a, %b : tensor<{n}xf32>, tensor<{n}xf32>)
      outs(%0 : tensor<{n}xf32>) -> tensor<{n}xf32>
  %2 = linalg.add ins(%1, %c : tensor<{n}xf32>, tensor<{n}xf32>)
      outs(%0 : tensor<{n}xf32>) -> tensor<{n}xf32>
  return %2 : tensor<{n}xf32>
}}
"""


def measure(kopt, work, n):
    model = work / f"fma_{n}.mlir"
    model.write_text(MODEL.format(n=n))
    db = work / f"fma_{n}.db"
    subprocess.run([kopt, "compile", str(model), "-o", str(work / f"out_{n}.mlir"),
                    "--tune=always", "--proposers=builtin", "--db", str(db)],
                   check=True, stdout=subprocess.DEVNULL)
    export = work / f"fma_{n}.jsonl"
    subprocess.run([kopt, "db", "export", "--db", str(db), "-o", str(export)],
                   check=True)
    for line in export.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") != "kernel":
            continue
        evidence = entry["record"].get("validation", {}).get("evidence", {})
        check = evidence.get("timing_cross_check")
        if check:
            return check
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kopt", default="dist/bin/kopt")
    parser.add_argument("--bandwidth", type=float, default=4.26e12,
                        help="copy bandwidth in bytes/s for the floor column")
    parser.add_argument("--work", help="keep the files here")
    parser.add_argument("sizes", nargs="*", type=int,
                        default=[1 << 20, 1 << 22, 1 << 24])
    args = parser.parse_args()
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="kopt-timing-"))
    work.mkdir(parents=True, exist_ok=True)
    print("| elements | MB moved | floor us | event median us | CUPTI kernel us "
          "| events / CUPTI |")
    print("|---:|---:|---:|---:|---:|---:|")
    failed = False
    for n in args.sizes:
        moved = 16 * n
        check = measure(args.kopt, work, n)
        if not check:
            print(f"| {n} | {moved / 1e6:.0f} | | no cross-check recorded | | |")
            failed = True
            continue
        print(f"| {n} | {moved / 1e6:.0f} | {moved / args.bandwidth * 1e6:.1f} "
              f"| {check['event_median_us']:.2f} | {check['cupti_kernel_us']:.2f} "
              f"| {check['event_median_us'] / check['cupti_kernel_us']:.2f} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
