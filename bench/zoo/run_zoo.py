#!/usr/bin/env python3
# ===- run_zoo.py - The model zoo on the GPU: eager, kopt and fp64 ---------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# For each export of the model zoo (test/Inputs/zoo, docs/ModelZoo.md):
# builds the same PyTorch model (scripts/model_zoo.py) with seeded random
# weights on the GPU, runs it in eager fp32 with TF32 off, in fp64
# (model.double(), fp64 inputs) as the reference, and through the kopt
# runtime module emitted beforehand by bench/zoo/prepare.sh, bound with
# kopt.runtime to the very same torch tensors (inputs, then weights, in the
# order of the export's NAME.json). Prints a markdown table: eager and kopt
# time (median of --reps runs after --warmup, CUDA events on one stream,
# synchronised after each), and each one's error against fp64.
#
# A dynamic-batch export (NAME_dynbatch, prepare.sh compiles it with
# --tune-shapes) gets one row per size of --batches (1, 3 and 8: a tuned
# size, and sizes run as chunks of the tuned ones): the same model and
# module, its weights bound once, the inputs made at each size, the
# module's batch set by kopt.runtime from their leading dimension.
#
# Errors: abs = max |y - ref|, rel = abs / max |ref|. The verdict is PASS
# when kopt's abs error is at most 4x eager's plus 1e-6 * max |ref| (about
# 8 fp32 ulps of the largest value), and both outputs are finite; FAIL
# otherwise, or when the module does not fit the model's arguments or
# fails to load or run. A model whose module prepare.sh could not emit is
# reported as "not emitted: <kopt's first error line>".
#
# Usage (on the GPU machine, from the repository root, after prepare.sh):
#
#   PYTHONPATH=python python3 bench/zoo/run_zoo.py --modules DIR [--db DB]
#       [--only STEM]... [--graph] [--batches 1,3,8] [--markdown FILE]
#       [--strict]
#
# Exit status: 1 when a model FAILs (with --strict, also when one was not
# emitted), else 0. `--device cpu` runs eager against fp64 only, to try
# the script without a GPU; `--dry-run` also binds and runs the modules
# through kopt.runtime, over a libkoptrt whose GPU calls do nothing.
#
# ===----------------------------------------------------------------------===#

import argparse
import copy
import math
import os
import statistics
import sys
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "python"))

import torch  # noqa: E402

import manifest as zoo_manifest  # noqa: E402
from model_zoo import EXPORTS, MODELS, weight_names  # noqa: E402

# kopt's error may be this many times eager's, plus FLOOR * max |ref|.
FACTOR = 4.0
FLOOR = 1e-6


