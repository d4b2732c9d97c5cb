#!/usr/bin/env python3
# ===- torchvision-census.py - Every torchvision classifier through kopt --===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# A census of what kopt makes of torchvision's classification models. For
# every model of torchvision.models.list_models(module=torchvision.models)
# (random weights, eval mode, batch 1, the input size its default weights
# were trained at, or the model's own image_size), it exports the model with
# the torch-mlir FX importer to linalg on tensors exactly as
# scripts/export-model-zoo.py exports the zoo (weights as function
# arguments, the same decompositions), then runs on the graph:
#
#   kopt analyze FILE
#   kopt compile FILE -o OUT --db DB --tune=never --emit-module M.kmod
#       --module-arch=none           (no GPU needed)
#   kopt-run M.kmod --list
#
# and prints a markdown table: the model, its input, whether it exported
# (a failure inside torch.export or torch-mlir is named as such: not
# kopt's), its fusion groups, whether its module was emitted and listed,
# whether the rewritten graph was written (when the module was not, by
# `kopt compile` run again without --emit-module), the seconds `kopt
# compile` took, and the first error line. Each export runs in a child
# process; every step has a time limit.
#
# Usage (torch, torchvision and torch-mlir installed, as for the zoo):
#
#   .venv-torch/bin/python scripts/torchvision-census.py \
#       --kopt build/bin/kopt --work /tmp/census [--only alexnet ...]
#
# The work folder keeps, per model, NAME.mlir, the export's log and each
# command's output (NAME.analyze.log, NAME.compile.log, NAME.list.log);
# --reuse takes the exports already there. --table FILE also writes the
# table to FILE. --reference also builds, for each emitted model, the fp64
# reference of every group as the tuner does (kopt-reference-bench --sets
# 1), the check that the interpreter reads every op the model has.
#
# ===----------------------------------------------------------------------===#

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

SCRIPTS = os.path.dirname(os.path.abspath(__file__))


