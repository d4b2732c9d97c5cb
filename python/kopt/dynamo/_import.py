# ===- _import.py - An FX graph as linalg on tensors -----------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# The default importer: a TorchDynamo graph, specialised to its call's
# static shapes, through torch.export and torch-mlir's FX importer to linalg
# on tensors, as scripts/export-model-zoo.py exports the model zoo. Every
# tensor the graph reads is a function argument: its inputs (Dynamo passes
# a module's parameters and buffers as inputs) and the tensors it reads as
# attributes (lifted to inputs here), so that no weight is copied into the
# MLIR as a constant; kopt binds them as device buffers instead.
#
# An importer is any callable (graph, args) -> ImportedGraph; the bench
# gives one that reads pre-exported files where torch-mlir is missing.
#
# ===----------------------------------------------------------------------===#

import os
import re
from dataclasses import dataclass
from typing import Any, Tuple

from ._errors import CompileError


@dataclass(frozen=True)
class ImportedGraph:
    """A graph as MLIR for kopt. `mlir` is the text of a module with one
    function (linalg on tensors or TOSA); `arguments` gives, for each of
    the function's arguments in order, where its tensor comes from: an int,
    the index of the graph's input, or a tensor, bound as it is (a weight or
    constant the graph reads, held for the module's life)."""

    mlir: str
    arguments: Tuple[Any, ...]


def _lift_tensor_attributes(gm):
    """`gm`, or a graph module over the same code that takes the tensors it
    reads with get_attr as extra trailing inputs, and those tensors."""
    import torch

    lifted = []
    for node in gm.graph.nodes:
        if node.op != "get_attr":
            continue
        value = gm
        for atom in node.target.split("."):
            value = getattr(value, atom)
        if isinstance(value, torch.Tensor):
            lifted.append((node, value))
    if not lifted:
        return gm, []
    graph = torch.fx.Graph()
    mapping = {}
    nodes = list(gm.graph.nodes)
    for node in nodes:
        if node.op == "placeholder":
            mapping[node] = graph.node_copy(node, lambda n: mapping[n])
    for index, (node, _) in enumerate(lifted):
        mapping[node] = graph.placeholder(f"kopt_lifted_{index}")
    for node in nodes:
        if node.op != "placeholder" and node not in mapping:
            mapping[node] = graph.node_copy(node, lambda n: mapping[n])
    return torch.fx.GraphModule(gm, graph), [value for _, value in lifted]


def _op_of(message):
    """The op a torch-mlir diagnostic is about: the ATen op of an illegal
    torch.operator, else the first quoted op name."""
    for pattern in (r'name = "([\w.]+)"', r"operation '([\w.]+)'",
                    r"'([a-z_]+\.[\w.]+)' op"):
        match = re.search(pattern, message)
        if match:
            return match.group(1)
    return None


def _source_line(location, graph):
    """FILE:LINE of the model's source that a torch-mlir location in the
    code of `graph` stands for (through the graph's line map and the node's
    stack trace), or None."""
    match = re.search(r'"<eval_with_key>[^"]*":(\d+):', location)
    if not match:
        return None
    try:
        line = int(match.group(1)) - getattr(graph, "_prologue_start", 0)
        index = graph._lineno_map[line]
        node = list(graph.graph.nodes)[index]
    except (AttributeError, KeyError, IndexError, TypeError):
        return None
    frames = re.findall(r'File "([^"]+)", line (\d+)',
                        node.meta.get("stack_trace") or "")
    if not frames:
        return None
    path, number = frames[-1]
    return f"{os.path.basename(path)}:{number}"


def _torch_mlir_reason(error, diagnostics, graph):
    """One line for a torch-mlir failure: its first error diagnostic, by
    the op it names and the model's source line where they are known."""
    if diagnostics:
        location, message = diagnostics[0]
        op = _op_of(message)
        where = _source_line(location, graph)
        what = (f"torch-mlir cannot lower {op}" if op else
                f"torch-mlir: {message.splitlines()[0]}")
        if op and not message.startswith("failed to legalize"):
            what += f": {message.splitlines()[0]}"
        return what + (f" (at {where})" if where else "")
    line = next((line.strip() for line in str(error).splitlines()
                 if line.strip()), "")
    return f"torch-mlir: {type(error).__name__}" + (f": {line}"
                                                    if line else "")


