#!/usr/bin/env python3
# ===- make-corpus.py - Seed corpora of the fuzz targets -------*- Python -*-===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Writes the seed corpora under test/Fuzz/corpus/ (docs/Fuzzing.md) from the
# repository's own test inputs: the bundled examples, the adversarial
# suite's task and plans, records made as the kopt db tests make them. With
# --kopt BIN it also writes runtime modules compiled by `kopt compile
# --emit-module` from the examples and the H200's records. Deterministic: a
# second run writes the same bytes.
#
# ===----------------------------------------------------------------------===#

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "test", "Fuzz", "corpus")
ADVERSARIAL = os.path.join(ROOT, "test", "Evaluator", "adversarial")


def compact(value):
    return json.dumps(value, separators=(",", ":"))


def load(path):
    with open(path) as f:
        return json.load(f)


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def fnv1a64(data):
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


# ===----------------------------------------------------------------------===#
# .npy files (as test/Tools/kopt-run/Inputs/make-npy.py writes them)
# ===----------------------------------------------------------------------===#


def npy(descr, dims, data, version=1):
    text = "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, text)
    prefix = 10 if version == 1 else 12
    header += " " * ((64 - (prefix + len(header) + 1) % 64) % 64) + "\n"
    size = struct.pack("<H" if version == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode() + data


def make_npy():
    write("npy", "f32-2x3.npy", npy("<f4", [2, 3], struct.pack("<6f", 0, 1, -2, 3.5, 1e30, -0.0)))
    write("npy", "f64-scalar.npy", npy("<f8", [], struct.pack("<d", 3.25)))
    write("npy", "f16-4.npy", npy("<f2", [4], bytes(range(8))))
    write("npy", "bool-5.npy", npy("|b1", [5], bytes([0, 1, 1, 0, 1])))
    write("npy", "i8-2x2.npy", npy("|i1", [2, 2], bytes([1, 255, 7, 128])))
    write("npy", "i64-3-v2.npy", npy("<i8", [3], struct.pack("<3q", -1, 0, 2**62), 2))
    write("npy", "i32-empty.npy", npy("<i4", [0, 4], b""))


# ===----------------------------------------------------------------------===#
# Task and plan documents (the adversarial suite's)
# ===----------------------------------------------------------------------===#


def make_task_plan():
    task = load(os.path.join(ADVERSARIAL, "task.json"))
    write("task-plan", "task.json", compact(task))
    for name in ["honest-vec4", "honest-builtin"]:
        plan = load(os.path.join(ADVERSARIAL, name + ".plan.json"))
        write("task-plan", name + ".plan.json", compact(plan))
        write("task-plan", "pair-" + name + ".json", compact([task, plan]))


# ===----------------------------------------------------------------------===#
# Worker frames (docs/EvaluatorProtocol.md)
# ===----------------------------------------------------------------------===#


def frame(message):
    payload = compact(dict({"protocol": "kopt.worker/1"}, **message)).encode()
    return struct.pack("<I", len(payload)) + payload


def make_worker_protocol():
    task = load(os.path.join(ADVERSARIAL, "task.json"))
    baseline = load(os.path.join(ADVERSARIAL, "baseline.plan.json"))
    vec4 = load(os.path.join(ADVERSARIAL, "honest-vec4.plan.json"))
    hello = frame({"type": "hello",
                   "device": {"name": "NVIDIA H200", "compute_capability": [9, 0],
                              "sm_count": 132, "l2_bytes": 52428800,
                              "memory_bandwidth_gbps": 4022.5},
                   "driver_version": "12.8", "nvrtc_version": "12.6"})
    evaluate = frame({"type": "evaluate", "id": 7, "task": task,
                      "candidates": [baseline, vec4],
                      "options": {"validation_sets": 5, "repetitions": 20,
                                  "warmup_ms": 25, "seed": 0},
                      "reference": {"set": 0, "seed": 12, "distribution": "normal",
                                    "outputs": [{"name": "out0", "indices": [0, 4097],
                                                 "values": [0.125, -3.5]}]},
                      "later_references": [{"set": 1, "seed": 77,
                                            "distribution": "large-mean",
                                            "outputs": [{"name": "out0", "indices": [9],
                                                         "values": [999.5]}]}]})
    report = frame({"type": "report", "id": 7, "reports": [
        {"candidate": 0, "compiled": True, "compile_log": "", "valid": True,
         "evidence": {},
         "times": {"median_us": 412.5, "min_us": 409.25, "p10_us": 410.0,
                   "p90_us": 415.75, "repetitions": 20},
         "speedup": 1, "sm_clock_mhz": 1980, "temperature_c": 41},
        {"candidate": 1, "compiled": True, "compile_log": "", "valid": False,
         "failed_check": "output-mismatch",
         "evidence": {"input_set": 1, "rel_error": 0.0032}}]})
    error = frame({"type": "error", "id": 7, "message": "task: unreadable"})
    shutdown = frame({"type": "shutdown"})
    write("worker-protocol", "hello.bin", hello)
    write("worker-protocol", "evaluate.bin", evaluate)
    write("worker-protocol", "report.bin", report)
    write("worker-protocol", "session.bin", hello + error + shutdown)


# ===----------------------------------------------------------------------===#
# kopt db import (records as test/Tools/kopt-db/Inputs/make-records.py makes)
# ===----------------------------------------------------------------------===#


def make_db_import():
    records = os.path.join(ROOT, "test", "Tools", "kopt-db", "Inputs", "make-records.py")

    def run(*args):
        return subprocess.run([sys.executable, records, *args], check=True,
                              capture_output=True, text=True).stdout

    write("db-import", "records.jsonl", run("--label", "fuzz", "--count", "2", "--cubin-bytes", "16"))
    write("db-import", "invalid.jsonl", run("--label", "bad", "--count", "1", "--invalid",
                                            "--cubin-bytes", "0", "--attempts", "0"))
    write("db-import", "two-toolchains.jsonl",
          run("--label", "fuzz", "--count", "1", "--cubin-bytes", "0", "--attempts", "0")
          + run("--label", "fuzz", "--count", "1", "--cubin-bytes", "0", "--attempts", "0",
                "--median", "0.25", "--driver", "12.6"))
    # A record that carries its task, as the autotuner stores it: import
    # checks the plan against it.
    task = load(os.path.join(ADVERSARIAL, "task.json"))
    plan = load(os.path.join(ADVERSARIAL, "honest-vec4.plan.json"))
    line = json.loads(run("--label", "x", "--count", "1", "--cubin-bytes", "0",
                          "--attempts", "0").splitlines()[0])
    record = line["record"]
    record["task_key"] = task["key"]
    record["plan"] = plan
    record["validation"]["task"] = task
    write("db-import", "with-task.jsonl", compact(line) + "\n")


# ===----------------------------------------------------------------------===#
# Model graphs
# ===----------------------------------------------------------------------===#


def make_mlir():
    for name in ["mlp_block", "tosa_mlp", "conv_block", "attention_block", "layernorm_gelu"]:
        shutil.copyfile(os.path.join(ROOT, "examples", name + ".mlir"),
                        os.path.join(CORPUS, "mlir", name + ".mlir"))
    # torch-mlir's GroupNorm: gathers through index tables held as dense
    # resources, reshaped statistics (kopt-fold-constant-gathers,
    # kopt-align-reduction-domains).
    shutil.copyfile(os.path.join(ROOT, "test", "Inputs", "frontend", "torch_groupnorm.mlir"),
                    os.path.join(CORPUS, "mlir", "torch_groupnorm.mlir"))


# ===----------------------------------------------------------------------===#
# Runtime modules (docs/RuntimeModule.md)
# ===----------------------------------------------------------------------===#


def kmod(header, data):
    text = compact(header).encode()
    out = b"KOPTMOD\0" + struct.pack("<Q", len(text)) + text
    out += b"\0" * ((64 - len(out) % 64) % 64)
    return out + data


def make_module(kopt):
    # Constants, aliases and copies, which the compiled examples lack.
    constant = struct.pack("<4f", 1, 2, 3, 4)
    header = {"schema": "kopt.module/1", "name": "copies", "producer": "kopt 0.1.0",
              "arch": "", "buffers": [
                  {"name": "x", "element_type": "f32", "shape": [4], "kind": "input"},
                  {"name": "c", "element_type": "f32", "shape": [4], "kind": "constant",
                   "data": {"offset": 0, "bytes": 16, "hash": fnv1a64(constant)}},
                  {"name": "c2", "element_type": "f32", "shape": [2, 2], "kind": "alias",
                   "alias_of": "c"},
                  {"name": "y", "element_type": "f32", "shape": [2, 2], "kind": "output"}],
              "inputs": ["x"], "outputs": ["y"], "plans": [],
              "steps": [{"kind": "copy", "from": "c2", "to": "y"}]}
    write("module", "copies.kmod", kmod(header, constant))
    if not kopt:
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "k.db")
        records = os.path.join(ROOT, "test", "Tools", "kopt-compile", "Inputs", "h200",
                               "records.jsonl")
        subprocess.run([kopt, "db", "import", records, "--db", db], check=True,
                       capture_output=True)
        for name, extra in [("mlp_block", ["--module-by-reference", "--module-arch=none"]),
                            ("conv_block", ["--module-arch=none"]),
                            ("layernorm_gelu", ["--module-arch=none"])]:
            out = os.path.join(tmp, name + ".kmod")
            subprocess.run([kopt, "compile", os.path.join(ROOT, "examples", name + ".mlir"),
                            "--db", db, "--tune=never", "-o", os.devnull,
                            "--emit-module", out, *extra], check=True, capture_output=True)
            with open(out, "rb") as f:
                write("module", name + ".kmod", f.read())


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kopt", help="a kopt binary, to compile runtime modules")
    args = parser.parse_args()
    os.makedirs(os.path.join(CORPUS, "mlir"), exist_ok=True)
    make_npy()
    make_task_plan()
    make_worker_protocol()
    make_db_import()
    make_mlir()
    make_module(args.kopt)


if __name__ == "__main__":
    main()
