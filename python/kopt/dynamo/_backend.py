# ===- _backend.py - kopt as a torch.compile backend -----------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Backend is what TorchDynamo calls with each graph it captures and the
# graph's example inputs: the graph goes through the importer to MLIR,
# through `kopt compile --emit-module` to a runtime module, and comes back
# as a CompiledGraph that runs the module with kopt.runtime. A graph whose
# sizes are all static is compiled at once; one with symbolic sizes is
# compiled on its first call with each static signature. Whatever kopt
# cannot compile runs in eager PyTorch, with one FallbackWarning naming the
# graph and the reason (or raises CompileError with fallback=False).
#
# ===----------------------------------------------------------------------===#

import atexit
import itertools
import logging
import os
import re
import shutil
import tempfile
import threading
import warnings
from dataclasses import dataclass
from typing import Optional

from .. import runtime as rt
from ._compiled import CompiledGraph, Specialising
from ._errors import CompileError, FallbackWarning
from ._import import fx_importer
from ._options import Options
from ._tool import compile_module

log = logging.getLogger("kopt.dynamo")

_counter = itertools.count()
_scratch = None
_scratch_lock = threading.Lock()


def _scratch_dir():
    """A folder for this process's graphs, removed at exit."""
    global _scratch
    with _scratch_lock:
        if _scratch is None:
            _scratch = tempfile.mkdtemp(prefix="kopt-graphs-")
            atexit.register(shutil.rmtree, _scratch, True)
        return _scratch


@dataclass
class GraphRecord:
    """One graph the backend was given: `name` (g<N>, its files' stem),
    `ops` (its number of operations), `frame` (Dynamo's compile id),
    `compiled` (the CompiledGraph of its first specialisation, or None),
    `reason` (why it runs eagerly, or None) and `totals` (the tune report's
    totals: groups, hits, tuned, missed, seconds)."""

    name: str
    ops: int
    frame: Optional[str] = None
    compiled: Optional[CompiledGraph] = None
    reason: Optional[str] = None
    totals: Optional[dict] = None


def _frame():
    """Dynamo's compile id of the graph being compiled (frame/recompile, as
    its logs print it), or None."""
    try:
        from torch._guards import CompileContext
        compile_id = CompileContext.current_compile_id()
    except Exception:  # noqa: BLE001 - an older or newer torch
        return None
    return None if compile_id is None else str(compile_id)


def _source(gm):
    """(file, line) of the model source of the graph's first operation,
    from Dynamo's stack traces, or None."""
    for node in gm.graph.nodes:
        frames = re.findall(r'File "([^"]+)", line (\d+)',
                            node.meta.get("stack_trace") or "")
        if frames:
            return frames[-1][0], int(frames[-1][1])
    return None


def _is_symbolic(gm, example_inputs):
    import torch
    if any(not isinstance(a, torch.Tensor) for a in example_inputs):
        return True
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("example_value")
        if isinstance(value, torch.Tensor) and any(
                isinstance(s, torch.SymInt) for s in value.shape):
            return True
    return False


