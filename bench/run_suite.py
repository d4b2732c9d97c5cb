#!/usr/bin/env python3
# ===- bench/run_suite.py - kopt against PyTorch on the benchmark suite ----===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Runs on the GPU machine, from the repository root, with the portable kopt
# binaries in dist/bin. For every problem of bench/suite/problems.py (the
# suite and the bundled examples) it draws the inputs once (seeded, saved as
# .npy), computes an fp64 reference with the PyTorch twin, and measures on
# those same inputs:
#
#   eager        the PyTorch twin as written
#   compile      torch.compile(twin) (mode "default")
#   max-autotune torch.compile(twin, mode="max-autotune-no-cudagraphs"),
#                in a second pass, as far as the time budget allows
#   kopt base    `kopt compile --tune=never` with an empty kernel database:
#                every group on its baseline plan, run by kopt-run
#   kopt tuned   `kopt compile --tune=missing`: every group tuned with the
#                built-in proposer (no LLM), run by kopt-run
#
# fp32 everywhere, TF32 off on both sides. Every output is checked against
# the fp64 reference; every time is the median of --reps runs timed with CUDA
# events, L2 flushed before each run outside the timed region. A failing
# step is recorded in its problem's row and the run goes on. Writes
# DATE-DEVICE-suite.json, .md and .svg (speedups per problem) to --out.
#
# Usage:
#   python3 bench/run_suite.py [--kopt-bin dist/bin] [--out bench/results]
#                              [--only NAME,...] [--reps N] [--budget S]
#   python3 bench/run_suite.py --dry-run     # no GPU, no torch: checks the
#       problem table against the MLIR signatures and runs `kopt analyze`
#
# docs/Benchmark.md says how to read the results.
#
# ===----------------------------------------------------------------------===#

import argparse
import ast
import ctypes
import datetime
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "suite"))
import problems as P  # noqa: E402
from suite_floor import count_flops, floor, measure_limits, time_limits  # noqa: E402
from suite_report import (floor_fractions, fmt_ms, markdown, speedups,  # noqa: E402
                          summarize, svg_chart)

torch = None

# Relative tolerance per element type: |y - ref| <= rtol * |ref| + atol with
# atol = rtol * rms(ref) (a floor near cancellation, scaled to the output),
# and the relative L2 error at most rtol / 10.
RTOL = {"f32": 1e-4, "f16": 1e-2, "bf16": 2e-2, "f64": 1e-9}
# Inputs and fp64 references kept on the GPU between the first pass and the
# max-autotune pass, at most; the others are drawn again.
HOLD_BYTES = 32 << 30
# The targets are for the built-in proposer alone, in fp32.
TUNING = ["--proposers=builtin", "--precision=fp32"]


def log(msg):
    print(msg, flush=True)


# --- MLIR signatures (no torch) -------------------------------------------

FUNC_RE = re.compile(r"func\.func\s+(?!private)@([\w$.]+)\s*\((.*?)\)\s*->\s*(.*?)\s*\{",
                     re.S)
ARG_RE = re.compile(r"%([\w$.]+)\s*:\s*tensor<([^>]*)>")
TYPE_RE = re.compile(r"tensor<([^>]*)>")


def parse_tensor(text):
    *dims, et = text.split("x")
    return [int(d) for d in dims], et


def mlir_signature(path):
    """(function name, [(arg name, shape, type)], [(shape, type)]) of the
    first public func.func in `path`."""
    with open(path) as f:
        text = f.read()
    m = FUNC_RE.search(text)
    if not m:
        raise ValueError("%s: no public func.func" % path)
    args = [(n,) + tuple(parse_tensor(t)) for n, t in ARG_RE.findall(m.group(2))]
    results = [tuple(parse_tensor(t)) for t in TYPE_RE.findall(m.group(3))]
    return m.group(1), args, results


def check_signature(name, spec):
    """Problems with the table entry of `name` against its MLIR file. The
    MLIR's argument names are the table's, or arg0..argN as the torch-mlir
    importer names them."""
    path = os.path.join(ROOT, spec["mlir"])
    if not os.path.exists(path):
        return ["missing MLIR file %s" % spec["mlir"]]
    errors = []
    _, args, results = mlir_signature(path)
    want = [(n, list(s), t) for n, s, t, _ in spec["inputs"]]
    got = [(n, list(s), t) for n, s, t in args]
    if [n for n, _, _ in got] == ["arg%d" % i for i in range(len(got))]:
        got = [(w[0],) + g[1:] for w, g in zip(want, got)] + got[len(want):]
    if want != got:
        errors.append("inputs %s in the table, %s in the MLIR" % (want, got))
    want_out = [(list(s), t) for s, t in spec["outputs"]]
    got_out = [(list(s), t) for s, t in results]
    if want_out != got_out:
        errors.append("outputs %s in the table, %s in the MLIR" % (want_out, got_out))
    fn = P.twin(name)
    if not callable(fn):
        errors.append("no PyTorch twin %s" % spec["twin"])
    else:
        params = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
        if params != [n for n, _, _, _ in spec["inputs"]]:
            errors.append("twin %s takes (%s), the table's inputs are (%s)" % (
                spec["twin"], ", ".join(params),
                ", ".join(n for n, _, _, _ in spec["inputs"])))
    return errors + check_file(name, spec, path)


