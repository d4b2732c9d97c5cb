#!/usr/bin/env python3
# ===- manifest.py - The model zoo's argument manifests --------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Reads test/Inputs/zoo/NAME.json, which scripts/export-model-zoo.py writes
# beside NAME.mlir: the exported function's arguments in order (the model's
# inputs, then its parameters and buffers, each with its name, shape and
# dtype) and its results. Run as a script, checks every manifest against
# its graph's signature (count, shapes, element types), so that a graph
# exported again without its manifest, or the reverse, is caught:
#
#   python3 bench/zoo/manifest.py [ZOO_DIR]
#
# Needs no torch; bench/zoo/run_zoo.py uses it to bind a model's tensors.
#
# ===----------------------------------------------------------------------===#

import json
import os
import re
import sys

SCHEMA = "kopt.zoo.arguments/1"
ZOO = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "test", "Inputs", "zoo")

# MLIR element types as torch names them.
DTYPES = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
}


def load(stem, zoo=ZOO):
    """The manifest of export `stem`."""
    with open(os.path.join(zoo, f"{stem}.json")) as f:
        manifest = json.load(f)
    if manifest.get("schema") != SCHEMA:
        raise ValueError(f"{stem}.json: schema {manifest.get('schema')!r}, "
                         f"not {SCHEMA!r}")
    return manifest


def signature(mlir_text):
    """(arguments, results) of `func.func @forward` as (shape, dtype) pairs,
    a dynamic size as None."""
    match = re.search(r"func\.func @forward\((.*?)\)\s*->\s*(.*?)\s*\{",
                      mlir_text)
    if not match:
        raise ValueError("no func.func @forward")

    def tensors(text):
        found = []
        for dims in re.findall(r"tensor<([^>]*)>", text):
            *shape, element = dims.split("x")
            found.append(([None if s == "?" else int(s) for s in shape],
                          DTYPES.get(element, element)))
        return found

    return tensors(match.group(1)), tensors(match.group(2))


def check(stem, zoo=ZOO):
    """Problems between `stem`'s manifest and its graph ([] when none)."""
    manifest = load(stem, zoo)
    with open(os.path.join(zoo, manifest["file"])) as f:
        arguments, results = signature(f.read())
    problems = []
    for what, graph, listed in (("argument", arguments,
                                 manifest["arguments"]),
                                ("result", results, manifest["results"])):
        if len(graph) != len(listed):
            problems.append(f"{stem}: the graph has {len(graph)} {what}s, "
                            f"the manifest {len(listed)}")
            continue
        for i, ((shape, dtype), entry) in enumerate(zip(graph, listed)):
            if (shape, dtype) != (entry["shape"], entry["dtype"]):
                problems.append(
                    f"{stem}: {what} {i} ({entry.get('name', '')}) is "
                    f"{dtype}{shape} in the graph, {entry['dtype']}"
                    f"{entry['shape']} in the manifest")
    return problems


def main():
    zoo = sys.argv[1] if len(sys.argv) > 1 else ZOO
    stems = sorted(f[:-5] for f in os.listdir(zoo) if f.endswith(".json"))
    graphs = sorted(f[:-5] for f in os.listdir(zoo) if f.endswith(".mlir"))
    problems = [f"{g}.mlir has no manifest" for g in graphs if g not in stems]
    for stem in stems:
        problems += check(stem, zoo)
    for problem in problems:
        print(problem)
    print(f"{len(stems)} manifests, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