def _check_inputs(args):
    """CompileError for inputs kopt cannot take."""
    import torch
    if torch.is_grad_enabled() and any(
            isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        raise CompileError("kopt compiles for inference only, and an input "
                           "requires grad: call the model under "
                           "torch.no_grad() or torch.inference_mode()")


def _results(gm):
    """How the graph returns its results ("tuple", "list" or "tensor") and
    what it returns, in order."""
    node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    value = node.args[0]
    if isinstance(value, (tuple, list)):
        return ("list" if isinstance(value, list) else "tuple"), list(value)
    return "tensor", [value]


def _check_module(info, imported, args, results):
    """CompileError when the module's inputs are not what the importer said
    it would bind to them, or its outputs not what the graph returns."""
    import torch

    def dtype_name(tensor):
        return str(tensor.dtype).replace("torch.", "")

    if len(info.inputs) != len(imported.arguments):
        raise CompileError(f"the module takes {len(info.inputs)} inputs, the "
                           f"importer bound {len(imported.arguments)}")
    for tensor, source in zip(info.inputs, imported.arguments):
        value = args[source] if isinstance(source, int) else source
        if not isinstance(value, torch.Tensor):
            raise CompileError(f"module input {tensor} is bound to a "
                               f"{type(value).__name__}, not a tensor")
        if (tuple(value.shape) != tensor.shape or
                dtype_name(value) != tensor.dtype):
            raise CompileError(
                f"module input {tensor} does not fit the graph's "
                f"{dtype_name(value)}{list(value.shape)}")
    if len(info.outputs) != len(results):
        raise CompileError(f"the module has {len(info.outputs)} outputs, the "
                           f"graph returns {len(results)} values")
    for tensor, result in zip(info.outputs, results):
        if not isinstance(result, torch.fx.Node):
            raise CompileError(f"the graph returns a {type(result).__name__}"
                               ", not a tensor")
        value = result.meta.get("example_value")
        if not isinstance(value, torch.Tensor):
            continue
        shape = tuple(value.shape)
        if dtype_name(value) != tensor.dtype or (all(
                isinstance(s, int) for s in shape) and shape != tensor.shape):
            raise CompileError(
                f"module output {tensor} is not the graph's "
                f"{dtype_name(value)}{list(shape)}")


def _warn(record, reason, source):
    """The one FallbackWarning of a graph, at its model source line."""
    frame = f", Dynamo frame {record.frame}" if record.frame else ""
    message = FallbackWarning(f"kopt: graph {record.name} ({record.ops} ops"
                              f"{frame}) runs in eager PyTorch: {reason}")
    if source is None:
        warnings.warn(message, stacklevel=3)
    else:
        warnings.warn_explicit(message, FallbackWarning, source[0], source[1])


class Backend:
    """The kopt torch.compile backend with fixed `options` (an Options);
    torch.compile's `options` override them per call. `graphs` lists a
    GraphRecord per graph given, in order."""

    def __init__(self, options=None):
        self.options = options if isinstance(options, Options) else (
            Options.from_mapping(options))
        self.graphs = []

    def __call__(self, gm, example_inputs, options=None, **_):
        # torch.compile also passes `mode` (and `name`); kopt has no modes.
        options = self.options.merged(options)
        ops = sum(node.op in ("call_function", "call_method", "call_module")
                  for node in gm.graph.nodes)
        record = GraphRecord(f"g{next(_counter)}", ops, _frame())
        self.graphs.append(record)
        results = _results(gm)
        warned = []

        def make(args, stem):
            try:
                compiled = self._compile(gm, args, options, stem, results,
                                         record)
            except CompileError as error:
                if not options.fallback:
                    raise
                if not warned:
                    warned.append(True)
                    record.reason = error.reason
                    _warn(record, error.reason, _source(gm))
                return gm.forward
            if record.compiled is None:
                record.compiled = compiled
            return compiled

        if _is_symbolic(gm, example_inputs):
            count = itertools.count()
            return Specialising(
                lambda args: make(args, f"{record.name}_s{next(count)}"))
        return make(list(example_inputs), record.name)

    def _compile(self, gm, args, options, stem, results, record):
        _check_inputs(args)
        importer = options.importer or fx_importer
        try:
            imported = importer(gm, args)
        except (CompileError, rt.Error):
            raise
        except Exception as error:  # noqa: BLE001 - a reason for the user
            line = (str(error).strip().splitlines() or [""])[0]
            raise CompileError(f"the importer failed: "
                               f"{type(error).__name__}: {line}") from error
        folder = options.work_dir or _scratch_dir()
        os.makedirs(folder, exist_ok=True)
        mlir = os.path.join(folder, f"{stem}.mlir")
        with open(mlir, "w") as f:
            f.write(imported.mlir)
        result = compile_module(options, mlir, stem)
        info = rt.describe(result.kmod)
        returns, values = results
        _check_module(info, imported, args, values)
        record.totals = result.totals
        if result.totals:
            totals = result.totals
            log.info(
                "graph %s: %s groups: %s hits, %s tuned, %s missed "
                "(baseline plans); %.2f s; %s", stem, totals.get("groups"),
                totals.get("hits"), totals.get("tuned"), totals.get("missed"),
                totals.get("seconds", 0.0), result.kmod)
        return CompiledGraph(stem, result.kmod, info, imported.arguments,
                             args, returns, cuda_graph=options.cuda_graph)


def backend(gm=None, example_inputs=None, *, options=None, **kwargs):
    """The kopt backend for torch.compile:

        torch.compile(model, backend="kopt", options={"tune": "never"})
        torch.compile(model, backend=kopt.backend)
        torch.compile(model, backend=kopt.backend(db="kernels.db"))

    Called with a graph and its example inputs (as TorchDynamo does), it
    compiles the graph; called with options alone, it returns a Backend
    with those options (Options lists them)."""
    if gm is None:
        values = dict(options or {})
        values.update(kwargs)
        return Backend(Options.from_mapping(values))
    return Backend(Options.from_mapping(options))(gm, example_inputs)


def compile(model, *, fullgraph=False, dynamic=False, **options):
    """torch.compile(model, backend=kopt.backend(**options), dynamic=False,
    fullgraph=fullgraph): a module or function compiled by kopt, specialised
    on static shapes (a new shape compiles again)."""
    import torch
    return torch.compile(model, backend=Backend(Options.from_mapping(options)),
                         fullgraph=fullgraph, dynamic=dynamic)