# The real set's files must stay small: weights are arguments, never
# constants (export_real.py refuses constants above 4 KB).
MAX_MLIR_BYTES = 128 << 10


def check_file(name, spec, path):
    """Problems with the MLIR file itself: its size, and for a file exported
    by export_real.py, that it was exported from the twin and signature the
    table has now (the `twin-sha256:` line, problems.twin_hash)."""
    errors = []
    size = os.path.getsize(path)
    if size > MAX_MLIR_BYTES:
        errors.append("%s has %d bytes, more than %d" % (spec["mlir"], size, MAX_MLIR_BYTES))
    with open(path) as f:
        head = f.read(2048)
    if "bench/suite/export_real.py" in head.split("\n", 1)[0]:
        m = re.search(r"^// twin-sha256: (\w+)$", head, re.M)
        want = P.twin_hash(name)
        if not m or m.group(1) != want:
            errors.append("%s is stale: exported from twin %s, the twin and signature are "
                          "now %s (run bench/suite/export_real.py --only %s)" % (
                              spec["mlir"], m.group(1) if m else "(none)", want, name))
    return errors


# --- .npy without numpy -----------------------------------------------------

NPY_DESCR = {"float32": "<f4", "float64": "<f8", "float16": "<f2",
             "int64": "<i8", "int32": "<i4", "bool": "|b1"}


def npy_header(descr, shape):
    """The .npy v1.0 header numpy writes: the dict, padded with spaces to a
    multiple of 64 bytes with the preamble, ending in a newline."""
    dims = "(%s)" % (", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, dims)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1")


def write_npy(path, t):
    t = t.detach().contiguous().cpu()
    descr = NPY_DESCR[str(t.dtype).replace("torch.", "")]
    with open(path, "wb") as f:
        f.write(npy_header(descr, tuple(t.shape)))
        f.write(ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()))


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError("%s is not a .npy file" % path)
    if data[6] == 1:
        hlen, start = int.from_bytes(data[8:10], "little"), 10
    else:
        hlen, start = int.from_bytes(data[8:12], "little"), 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    if header["fortran_order"]:
        raise ValueError("%s: Fortran order" % path)
    dtypes = {v: k for k, v in NPY_DESCR.items()}
    dtype = getattr(torch, dtypes[header["descr"].replace("=", "<")])
    body = bytearray(data[start + hlen:])
    t = torch.frombuffer(body, dtype=dtype) if body else torch.empty(0, dtype=dtype)
    return t.reshape(header["shape"])


# --- kopt: the two commands the benchmark needs -----------------------------

