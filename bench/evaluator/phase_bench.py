#!/usr/bin/env python3
# ===- bench/evaluator/phase_bench.py - Where the evaluator's time goes ----===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
"""Tunes one group of each kind (elementwise, row reduction, GEMM with an
epilogue) at 16 MB, 128 MB and 1 GB of tensors with `kopt compile
--tune=always --proposers=builtin`, and prints where the time went (the
JSON report's per-candidate phases, docs/Evaluator.md "Where the time
goes") and the seconds per candidate beyond the candidate's own run time
times its repetitions, against the targets: 1.5 s per candidate and 15 s
per group; `peak/task` is the most device memory a request held over the
task's tensors, `-flush` the same without the device's L2 flush buffer (a
fixed cost per device, docs/Evaluator.md "Device memory"); `reused` counts the requests that compared with the baseline's
outputs kept by the worker, `cut` the candidates timed briefly because they
could not win.

Usage: phase_bench.py [--kopt-bin dist/bin] [--work DIR] [--sizes 16M,128M,1G]
                      [--kinds elementwise,rows,gemm] [--json FILE]
Without a GPU it says so, measures nothing and exits 0.
"""

import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

TARGET_PER_CANDIDATE_S = 1.5
TARGET_PER_GROUP_S = 15.0
SIZES = {"16M": 16 << 20, "128M": 128 << 20, "1G": 1 << 30}
COLUMNS = 4096  # elements per row of the elementwise and row inputs