def first_error_line(log):
    """kopt's first error line in a compile log, without its prefix (or the
    folders of the file it names)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    errors = ([line for line in lines if ": error:" in line] or
              [line for line in lines if "error" in line] or lines)
    if not errors:
        return "kopt wrote no message"
    line = errors[0].split("kopt: error: ", 1)[-1]
    line = os.path.basename(line.split(" ", 1)[0]) + (
        " " + line.split(" ", 1)[1] if " " in line else "")
    return line if len(line) <= 200 else line[:197] + "..."


def module_state(modules_dir, stem):
    """(path of the module, None) or (None, why there is none)."""
    path = os.path.join(modules_dir, f"{stem}.kmod")
    if os.path.isfile(path):
        return path, None
    log = os.path.join(modules_dir, f"{stem}.compile.log")
    if os.path.isfile(log):
        with open(log, errors="replace") as f:
            return None, "not emitted: " + first_error_line(f.read())
    return None, "no module (run bench/zoo/prepare.sh)"


def build(model_name, batch, device, seed):
    """The model with seeded random weights and its example inputs, both
    made on `device`."""
    make_model, make_inputs, _ = MODELS[model_name]
    torch.manual_seed(seed)
    # Weights and inputs are made on `device` directly, by its generator.
    with torch.device(device):
        model = make_model().eval()
        inputs = make_inputs(batch) if batch else make_inputs()
    return model, tuple(inputs)


def arguments_of(model, inputs, manifest):
    """The export's arguments as the model's own tensors, checked against
    its manifest: inputs, then parameters and buffers by name."""
    names = weight_names(model)
    state = dict(model.named_parameters())
    state.update(model.named_buffers())
    tensors = list(inputs) + [state[n].detach() for n in names]
    entries = manifest["arguments"]
    if len(tensors) != len(entries):
        raise ValueError(f"the model has {len(tensors)} arguments, the "
                         f"export {len(entries)}")
    for i, (tensor, entry) in enumerate(zip(tensors, entries)):
        name = names[i - len(inputs)] if i >= len(inputs) else entry["name"]
        # A dynamic batch (null) takes the tensor's own.
        want = [tensor.shape[0] if s is None else s for s in entry["shape"]]
        dtype = str(tensor.dtype).split(".")[-1]
        if (name != entry["name"] or list(tensor.shape) != want or
                dtype != entry["dtype"]):
            raise ValueError(f"argument {i} is '{name}' {dtype}"
                             f"{list(tensor.shape)}, the export's "
                             f"'{entry['name']}' {entry['dtype']}{want}")
    return tensors


def save_weights(args, stem, tensors, num_inputs):
    """With --save-weights, writes the weight arguments as
    DIR/STEM/argN.npy (N counts the inputs too), for `kopt check-module
    --input-dir`: drawn stand-ins for them (a negative running variance)
    give a NaN reference."""
    if not args.save_weights:
        return
    import numpy
    folder = os.path.join(args.save_weights, stem)
    os.makedirs(folder, exist_ok=True)
    for i, tensor in enumerate(tensors[num_inputs:], start=num_inputs):
        numpy.save(os.path.join(folder, f"arg{i}.npy"),
                   tensor.detach().cpu().contiguous().numpy())


def error_vs(output, reference):
    """(max abs error, max abs error / max |reference|)."""
    output = output.double()
    if not bool(torch.isfinite(output).all()):
        return math.inf, math.inf
    abs_error = float((output - reference).abs().max())
    scale = float(reference.abs().max())
    return abs_error, abs_error / scale if scale > 0 else abs_error


def time_ms(fn, device, warmup, reps):
    """Median milliseconds of `fn` over `reps` runs after `warmup` runs,
    each between two CUDA events on the current stream and synchronised."""
    for _ in range(warmup):
        fn()
    if device.type != "cuda":
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)
    torch.cuda.synchronize(device)
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def bound_module(path, db, tensors, num_inputs, device):
    """The module at `path` loaded with kopt.runtime, its weights (`tensors`
    after the first `num_inputs`) bound once."""
    import kopt.runtime as rt

    module = rt.Module(path, device=device.index or 0, db=db)
    try:
        if len(module.inputs) != len(tensors):
            raise ValueError(f"the module takes {len(module.inputs)} "
                             f"inputs, the export has {len(tensors)}")
        names = [info.name for info in module.inputs]
        module.bind(dict(zip(names[num_inputs:], tensors[num_inputs:])))
    except Exception:
        module.close()
        raise
    return module


def run_kopt(module, inputs, device, args, row):
    """Runs the module on `inputs` (at their batch, for a dynamic one) and
    fresh outputs, then times it on those; returns its first output."""
    outputs = module.run(inputs)
    row["kopt_batch"] = module.batch
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    output = outputs[0].clone()
    row["kopt_ms"] = time_ms(lambda: module.run(inputs, outputs), device,
                             args.warmup, args.reps)
    if args.graph:
        module.set_graph_capture(True)
        row["kopt_graph_ms"] = time_ms(lambda: module.run(inputs, outputs),
                                       device, args.warmup, args.reps)
        module.set_graph_capture(False)
    return output


def eager_vs_fp64(model, inputs, device, args, row):
    """Runs the model in fp64 (the reference, returned) and in eager fp32,
    timed; fills the row's eager figures."""
    model64 = copy.deepcopy(model).double()
    reference = model64(*[
        t.double() if t.is_floating_point() else t for t in inputs
    ])
    del model64
    eager = model(*inputs)
    row["eager_abs"], row["eager_rel"] = error_vs(eager, reference)
    row["eager_ms"] = time_ms(lambda: model(*inputs), device, args.warmup,
                              args.reps)
    return reference