class Kopt:
    """kopt and kopt-run, as the benchmark calls them. The command lines are
    here and nowhere else."""

    def __init__(self, bin_dir, kopt=None):
        self.kopt = kopt or os.path.join(bin_dir, "kopt")
        self.kopt_run = os.path.join(bin_dir, "kopt-run")
        self.env = dict(os.environ)
        self.compile_help = self._help([self.kopt, "compile", "--help"])
        self.run_help = self._help([self.kopt_run, "--help"])
        self.naming = None  # the input/output naming kopt-run accepted

    def _help(self, cmd):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                               env=self.env)
            return p.stdout + p.stderr
        except OSError as e:
            return "unavailable: %s" % e

    def setup_libraries(self):
        """NVRTC and cuBLASLt come from the toolkit; cuDNN 9 may live only in
        PyTorch's environment (as scripts/gpu-check finds it)."""
        paths = ["/usr/local/cuda/lib64"]
        try:
            import nvidia.cudnn
            d = os.path.join(list(nvidia.cudnn.__path__)[0], "lib")
            if os.path.isdir(d):
                self.env["KOPT_CUDNN_DIR"] = d
                paths.insert(0, d)
        except ImportError:
            pass
        old = self.env.get("LD_LIBRARY_PATH")
        self.env["LD_LIBRARY_PATH"] = ":".join(paths + ([old] if old else []))

    def missing(self):
        """Why the kopt side cannot run, or None."""
        if not os.path.exists(self.kopt):
            return "no kopt at %s" % self.kopt
        if "emit-module" not in self.compile_help:
            return "this kopt has no `compile --emit-module`"
        if not os.path.exists(self.kopt_run):
            return "no kopt-run at %s" % self.kopt_run
        return None

    def analyze(self, mlir):
        p = subprocess.run([self.kopt, "analyze", "--json", mlir], capture_output=True,
                           text=True, timeout=120, env=self.env)
        if p.returncode != 0:
            raise RuntimeError("kopt analyze failed:\n" + (p.stderr or p.stdout)[-2000:])
        return json.loads(p.stdout)

    def warm(self, files, db, budget, timeout):
        cmd = [self.kopt, "warm"] + files + ["--db=" + db, "--budget=%d" % budget] + TUNING
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=self.env), cmd

    def compile(self, mlir, db, kmod, tune, budget, timeout):
        """`kopt compile` into a runtime module; returns (the tune report or
        None, the command line)."""
        cmd = [self.kopt, "compile", mlir, "-o", os.devnull, "--db=" + db,
               "--emit-module=" + kmod, "--tune=" + tune, "--report=json"]
        if tune != "never":
            cmd += TUNING + (["--budget=%d" % budget] if budget else [])
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=self.env)
        if p.returncode != 0 or not os.path.exists(kmod):
            why = last_line(p.stderr + p.stdout) if p.returncode else "wrote no module"
            raise RuntimeError("kopt compile exit %d: %s\n%s\n%s" % (
                p.returncode, why, shlex.join(cmd),
                (p.stderr + p.stdout)[-3000:]))
        return find_json(p.stdout) or find_json(p.stderr), cmd

    def module_names(self, kmod):
        """Input and output buffer names from the runtime module's header,
        or None. A `kopt.module/1` file is `KOPTMOD\\0`, the JSON header's
        length (little-endian uint64), then the header, whose `inputs` and
        `outputs` list the function's argument and result buffers."""
        try:
            with open(kmod, "rb") as f:
                head = f.read(16)
                if len(head) == 16 and head[:8] == b"KOPTMOD\0":
                    doc = json.loads(f.read(int.from_bytes(head[8:16], "little")))
                else:
                    doc = find_json((head + f.read(1 << 20)).decode("utf-8", "replace"))
        except (OSError, ValueError):
            return None
        if not isinstance(doc, dict):
            return None

        def names(key):
            items = doc.get(key)
            if not isinstance(items, list):
                return None
            items = [i.get("name") if isinstance(i, dict) else i for i in items]
            return items if all(isinstance(i, str) for i in items) else None
        ins, outs = names("inputs"), names("outputs")
        return (ins, outs) if ins is not None and outs else None

    def namings(self, kmod, arg_names, n_out):
        """Candidate (input names, output names), most likely first: the
        module header's, else the naming kopt-run accepted last, else the
        MLIR argument names or arg0..argN with a few result spellings."""
        header = self.module_names(kmod)
        if header:
            return [header]
        cands = []
        if self.naming:
            cands.append(self.naming(arg_names, n_out))
        n = len(arg_names)
        for ins in (list(arg_names), ["arg%d" % i for i in range(n)]):
            for prefix in ("result", "out", ""):
                cands.append((ins, ["%s%d" % (prefix, i) for i in range(n_out)]))
        return cands

    def run(self, kmod, arg_names, in_paths, out_paths, bench_json, reps, graph, timeout):
        """Runs `kmod` on the .npy inputs, writes the outputs and the timing;
        returns the timing JSON (median_ms, min_ms, p10_ms, p90_ms, reps)."""
        errors = []
        for ins, outs in self.namings(kmod, arg_names, len(out_paths)):
            cmd = [self.kopt_run, kmod]
            for n, pth in zip(ins, in_paths):
                cmd += ["--input", "%s=%s" % (n, pth)]
            for n, pth in zip(outs, out_paths):
                cmd += ["--output", "%s=%s" % (n, pth)]
            cmd += ["--bench", "--bench-json", bench_json]
            flag = re.search(r"--(?:bench-)?(?:reps|repetitions|iterations)\b", self.run_help)
            if reps and flag:
                cmd += [flag.group(0), str(reps)]
            if graph:
                cmd.append("--graph")
            for stale in [bench_json] + list(out_paths):
                if os.path.exists(stale):
                    os.unlink(stale)
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                               env=self.env)
            if p.returncode == 0 and os.path.exists(bench_json):
                self._remember(arg_names, ins, outs)
                with open(bench_json) as f:
                    return json.load(f), cmd
            errors.append("kopt-run exit %d: %s\n%s" % (
                p.returncode, last_line(p.stderr + p.stdout),
                shlex.join(cmd) + "\n" + (p.stderr + p.stdout)[-1500:]))
            # Only a complaint about names is worth another naming.
            if not re.search(r"input|output|name|argument", p.stderr + p.stdout, re.I):
                break
        raise RuntimeError("\n".join(errors[-2:]))

    def _remember(self, arg_names, ins, outs):
        by_arg = ins == list(arg_names)
        prefix = re.sub(r"\d+$", "", outs[0]) if outs else ""
        self.naming = lambda a, n: (list(a) if by_arg else ["arg%d" % i for i in range(len(a))],
                                    ["%s%d" % (prefix, i) for i in range(n)])


