# ===- kopt/__init__.py - The kopt Python package --------------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# kopt.runtime runs kopt's runtime modules on PyTorch tensors through
# libkoptrt; kopt.backend and kopt.compile make kopt a torch.compile
# backend (kopt.dynamo). docs/Python.md describes both. Importing kopt
# loads neither libkoptrt nor torch.
#
# ===----------------------------------------------------------------------===#

__version__ = "0.1.0"


def backend(gm=None, example_inputs=None, **kwargs):
    """The torch.compile backend: torch.compile(model, backend=kopt.backend)
    or, with options, backend=kopt.backend(db=..., tune=...). See
    kopt.dynamo.backend."""
    from .dynamo import backend as implementation
    return implementation(gm, example_inputs, **kwargs)


def compile(model, **kwargs):
    """torch.compile with the kopt backend, on static shapes; keyword
    arguments are the backend's options (kopt.dynamo.Options) and
    torch.compile's `fullgraph` and `dynamic`. See kopt.dynamo.compile."""
    from .dynamo import compile as implementation
    return implementation(model, **kwargs)