def tensor(shape):
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def elementwise(total):
    """gelu(x + y) over [rows, 4096]: two inputs, one output, written as two
    generics (as importers write it) so that they form one fusion group."""
    rows = max(1, total // (3 * COLUMNS * 4))
    t = tensor([rows, COLUMNS])
    return f"""#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%x: {t}, %y: {t}) -> {t} {{
  %one = arith.constant 1.000000e+00 : f32
  %half = arith.constant 5.000000e-01 : f32
  %sqrt2 = arith.constant 1.41421354 : f32
  %0 = tensor.empty() : {t}
  %1 = linalg.generic {{indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}} ins(%x, %y : {t}, {t}) outs(%0 : {t}) {{
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }} -> {t}
  %2 = linalg.generic {{indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}} ins(%1 : {t}) outs(%0 : {t}) {{
  ^bb0(%s: f32, %o: f32):
    %d = arith.divf %s, %sqrt2 : f32
    %e = math.erf %d : f32
    %p = arith.addf %e, %one : f32
    %h = arith.mulf %p, %half : f32
    %r = arith.mulf %s, %h : f32
    linalg.yield %r : f32
  }} -> {t}
  return %2 : {t}
}}
""", rows * COLUMNS * 4 * 3


def rows_softmax(total):
    """softmax over rows of 4096: one input, one output."""
    rows = max(1, total // (2 * COLUMNS * 4))
    t = tensor([rows, COLUMNS])
    return f"""func.func @forward(%x: {t}) -> {t} {{
  %0 = tensor.empty() : {t}
  %1 = linalg.softmax dimension(1) ins(%x : {t}) outs(%0 : {t}) -> {t}
  return %1 : {t}
}}
""", rows * COLUMNS * 4 * 2


GEMMS = {"16M": (1024, 1024, 1024), "128M": (2048, 4096, 4096),
         "1G": (8192, 8192, 12288)}


def gemm(total, size):
    """relu(x @ w + b): x [m, k], w [k, n], b [n]."""
    m, k, n = GEMMS[size]
    tx, tw, tb, to = tensor([m, k]), tensor([k, n]), tensor([n]), tensor([m, n])
    return f"""#map0 = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
func.func @forward(%x: {tx}, %w: {tw}, %b: {tb}) -> {to} {{
  %zero = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : {to}
  %1 = linalg.fill ins(%zero : f32) outs(%0 : {to}) -> {to}
  %2 = linalg.matmul ins(%x, %w : {tx}, {tw}) outs(%1 : {to}) -> {to}
  %3 = linalg.generic {{indexing_maps = [#map0, #map1, #map0], iterator_types = ["parallel", "parallel"]}} ins(%2, %b : {to}, {tb}) outs(%0 : {to}) {{
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }} -> {to}
  return %3 : {to}
}}
""", 4 * (m * k + k * n + n + m * n)


def make_input(kind, size):
    total = SIZES[size]
    if kind == "elementwise":
        return elementwise(total)
    if kind == "rows":
        return rows_softmax(total)
    return gemm(total, size)


def has_gpu():
    """(True, name) with a GPU, else (False, why)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False, "nvidia-smi not found"
    probe = subprocess.run([smi, "-L"], capture_output=True, text=True)
    if probe.returncode != 0 or "GPU" not in probe.stdout:
        return False, (probe.stderr or probe.stdout).strip() or "no device"
    return True, probe.stdout.strip().splitlines()[0]


def summarize(report):
    """One row per tuned group: the phases added up over its candidates."""
    rows = []
    for group in report.get("groups", []):
        candidates = [c for c in group.get("candidates", [])
                      if "phases" in c and not c.get("stored")]
        if not candidates:
            continue
        phases = {}
        for c in candidates:
            for name, value in c["phases"].items():
                phases[name] = phases.get(name, 0.0) + value
        # The baseline's own request comes first; the candidates follow,
        # each beside the baseline.
        n = len(candidates)
        seconds = sum(c["seconds"] for c in candidates)
        reference = group.get("reference_s", 0.0)
        kernel = phases.get("timed_kernel_s", 0.0)
        overhead = (seconds + reference - kernel) / n
        rows.append({
            "function": group["function"], "kind": group["kind"],
            "requests": n, "group_s": seconds + reference,
            "reference_s": reference, "phases": phases,
            "overhead_per_candidate_s": overhead,
            "peak_device_bytes": max(c.get("peak_device_bytes", 0)
                                     for c in candidates),
            # The device's L2 flush buffer and GEMM workspace are fixed costs
            # per device, inside every peak; without them, the peak that the
            # task's sizes make.
            "flush_device_bytes": max(c.get("flush_device_bytes", 0)
                                      for c in candidates),
            "gemm_workspace_device_bytes": max(
                c.get("gemm_workspace_device_bytes", 0) for c in candidates),
            "peak_without_flush_bytes": max(
                c.get("peak_device_bytes", 0) - c.get("flush_device_bytes", 0)
                - c.get("gemm_workspace_device_bytes", 0)
                for c in candidates),
            "task_bytes": max(c.get("task_bytes", 0) for c in candidates),
            # Requests that compared with the baseline's outputs kept from
            # the first, and candidates timed briefly (they could not win).
            "baseline_reused": sum(1 for c in candidates
                                   if c.get("baseline_reused")),
            "timing_cut": sum(1 for c in candidates if c.get("timing_cut")),
        })
    return rows


def verdict(ok):
    return "met" if ok else "NOT MET"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kopt-bin", default="dist/bin",
                        help="directory holding kopt and kopt-worker")
    parser.add_argument("--work", help="scratch directory (default: a temp)")
    parser.add_argument("--sizes", default="16M,128M,1G")
    parser.add_argument("--kinds", default="elementwise,rows,gemm")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()

    ok, device = has_gpu()
    if not ok:
        print(f"no GPU ({device}): nothing measured")
        return 0
    kopt = pathlib.Path(args.kopt_bin) / "kopt"
    if not kopt.exists():
        print(f"{kopt} not found (build with scripts/build --portable)")
        return 1
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="phase-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"device: {device}; date: {time.strftime('%Y-%m-%d')}")
    print(f"targets: {TARGET_PER_CANDIDATE_S} s per candidate beyond its "
          f"runs x repetitions, {TARGET_PER_GROUP_S} s per group")

    results = []
    failed = False
    header = (f"{'case':<18} {'MB':>6} {'req':>3} {'group s':>8} "
              f"{'ref s':>6} {'compile':>7} {'alloc':>6} {'inputs':>6} "
              f"{'runs':>6} {'checks':>6} {'compare':>7} {'fp64':>6} "
              f"{'timing':>6} {'kernel':>6} {'xfer':>6} {'s/cand':>6} "
              f"{'peak/task':>9} {'-flush':>7} {'reused':>6} {'cut':>3}")
    print(header)
    for kind in args.kinds.split(","):
        for size in args.sizes.split(","):
            name = f"{kind}_{size}"
            text, nbytes = make_input(kind, size)
            model = work / f"{name}.mlir"
            model.write_text(text)
            db = work / f"{name}.db"
            if db.exists():
                db.unlink()
            start = time.monotonic()
            run = subprocess.run(
                [str(kopt), "compile", str(model), "-o",
                 str(work / f"{name}.out.mlir"), "--tune=always",
                 "--proposers=builtin", "--db", str(db), "--report=json"],
                capture_output=True, text=True)
            wall = time.monotonic() - start
            if run.returncode != 0:
                print(f"{name:<18} kopt compile failed ({run.returncode}): "
                      f"{run.stderr.strip()[-300:]}")
                failed = True
                continue
            report = json.loads(run.stdout)
            rows = summarize(report)
            if not rows:
                print(f"{name:<18} no group was tuned: "
                      f"{report.get('target', '')}")
                failed = True
            for row in rows:
                p = row["phases"]
                task = row["task_bytes"]
                ratio = row["peak_device_bytes"] / task if task else 0
                own = row["peak_without_flush_bytes"] / task if task else 0
                print(f"{name:<18} {nbytes / 1e6:>6.0f} {row['requests']:>3} "
                      f"{row['group_s']:>8.2f} {row['reference_s']:>6.2f} "
                      f"{p.get('compile_s', 0):>7.2f} "
                      f"{p.get('allocate_s', 0):>6.2f} "
                      f"{p.get('inputs_s', 0):>6.2f} {p.get('runs_s', 0):>6.2f} "
                      f"{p.get('checks_s', 0):>6.2f} "
                      f"{p.get('compare_s', 0):>7.2f} "
                      f"{p.get('reference_s', 0):>6.2f} "
                      f"{p.get('timing_s', 0):>6.2f} "
                      f"{p.get('timed_kernel_s', 0):>6.2f} "
                      f"{p.get('transfer_s', 0):>6.2f} "
                      f"{row['overhead_per_candidate_s']:>6.2f} "
                      f"{ratio:>8.2f}x {own:>6.2f}x "
                      f"{row['baseline_reused']:>6} "
                      f"{row['timing_cut']:>3}")
                row.update({"case": name, "bytes": nbytes, "wall_s": wall})
                results.append(row)
    print()
    for row in results:
        per = row["overhead_per_candidate_s"]
        print(f"{row['case']:<18} @{row['function']}: {per:.2f} s per "
              f"candidate ({verdict(per <= TARGET_PER_CANDIDATE_S)}), "
              f"{row['group_s']:.1f} s for the group of {row['requests']} "
              f"({verdict(row['group_s'] <= TARGET_PER_GROUP_S)})")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