def judge(row, output, reference, dry_run):
    """The row's verdict: kopt's output against fp64 and eager's error
    (in a dry run, its shape alone)."""
    if tuple(output.shape) != tuple(reference.shape):
        return (f"FAIL: kopt's output is {list(output.shape)}, eager's "
                f"{list(reference.shape)}")
    if dry_run:
        batch = row.get("kopt_batch")
        return ("dry run: bound and run through kopt.runtime" +
                (f" at batch {batch}" if batch else "") +
                "; outputs not computed")
    row["kopt_abs"], row["kopt_rel"] = error_vs(output, reference)
    scale = float(reference.abs().max())
    bound = FACTOR * row["eager_abs"] + FLOOR * scale
    if not math.isfinite(bound):
        return "FAIL: eager's output is not finite"
    if row["kopt_abs"] <= bound:
        return "PASS"
    return f"FAIL: error {row['kopt_abs']:.2e} > {bound:.2e}"


def module_or_reason(stem, device, args):
    path, why = module_state(args.modules, stem)
    if path and device.type != "cuda" and not args.dry_run:
        path, why = None, "kopt needs a CUDA device"
    return path, why


def run_one(stem, model_name, args, device):
    """One row: a static export."""
    row = {"model": stem}
    manifest = zoo_manifest.load(stem)
    path, why = module_or_reason(stem, device, args)
    model, inputs = build(model_name, None, device, args.seed)
    tensors = arguments_of(model, inputs, manifest)
    save_weights(args, stem, tensors, len(inputs))
    with torch.inference_mode():
        reference = eager_vs_fp64(model, inputs, device, args, row)
        if path is None:
            row["verdict"] = why
            return [row]
        try:
            module = bound_module(path, args.db, tensors, len(inputs),
                                  device)
            try:
                output = run_kopt(module, inputs, device, args, row)
            finally:
                module.close()
        except Exception as error:  # noqa: BLE001 - reported in the table
            row["verdict"] = "FAIL: " + str(error).splitlines()[0]
            return [row]
        row["verdict"] = judge(row, output, reference, args.dry_run)
    return [row]


def run_batches(stem, model_name, args, device):
    """One row per batch size of --batches: a dynamic-batch export, its
    one module run through kopt.runtime at each size (the batch set from
    the inputs' leading dimension), the weights bound once."""
    manifest = zoo_manifest.load(stem)
    path, why = module_or_reason(stem, device, args)
    model, inputs = build(model_name, args.batches[0], device, args.seed)
    tensors = arguments_of(model, inputs, manifest)
    save_weights(args, stem, tensors, len(inputs))
    make_inputs = MODELS[model_name][1]
    rows, module = [], None
    try:
        for batch in args.batches:
            row = {"model": f"{stem}, batch {batch}"}
            rows.append(row)
            torch.manual_seed(args.seed + batch)
            with torch.device(device):
                inputs = tuple(make_inputs(batch))
            with torch.inference_mode():
                reference = eager_vs_fp64(model, inputs, device, args, row)
                if path is None:
                    row["verdict"] = why
                    continue
                try:
                    if module is None:
                        module = bound_module(path, args.db, tensors,
                                              len(inputs), device)
                    output = run_kopt(module, inputs, device, args, row)
                except Exception as error:  # noqa: BLE001 - in the table
                    row["verdict"] = "FAIL: " + str(error).splitlines()[0]
                    continue
                row["verdict"] = judge(row, output, reference, args.dry_run)
    finally:
        if module is not None:
            module.close()
    return rows


