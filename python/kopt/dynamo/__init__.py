# ===- kopt/dynamo/__init__.py - kopt as a torch.compile backend -----------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# The torch.compile backend (docs/Python.md):
#
#   model = torch.compile(model, backend="kopt", options={"tune": "never"})
#   model = kopt.compile(model, db="kernels.db")        # the same, static
#
# Each graph TorchDynamo captures goes through torch-mlir's FX importer to
# linalg on tensors, through `kopt compile --emit-module` (tuning what the
# kernel database misses, or not) and runs as a runtime module through
# kopt.runtime, its weights bound once by pointer. Importing this package
# loads neither torch nor torch-mlir; compiling a graph does.
#
# ===----------------------------------------------------------------------===#

from ._backend import Backend, GraphRecord, backend, compile
from ._errors import CompileError, FallbackWarning
from ._import import ImportedGraph, fx_importer
from ._options import Options, cache_dir, default_db_path, find_tool

__all__ = [
    "Backend",
    "CompileError",
    "FallbackWarning",
    "GraphRecord",
    "ImportedGraph",
    "Options",
    "backend",
    "cache_dir",
    "compile",
    "default_db_path",
    "find_tool",
    "fx_importer",
]
