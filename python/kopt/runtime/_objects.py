# ===- _objects.py - Devices, kernel databases and modules ----------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Python objects over libkoptrt's handles: Device (koptDeviceCreate),
# KernelDatabase (koptKernelDbOpen), Module (koptModuleLoad, run on the
# caller's tensors with koptModuleBindBuffer and koptModuleRun) and
# describe() (koptModuleFileOpen, no device needed). Each frees its handle
# on close() or when collected; a module keeps its device alive.
#
# ===----------------------------------------------------------------------===#

import ctypes
import os
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Tuple

from . import _buffers
from ._capi import CTensorInfo, Error, library
from ._types import TensorInfo, from_c


def _path(path):
    return os.fsencode(os.fspath(path))


def _describe(lib, handle, count_fn, info_fn):
    count = ctypes.c_size_t()
    lib.check(count_fn(handle, ctypes.byref(count)))
    infos = []
    for index in range(count.value):
        info = CTensorInfo()
        lib.check(info_fn(handle, index, ctypes.byref(info)))
        infos.append(from_c(info))
    return tuple(infos)


class _Handle:
    """Owns one libkoptrt handle, freed once by `destroy`."""

    _destroy_name = None

    def __init__(self):
        self._lib = library()
        self._handle = ctypes.c_void_p()

    @property
    def closed(self):
        return not self._handle

    def _require_open(self):
        if not self._handle:
            raise Error(f"the {type(self).__name__} is closed")
        return self._handle

    def close(self):
        """Frees the handle; further use raises Error."""
        if self._handle:
            handle, self._handle = self._handle, ctypes.c_void_p()
            getattr(self._lib, self._destroy_name)(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Device(_Handle):
    """CUDA device `ordinal` in its primary context (the one PyTorch uses),
    with a stream of its own. Raises Error ("unavailable") when there is no
    driver or no such device."""

    _destroy_name = "koptDeviceDestroy"

    def __init__(self, ordinal=0):
        super().__init__()
        self.ordinal = int(ordinal)
        self._modules = weakref.WeakSet()
        self._lib.check(
            self._lib.koptDeviceCreate(self.ordinal,
                                       ctypes.byref(self._handle)))

    @property
    def arch(self):
        """The architecture, such as "sm_90"."""
        arch = ctypes.c_char_p()
        self._lib.check(
            self._lib.koptDeviceGetArch(self._require_open(),
                                        ctypes.byref(arch)))
        return arch.value.decode()

    def synchronize(self):
        """Waits for all work on the device."""
        self._lib.check(self._lib.koptDeviceSynchronize(self._require_open()))

    def close(self):
        # Modules are freed before their device.
        for module in list(self._modules):
            module.close()
        super().close()

    def __repr__(self):
        return f"kopt.runtime.Device({self.ordinal})"


_devices = {}
_devices_lock = threading.Lock()


def _device(device):
    """`device` itself, or the shared Device of an ordinal."""
    if isinstance(device, Device):
        return device
    ordinal = int(device)
    with _devices_lock:
        shared = _devices.get(ordinal)
        if shared is None or shared.closed:
            shared = _devices[ordinal] = Device(ordinal)
        return shared


class KernelDatabase(_Handle):
    """A kernel database opened read-only (never written or created); a
    module whose plans are references to its records needs it to load."""

    _destroy_name = "koptKernelDbClose"

    def __init__(self, path):
        super().__init__()
        self.path = os.fspath(path)
        self._lib.check(
            self._lib.koptKernelDbOpen(_path(path),
                                       ctypes.byref(self._handle)))

    def __repr__(self):
        return f"kopt.runtime.KernelDatabase({self.path!r})"


@dataclass(frozen=True)
class ModuleInfo:
    """A module's inputs and outputs, in argument and result order."""

    inputs: Tuple[TensorInfo, ...]
    outputs: Tuple[TensorInfo, ...]


def describe(path):
    """Reads and verifies the module at `path` and describes its inputs and
    outputs, without a device (no GPU needed)."""
    lib = library()
    handle = ctypes.c_void_p()
    lib.check(lib.koptModuleFileOpen(_path(path), ctypes.byref(handle)))
    try:
        return ModuleInfo(
            _describe(lib, handle, lib.koptModuleFileGetNumInputs,
                      lib.koptModuleFileGetInputInfo),
            _describe(lib, handle, lib.koptModuleFileGetNumOutputs,
                      lib.koptModuleFileGetOutputInfo))
    finally:
        lib.koptModuleFileClose(handle)


class Module(_Handle):
    """A runtime module (`kopt compile --emit-module`) loaded on a device.

    `device` is a Device or an ordinal (0 by default; devices of the same
    ordinal are shared); `db` a KernelDatabase or a path, needed only for a
    module whose plans refer to database records. `graph=True` runs it
    through a CUDA graph (set_graph_capture). Not thread-safe: use one
    module per thread."""

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
        self.inputs = _describe(self._lib, self._handle,
                                self._lib.koptModuleGetNumInputs,
                                self._lib.koptModuleGetInputInfo)
        self.outputs = _describe(self._lib, self._handle,
                                 self._lib.koptModuleGetNumOutputs,
                                 self._lib.koptModuleGetOutputInfo)
        self._roles = {info.name: (info, "input") for info in self.inputs}
        self._roles.update(
            {info.name: (info, "output") for info in self.outputs})
        # By name: the value bound now (held, so its memory outlives the
        # binding), its pointer (bound again only on a change, which keeps
        # a captured graph), whether it came through torch; and the names
        # bound by bind(), which runs need not pass.
        self._held = {}
        self._pointers = {}
        self._through_torch = {}
        self._pinned = set()
        self._graph = False
        if graph:
            self.set_graph_capture(True)

    @property
    def load_info(self):
        """How the module's code was loaded, one line per plan source."""
        info = ctypes.c_char_p()
        self._lib.check(
            self._lib.koptModuleGetLoadInfo(self._require_open(),
                                            ctypes.byref(info)))
        return info.value.decode("utf-8", "replace")

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
        device = torch.device("cuda", self.device.ordinal)
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

    def _bind_all(self, values):
        """Checks every value of `values` (by name), then binds them."""
        ordinal = self.device.ordinal
        checked = []
        for name, value in values.items():
            info, role = self._roles[name]
            pointer, through_torch = _buffers.device_pointer(
                value, info, role, ordinal, writable=role == "output")
            checked.append((name, value, pointer, through_torch))
        handle = self._require_open()
        for name, value, pointer, through_torch in checked:
            if self._pointers.get(name) != pointer:
                self._lib.check(
                    self._lib.koptModuleBindBuffer(handle, name.encode(),
                                                   pointer))
                self._pointers[name] = pointer
            self._held[name] = value
            self._through_torch[name] = through_torch

    def bind(self, values):
        """Binds `values`, a mapping by input or output name, for this and
        every later run until bound again: weights, say, bound once, so that
        each run passes (and checks) only what changes. The module holds
        the values, so their memory stays valid."""
        if not isinstance(values, Mapping):
            raise Error("bind() takes a mapping by input or output name")
        values = self._by_name(values)
        self._bind_all(values)
        self._pinned.update(values)

    def run(self, inputs=(), outputs=None, stream=None):
        """Enqueues one run of the module on `stream` and returns its
        outputs as a list, without waiting.

        `inputs` is a sequence of the inputs that bind() did not bind (all
        of them, without bind()), in the module's order, or a mapping by
        name. `outputs` likewise, or None for fresh torch tensors. Each is a
        CUDA tensor (torch, __cuda_array_interface__, DLPack) of exactly
        the module's shape and dtype, contiguous: its memory is used in
        place, nothing is copied. `stream` (see `_buffers.stream_handle`):
        by default torch's current stream when torch tensors are bound."""
        self._require_open()
        values = (self._by_name(inputs) if isinstance(inputs, Mapping) else
                  self._in_order(inputs, self.inputs, "input"))
        missing = [
            info.name for info in self.inputs
            if info.name not in values and info.name not in self._pinned
        ]
        if missing:
            raise Error(f"input {', '.join(map(repr, missing))} is not "
                        "passed, nor bound by bind()")
        if outputs is None:
            fresh = self.new_outputs()
            outputs = {
                info.name: tensor
                for info, tensor in zip(self.outputs, fresh)
                if info.name not in self._pinned
            }
        values.update(
            self._by_name(outputs) if isinstance(outputs, Mapping) else self.
            _in_order(outputs, self.outputs, "output"))
        missing = [
            info.name for info in self.outputs
            if info.name not in values and info.name not in self._pinned
        ]
        if missing:
            raise Error(f"output {', '.join(map(repr, missing))} is not "
                        "passed, nor bound by bind()")
        self._bind_all(values)
        stream = _buffers.stream_handle(stream,
                                        any(self._through_torch.values()),
                                        self.device.ordinal)
        self._lib.check(
            self._lib.koptModuleRun(self._require_open(),
                                    ctypes.c_void_p(stream) if stream else
                                    None))
        return [self._held[info.name] for info in self.outputs]

    def __call__(self, *inputs, outputs=None, stream=None):
        """run(inputs): the output, or a tuple of outputs."""
        results = self.run(inputs, outputs=outputs, stream=stream)
        return results[0] if len(results) == 1 else tuple(results)

    def close(self):
        self._held = {}
        self._pointers = {}
        super().close()

    def __repr__(self):
        return f"kopt.runtime.Module({self.path!r})"