def markdown(rows, graph):
    def ms(value):
        return f"{value:.3f}" if value is not None else "-"

    def err(row, who):
        if row.get(f"{who}_abs") is None:
            return "-"
        return f"{row[f'{who}_abs']:.2e} / {row[f'{who}_rel']:.2e}"

    head = ["model", "eager ms", "kopt ms"] + (["kopt graph ms"]
                                              if graph else [])
    head += ["eager err vs fp64 (abs / rel)", "kopt err vs fp64 (abs / rel)",
             "verdict"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    for row in rows:
        cells = [row["model"], ms(row.get("eager_ms")), ms(row.get("kopt_ms"))]
        if graph:
            cells.append(ms(row.get("kopt_graph_ms")))
        cells += [err(row, "eager"), err(row, "kopt"),
                  row["verdict"].replace("|", "\\|")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(
        description="Run the model zoo in PyTorch eager and as kopt runtime "
        "modules, both against an fp64 run.")
    parser.add_argument("--modules", default="zoo-modules",
                        help="folder of STEM.kmod and STEM.compile.log "
                        "(bench/zoo/prepare.sh)")
    parser.add_argument("--db", help="kernel database, for modules whose "
                        "plans are references")
    parser.add_argument("--only", action="append", default=[],
                        help="run only this export (repeatable)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--graph", action="store_true",
                        help="also time kopt through a CUDA graph")
    parser.add_argument("--batches", default="1,3,8",
                        help="the batch sizes a dynamic-batch export runs "
                        "at, one row each (default: 1,3,8)")
    parser.add_argument("--markdown", help="also write the table here")
    parser.add_argument("--save-weights", metavar="DIR",
                        help="write each model's weights as "
                        "DIR/STEM/argN.npy, for kopt check-module "
                        "--input-dir")
    parser.add_argument("--strict", action="store_true",
                        help="fail when a module was not emitted")
    parser.add_argument("--dry-run", action="store_true",
                        help="on the CPU, without a GPU: the modules run "
                        "through kopt.runtime over a libkoptrt whose GPU "
                        "calls do nothing (bench/torch_backend/stub.py)")
    args = parser.parse_args()
    try:
        args.batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        parser.error(f"--batches: '{args.batches}' is not a list of sizes")
    if not args.batches or min(args.batches) <= 0:
        parser.error("--batches: the sizes must be positive")
    stems = {stem for stem, *_ in EXPORTS}
    unknown = set(args.only) - stems
    if unknown:
        parser.error(f"unknown export(s): {', '.join(sorted(unknown))}")

    if args.dry_run:
        sys.path.insert(0, os.path.join(REPO, "bench", "torch_backend"))
        import stub
        stub.install()
        args.device = "cpu"
        args.warmup, args.reps = min(args.warmup, 1), min(args.reps, 2)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit(f"run_zoo.py: torch {torch.__version__} sees no CUDA device "
                 "(--device cpu compares eager with fp64 alone)")
    # fp32 means fp32: no TF32 in eager's matmuls and convolutions.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    stream = torch.cuda.Stream(device) if device.type == "cuda" else None
    print(f"torch {torch.__version__}, device {device}"
          + (f" ({torch.cuda.get_device_name(device)})" if stream else ""),
          flush=True)

    rows = []
    for stem, model_name, _, dynamic_batch in EXPORTS:
        if args.only and stem not in args.only:
            continue
        started = time.time()
        run = run_batches if dynamic_batch else run_one
        try:
            # One non-default stream: eager, kopt and the events share it.
            if stream is not None:
                with torch.cuda.stream(stream):
                    found = run(stem, model_name, args, device)
            else:
                found = run(stem, model_name, args, device)
        except Exception as error:  # noqa: BLE001 - reported in the table
            traceback.print_exc()
            found = [{"model": stem,
                      "verdict": "FAIL: " + (str(error).splitlines() or
                                             [type(error).__name__])[0]}]
        for row in found:
            print(f"{row['model']}: {row['verdict']}", flush=True)
        print(f"({time.time() - started:.1f} s)", flush=True)
        rows += found
        if device.type == "cuda":
            torch.cuda.empty_cache()

    table = markdown(rows, args.graph)
    print()
    print(table)
    print(f"\nPASS: kopt's max abs error <= {FACTOR:g} x eager's + "
          f"{FLOOR:g} x max |fp64|; rel = abs / max |fp64|; times: median "
          f"of {args.reps} after {args.warmup} warm-up runs")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")
    failed = [r for r in rows if r["verdict"].startswith("FAIL")]
    dry = [r for r in rows if r["verdict"].startswith("dry run")]
    missing = [r for r in rows if not r["verdict"].startswith(("PASS",
                                                                "FAIL",
                                                                "dry run"))]
    print(f"{len(rows) - len(failed) - len(missing) - len(dry)} passed, "
          f"{len(failed)} failed, {len(missing)} without a module" +
          (f", {len(dry)} dry runs" if dry else ""))
    return 1 if failed or (args.strict and missing) else 0


if __name__ == "__main__":
    sys.exit(main())
