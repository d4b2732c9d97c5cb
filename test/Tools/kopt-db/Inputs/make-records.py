#!/usr/bin/env python3
# ===- make-records.py - Kernel records as JSON lines ----------*- Python -*-===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Writes kernel records and attempts in the format of `kopt db export`, for
# the kopt db tests. Task keys are the SHA-256 of `<label>-<index>`, so two
# runs with the same label describe the same tasks.
#
# ===----------------------------------------------------------------------===#

import argparse
import hashlib
import json
import sys


def task_key(label, index):
    return hashlib.sha256(f"{label}-{index}".encode()).hexdigest()


def fingerprint(args):
    return {
        "compute_capability": args.cc,
        "sm_count": 132,
        "memory_bandwidth_mbps": 4800000,
        "l2_bytes": 52428800,
        "driver_version": args.driver,
        "nvrtc_version": args.nvrtc,
        "codegen_version": "1",
        "precision": "fp32",
    }


def plan(key, proposer):
    return {
        "schema": "kopt.plan/1",
        "task_key": key,
        "proposer": proposer,
        "variant": "v1",
        "sources": [{"id": "main", "code": "extern \"C\" __global__ void k() {}"}],
        "steps": [
            {
                "kind": "launch",
                "source": "main",
                "entry": "k",
                "grid": ["1", "1", "1"],
                "block": ["128", "1", "1"],
                "args": [],
            }
        ],
    }


def times(median):
    return {
        "median_ms": median,
        "min_ms": median * 0.5,
        "p10_ms": median * 0.75,
        "p90_ms": median * 1.25,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--label", default="task")
    parser.add_argument("--first", type=int, default=0, help="first index")
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--median", type=float, default=0.5,
                        help="the first record's winner median in ms")
    parser.add_argument("--proposer", default="builtin")
    parser.add_argument("--cc", default="sm_90")
    parser.add_argument("--driver", default="12.4")
    parser.add_argument("--nvrtc", default="12.4")
    parser.add_argument("--invalid", action="store_true")
    parser.add_argument("--time", type=int, default=1700000000,
                        help="created and updated time; 0 leaves it to kopt")
    parser.add_argument("--cubin-bytes", type=int, default=64)
    parser.add_argument("--bad-hash", action="store_true",
                        help="store a cubin hash that does not match")
    parser.add_argument("--attempts", type=int, default=1,
                        help="failed attempts per record")
    args = parser.parse_args()

    out = sys.stdout
    for i in range(args.first, args.first + args.count):
        key = task_key(args.label, i)
        median = round(args.median * (1 + 0.25 * (i - args.first)), 6)
        record = {
            "task_key": key,
            "fingerprint": fingerprint(args),
            "valid": not args.invalid,
            "plan": plan(key, args.proposer),
            "winner": times(median),
            "baseline": times(median * (2 + 0.5 * (i - args.first))),
            "validation": {"inputs_tried": 5, "max_abs_error": 1e-06},
            "provenance": {"proposer": args.proposer, "model": "",
                           "prompt_hash": "", "round": 0},
        }
        if args.cubin_bytes:
            cubin = bytes((i + j) % 251 for j in range(args.cubin_bytes))
            record["cubin"] = cubin.hex()
            if args.bad_hash:
                record["cubin_hash"] = "0000000000000000"
        record["ptx"] = f".version 8.0 // {key}\n".encode().hex()
        if args.time:
            record["created_at"] = args.time
            record["updated_at"] = args.time
        out.write(json.dumps({"type": "kernel", "record": record}) + "\n")
        for a in range(args.attempts):
            attempt = {
                "task_key": key,
                "fingerprint": fingerprint(args),
                "plan": plan(key, args.proposer),
                "proposer": args.proposer,
                "valid": False,
                "failed_check": "output-mismatch",
                "feedback": {"max_abs_error": 3.0, "attempt": a},
                "time": args.time,
            }
            out.write(json.dumps({"type": "attempt", "attempt": attempt}) + "\n")


if __name__ == "__main__":
    main()