def last_line(text):
    """The line of a tool's output that says why it failed: the last one
    with "error", else the last non-empty one."""
    lines = [l for l in text.strip().splitlines() if l.strip()]
    errors = [l for l in lines if "error" in l.lower()]
    return (errors or lines or ["(no output)"])[-1][:300]


def find_json(text):
    """The first JSON object in `text`, or None."""
    if not text:
        return None
    start = text.find("{")
    while start >= 0:
        try:
            return json.JSONDecoder().raw_decode(text[start:])[0]
        except ValueError:
            start = text.find("{", start + 1)
    return None


# --- measuring PyTorch -------------------------------------------------------

class Timer:
    def __init__(self):
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self.flush = torch.empty(max(2 * l2, 64 << 20) // 4, device="cuda")

    def __call__(self, fn, reps, warmup=5):
        """Median, min, p10, p90 in ms of `reps` runs, each timed with CUDA
        events after the L2 is flushed (writing twice its size) and after
        a GPU sleep that hides host dispatch."""
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            self.flush.fill_(1.0)
            # A short GPU sleep lets the host queue fn's launches before the
            # GPU reaches the start event, so host-side dispatch (Python,
            # torch.compile's guards) stays out of the GPU time measured,
            # as it does for kopt-run's launches. This favours PyTorch.
            torch.cuda._sleep(400000)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        times.sort()
        q = lambda f: times[min(len(times) - 1, int(f * len(times)))]
        return {"median_ms": statistics.median(times), "min_ms": times[0],
                "p10_ms": q(0.1), "p90_ms": q(0.9), "reps": reps}


def compare(out, ref, dtype):
    """Checks `out` against the fp64 `ref`; returns a dict with `ok`."""
    rtol = RTOL[dtype]
    if tuple(out.shape) != tuple(ref.shape):
        return {"ok": False, "why": "shape %s, expected %s" % (list(out.shape),
                                                              list(ref.shape))}
    o = out.to(device=ref.device, dtype=torch.float64)
    bad_nan = (~torch.isfinite(o) & torch.isfinite(ref)).sum().item()
    rms = ref.pow(2).mean().sqrt().item() if ref.numel() else 0.0
    atol = rtol * rms
    err = (o - ref).abs()
    err = torch.where(torch.isfinite(ref), err, torch.zeros_like(err))
    viol = (err > atol + rtol * ref.abs()).sum().item()
    rel_l2 = ((err.pow(2).sum().sqrt() / ref.pow(2).sum().sqrt().clamp_min(1e-300)).item()
              if ref.numel() else 0.0)
    ok = bad_nan == 0 and viol == 0 and rel_l2 <= rtol / 10
    res = {"ok": ok, "max_abs_err": err.max().item() if err.numel() else 0.0,
           "rel_l2_err": rel_l2, "violations": viol, "nonfinite": bad_nan}
    if not ok:
        res["why"] = ("%d non-finite, %d elements beyond rtol %g (atol %.3g), "
                      "relative L2 error %.3g" % (bad_nan, viol, rtol, atol, rel_l2))
    return res


def compare_all(outs, refs, specs):
    checks = [compare(o, r, s[1]) for o, r, s in zip(outs, refs, specs)]
    ok = all(c["ok"] for c in checks) and len(outs) == len(refs)
    return {"ok": ok, "outputs": checks}


def as_tuple(y):
    return tuple(y) if isinstance(y, (tuple, list)) else (y,)


# --- one problem -------------------------------------------------------------

def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def draw(name, spec):
    """The inputs (seeded from the problem's name) and the fp64 reference."""
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed_of(name))
    inputs = [P.make_input(s, gen, "cuda").contiguous() for s in spec["inputs"]]
    with torch.no_grad():
        refs = as_tuple(P.twin(name)(*[t.double() for t in inputs]))
    return inputs, [r.contiguous() for r in refs]


