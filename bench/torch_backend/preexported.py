# ===- preexported.py - Graphs from files where torch-mlir is missing ------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# An importer for the kopt backend (kopt.dynamo.ImportedGraph) that reads a
# model's graph exported beforehand (test/Inputs/zoo/NAME.mlir by
# scripts/export-model-zoo.py) instead of importing the Dynamo graph with
# torch-mlir. NAME.json lists the exported function's arguments: the
# model's inputs, then its parameters and buffers by name. Each is matched
# to the Dynamo graph's inputs by identity (Dynamo passes the caller's
# input tensors and the module's parameters as they are); a weight Dynamo
# does not pass is bound as it is. The graph must be the whole model
# (torch.compile(..., fullgraph=True)), as the file is.
#
# ===----------------------------------------------------------------------===#

import os

import manifest as zoo_manifest
from model_zoo import weight_names

import kopt.dynamo as kd


def importer(stem, folder, model, inputs):
    """An importer that gives `folder`/STEM.mlir for the whole `model`
    called on `inputs` (the very tensors the caller passes). Raises
    ValueError when the model does not fit the file's manifest."""
    manifest = zoo_manifest.load(stem, folder)
    problems = zoo_manifest.check(stem, folder)
    if problems:
        raise ValueError("; ".join(problems))
    with open(os.path.join(folder, manifest["file"])) as f:
        text = f.read()
    names = weight_names(model)
    state = dict(model.named_parameters())
    state.update(model.named_buffers())
    tensors = list(inputs) + [state[n] for n in names]
    entries = manifest["arguments"]
    if len(tensors) != len(entries):
        raise ValueError(f"{stem}: the model has {len(tensors)} arguments, "
                         f"the export {len(entries)}")
    for tensor, entry in zip(tensors, entries):
        dtype = str(tensor.dtype).replace("torch.", "")
        if list(tensor.shape) != entry["shape"] or dtype != entry["dtype"]:
            raise ValueError(f"{stem}: argument '{entry['name']}' is "
                             f"{dtype}{list(tensor.shape)}, the export's "
                             f"{entry['dtype']}{entry['shape']}")

    def to_mlir(gm, args):
        arguments = []
        for tensor, entry in zip(tensors, entries):
            index = next((i for i, a in enumerate(args) if a is tensor), None)
            if index is not None:
                arguments.append(index)
            elif entry["kind"] == "input":
                raise kd.CompileError(
                    f"{stem}: input '{entry['name']}' is not an input of "
                    "the graph Dynamo captured (compile with fullgraph=True "
                    "and call with the same tensors)")
            else:
                arguments.append(tensor.detach())
        return kd.ImportedGraph(text, tuple(arguments))

    return to_mlir
