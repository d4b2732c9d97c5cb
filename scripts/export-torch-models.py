#!/usr/bin/env python3
# ===- export-torch-models.py - Export linalg test data via torch-mlir ---===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Exports a few small PyTorch models to linalg-on-tensors MLIR with the
# torch-mlir FX importer and writes them to test/Inputs/frontend/. The files
# are test data for kopt: real frontend output rather than hand-written IR.
#
# All weights are function arguments (not module parameters), so no large
# dense constants are emitted and the files stay small. Shapes are static and
# everything is float32.
#
# How to run (in a fresh virtualenv outside the source tree):
#
#   python3 -m venv VENV
#   VENV/bin/pip install torch==2.15.0 torch-mlir==20261001
#   VENV/bin/python scripts/export-torch-models.py
#
# (Python 3.11. The torch wheel is only used on the CPU; its CUDA libraries
# merely need to be loadable at import time.) An optional argument names the
# output directory; the default is test/Inputs/frontend in this repository.
#
# ===----------------------------------------------------------------------===#

import argparse
import importlib.metadata
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch_mlir import fx


class MLP(torch.nn.Module):
    """Linear(256->1024) + GELU + Linear(1024->256)."""

    def forward(self, x, w1, b1, w2, b2):
        h = F.gelu(F.linear(x, w1, b1))
        return F.linear(h, w2, b2)


class Attention(torch.nn.Module):
    """softmax(q @ k^T * scale) @ v."""

    def forward(self, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        s = torch.matmul(q, k.transpose(-2, -1)) * scale
        return torch.matmul(torch.softmax(s, dim=-1), v)


class LayerNormGelu(torch.nn.Module):
    """LayerNorm over the last dimension followed by GELU."""

    def forward(self, x, w, b):
        return F.gelu(F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5))


class GroupNorm(torch.nn.Module):
    """GroupNorm: 4 groups of 4 channels, with per-channel weights."""

    def forward(self, x, w, b):
        return F.group_norm(x, 4, w, b, eps=1e-5)


class GroupNormSilu(torch.nn.Module):
    """GroupNorm (32 groups) + SiLU, as a diffusion UNet's blocks open."""

    def forward(self, x, w, b):
        return F.silu(F.group_norm(x, 32, w, b, eps=1e-5))


class LinearGroupNormHardtanh(torch.nn.Module):
    """Linear + GroupNorm over the features (8 groups) + hardtanh."""

    def forward(self, x, w, b, gw, gb):
        return F.hardtanh(F.group_norm(F.linear(x, w, b), 8, gw, gb, eps=1e-5))


class ConvReluPool(torch.nn.Module):
    """conv2d(3->8, 3x3, padding 1) + ReLU + max_pool2d(2)."""

    def forward(self, x, w, b):
        return F.max_pool2d(F.relu(F.conv2d(x, w, b, padding=1)), 2)


def randn(*shape):
    return torch.randn(*shape, dtype=torch.float32)


def models():
    """(file name, model, example args, description) for every export."""
    return [
        ("torch_mlp.mlir", MLP(),
         (randn(8, 256), randn(1024, 256), randn(1024),
          randn(256, 1024), randn(256)),
         "MLP: linear(256->1024) + gelu + linear(1024->256), x: [8,256]"),
        ("torch_attention.mlir", Attention(),
         (randn(2, 4, 64, 32), randn(2, 4, 64, 32), randn(2, 4, 64, 32)),
         "attention: softmax(q @ k^T * scale) @ v, q/k/v: [2,4,64,32]"),
        ("torch_layernorm_gelu.mlir", LayerNormGelu(),
         (randn(4, 128, 256), randn(256), randn(256)),
         "layer_norm(256) + gelu, x: [4,128,256]"),
        ("torch_groupnorm.mlir", GroupNorm(),
         (randn(2, 16, 8, 8), randn(16), randn(16)),
         "group_norm(4 groups, 16 channels), x: [2,16,8,8]"),
        ("torch_groupnorm_silu_unet.mlir", GroupNormSilu(),
         (randn(2, 320, 64, 64), randn(320), randn(320)),
         "group_norm(32 groups, 320 channels) + silu, x: [2,320,64,64] "
         "(Stable Diffusion's UNet at 512x512)"),
        ("torch_linear_groupnorm_hardtanh.mlir", LinearGroupNormHardtanh(),
         (randn(4, 16), randn(32, 16), randn(32), randn(32), randn(32)),
         "linear(16->32) + group_norm(8 groups) + hardtanh, x: [4,16]"),
        ("torch_conv_relu_pool.mlir", ConvReluPool(),
         (randn(1, 3, 32, 32), randn(8, 3, 3, 3), randn(8)),
         "conv2d(3->8, 3x3, pad 1) + relu + max_pool2d(2), x: [1,3,32,32]"),
    ]


def main():
    repo_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out_dir", nargs="?",
                        default=os.path.join(repo_root, "test", "Inputs",
                                             "frontend"))
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)

    torch.manual_seed(0)
    torch_version = torch.__version__.split("+")[0]
    torch_mlir_version = importlib.metadata.version("torch-mlir")
    header = (f"// Generated by scripts/export-torch-models.py with torch "
              f"{torch_version} and torch-mlir {torch_mlir_version}; "
              f"do not edit.\n")

    for file_name, model, example_args, description in models():
        model.eval()
        module = fx.export_and_import(model, *example_args,
                                      output_type="linalg-on-tensors",
                                      func_name="forward")
        path = os.path.join(args.out_dir, file_name)
        with open(path, "w") as f:
            f.write(header)
            f.write(f"// Model: {description}.\n")
            f.write(str(module))
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