def save_inputs(spec, inputs, work):
    """The inputs as .npy files for kopt-run; returns their paths."""
    paths = []
    for s, t in zip(spec["inputs"], inputs):
        pth = os.path.join(work, "in_%s.npy" % s[0])
        write_npy(pth, t)
        paths.append(pth)
    return paths


def held_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def run_torch(row, key, fn, inputs, refs, spec, timer, reps):
    """Measures `fn` (eager or compiled) into row[key]; the first call, which
    compiles, is timed apart."""
    res = {}
    row[key] = res
    try:
        t0 = time.time()
        with torch.no_grad():
            outs = as_tuple(fn(*inputs))
        torch.cuda.synchronize()
        res["first_call_s"] = round(time.time() - t0, 3)
        res["check"] = compare_all(outs, refs, spec["outputs"])
        del outs
        with torch.no_grad():
            res.update(timer(lambda: fn(*inputs), reps))
    except Exception as e:  # a failing mode is recorded, never fatal
        res["error"] = "%s: %s" % (type(e).__name__, str(e)[-2000:])
        log("    %s failed: %s" % (key, res["error"].splitlines()[0][:200]))


def run_kopt(row, key, kopt, name, spec, work, db, tune, paths, refs, args):
    res = {}
    row[key] = res
    kmod = os.path.join(work, key + ".kmod")
    try:
        t0 = time.time()
        limits = row["time_limits"]
        report, cmd = kopt.compile(os.path.join(ROOT, spec["mlir"]), db, kmod, tune,
                                   args.tune_budget, timeout=limits["kopt_compile_s"])
        res["compile_s"] = round(time.time() - t0, 3)
        res["compile_command"] = shlex.join(cmd)
        if report:
            res["groups"] = [{k: g.get(k) for k in ("function", "kind", "cache", "source",
                                                     "proposer", "variant", "time_us",
                                                     "baseline_us", "speedup", "note")
                              if g.get(k) is not None}
                             for g in report.get("groups", [])]
        outs = [os.path.join(work, "%s_out%d.npy" % (key, i))
                for i in range(len(spec["outputs"]))]
        bench_json = os.path.join(work, key + ".bench.json")
        timing, _ = kopt.run(kmod, [s[0] for s in spec["inputs"]], paths, outs, bench_json,
                             args.reps, args.kopt_graph, timeout=limits["kopt_run_s"])
        res.update({k: timing.get(k) for k in ("median_ms", "min_ms", "p10_ms", "p90_ms",
                                                "reps")})
        res["check"] = compare_all([read_npy(o) for o in outs], refs, spec["outputs"])
    except subprocess.TimeoutExpired as e:
        what = os.path.basename(e.cmd[0]) + (" compile" if e.cmd[1:2] == ["compile"] else "")
        res["error"] = "timeout: %s ran past its %.0f s limit" % (what, e.timeout)
        res["timed_out"] = True
        log("    %s failed: %s" % (key, res["error"]))
    except Exception as e:
        res["error"] = "%s: %s" % (type(e).__name__, str(e)[-3000:])
        log("    %s failed: %s" % (key, res["error"].splitlines()[0][:200]))


# --- the run -----------------------------------------------------------------

def selected(args):
    """The problems of --set, or those --only names (of any set)."""
    names = [n for n in P.PROBLEMS if args.set == "all" or P.PROBLEMS[n]["set"] == args.set]
    if args.only:
        want = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in want if n not in P.PROBLEMS]
        if unknown:
            sys.exit("unknown problem(s): %s; known: %s" % (", ".join(unknown),
                                                             ", ".join(P.PROBLEMS)))
        names = want
    return names


def list_problems(args):
    """The selected problems as a Markdown table: set, inputs, outputs and
    compulsory bytes (each input read once, each output written once)."""
    shape = lambda s: "x".join(str(d) for d in s)
    log("| problem | set | kind | computes | inputs | outputs | MB |")
    log("|---|---|---|---|---|---|---:|")
    for name in selected(args):
        spec = P.PROBLEMS[name]
        log("| %s | %s | %s | %s | %s | %s | %.0f |" % (
            name, spec["set"], spec["kind"], spec["desc"],
            ", ".join("%s %s" % (n, shape(s)) for n, s, _, _ in spec["inputs"]),
            ", ".join(shape(s) for s, _ in spec["outputs"]),
            P.compulsory_bytes(spec) / 1e6))
    return 0


