#!/usr/bin/env python3
# ===- run_backend.py - torch.compile(backend="kopt") on real models -------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# ResNet-18, a BERT-base layer and a LLaMA-style block (scripts/model_zoo.py,
# seeded random weights) through torch.compile with the kopt backend and a
# warm kernel database, against eager PyTorch and torch.compile with
# Inductor: each one's max error against an fp64 run of the model (abs, and
# relative to max |fp64|), and its median time per call (CUDA events on one
# stream, synchronised after each call: bench/zoo/run_zoo.py's time_ms, the
# same method for all three), plus the kopt backend's first-call compile
# time and the database's hits. Then what a call costs the host through
# each layer (overhead.py). TF32 is off: fp32 means fp32 everywhere.
#
# How graphs reach kopt (--import): `fx` imports Dynamo's graph with
# torch-mlir's FX importer (the backend's default); `zoo` reads the graph
# exported beforehand, test/Inputs/zoo/NAME.mlir with its argument
# manifest NAME.json (preexported.py), for machines where torch-mlir is not
# installed; `auto` (default) takes `fx` when torch_mlir imports, else
# `zoo`. Both go through torch.compile, the backend, `kopt compile` and
# kopt.runtime alike.
#
# A model kopt cannot compile is listed as "not compiled: <reason>" (the
# backend runs with fallback=False, so nothing is timed under kopt's name
# that ran eagerly). PASS: kopt's abs error <= 4 x eager's + 1e-6 x
# max |fp64| (run_zoo.py's bound).
#
# Usage (on the GPU machine, from the repository root):
#
#   kopt warm test/Inputs/zoo/{resnet18,bert_base_layer,llama_block}.mlir \
#       --db DB                                   # or --tune missing once
#   PYTHONPATH=python python3 bench/torch_backend/run_backend.py --db DB \
#       --markdown bench/results/DATE-h200-torch-backend.md
#
# --dry-run runs on the CPU without a GPU: everything but the kernels (the
# models, fp64 and eager, the backend with the real kopt tool, kopt.runtime
# over a libkoptrt whose GPU calls do nothing (stub.py), the timing
# loops), without Inductor. KOPT_TOOL and KOPT_RUNTIME_LIBRARY say where
# kopt and libkoptrt are (docs/Python.md).
#
# Exit status: 1 when a model FAILs or the script breaks; with --strict, also
# when one is not compiled.
#
# ===----------------------------------------------------------------------===#

import argparse
import atexit
import copy
import importlib.util
import json
import math
import os
import shutil
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench", "zoo"))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "python"))

import torch  # noqa: E402

import kopt.dynamo as kd  # noqa: E402
import overhead  # noqa: E402
import preexported  # noqa: E402
from run_zoo import FACTOR, FLOOR, build, error_vs, time_ms  # noqa: E402

MODELS = ["resnet18", "bert_base_layer", "llama_block"]
ZOO = os.path.join(REPO, "test", "Inputs", "zoo")


def make_backend_factory(args):
    """(stem, model, inputs) -> the kopt Backend for one model."""

    def make(stem, model, inputs):
        importer = None
        if args.import_mode == "zoo":
            folder = HERE if stem == overhead.STEM else ZOO
            importer = preexported.importer(stem, folder, model, inputs)
        return kd.Backend(
            kd.Options(db=args.db, tune=args.tune, budget=args.budget,
                       precision="fp32", fallback=False, importer=importer,
                       work_dir=args.work_dir))

    return make


def compile_error(error):
    """The CompileError in an exception's chain (Dynamo wraps a backend's
    errors), or None."""
    while error is not None:
        if isinstance(error, kd.CompileError):
            return error
        error = getattr(error, "inner_exception", None) or error.__cause__
    return None


