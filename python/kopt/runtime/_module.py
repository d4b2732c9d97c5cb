# ===- _module.py - A runtime module loaded on a device --------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Module: koptModuleLoad, run on the caller's tensors with
# koptModuleBindBuffer and koptModuleRun, its batch set with
# koptModuleSetBatch. A run with torch tensors in the module's order goes
# through a RunPlan (_run.py), made once per binding state; anything else
# (mappings, other frameworks' arrays) through the general path here, which
# checks every value, then binds. Both bind a pointer only when it changed.
#
# ===----------------------------------------------------------------------===#

import ctypes
import os
import sys
from collections.abc import Mapping

from . import _buffers
from ._capi import Error
from ._objects import (KernelDatabase, _describe, _describe_batch, _device,
                       _Handle, _path)
from ._run import RunPlan


class Module(_Handle):
    """A runtime module (`kopt compile --emit-module`) loaded on a device.

    `device` is a Device or an ordinal (0 by default; devices of the same
    ordinal are shared); `db` a KernelDatabase or a path, needed only for a
    module whose plans refer to database records. `graph=True` runs it
    through a CUDA graph (set_graph_capture). Not thread-safe: use one
    module per thread.

    `inputs` and `outputs` describe the tensors at the batch size in effect;
    `batch_info` says how the batch varies (static for most modules)."""

    _destroy_name = "koptModuleDestroy"

    def __init__(self, path, device=0, db=None, graph=False):
        super().__init__()
        self.path = os.fspath(path)
        self.device = _device(device)
        database = KernelDatabase(db) if isinstance(
            db, (str, bytes, os.PathLike)) else db
        try:
            self._lib.check(
                self._lib.koptModuleLoad(
                    self.device._require_open(), _path(path),
                    database._require_open() if database else None,
                    ctypes.byref(self._handle)))
        finally:
            # The module does not keep the database.
            if database is not None and database is not db:
                database.close()
        self.device._modules.add(self)
        # By name: the value bound now (held, so its memory outlives the
        # binding), its pointer (bound again only on a change, which keeps
        # a captured graph), whether it came through torch; and the names
        # bound by bind(), which runs need not pass.
        self._held = {}
        self._pointers = {}
        self._through_torch = {}
        self._pinned = set()
        self._graph = False
        self._describe()
        if graph:
            self.set_graph_capture(True)

    def _describe(self):
        """Reads the inputs, outputs and batch (again, after the batch
        changed); forgets the run plan."""
        lib, handle = self._lib, self._handle
        self.batch_info = _describe_batch(lib, handle,
                                          "koptModuleGetBatchInfo")
        self.inputs = _describe(lib, handle, lib.koptModuleGetNumInputs,
                                lib.koptModuleGetInputInfo)
        self.outputs = _describe(lib, handle, lib.koptModuleGetNumOutputs,
                                 lib.koptModuleGetOutputInfo)
        self._roles = {info.name: (info, "input") for info in self.inputs}
        self._roles.update(
            {info.name: (info, "output") for info in self.outputs})
        self._plan = None

    @property
    def load_info(self):
        """How the module's code was loaded, one line per plan source."""
        info = ctypes.c_char_p()
        self._lib.check(
            self._lib.koptModuleGetLoadInfo(self._require_open(),
                                            ctypes.byref(info)))
        return info.value.decode("utf-8", "replace")

    @property
    def batch(self):
        """The batch size in effect (0 for a static module)."""
        return self.batch_info.batch

    def set_batch(self, batch):
        """Sets the batch size of the next runs of a module with a dynamic
        batch: one of `batch_info.sizes`, or any positive size when its
        samples are independent (libkoptrt's message says otherwise). The
        inputs and outputs carrying the batch take their shapes at that
        size and lose their bindings, bind() ones included; weights keep
        theirs. Setting the size in effect changes nothing."""
        batch = int(batch)
        info = self.batch_info
        if info.dynamic and batch == info.batch:
            return
        lib = self._lib
        lib.check(lib.koptModuleSetBatch(self._require_open(), batch))
        for name in info.inputs + info.outputs:
            self._pointers.pop(name, None)
            self._held.pop(name, None)
            self._through_torch.pop(name, None)
            self._pinned.discard(name)
        self._describe()

    def _batch_from(self, values):
        """Sets the batch from the leading dimension of the first value of
        `values` (by name) that carries the batch, if any."""
        info = self.batch_info
        for name in info.inputs + info.outputs:
            value = values.get(name)
            if value is None:
                continue
            leading = _buffers.leading_dim(value)
            if leading is None:
                return
            tensor = self._roles[name][0]
            per_sample = tensor.shape[0] // info.batch
            if per_sample <= 0 or leading % per_sample:
                raise Error(f"'{name}' has {leading} rows, not a multiple "
                            f"of the {per_sample} of each sample")
            self.set_batch(leading // per_sample)
            return

    @property
    def graph_capture(self):
        return self._graph

    def set_graph_capture(self, enable):
        """With `enable`, the next run captures the module's launches into a
        CUDA graph, and later runs launch it at once; binding a new pointer
        captures again, so pass the same output tensors each call."""
        self._lib.check(
            self._lib.koptModuleSetGraphCapture(self._require_open(),
                                                int(bool(enable))))
        self._graph = bool(enable)

    def new_outputs(self):
        """Fresh, uninitialised torch tensors for the outputs, on the
        module's device."""
        import torch
        device = self.device.torch_device
        return [
            torch.empty(info.shape, dtype=info.torch_dtype(), device=device)
            for info in self.outputs
        ]

    def _by_name(self, values):
        unknown = [name for name in values if name not in self._roles]
        if unknown:
            raise Error(f"the module has no input or output "
                        f"{', '.join(map(repr, unknown))} (it has "
                        f"{', '.join(self._roles)})")
        return dict(values)

    def _in_order(self, values, infos, role):
        """A sequence of values for those of `infos` that bind() did not
        bind, by name."""
        names = [info.name for info in infos if info.name not in self._pinned]
        values = list(values)
        if len(values) != len(names):
            pinned = len(infos) - len(names)
            raise Error(f"the module takes {len(names)} {role}s "
                        f"({', '.join(names)}" +
                        (f"; {pinned} more bound by bind()" if pinned else "")
                        + f"), not {len(values)}")
        return dict(zip(names, values))

    def _check_all(self, values):
        """Checks every value of `values` (by name): their pointers, as
        _bind_checked takes them."""
        device = self.device
        checked = []
        for name, value in values.items():
            info, role = self._roles[name]
            pointer, through_torch = _buffers.device_pointer(
                value, info, role, device, writable=role == "output")
            checked.append((name, value, pointer, through_torch))
        return checked

    def _bind_checked(self, checked):
        handle = self._require_open()
        for name, value, pointer, through_torch in checked:
            if self._pointers.get(name) != pointer:
                self._lib.check(
                    self._lib.koptModuleBindBuffer(handle, name.encode(),
                                                   pointer))
                self._pointers[name] = pointer
            self._held[name] = value
            self._through_torch[name] = through_torch

    def bind(self, values, batch=None):
        """Binds `values`, a mapping by input or output name, for this and
        every later run until bound again: weights, say, bound once, so that
        each run passes (and checks) only what changes. The module holds
        the values, so their memory stays valid. With a dynamic batch, the
        batch is set first: `batch`, else from the leading dimension of a
        value that carries it."""
        if not isinstance(values, Mapping):
            raise Error("bind() takes a mapping by input or output name")
        values = self._by_name(values)
        self._set_batch_for(values, batch)
        self._bind_checked(self._check_all(values))
        self._pinned.update(values)
        self._plan = None

    def _set_batch_for(self, values, batch):
        if batch is not None:
            self.set_batch(batch)
        elif self.batch_info.dynamic:
            self._batch_from(values)

    def run(self, inputs=(), outputs=None, stream=None, batch=None):
        """Enqueues one run of the module on `stream` and returns its
        outputs as a list, without waiting.

        `inputs` is a sequence of the inputs that bind() did not bind (all
        of them, without bind()), in the module's order, or a mapping by
        name. `outputs` likewise, or None for fresh torch tensors. Each is a
        CUDA tensor (torch, __cuda_array_interface__, DLPack) of exactly
        the module's shape and dtype, contiguous: its memory is used in
        place, nothing is copied. `stream` (see `_buffers.stream_handle`):
        by default torch's current stream when torch tensors are bound.
        With a dynamic batch, the batch is `batch`, else the leading
        dimension of the passed tensors that carry it, else the one in
        effect."""
        if batch is None and type(inputs) in (list, tuple) and (
                outputs is None or type(outputs) in (list, tuple)):
            plan = self._plan
            if plan is None:
                # A torch.Tensor cannot exist before torch is imported.
                torch = sys.modules.get("torch")
                if torch is not None:
                    self._require_open()
                    plan = self._plan = RunPlan(self, torch)
            if plan is not None:
                results = (plan.run_fresh(inputs)
                           if outputs is None and stream is None else
                           plan.run(inputs, outputs, stream))
                if results is not None:
                    return results
        return self._run_checked(inputs, outputs, stream, batch)

    def _run_checked(self, inputs, outputs, stream, batch):
        self._require_open()
        values = (self._by_name(inputs) if isinstance(inputs, Mapping) else
                  self._in_order(inputs, self.inputs, "input"))
        if outputs is not None:
            values.update(
                self._by_name(outputs) if isinstance(outputs, Mapping) else
                self._in_order(outputs, self.outputs, "output"))
        self._set_batch_for(values, batch)
        for infos, role in ((self.inputs, "input"), (self.outputs, "output")):
            if role == "output" and outputs is None:
                continue
            missing = [
                info.name for info in infos
                if info.name not in values and info.name not in self._pinned
            ]
            if missing:
                raise Error(f"{role} {', '.join(map(repr, missing))} is not "
                            "passed, nor bound by bind()")
        checked = self._check_all(values)
        if outputs is None:
            # Allocated once the inputs are known to fit.
            fresh = self.new_outputs()
            checked += self._check_all({
                info.name: tensor
                for info, tensor in zip(self.outputs, fresh)
                if info.name not in self._pinned
            })
        self._bind_checked(checked)
        stream = _buffers.stream_handle(stream,
                                        any(self._through_torch.values()),
                                        self.device)
        self._lib.check(
            self._lib.koptModuleRun(self._require_open(), stream or None))
        results = [self._held[info.name] for info in self.outputs]
        if outputs is None:
            # Fresh outputs belong to the caller alone (see RunPlan.run).
            for info in self.outputs:
                if info.name not in self._pinned:
                    del self._held[info.name]
        return results

    def __call__(self, *inputs, outputs=None, stream=None):
        """run(inputs): the output, or a tuple of outputs."""
        results = self.run(inputs, outputs=outputs, stream=stream)
        return results[0] if len(results) == 1 else tuple(results)

    def close(self):
        self._held = {}
        self._pointers = {}
        self._plan = None
        super().close()

    def __repr__(self):
        return f"kopt.runtime.Module({self.path!r})"
