# ===- dry.py - kopt.runtime.Module without a GPU, for --dry-run -----------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# DryModule stands in for kopt.runtime.Module when run_backend.py runs with
# --dry-run on a machine without a GPU: it reads the real module's
# description (kopt.runtime.describe), checks every tensor bound or passed
# against it by name, shape and dtype, as libkoptrt would, and returns
# zeros of the outputs' shapes on the inputs' device. Everything but the
# kernels then runs: the backend, the binding and the timing loops.
#
# ===----------------------------------------------------------------------===#

import torch

import kopt.runtime as rt


class DryLibrary:
    """The C API calls the overhead measurement makes."""

    @staticmethod
    def koptModuleRun(handle, stream):
        return 0

    @staticmethod
    def check(status):
        if status != 0:
            raise rt.Error(f"status {status}")


class DryModule:

    def __init__(self, path, device=0, db=None, graph=False):
        info = rt.describe(path)
        self.path = path
        self.inputs, self.outputs = info.inputs, info.outputs
        self._roles = {t.name: t for t in info.inputs + info.outputs}
        self._pinned = set()
        self._device = torch.device("cpu")
        self._lib = DryLibrary()
        self._handle = None

    def _check(self, name, value):
        info = self._roles.get(name)
        if info is None:
            raise rt.Error(f"the module has no input or output '{name}'")
        dtype = str(value.dtype).replace("torch.", "")
        if tuple(value.shape) != info.shape or dtype != info.dtype:
            raise rt.Error(f"'{name}' is {dtype}{list(value.shape)}, the "
                           f"module takes {info}")
        self._device = value.device

    def bind(self, values):
        for name, value in values.items():
            self._check(name, value)
        self._pinned.update(values)

    def new_outputs(self):
        return [
            torch.zeros(t.shape, dtype=getattr(torch, t.dtype),
                        device=self._device) for t in self.outputs
        ]

    def run(self, inputs=(), outputs=None, stream=None):
        names = [t.name for t in self.inputs if t.name not in self._pinned]
        inputs = list(inputs)
        if len(inputs) != len(names):
            raise rt.Error(f"the module takes {len(names)} inputs, not "
                           f"{len(inputs)}")
        for name, value in zip(names, inputs):
            self._check(name, value)
        return list(outputs) if outputs is not None else self.new_outputs()

    def close(self):
        pass
