#!/usr/bin/env python3
# ===- export-model-zoo.py - Export whole-model graphs via torch-mlir ---===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Builds a zoo of real model graphs with random weights (nothing is
# downloaded) and exports them with the torch-mlir FX importer to
# test/Inputs/zoo/:
#
#   resnet18, resnet50, mobilenet_v2, alexnet, vgg16
#                      torchvision definitions, 1x3x224x224
#   vit_b16_block      ViT-B/16 patch embedding, class token, position
#                      embedding and one torchvision encoder block
#   bert_base_layer    BERT-base embeddings (i64 token ids, token types,
#                      attention mask) and one encoder layer, 2x128 tokens
#   gpt2_block         one GPT-2 block: causal mask, tanh GELU, 1x128x768
#   llama_block        one LLaMA-style decoder block: RMSNorm, rotary
#                      embeddings, grouped-query attention (32 query heads,
#                      4 key/value heads), SwiGLU; 1x128x2048
#   unet_resblock      Stable Diffusion's UNet ResNet block: GroupNorm (32
#                      groups) + SiLU + 3x3 conv, time embedding, twice,
#                      residual; 1x320x64x64
#
# Every model goes to linalg on tensors (NAME.mlir); resnet18 and gpt2_block
# also go to TOSA (NAME_tosa.mlir), and resnet18 and bert_base_layer also with
# a dynamic batch dimension (NAME_dynbatch.mlir, torch.export.Dim).
#
# Weights, biases and batch-norm statistics are function arguments, not
# constants (torch.func.functional_call binds them), so the files stay small:
# the weights' shapes are in the signature, their values are not. Beside
# each NAME.mlir, NAME.json lists the function's arguments in order (each
# input's or weight's name, shape and dtype) and its results, so that a
# runner can bind the PyTorch model's own tensors to a kopt module.
#
# The architectures live in scripts/model_zoo.py, which bench/zoo/run_zoo.py
# shares to run the same models on the GPU.
#
# How to run (in a fresh virtualenv outside the source tree; Python 3.11):
#
#   scripts/setup        # makes .venv-torch (scripts/torch-requirements.txt)
#   .venv-torch/bin/python scripts/export-model-zoo.py
#
# Options: --out-dir DIR (default test/Inputs/zoo in this repository) and
# --only NAME (repeatable) to export some files only. The torch wheel is only
# used on the CPU. docs/ModelZoo.md describes the zoo.
#
# ===----------------------------------------------------------------------===#

import argparse
import importlib.metadata
import inspect
import json
import os
import re
import sys

import torch
import torch.nn as nn
from torch.export import Dim
from torch_mlir import fx

from model_zoo import EXPORTS, MODELS, weight_names

MANIFEST_SCHEMA = "kopt.zoo.arguments/1"


class WeightsAsArgs(nn.Module):
    """Calls `model` with its parameters and buffers taken from the
    arguments that follow its `num_inputs` inputs, in `names` order."""

    def __init__(self, model, num_inputs, names):
        super().__init__()
        self.model = model
        self.num_inputs = num_inputs
        self.names = names

    def forward(self, *args):
        inputs = args[:self.num_inputs]
        weights = dict(zip(self.names, args[self.num_inputs:]))
        return torch.func.functional_call(self.model, weights, inputs)


# The largest dense constant an export may hold, in bytes.
MAX_CONSTANT_BYTES = 4096


def layer_norm_in_input_dtype(input, normalized_shape, weight, bias, eps):
    """aten.native_layer_norm with its statistics in the input's dtype.
    The usual decomposition computes the variance in f64 (an f32 input is
    upcast), and TOSA's validation refuses f64 tensors, so a TOSA export
    uses this one: two passes (the mean, then the mean of the squared
    deviations), as accurate in f32 as a LayerNorm needs."""
    dims = list(range(input.dim() - len(normalized_shape), input.dim()))
    mean = torch.mean(input, dims, keepdim=True)
    centred = input - mean
    rstd = torch.rsqrt(torch.mean(centred * centred, dims, keepdim=True) + eps)
    out = centred * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean, rstd


def decompositions(output_type):
    """torch-mlir's decompositions, with PyTorch's own for GELU: torch-mlir
    lowers the tanh approximation with sqrt(2/pi) written as 0.797724 (it is
    0.7978846), an error of 2e-4 inside the tanh that a GPT-2 block's output
    carries as 2e-5; PyTorch's decomposition has the exact constant. For
    TOSA, LayerNorm keeps its statistics in f32
    (`layer_norm_in_input_dtype`)."""
    from torch._decomp import get_decompositions
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table
    table = dict(get_decomposition_table())
    table.update(get_decompositions([torch.ops.aten.gelu]))
    if output_type == "tosa":
        table[torch.ops.aten.native_layer_norm.default] = (
            layer_norm_in_input_dtype)
    return table


