#!/usr/bin/env python3
# ===- make-replay-entries.py - Kernel DB entries from kopt plan output ---===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Writes kernel database entries, as `kopt db export` writes them, for every
# group that `kopt plan --emit-dir DIR` wrote into DIR: one record (the
# group's first builtin plan, else its baseline plan) and one attempt per
# group, on a made-up device fingerprint. `kopt warm --replay=FILE` then
# stores them instead of tuning, with no GPU: the tests of the warm loop and
# the cache-hit benchmark use it. The times are made up too, fixed per task
# key, so two runs write the same lines.
#
#   kopt plan graphs/*.mlir --emit-dir plans
#   scripts/make-replay-entries.py plans -o entries.jsonl
#   kopt warm graphs --db kopt.db --replay=entries.jsonl
#
# --binary-kb N adds an N KiB made-up cubin to every record, so that each
# replayed task writes that much.
#
# ===----------------------------------------------------------------------===#

import argparse
import hashlib
import json
import os
import sys

# A made-up H200-like device; any fixed fingerprint will do.
FINGERPRINT = {
    "compute_capability": "sm_90",
    "sm_count": 132,
    "memory_bandwidth_mbps": 4800000,
    "l2_bytes": 52428800,
    "driver_version": "13.0",
    "nvrtc_version": "13.0",
    "codegen_version": "1",
    "precision": "fp32",
}

# A fixed time (2026-11-29), so that the attempts of two runs are identical.
TIME = 1795910400


def times(median_ms):
    return {
        "median_ms": median_ms,
        "min_ms": median_ms * 0.95,
        "p10_ms": median_ms * 0.97,
        "p90_ms": median_ms * 1.05,
    }


def pick_plan(group_dir):
    names = sorted(os.listdir(group_dir))
    for proposer in ("builtin", "baseline"):
        for name in names:
            if name.startswith(proposer + "-") and name.endswith(".plan.json"):
                with open(os.path.join(group_dir, name)) as f:
                    return json.load(f)
    return None


def main():
    parser = argparse.ArgumentParser(
        description="Kernel DB entries, as 'kopt db export' writes them, for "
        "the groups of 'kopt plan --emit-dir' folders"
    )
    parser.add_argument("dirs", nargs="+", help="folders written by --emit-dir")
    parser.add_argument("-o", "--output", default="-", help="'-': stdout")
    parser.add_argument("--binary-kb", type=int, default=0)
    args = parser.parse_args()

    out = sys.stdout if args.output == "-" else open(args.output, "w")
    seen = set()
    for root in args.dirs:
        for name in sorted(os.listdir(root)):
            group_dir = os.path.join(root, name)
            if not os.path.isfile(os.path.join(group_dir, "task.json")):
                continue
            plan = pick_plan(group_dir)
            if plan is None:
                continue
            key = plan["task_key"]
            if key in seen:
                continue
            seen.add(key)
            digest = hashlib.sha256(key.encode()).digest()
            baseline_ms = 0.010 + digest[0] / 1000.0
            winner_ms = baseline_ms
            if plan["proposer"] != "baseline":
                winner_ms /= 1.0 + digest[1] / 256.0
            record = {
                "task_key": key,
                "fingerprint": FINGERPRINT,
                "valid": True,
                "plan": plan,
                "winner": times(winner_ms),
                "baseline": times(baseline_ms),
                "validation": {"replayed": True},
                "provenance": {
                    "proposer": plan["proposer"],
                    "model": "",
                    "prompt_hash": "",
                    "round": 0,
                },
                "created_at": TIME,
                "updated_at": TIME,
            }
            if args.binary_kb:
                block = digest * (args.binary_kb * 1024 // len(digest))
                record["cubin"] = block.hex()
            attempt = {
                "task_key": key,
                "fingerprint": FINGERPRINT,
                "plan": plan,
                "proposer": plan["proposer"],
                "valid": True,
                "failed_check": "",
                "feedback": {"replayed": True},
                "time": TIME,
            }
            for line in (
                {"type": "kernel", "record": record},
                {"type": "attempt", "attempt": attempt},
            ):
                out.write(json.dumps(line) + "\n")
    if out is not sys.stdout:
        out.close()
    print(f"make-replay-entries: {len(seen)} tasks", file=sys.stderr)


if __name__ == "__main__":
    main()
