#!/usr/bin/env python3
# ===- bench/suite_merge.py - One table from several suite runs ----------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# The real-sized set does not fit one call of the GPU machine, so it runs in
# parts (`bench/run_suite.py --only ...`), each writing its own JSON. This
# joins them: the rows of every part (a problem measured in several parts
# keeps its last row; a later part's max-autotune result joins an earlier
# row whose max-autotune was skipped), the summaries computed again, and a
# Markdown document that lists every part's command, date and measured
# limits. Every row was still measured side by side within one run. Needs no
# torch.
#
# Usage:
#   python3 bench/suite_merge.py PART.json... --out bench/results/NAME
#   (a PART may be a report this script wrote: its runs and rows join)
#   (writes NAME.json and NAME.md)
#
# ===----------------------------------------------------------------------===#

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite_report import (SET_TITLES, floor_fractions, speedups,  # noqa: E402
                          summarize, table)


def merge_rows(parts):
    rows = {}
    order = []
    for part in parts:
        for row in part["rows"]:
            name = row["name"]
            old = rows.get(name)
            if old is None:
                order.append(name)
                rows[name] = row
                continue
            # A part that only added max-autotune to a problem measured before.
            mine = row.get("max_autotune") or {}
            if "median_ms" in mine and "median_ms" not in (old.get("max_autotune") or {}) \
                    and "median_ms" not in (row.get("eager") or {}):
                old["max_autotune"] = mine
                continue
            rows[name] = row
    merged = [rows[n] for n in order]
    for row in merged:
        row["speedup"] = speedups(row)
        row["floor_fraction"] = floor_fractions(row)
    return merged


def markdown(report):
    out = ["# kopt against PyTorch on the benchmark suite, %d runs joined" % len(report["runs"]),
           "",
           "Each problem's row was measured side by side in one run; the runs are "
           "listed below with their commands and the limits each measured. Times in "
           "ms; `!` marks an output that failed the check against the fp64 "
           "reference. docs/Benchmark.md says how to read the table.", ""]
    for run in report["runs"]:
        lim = run["limits"]
        out.append("- %s, %s (torch %s): `%s`, %d problems, %.0f s; copy %.2f TB/s, "
                   "cuBLAS fp32 %.1f TFLOP/s, floors at %.1f TFLOP/s (%s)" % (
                       run["date"], run["device"], run["torch"], run["command"],
                       run["problems"], run["seconds"], lim["copy_bytes_per_s"] / 1e12,
                       lim["cublas_fp32_flops_per_s"] / 1e12,
                       lim["fp32_peak_flops_per_s"] / 1e12, lim["fp32_peak_source"]))
    out.append("")
    for k, summary in report["summary"].items():
        rows = [r for r in report["rows"] if r["set"] == k]
        out += ["## %s (%d problems)" % (SET_TITLES.get(k, k), len(rows)), "",
                table(rows, summary), ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description="join bench/run_suite.py results")
    ap.add_argument("parts", nargs="+", help="JSON files of bench/run_suite.py")
    ap.add_argument("--out", required=True, help="output path without extension")
    args = ap.parse_args()
    parts = []
    for path in args.parts:
        with open(path) as f:
            parts.append(json.load(f))
    rows = merge_rows(parts)
    sets = [k for k in ("small", "real") if any(r["set"] == k for r in rows)]
    runs = []
    for p in parts:
        # A report this script wrote before brings its own runs.
        if p.get("schema") == "kopt.suite-merged/1":
            runs += p["runs"]
            continue
        runs.append({"date": p["date"], "device": p["device"], "torch": p["torch"],
                     "command": p["command"], "seconds": p.get("seconds", 0),
                     "problems": len(p["rows"]), "limits": p["limits"],
                     "settings": p["settings"]})
    report = {
        "schema": "kopt.suite-merged/1",
        "runs": runs,
        "rows": rows,
        "summary": {k: summarize([r for r in rows if r["set"] == k]) for k in sets},
    }
    with open(args.out + ".json", "w") as f:
        f.write(json.dumps(report, indent=1) + "\n")
    md = markdown(report)
    with open(args.out + ".md", "w") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