def export(model_name, output_type, dynamic_batch):
    build, make_inputs, description = MODELS[model_name]
    model = build().eval()
    # The example batch is 2 for a dynamic batch: torch.export specializes
    # sizes 0 and 1.
    inputs = make_inputs(2) if dynamic_batch else make_inputs()
    names = weight_names(model)
    state = dict(model.named_parameters())
    state.update(model.named_buffers())
    weights = tuple(state[n].detach() for n in names)
    wrapper = WeightsAsArgs(model, len(inputs), names).eval()
    dynamic_shapes = None
    if dynamic_batch:
        batch = Dim("batch", min=1, max=64)
        dynamic_shapes = (tuple([{0: batch}] * len(inputs) +
                                [None] * len(weights)),)
        description = description.replace("[1,", "[?,").replace("[2,", "[?,")
    with torch.no_grad():
        module = fx.export_and_import(wrapper, *inputs, *weights,
                                      output_type=output_type,
                                      dynamic_shapes=dynamic_shapes,
                                      decomposition_table=decompositions(output_type),
                                      func_name="forward")
        results = model(*inputs)
    arguments = describe_arguments(model, inputs, names, weights,
                                   dynamic_batch)
    results = [tensor_entry(None, None, t, dynamic_batch)
               for t in (results if isinstance(results, tuple) else
                         (results,))]
    return str(module), description, arguments, results


def tensor_entry(name, kind, tensor, dynamic_batch):
    """One argument or result of the manifest; a dynamic batch is null."""
    shape = list(tensor.shape)
    if dynamic_batch:
        shape[0] = None
    entry = {"name": name, "kind": kind} if name else {}
    entry.update(shape=shape, dtype=str(tensor.dtype).split(".")[-1])
    return entry


def describe_arguments(model, inputs, names, weights, dynamic_batch):
    """The exported function's arguments in order: the model's inputs
    (named after its forward's parameters), then its parameters and
    buffers (`weight_names`) by state-dict name."""
    input_names = list(inspect.signature(model.forward).parameters)
    parameters = {n for n, _ in model.named_parameters()}
    return ([
        tensor_entry(name, "input", tensor, dynamic_batch)
        for name, tensor in zip(input_names, inputs)
    ] + [
        tensor_entry(name, "parameter" if name in parameters else "buffer",
                     tensor, False) for name, tensor in zip(names, weights)
    ])


def write_manifest(path, stem, model_name, output_type, dynamic_batch,
                   arguments, results):
    """NAME.json: one argument or result a line, so diffs stay readable."""
    head = {
        "schema": MANIFEST_SCHEMA,
        "file": f"{stem}.mlir",
        "model": model_name,
        "output_type": output_type,
        "dynamic_batch": dynamic_batch,
    }
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in
                     head.items()]
    for key, entries, last in (("arguments", arguments, False),
                               ("results", results, True)):
        lines.append(f" {json.dumps(key)}: [")
        lines += [
            "  " + json.dumps(e) + ("," if i + 1 < len(entries) else "")
            for i, e in enumerate(entries)
        ]
        lines.append(" ]" + ("" if last else ","))
    lines.append("}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    repo_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(
        description="Export the model zoo to linalg and TOSA MLIR.")
    parser.add_argument("--out-dir",
                        default=os.path.join(repo_root, "test", "Inputs",
                                             "zoo"))
    parser.add_argument("--only", action="append", default=[],
                        help="export only this file stem (repeatable)")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    unknown = set(args.only) - {stem for stem, *_ in EXPORTS}
    if unknown:
        parser.error(f"unknown file stem(s): {', '.join(sorted(unknown))}")

    versions = ", ".join(
        f"{p} {importlib.metadata.version(p)}"
        for p in ("torch", "torch-mlir", "torchvision"))
    for stem, model_name, output_type, dynamic_batch in EXPORTS:
        if args.only and stem not in args.only:
            continue
        torch.manual_seed(0)
        text, description, arguments, results = export(
            model_name, output_type, dynamic_batch)
        num_weights = sum(a["kind"] != "input" for a in arguments)
        # Weights are arguments: a large dense constant means a model
        # captured a tensor it should have computed or taken as argument.
        # (Small ones, such as TOSA's index tables, are fine.)
        for blob in re.findall(r'dense<"0x([0-9A-F]*)"', text):
            if len(blob) > 2 * MAX_CONSTANT_BYTES:
                sys.exit(f"{stem}: the export holds a dense constant of "
                         f"{len(blob) // 2} bytes")
        # torch-mlir holds GroupNorm's index tables as dense resources:
        # small ones are fine, as above.
        for blob in re.findall(r'^\s*[\w.]+: "0x([0-9A-F]*)"', text,
                               re.MULTILINE):
            if len(blob) > 2 * MAX_CONSTANT_BYTES + 8:
                sys.exit(f"{stem}: the export holds a dense resource of "
                         f"{len(blob) // 2} bytes")
        path = os.path.join(args.out_dir, f"{stem}.mlir")
        with open(path, "w") as f:
            f.write(f"// Generated by scripts/export-model-zoo.py with "
                    f"{versions}; do not edit.\n")
            f.write(f"// Model: {description}; {output_type}; arguments: "
                    f"the inputs, then {num_weights} weight tensors.\n")
            f.write(text)
        print(f"wrote {path} ({os.path.getsize(path)} bytes)",
              file=sys.stderr)
        write_manifest(os.path.join(args.out_dir, f"{stem}.json"), stem,
                       model_name, output_type, dynamic_batch, arguments,
                       results)


if __name__ == "__main__":
    main()