def run_kopt(model, inputs, make_backend, stem, args, device, row):
    """The kopt backend's output on `inputs` (None when it did not
    compile), its first-call seconds, database hits and time."""
    backend = make_backend(stem, model, inputs)
    compiled = torch.compile(model, backend=backend, fullgraph=True,
                             dynamic=False)
    started = time.perf_counter()
    try:
        output = compiled(*inputs)
    except Exception as error:  # noqa: BLE001 - reported in the table
        reason = compile_error(error)
        if reason is None:
            raise
        row["verdict"] = f"not compiled: {reason.reason}"
        return None
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    row["kopt_compile_s"] = time.perf_counter() - started
    totals = backend.graphs[0].totals or {}
    row["kopt_groups"], row["kopt_hits"] = (totals.get("groups"),
                                            totals.get("hits"))
    row["kopt_ms"] = time_ms(lambda: compiled(*inputs), device, args.warmup,
                             args.reps)
    return output


def run_inductor(model, inputs, device, args, row):
    compiled = torch.compile(model, backend="inductor", fullgraph=True)
    started = time.perf_counter()
    output = compiled(*inputs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    row["inductor_compile_s"] = time.perf_counter() - started
    row["inductor_ms"] = time_ms(lambda: compiled(*inputs), device,
                                 args.warmup, args.reps)
    return output


def run_one(name, args, device, make_backend):
    row = {"model": name}
    model, inputs = build(name, None, device, args.seed)
    model64 = copy.deepcopy(model).double()
    torch._dynamo.reset()
    with torch.inference_mode():
        reference = model64(*[
            t.double() if t.is_floating_point() else t for t in inputs
        ])
        del model64
        scale = float(reference.abs().max())
        eager = model(*inputs)
        row["eager_abs"], row["eager_rel"] = error_vs(eager, reference)
        row["eager_ms"] = time_ms(lambda: model(*inputs), device, args.warmup,
                                  args.reps)
        if not args.no_inductor:
            output = run_inductor(model, inputs, device, args, row)
            row["inductor_abs"], row["inductor_rel"] = error_vs(
                output, reference)
        output = run_kopt(model, inputs, make_backend, name, args, device,
                          row)
        if output is None:
            return row
        row["kopt_abs"], row["kopt_rel"] = error_vs(output, reference)
    if args.dry_run:
        row["verdict"] = "dry run: compiled and bound; outputs not computed"
        return row
    bound = FACTOR * row["eager_abs"] + FLOOR * scale
    if not math.isfinite(bound):
        row["verdict"] = "FAIL: eager's output is not finite"
    elif row["kopt_abs"] <= bound:
        row["verdict"] = "PASS"
    else:
        row["verdict"] = f"FAIL: error {row['kopt_abs']:.2e} > {bound:.2e}"
    return row


def markdown(rows):

    def ms(row, key):
        value = row.get(key)
        return f"{value:.3f}" if value is not None else "-"

    def err(row, who):
        if row.get(f"{who}_abs") is None:
            return "-"
        return f"{row[f'{who}_abs']:.2e} / {row[f'{who}_rel']:.2e}"

    head = ["model", "eager ms", "inductor ms", "kopt ms",
            "eager err (abs / rel)", "inductor err", "kopt err",
            "kopt first call s", "db hits", "verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        hits = ("-" if row.get("kopt_groups") is None else
                f"{row.get('kopt_hits')}/{row['kopt_groups']}")
        first = row.get("kopt_compile_s")
        cells = [row["model"], ms(row, "eager_ms"), ms(row, "inductor_ms"),
                 ms(row, "kopt_ms"), err(row, "eager"),
                 err(row, "inductor"), err(row, "kopt"),
                 f"{first:.1f}" if first is not None else "-", hits,
                 row["verdict"].replace("|", "\\|")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args():
    parser = argparse.ArgumentParser(
        description="ResNet-18, BERT-base and LLaMA blocks through "
        "torch.compile(backend='kopt') against eager and Inductor.")
    parser.add_argument("--db", help="the (warm) kernel database; default: "
                        "the backend's per-user one")
    parser.add_argument("--tune", default="never",
                        choices=["never", "missing"])
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--import", dest="import_mode", default="auto",
                        choices=["auto", "fx", "zoo"])
    parser.add_argument("--only", action="append", default=[],
                        choices=MODELS)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--overhead-calls", type=int, default=1000)
    parser.add_argument("--overhead-rounds", type=int, default=15)
    parser.add_argument("--no-inductor", action="store_true")
    parser.add_argument("--no-overhead", action="store_true")
    parser.add_argument("--work-dir", help="keep each graph's MLIR, module "
                        "and kopt log here")
    parser.add_argument("--markdown", help="also write the report here")
    parser.add_argument("--json", help="also write the results as JSON")
    parser.add_argument("--strict", action="store_true",
                        help="fail when a model is not compiled")
    parser.add_argument("--dry-run", action="store_true",
                        help="on the CPU, without a GPU: no kernels run")
    parser.add_argument("--export-tiny", action="store_true",
                        help="write overhead.py's tiny.mlir and tiny.json "
                        "with torch-mlir, and exit")
    args = parser.parse_args()
    if args.dry_run:
        args.device = "cpu"
        args.no_inductor = True
        args.warmup, args.reps = 1, 2
        args.overhead_calls, args.overhead_rounds = 20, 3
    if args.import_mode == "auto":
        args.import_mode = ("fx" if importlib.util.find_spec("torch_mlir")
                            else "zoo")
    return args


def main():
    args = parse_args()
    if args.export_tiny:
        overhead.export_tiny()
        return 0
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit(f"run_backend.py: torch {torch.__version__} sees no CUDA "
                 "device (--dry-run runs without one)")
    if args.dry_run:
        import stub
        stub.install()
    if args.db is None and args.dry_run:
        scratch = tempfile.mkdtemp(prefix="kopt-dry-")
        atexit.register(shutil.rmtree, scratch, True)
        args.db = os.path.join(scratch, "kernels.db")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    stream = torch.cuda.Stream(device) if device.type == "cuda" else None
    print(f"torch {torch.__version__}, device {device}" +
          (f" ({torch.cuda.get_device_name(device)})" if stream else "") +
          f", import {args.import_mode}, db {args.db or kd.default_db_path()}"
          f", tune {args.tune}" + (", DRY RUN" if args.dry_run else ""),
          flush=True)
    make_backend = make_backend_factory(args)

    def on_stream(fn, *fn_args):
        # One non-default stream: every path and the events share it.
        if stream is None:
            return fn(*fn_args)
        with torch.cuda.stream(stream):
            return fn(*fn_args)

    rows, broken = [], False
    for name in args.only or MODELS:
        started = time.time()
        try:
            row = on_stream(run_one, name, args, device, make_backend)
        except Exception as error:  # noqa: BLE001 - reported in the table
            traceback.print_exc()
            broken = True
            row = {"model": name, "verdict": "FAIL: " + (
                str(error).splitlines() or [type(error).__name__])[0]}
        print(f"{name}: {row['verdict']} ({time.time() - started:.1f} s)",
              flush=True)
        rows.append(row)
        if device.type == "cuda":
            torch.cuda.empty_cache()

    report = markdown(rows)
    cost = None
    if not args.no_overhead:
        torch._dynamo.reset()
        try:
            cost = on_stream(overhead.measure, device, make_backend, args,
                             lambda line: print(line, file=sys.stderr))
            report += "\n\n" + overhead.markdown(cost)
        except Exception:  # noqa: BLE001 - reported, and the exit status
            traceback.print_exc()
            broken = True
            report += "\n\nThe overhead measurement failed (see the log)."
    report += (f"\n\nPASS: kopt's max abs error <= {FACTOR:g} x eager's + "
               f"{FLOOR:g} x max |fp64|; err: abs / (abs / max |fp64|); "
               f"times: median of {args.reps} calls after {args.warmup} "
               "warm-up calls, CUDA events, one stream; TF32 off; import "
               f"{args.import_mode}; tune {args.tune}.")
    print()
    print(report)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"schema": "kopt.torch-backend-bench/1",
                       "torch": torch.__version__, "device": str(device),
                       "import": args.import_mode, "tune": args.tune,
                       "dry_run": args.dry_run, "models": rows,
                       "overhead": cost}, f, indent=1)
            f.write("\n")
    failed = broken or any(r["verdict"].startswith("FAIL") for r in rows)
    missing = any(r["verdict"].startswith("not compiled") for r in rows)
    return 1 if failed or (args.strict and missing) else 0


if __name__ == "__main__":
    sys.exit(main())