def dry_run(args):
    """No torch, no GPU: the table against the MLIR, and `kopt analyze`."""
    names = selected(args)
    kopt = Kopt(args.kopt_bin, args.kopt)
    have_kopt = os.path.exists(kopt.kopt)
    failures = 0
    stale = subprocess.run([sys.executable, os.path.join(ROOT, "bench/suite/gen_suite.py"),
                            "--check"], capture_output=True, text=True)
    if stale.returncode != 0:
        failures += 1
        log("FAIL suite files: " + stale.stdout.strip())
    for name in names:
        spec = P.PROBLEMS[name]
        errors = check_signature(name, spec)
        groups = ""
        if have_kopt and not errors:
            try:
                doc = kopt.analyze(os.path.join(ROOT, spec["mlir"]))
                f = doc["files"][0]
                if not f.get("ok"):
                    errors.append("kopt analyze: not ok")
                groups = ", ".join(g["kind"] for g in f.get("groups", [])) or "no group"
            except Exception as e:
                errors.append(str(e).splitlines()[0])
        if errors:
            failures += 1
            log("FAIL %s: %s" % (name, "; ".join(errors)))
        else:
            log("ok   %-26s %-5s %-8s %d inputs  groups: %s" % (
                name, spec["set"], spec["kind"], len(spec["inputs"]),
                groups or "(kopt not run)"))
    if not have_kopt:
        log("note: no kopt at %s: kopt analyze not run" % kopt.kopt)
    log("dry run: %d problems, %d ok" % (len(names), len(names) - failures))
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(
        description="kopt against PyTorch eager and torch.compile on bench/suite")
    ap.add_argument("--kopt-bin", default=os.path.join(ROOT, "dist", "bin"),
                    help="folder of kopt and kopt-run (default dist/bin)")
    ap.add_argument("--kopt", help="the kopt binary (default KOPT_BIN/kopt)")
    ap.add_argument("--set", choices=("small", "real", "all"), default="all",
                    help="the small problems, the real-sized ones, or both (default)")
    ap.add_argument("--only", help="comma-separated problem names (of any set)")
    ap.add_argument("--reps", type=int, default=30, help="timed repetitions (>= 20)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--work", help="folder for inputs, outputs, modules and the "
                    "kernel database (default: a temporary folder, removed)")
    ap.add_argument("--db", help="tuned kernel database to use (default: a fresh "
                    "one in the work folder; a warm one makes tuned groups hits)")
    ap.add_argument("--budget", type=float,
                    help="seconds for the whole run; max-autotune gets what the "
                    "first pass leaves (default: 15 per small problem, 150 per "
                    "real-sized one)")
    ap.add_argument("--tune-budget", type=float, default=60,
                    help="kopt warm/compile tuning budget in seconds (per call)")
    ap.add_argument("--kopt-timeout", type=float, default=300,
                    help="seconds for one kopt call, plus what the problem's floor "
                    "adds (default 300)")
    ap.add_argument("--fp32-peak", type=float, help="fp32 TFLOP/s for the floor of "
                    "compute-bound problems (default: the datasheet's for H100 and "
                    "H200, 67, else cuBLAS's fp32 rate measured in the run)")
    ap.add_argument("--no-warm", action="store_true",
                    help="tune per problem in `kopt compile` only, without one "
                    "`kopt warm` over the small problems first")
    ap.add_argument("--no-max-autotune", action="store_true")
    ap.add_argument("--kopt-graph", action="store_true",
                    help="kopt-run --graph (CUDA graph); off by default, as "
                    "eager and max-autotune-no-cudagraphs use none")
    ap.add_argument("--tag", help="file name tag (default: from the device name)")
    ap.add_argument("--inductor-cache", help="TORCHINDUCTOR_CACHE_DIR for this run: "
                    "a folder kept from an earlier run makes torch.compile's "
                    "compilation and max-autotune's choices cache hits")
    ap.add_argument("--list", action="store_true",
                    help="no GPU, no torch: list the problems, shapes and bytes")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU, no torch: check twins, signatures, kopt analyze")
    args = ap.parse_args()
    if args.list:
        return list_problems(args)
    if args.dry_run:
        return dry_run(args)
    if args.reps < 20:
        sys.exit("--reps must be at least 20")
    start = time.time()
    names = selected(args)
    n_real = sum(1 for n in names if P.PROBLEMS[n]["set"] == "real")
    # The whole run: 15 s per small problem, 150 s per real-sized one (whose
    # max-autotune tunes GEMMs at full size).
    if args.budget is None:
        args.budget = 15.0 * (len(names) - n_real) + 150.0 * n_real

    if args.inductor_cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.abspath(args.inductor_cache)
    global torch
    torch = P.load_torch()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    device = torch.cuda.get_device_name(0)
    now = datetime.datetime.now(datetime.timezone.utc)
    tag = args.tag or re.sub(r"[^a-z0-9]+", "-",
                             device.lower().replace("nvidia", "")).strip("-")
    timer = Timer()
    limits = measure_limits(torch, timer, args.fp32_peak)
    log("copy bandwidth %.2f TB/s; cuBLAS fp32 %.1f TFLOP/s; floors use %.1f TFLOP/s (%s)" % (
        limits["copy_bytes_per_s"] / 1e12, limits["cublas_fp32_flops_per_s"] / 1e12,
        limits["fp32_peak_flops_per_s"] / 1e12, limits["fp32_peak_source"]))
    kopt = Kopt(args.kopt_bin, args.kopt)
    kopt.setup_libraries()
    kopt_missing = kopt.missing()

    work = args.work or tempfile.mkdtemp(prefix="kopt-suite-")
    os.makedirs(work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    db = args.db or os.path.join(work, "tuned.db")
    empty_db = os.path.join(work, "empty.db")
    report = {"schema": "kopt.suite/2", "date": now.isoformat(timespec="seconds"),
              "device": device, "torch": torch.__version__,
              "triton": _version("triton"), "cuda": torch.version.cuda,
              "command": "python3 bench/run_suite.py " + shlex.join(sys.argv[1:]),
              "settings": {"reps": args.reps, "tf32": False, "dtype": "f32",
                           "matmul_precision": "highest", "kopt_graph": args.kopt_graph,
                           "set": args.set, "budget_s": args.budget,
                           "tune_budget_s": args.tune_budget,
                           "kopt_timeout_s": args.kopt_timeout,
                           "rtol": RTOL, "db": "given" if args.db else "fresh"},
              "limits": limits, "kopt": {"missing": kopt_missing}, "rows": []}
    base = os.path.join(args.out, "%s-%s-suite" % (now.strftime("%Y-%m-%d"), tag))

    def write_report():
        """Writes the rows so far: after every problem, so that a run cut
        short by a time limit keeps what it measured."""
        for row in report["rows"]:
            row["speedup"] = speedups(row)
            row["floor_fraction"] = floor_fractions(row)
        sets = [k for k in ("small", "real")
                if any(r["set"] == k for r in report["rows"])]
        report["summary"] = {k: summarize([r for r in report["rows"] if r["set"] == k])
                             for k in sets}
        report["seconds"] = round(time.time() - start, 1)
        # The results name no folder of this machine: the work folder reads
        # $WORK and the repository root is left out.
        scrub = lambda text: text.replace(work, "$WORK").replace(ROOT + "/", "")
        with open(base + ".json", "w") as f:
            f.write(scrub(json.dumps(report, indent=1)) + "\n")
        md = scrub(markdown(report))
        with open(base + ".md", "w") as f:
            f.write(md)
        for k in sets:
            with open("%s-%s.svg" % (base, k), "w") as f:
                f.write(svg_chart([r for r in report["rows"] if r["set"] == k],
                                  "kopt tuned speedup per problem, %s set, %s, %s"
                                  % (k, device, now.strftime("%Y-%m-%d")),
                                  report["summary"][k]))
        return md, sets

    log("device %s, torch %s; %d problems; work folder %s" % (
        device, torch.__version__, len(names), work))
    if kopt_missing:
        log("kopt side skipped: " + kopt_missing)

    # One `kopt warm` over the small problems tunes each distinct group once,
    # in one process with one worker; `kopt compile --tune=missing` then
    # finds hits (and tunes anything warm left). The real-sized problems are
    # tuned by their own `kopt compile`, each under its problem's time limit,
    # so that one slow group costs its own problem's kopt results only.
    warm_files = sorted({os.path.join(ROOT, P.PROBLEMS[n]["mlir"]) for n in names
                         if P.PROBLEMS[n]["set"] != "real"})
    if not kopt_missing and not args.no_warm and warm_files:
        t0 = time.time()
        try:
            p, cmd = kopt.warm(warm_files, db, args.tune_budget * 3, args.kopt_timeout * 2)
            report["kopt"]["warm"] = {"seconds": round(time.time() - t0, 1),
                                      "exit": p.returncode, "files": len(warm_files),
                                      "summary": p.stdout[-4000:]}
            log("kopt warm: %.0f s, exit %d" % (time.time() - t0, p.returncode))
        except Exception as e:
            report["kopt"]["warm"] = {"error": str(e)[-2000:]}
            log("kopt warm failed: %s" % e)

    # The inputs and references are kept for the max-autotune pass up to
    # HOLD_BYTES in all; the rest are drawn again then.
    state = {}
    held = 0
    for i, name in enumerate(names):
        spec = P.PROBLEMS[name]
        row = {"name": name, "set": spec["set"], "kind": spec["kind"], "mlir": spec["mlir"],
               "desc": spec["desc"], "twin": spec["twin"],
               "inputs": [{"name": n, "shape": s, "dtype": t, "init": d}
                          for n, s, t, d in spec["inputs"]]}
        report["rows"].append(row)
        fn = P.twin(name)
        row["floor"] = floor(P.compulsory_bytes(spec), count_flops(torch, fn, spec), limits)
        row["time_limits"] = time_limits(row["floor"]["ms"], args.reps, args.kopt_timeout)
        log("[%d/%d] %s: %.0f MB, floor %.3f ms (%s) (%.0f s)" % (
            i + 1, len(names), name, row["floor"]["bytes"] / 1e6, row["floor"]["ms"],
            row["floor"]["bound"], time.time() - start))
        pwork = os.path.join(work, name)
        os.makedirs(pwork, exist_ok=True)
        try:
            inputs, refs = draw(name, spec)
            paths = save_inputs(spec, inputs, pwork) if not kopt_missing else []
        except Exception as e:
            row["error"] = "inputs or reference: %s: %s" % (type(e).__name__, e)
            log("    " + row["error"])
            torch.cuda.empty_cache()
            continue
        run_torch(row, "eager", fn, inputs, refs, spec, timer, args.reps)
        if kopt_missing:
            row["kopt_base"] = {"skipped": kopt_missing}
            row["kopt_tuned"] = {"skipped": kopt_missing}
        else:
            run_kopt(row, "kopt_base", kopt, name, spec, pwork, empty_db, "never",
                     paths, refs, args)
            run_kopt(row, "kopt_tuned", kopt, name, spec, pwork, db, "missing",
                     paths, refs, args)
        torch._dynamo.reset()
        run_torch(row, "compile", torch.compile(fn), inputs, refs, spec, timer, args.reps)
        log("    eager %s  compile %s  kopt base %s  tuned %s" % (
            fmt_ms(row.get("eager")), fmt_ms(row.get("compile")),
            fmt_ms(row.get("kopt_base")), fmt_ms(row.get("kopt_tuned"))))
        size = held_bytes(inputs) + held_bytes(refs)
        state[name] = (inputs, refs) if held + size <= HOLD_BYTES else None
        held += size if state[name] else 0
        del inputs, refs
        torch.cuda.empty_cache()
        if not args.work:
            shutil.rmtree(pwork, ignore_errors=True)
        write_report()

    # max-autotune benchmarks GEMM and convolution templates: the slow part
    # of the run. It gets what the budget leaves, problem by problem (those
    # without a GEMM or convolution first), with an estimate of each one's
    # cost; a problem it cannot afford is marked skipped.
    def heavy(name):
        with open(os.path.join(ROOT, P.PROBLEMS[name]["mlir"])) as f:
            return any(op in f.read() for op in ("matmul", "conv_2d"))
    for name in sorted(names, key=heavy):
        row = next(r for r in report["rows"] if r["name"] == name)
        spec = P.PROBLEMS[name]
        if name not in state:
            continue
        if args.no_max_autotune:
            row["max_autotune"] = {"skipped": "--no-max-autotune"}
            continue
        left = args.budget - (time.time() - start) - 10
        first = (row.get("compile") or {}).get("first_call_s", 5.0)
        # Real-sized GEMMs took 37 to 92 s on the H200 (2026-12-04).
        tuning = 100.0 if spec["set"] == "real" else 60.0
        estimate = (tuning if heavy(name) else 0.0) + 2.0 * first
        if estimate > left:
            row["max_autotune"] = {"skipped": "time budget (%.0f s left, about %.0f s "
                                   "needed)" % (max(left, 0), estimate)}
            log("max-autotune %s: skipped (budget)" % name)
            continue
        try:
            inputs, refs = state.pop(name) or draw(name, spec)
        except Exception as e:
            row["max_autotune"] = {"error": "inputs or reference: %s: %s" % (
                type(e).__name__, str(e)[-2000:])}
            torch.cuda.empty_cache()
            continue
        torch._dynamo.reset()
        log("max-autotune %s (%.0f s)" % (name, time.time() - start))
        run_torch(row, "max_autotune", torch.compile(P.twin(name),
                                                     mode="max-autotune-no-cudagraphs"),
                  inputs, refs, spec, timer, args.reps)
        del inputs, refs
        torch.cuda.empty_cache()
        write_report()
    state.clear()

    md, sets = write_report()
    log("\n" + md)
    log("\nwrote %s.json, .md, %s (%.0f s)" % (
        base, ", ".join("-%s.svg" % k for k in sets), time.time() - start))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _version(module):
    try:
        return __import__(module).__version__
    except Exception:
        return None


if __name__ == "__main__":
    sys.exit(main())