def load_exporter():
    """scripts/export-model-zoo.py as a module, for its wrapper and
    decompositions (its name is not an importable one)."""
    sys.path.insert(0, SCRIPTS)
    spec = importlib.util.spec_from_file_location(
        "export_model_zoo", os.path.join(SCRIPTS, "export-model-zoo.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def input_size(name, model):
    """The model's own image_size (ViT), else the crop size of its default
    weights' transforms (224 for most, 299 for Inception v3, up to 600 for
    EfficientNet-B7)."""
    import torchvision
    size = getattr(model, "image_size", None)
    if size:
        return size
    weights = torchvision.models.get_model_weights(name).DEFAULT
    return weights.transforms().crop_size[0]


def export_one(name, path):
    """Exports one model to `path` (in a child process). Writes
    `path`.status.json: the stage reached (`ok`, `torch.export` or
    `torch-mlir`), the input size and the error's first line."""
    import torch
    import torchvision
    from torch_mlir import fx

    zoo = load_exporter()
    status = {"stage": "build", "input": None, "error": None}

    def save():
        with open(path + ".status.json", "w") as f:
            json.dump(status, f)

    save()
    torch.manual_seed(0)
    model = torchvision.models.get_model(name, weights=None).eval()
    size = input_size(name, model)
    status["input"] = f"1x3x{size}x{size}"
    inputs = (torch.randn(1, 3, size, size),)
    names = zoo.weight_names(model)
    state = dict(model.named_parameters())
    state.update(model.named_buffers())
    weights = tuple(state[n].detach() for n in names)
    wrapper = zoo.WeightsAsArgs(model, len(inputs), names).eval()
    try:
        with torch.no_grad():
            status["stage"] = "torch.export"
            save()
            program = torch.export.export(wrapper, (*inputs, *weights),
                                          strict=False)
            status["stage"] = "torch-mlir"
            save()
            module = fx.export_and_import(
                program, output_type="linalg-on-tensors",
                decomposition_table=zoo.decompositions("linalg-on-tensors"),
                func_name="forward")
    except Exception as e:  # Any failure of the exporters is reported.
        lines = [l for l in str(e).splitlines() if l.strip()]
        status["error"] = (f"{type(e).__name__}: " +
                           (lines[0] if lines else ""))[:300]
        save()
        raise
    with open(path, "w") as f:
        f.write(f"// torchvision {name}, x: [{status['input']}]; "
                f"arguments: the input, then {len(weights)} weights.\n")
        f.write(str(module))
    status["stage"] = "ok"
    save()


def run(command, log, timeout):
    """Runs `command` into `log`; returns (ok, seconds, first error line)."""
    start = time.monotonic()
    with open(log, "w") as out:
        try:
            rc = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT,
                                timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return False, timeout, f"timed out after {timeout} s"
    seconds = time.monotonic() - start
    if rc == 0:
        return True, seconds, ""
    with open(log, errors="replace") as f:
        lines = f.read().splitlines()
    errors = [l for l in lines if "error" in l.lower()] or lines[-1:] or [
        f"exit status {rc}"]
    if rc < 0:
        errors = [f"killed by signal {-rc}: {errors[0]}"]
    return False, seconds, errors[0].strip()


def census_one(name, args):
    """Exports and compiles one model; returns its table row (a dict)."""
    work = args.work
    mlir = os.path.join(work, f"{name}.mlir")
    row = {"model": name, "input": "", "export": "", "groups": "",
           "emit": "", "graph": "", "reference": "", "error": "",
           "seconds": None}
    if not (args.reuse and os.path.exists(mlir)):
        if os.path.exists(mlir):
            os.remove(mlir)
        run([sys.executable, os.path.abspath(__file__), "--export-one", name,
             mlir], os.path.join(work, f"{name}.export.log"),
            args.export_timeout)
    status = {"stage": "build", "input": None, "error": None}
    if os.path.exists(mlir + ".status.json"):
        with open(mlir + ".status.json") as f:
            status = json.load(f)
    row["input"] = status["input"] or ""
    if status["stage"] != "ok" or not os.path.exists(mlir):
        stage = status["stage"]
        row["export"] = f"no ({stage})"
        row["error"] = status["error"] or (
            f"{stage}: died or timed out (see {name}.export.log)")
        return row
    row["export"] = "ok"

    ok, _, error = run([args.kopt, "analyze", mlir],
                       os.path.join(work, f"{name}.analyze.log"),
                       args.timeout)
    with open(os.path.join(work, f"{name}.analyze.log"),
              errors="replace") as f:
        for line in f:
            if line.startswith(mlir + ":") and "fusion group" in line:
                row["groups"] = line.split(":")[-1].split()[0]
                break
    if not ok:
        row["emit"] = "no (analyze)"
        row["error"] = error
        return row

    kmod = os.path.join(work, f"{name}.kmod")
    graph = os.path.join(work, f"{name}.out.mlir")
    for path in (kmod, graph):
        if os.path.exists(path):
            os.remove(path)
    compile_command = [
        args.kopt, "compile", mlir, "-o", graph, "--db",
        os.path.join(work, "kopt.db"), "--tune=never"
    ]
    ok, seconds, error = run(
        compile_command + ["--emit-module", kmod, "--module-arch=none"],
        os.path.join(work, f"{name}.compile.log"), args.timeout)
    row["seconds"] = seconds
    if not ok:
        row["emit"] = "no (compile)"
        row["error"] = error
        # Without --emit-module, the rewritten graph is still written.
        ok, _, _ = run(compile_command,
                       os.path.join(work, f"{name}.graph.log"), args.timeout)
        row["graph"] = "ok" if ok and os.path.exists(graph) else "no"
        return row
    row["graph"] = "ok" if os.path.exists(graph) else "no"
    ok, _, error = run([args.kopt_run, kmod, "--list"],
                       os.path.join(work, f"{name}.list.log"), args.timeout)
    row["emit"] = "ok" if ok else "no (kopt-run --list)"
    row["error"] = error
    if args.reference:
        # The fp64 reference of every group, as the tuner builds it.
        ok, _, error = run([
            os.path.join(os.path.dirname(args.kopt), "kopt-reference-bench"),
            "--sets", "1", "--no-materialise", mlir
        ], os.path.join(work, f"{name}.reference.log"), args.timeout)
        row["reference"] = "ok" if ok else "no"
        row["error"] = row["error"] or error
    return row


def table(rows, reference):
    """The census as a markdown table, with a count of each outcome."""
    columns = ["model", "input", "export", "groups", "module", "graph",
               "compile s"] + (["reference"] if reference else []) + [
                   "first error"]
    lines = ["| " + " | ".join(columns) + " |",
             "|" + " --- |" * len(columns)]
    for r in rows:
        seconds = "" if r["seconds"] is None else f"{r['seconds']:.1f}"
        cells = [r["model"], r["input"], r["export"], r["groups"], r["emit"],
                 r["graph"], seconds] + ([r["reference"]] if reference else
                                         []) + [r["error"]]
        lines.append("| " + " | ".join(c.replace("|", "\\|")
                                         for c in cells) + " |")
    exported = sum(r["export"] == "ok" for r in rows)
    emitted = sum(r["emit"] == "ok" for r in rows)
    summary = (f"{len(rows)} models: {exported} exported, {emitted} emitted "
               f"as runtime modules and listed")
    if reference:
        summary += (f", {sum(r['reference'] == 'ok' for r in rows)} with "
                    f"the fp64 reference of every group")
    lines += ["", summary + "."]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(
        description="Export every torchvision classification model and run "
        "kopt analyze, compile --emit-module and kopt-run --list on it.")
    parser.add_argument("--export-one", nargs=2, metavar=("NAME", "FILE"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--kopt", default="build/bin/kopt")
    parser.add_argument("--kopt-run",
                        help="default: kopt-run beside --kopt")
    parser.add_argument("--work", default="torchvision-census",
                        help="folder for the exports, logs and modules")
    parser.add_argument("--only", action="append", default=[],
                        help="this model only (repeatable)")
    parser.add_argument("--timeout", type=int, default=900,
                        help="seconds per kopt command (default 900)")
    parser.add_argument("--export-timeout", type=int, default=900,
                        help="seconds per export (default 900)")
    parser.add_argument("--reuse", action="store_true",
                        help="take the exports already in --work")
    parser.add_argument("--reference", action="store_true",
                        help="also build the fp64 reference of every group "
                        "of each emitted model (kopt-reference-bench beside "
                        "--kopt)")
    parser.add_argument("--table", help="also write the table to this file")
    args = parser.parse_args()
    if args.export_one:
        export_one(*args.export_one)
        return

    import torchvision
    models = torchvision.models.list_models(module=torchvision.models)
    unknown = set(args.only) - set(models)
    if unknown:
        parser.error(f"not a classification model: {', '.join(unknown)}")
    models = [m for m in models if not args.only or m in args.only]
    args.kopt = os.path.abspath(args.kopt)
    args.kopt_run = os.path.abspath(
        args.kopt_run or os.path.join(os.path.dirname(args.kopt), "kopt-run"))
    os.makedirs(args.work, exist_ok=True)
    rows = []
    for name in models:
        row = census_one(name, args)
        rows.append(row)
        print(f"{name}: export {row['export']}, {row['groups'] or '-'} "
              f"groups, module {row['emit'] or '-'}"
              f"{', ' + row['error'] if row['error'] else ''}",
              file=sys.stderr, flush=True)
    text = table(rows, args.reference)
    print(text)
    if args.table:
        with open(args.table, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