def _check_signature(program):
    """CompileError for what kopt cannot run: writes to inputs, outputs that
    are not tensors."""
    from torch.export.graph_signature import OutputKind, TensorArgument

    signature = program.graph_signature
    for spec in signature.output_specs:
        if spec.kind != OutputKind.USER_OUTPUT:
            raise CompileError(f"the graph writes its input "
                               f"{spec.target or spec.arg} in place, which a "
                               "kopt module cannot")
        if not isinstance(spec.arg, TensorArgument):
            raise CompileError(f"the graph returns a {type(spec.arg).__name__}"
                               ", not a tensor")


def fx_importer(gm, args):
    """The default importer: `gm` called with `args` (tensors and the ints
    of its symbolic sizes, which are fixed here) as linalg on tensors."""
    import torch

    try:
        from torch_mlir import fx
        from torch_mlir.extras.fx_decomp_util import get_decomposition_table
        from torch._decomp import get_decompositions
    except ImportError as error:
        raise CompileError("torch-mlir is not installed (pip install "
                           f"torch-mlir): {error}") from None
    graph, lifted = _lift_tensor_attributes(gm)
    num_inputs = len(args)
    args = list(args) + lifted
    slots = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    fixed = [a if isinstance(a, torch.Tensor) else _concrete(a) for a in args]

    class Specialised(torch.nn.Module):
        """`graph` with its non-tensor inputs fixed."""

        def __init__(self):
            super().__init__()
            self.graph = graph

        def forward(self, *tensors):
            values = list(fixed)
            for slot, tensor in zip(slots, tensors):
                values[slot] = tensor
            return self.graph(*values)

    tensors = tuple(args[i].detach() for i in slots)
    with torch.no_grad():
        try:
            program = torch.export.export(Specialised(), tensors, strict=False)
            # torch-mlir's decompositions, which also make writes to inputs
            # show in the signature, with PyTorch's own for GELU: torch-mlir
            # lowers the tanh approximation with sqrt(2/pi) as 0.797724.
            table = dict(get_decomposition_table())
            table.update(get_decompositions([torch.ops.aten.gelu]))
            program = program.run_decompositions(table)
        except Exception as error:  # noqa: BLE001 - a reason for the user
            line = (str(error).strip().splitlines() or [""])[0]
            raise CompileError(f"torch.export: {type(error).__name__}: "
                               f"{line}") from None
        _check_signature(program)
        importer, diagnostics = _importer_with_diagnostics()
        try:
            module = fx.export_and_import(program,
                                          output_type="linalg-on-tensors",
                                          fx_importer=importer,
                                          decomposition_table={},
                                          func_name="forward")
        except Exception as error:  # noqa: BLE001 - a reason for the user
            raise CompileError(
                _torch_mlir_reason(error, diagnostics, graph)) from None
    arguments = tuple(slot if slot < num_inputs else args[slot]
                      for slot in slots)
    return ImportedGraph(str(module), arguments)


def _importer_with_diagnostics():
    """torch-mlir's FxImporter in a context that keeps its error
    diagnostics (location, message) in a list rather than printing them."""
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras.fx_importer import FxImporter

    context = ir.Context()
    torch_d.register_dialect(context)
    diagnostics = []

    def keep(diagnostic):
        if diagnostic.severity == ir.DiagnosticSeverity.ERROR:
            diagnostics.append(
                (str(diagnostic.location), str(diagnostic.message)))
        return True

    context.attach_diagnostic_handler(keep)
    return FxImporter(context=context), diagnostics


def _concrete(value):
    """An int, float or bool from a symbolic or plain scalar."""
    for kind in (bool, int, float):
        if isinstance(value, kind):
            return kind(value)
    return value
