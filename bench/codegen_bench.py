#!/usr/bin/env python3
# ===- bench/codegen_bench.py - Baseline and built-in plans vs PyTorch --===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Runs on the GPU machine (scripts/gpu-check calls it), with the portable
# `kopt` in dist/bin. For each case it writes a small MLIR graph, runs
# `kopt plan --run` on it (every baseline and built-in plan is checked
# against the fp64 interpreter and timed with CUDA events, L2 flushed
# between repetitions), times the same computation in PyTorch eager the same
# way, and measures the device-to-device copy bandwidth as the ceiling.
# Prints a table and writes codegen-bench.json and codegen-bench.md to $OUT.
#
# Usage: python3 bench/codegen_bench.py [--kopt dist/bin/kopt] [--quick]
#
# ===----------------------------------------------------------------------===#

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

L2_BYTES = torch.cuda.get_device_properties(0).L2_cache_size
FLUSH = torch.empty(2 * L2_BYTES // 4, device="cuda")


def time_us(fn, reps=50, warmup=5):
    """Median and min of `reps` runs, CUDA events, L2 flushed before each."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        FLUSH.zero_()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times), min(times)


def copy_bandwidth():
    """Device-to-device copy of 512 MiB, bytes read plus written per second."""
    src = torch.randn(128 * 1024 * 1024, device="cuda")
    dst = torch.empty_like(src)
    median, _ = time_us(lambda: dst.copy_(src))
    return 2 * src.numel() * 4 / (median * 1e-6)


# --- cases: MLIR text, PyTorch eager equivalent, traffic in bytes ---------

ID2 = "affine_map<(d0, d1) -> (d0, d1)>"
ROW2 = "affine_map<(d0, d1) -> (d1)>"
RED2 = "affine_map<(d0, d1) -> (d0)>"
VEC = "affine_map<(d0) -> (d0)>"


def generic2(name, ins, types, body, result="f32", shape=None, maps=None):
    maps = maps or [ID2] * (len(ins) + 1)
    args = ", ".join(f"%a{i}: f32" for i in range(len(ins)))
    return (f"  %{name} = linalg.generic {{indexing_maps = [{', '.join(maps)}], "
            f"iterator_types = [\"parallel\", \"parallel\"]}} "
            f"ins({', '.join(ins)} : {', '.join(types)}) outs(%e : {shape}) {{\n"
            f"  ^bb0({args}, %o: f32):\n{body}\n  }} -> {shape}\n")


def ew_chain(n, c):
    t = f"tensor<{n}x{c}xf32>"
    body_mul = "    %s = arith.constant 0.5 : f32\n    %y = arith.mulf %a0, %s : f32\n    linalg.yield %y : f32"
    body_add = "    %y = arith.addf %a0, %a1 : f32\n    linalg.yield %y : f32"
    body_gelu = ("    %h = arith.constant 0.5 : f32\n    %one = arith.constant 1.0 : f32\n"
                 "    %k = arith.constant 0.7978845608 : f32\n    %c = arith.constant 0.044715 : f32\n"
                 "    %v2 = arith.mulf %a0, %a0 : f32\n    %v3 = arith.mulf %v2, %a0 : f32\n"
                 "    %cv = arith.mulf %c, %v3 : f32\n    %in = arith.addf %a0, %cv : f32\n"
                 "    %kin = arith.mulf %k, %in : f32\n    %t = math.tanh %kin : f32\n"
                 "    %ot = arith.addf %one, %t : f32\n    %hv = arith.mulf %h, %a0 : f32\n"
                 "    %y = arith.mulf %hv, %ot : f32\n    linalg.yield %y : f32")
    mlir = (f"func.func @ew_chain(%x: {t}, %b: tensor<{c}xf32>, %r: {t}) -> {t} {{\n"
            f"  %e = tensor.empty() : {t}\n"
            + generic2("m", ["%x"], [t], body_mul, shape=t)
            + generic2("s", ["%m", "%b"], [t, f"tensor<{c}xf32>"], body_add, shape=t,
                       maps=[ID2, ROW2, ID2])
            + generic2("g", ["%s"], [t], body_gelu, shape=t)
            + generic2("y", ["%g", "%r"], [t, t], body_add, shape=t)
            + f"  return %y : {t}\n}}\n")
    x = torch.randn(n, c, device="cuda")
    b = torch.randn(c, device="cuda")
    r = torch.randn(n, c, device="cuda")
    eager = lambda: F.gelu(x * 0.5 + b, approximate="tanh") + r
    return mlir, eager, 3 * n * c * 4 + c * 4


def softmax_rows(rows, c):
    t = f"tensor<{rows}x{c}xf32>"
    mlir = (f"func.func @softmax_rows(%x: {t}) -> {t} {{\n  %e = tensor.empty() : {t}\n"
            f"  %y = linalg.softmax dimension(1) ins(%x : {t}) outs(%e : {t}) -> {t}\n"
            f"  return %y : {t}\n}}\n")
    x = torch.randn(rows, c, device="cuda")
    return mlir, lambda: torch.softmax(x, dim=-1), 2 * rows * c * 4


def layernorm_rows(rows, c):
    t = f"tensor<{rows}x{c}xf32>"
    r = f"tensor<{rows}xf32>"
    red = ("linalg.generic {indexing_maps = [%s, %s], iterator_types = [\"parallel\", \"reduction\"]}"
           % (ID2, RED2))
    vec = "linalg.generic {indexing_maps = [%s, %s], iterator_types = [\"parallel\"]}" % (VEC, VEC)
    mlir = f"""func.func @layernorm_rows(%x: {t}, %g: tensor<{c}xf32>, %b: tensor<{c}xf32>) -> {t} {{
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : {r}
  %fr = linalg.fill ins(%zero : f32) outs(%er : {r}) -> {r}
  %sum = {red} ins(%x : {t}) outs(%fr : {r}) {{
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  }} -> {r}
  %mean = {vec} ins(%sum : {r}) outs(%er : {r}) {{
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant {float(c)} : f32
    %m = arith.divf %s, %n : f32
    linalg.yield %m : f32
  }} -> {r}
  %e = tensor.empty() : {t}
  %d = linalg.generic {{indexing_maps = [{ID2}, {RED2}, {ID2}], iterator_types = ["parallel", "parallel"]}} ins(%x, %mean : {t}, {r}) outs(%e : {t}) {{
  ^bb0(%v: f32, %m: f32, %o: f32):
    %y = arith.subf %v, %m : f32
    linalg.yield %y : f32
  }} -> {t}
  %sq = {red} ins(%d : {t}) outs(%fr : {r}) {{
  ^bb0(%v: f32, %acc: f32):
    %v2 = arith.mulf %v, %v : f32
    %s = arith.addf %acc, %v2 : f32
    linalg.yield %s : f32
  }} -> {r}
  %rstd = {vec} ins(%sq : {r}) outs(%er : {r}) {{
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant {float(c)} : f32
    %eps = arith.constant 1.0e-5 : f32
    %var = arith.divf %s, %n : f32
    %ve = arith.addf %var, %eps : f32
    %y = math.rsqrt %ve : f32
    linalg.yield %y : f32
  }} -> {r}
  %y = linalg.generic {{indexing_maps = [{ID2}, {RED2}, {ROW2}, {ROW2}, {ID2}], iterator_types = ["parallel", "parallel"]}} ins(%d, %rstd, %g, %b : {t}, {r}, tensor<{c}xf32>, tensor<{c}xf32>) outs(%e : {t}) {{
  ^bb0(%v: f32, %s: f32, %gv: f32, %bv: f32, %o: f32):
    %n = arith.mulf %v, %s : f32
    %sc = arith.mulf %n, %gv : f32
    %sh = arith.addf %sc, %bv : f32
    linalg.yield %sh : f32
  }} -> {t}
  return %y : {t}
}}
"""
    x = torch.randn(rows, c, device="cuda")
    g = torch.randn(c, device="cuda")
    b = torch.randn(c, device="cuda")
    return mlir, lambda: F.layer_norm(x, (c,), g, b, eps=1e-5), 2 * rows * c * 4


def row_sum(rows, c):
    t = f"tensor<{rows}x{c}xf32>"
    r = f"tensor<{rows}xf32>"
    mlir = f"""func.func @row_sum(%x: {t}) -> {r} {{
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : {r}
  %fr = linalg.fill ins(%zero : f32) outs(%er : {r}) -> {r}
  %s = linalg.reduce ins(%x : {t}) outs(%fr : {r}) dimensions = [1]
    (%in: f32, %acc: f32) {{
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }}
  return %s : {r}
}}
"""
    x = torch.randn(rows, c, device="cuda")
    return mlir, lambda: torch.sum(x, dim=-1), rows * c * 4 + rows * 4


def matmul_bias_relu(m, k, n):
    a, w, o = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{m}x{n}xf32>"
    mlir = f"""func.func @matmul_bias_relu(%a: {a}, %w: {w}, %b: tensor<{n}xf32>) -> {o} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : {o}
  %f = linalg.fill ins(%zero : f32) outs(%e : {o}) -> {o}
  %mm = linalg.matmul ins(%a, %w : {a}, {w}) outs(%f : {o}) -> {o}
  %y = linalg.generic {{indexing_maps = [{ID2}, {ROW2}, {ID2}], iterator_types = ["parallel", "parallel"]}} ins(%mm, %b : {o}, tensor<{n}xf32>) outs(%e : {o}) {{
  ^bb0(%v: f32, %bv: f32, %out: f32):
    %s = arith.addf %v, %bv : f32
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %z : f32
    linalg.yield %r : f32
  }} -> {o}
  return %y : {o}
}}
"""
    x = torch.randn(m, k, device="cuda")
    wt = torch.randn(k, n, device="cuda")
    b = torch.randn(n, device="cuda")
    return mlir, lambda: torch.relu(x @ wt + b), (m * k + k * n + m * n) * 4


def conv_block():
    with open("examples/conv_block.mlir") as f:
        mlir = f.read()
    x = torch.randn(16, 64, 58, 58, device="cuda")
    w = torch.randn(128, 64, 3, 3, device="cuda")
    b = torch.randn(128, device="cuda")
    eager = lambda: F.max_pool2d(torch.relu(F.conv2d(x, w) + b[None, :, None, None]), 2)
    return mlir, eager, (x.numel() + w.numel() + 16 * 128 * 28 * 28) * 4


def cases(quick):
    yield "elementwise chain 8192x4096", ew_chain(8192, 4096)
    for c in ([1024, 65536] if quick else [1024, 4096, 16384, 65536]):
        rows = (32 * 1024 * 1024) // c
        yield f"softmax {rows}x{c}", softmax_rows(rows, c)
        yield f"layernorm {rows}x{c}", layernorm_rows(rows, c)
    # Few long rows: the split-row plans must still fill the GPU.
    yield "layernorm 16x4194304", layernorm_rows(16, 4194304)
    yield "row sum 16384x4096", row_sum(16384, 4096)
    yield "matmul+bias+relu 4096^3", matmul_bias_relu(4096, 4096, 4096)
    yield "conv+bias+relu+maxpool (examples/conv_block)", conv_block()


def run_kopt(kopt, mlir):
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(mlir)
        path = f.name
    proc = subprocess.run([kopt, "plan", "--run", path], capture_output=True,
                          text=True, timeout=900)
    os.unlink(path)
    results = [json.loads(line.split(" ", 1)[1]) for line in
               proc.stderr.splitlines() if line.startswith("KOPT-RESULT ")]
    return proc, results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kopt", default="dist/bin/kopt")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    out = os.environ.get("OUT", ".")
    device = torch.cuda.get_device_name(0)
    bw = copy_bandwidth()
    print(f"device {device}; copy bandwidth {bw / 1e12:.2f} TB/s (read+write); "
          f"L2 {L2_BYTES >> 20} MiB")
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
              "device": device, "copy_bandwidth_bytes_per_s": bw,
              "command": "python3 bench/codegen_bench.py " + " ".join(sys.argv[1:]),
              "torch": torch.__version__, "cases": []}
    rows = []
    failures = 0
    for name, (mlir, eager, traffic) in cases(args.quick):
        proc, results = run_kopt(args.kopt, mlir)
        eager_median, eager_min = time_us(eager)
        if proc.returncode != 0 or not results:
            failures += 1
            print(f"FAILED {name}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        case = {"name": name, "traffic_bytes": traffic, "eager_median_us": eager_median,
                "eager_min_us": eager_min, "kopt_exit": proc.returncode,
                "plans": results, "kopt_table": proc.stdout}
        report["cases"].append(case)
        # Whole-graph totals per proposer: the sum of each group's best
        # valid plan (baseline: its only plan).
        totals = {}
        for r in results:
            if not r["valid"]:
                continue
            key = (r["group"], r["proposer"])
            totals[key] = min(totals.get(key, float("inf")), r["median_us"])
        base = sum(v for (g, p), v in totals.items() if p == "baseline")
        groups = {g for (g, p) in totals}
        best = sum(min(v for (g2, p), v in totals.items() if g2 == g) for g in groups)
        invalid = [f'{r["proposer"]} {r["variant"]}' for r in results if not r["valid"]]
        rows.append((name, base, best, eager_median, traffic, invalid))
        case.update({"baseline_total_us": base, "best_total_us": best})
    print()
    header = (f"{'case':44} {'baseline us':>11} {'best us':>9} {'eager us':>9} "
              f"{'best GB/s':>9} {'% copy':>7} {'best/base':>9} {'base/eager':>10}")
    print(header)
    lines = [header]
    for name, base, best, eager, traffic, invalid in rows:
        gbs = traffic / (best * 1e-6) / 1e9 if best else 0
        line = (f"{name:44} {base:11.1f} {best:9.1f} {eager:9.1f} {gbs:9.0f} "
                f"{100 * gbs * 1e9 / bw:6.0f}% {base / best if best else 0:8.2f}x "
                f"{base / eager if eager else 0:9.2f}x")
        if invalid:
            line += "  INVALID: " + ", ".join(invalid)
        print(line)
        lines.append(line)
    with open(os.path.join(out, "codegen-bench.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(out, "codegen-bench.md"), "w") as f:
        f.write(f"# Code generation benchmark\n\n- date: {report['date']}\n"
                f"- device: {device}, torch {torch.__version__}\n"
                f"- command: `{report['command']}` (from scripts/gpu-check)\n"
                f"- copy bandwidth (read+write): {bw / 1e12:.2f} TB/s\n\n"
                "best = the fastest valid plan per group (built-in or baseline), "
                "summed over groups; % copy = traffic / best time over copy "
                "bandwidth; base/eager = kopt baseline over PyTorch eager.\n\n```\n"
                + "\n".join(lines) + "\n```\n")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
