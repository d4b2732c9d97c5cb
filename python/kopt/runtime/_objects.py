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


def _arrange(values, infos, role):
    """`values` (a sequence in order, or a mapping by name) as a list in
    the order of `infos`."""
    names = [info.name for info in infos]
    if isinstance(values, Mapping):
        unknown = sorted(set(values) - set(names))
        missing = [name for name in names if name not in values]
        if unknown or missing:
            raise Error(f"{role}s: " + "; ".join(
                ([f"unknown {', '.join(map(repr, unknown))}"]
                 if unknown else []) +
                ([f"missing {', '.join(map(repr, missing))}"]
                 if missing else [])) + f" (the module's: {', '.join(names)})")
        return [values[name] for name in names]
    values = list(values)
    if len(values) != len(infos):
        raise Error(f"the module takes {len(infos)} {role}s "
                    f"({', '.join(names)}), not {len(values)}")
    return values


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
        # Pointers bound now, by name: binding again only on a change keeps
        # a captured graph.
        self._bound = {}
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

    def _bind(self, name, pointer):
        if self._bound.get(name) == pointer:
            return
        self._lib.check(
            self._lib.koptModuleBindBuffer(self._require_open(),
                                           name.encode(), pointer))
        self._bound[name] = pointer

    def run(self, inputs, outputs=None, stream=None):
        """Enqueues one run of the module on `stream` and returns `outputs`
        as a list, without waiting. `inputs` and `outputs` are sequences in
        the module's order or mappings by name, of CUDA tensors (torch,
        __cuda_array_interface__, DLPack) of exactly the module's shapes and
        dtypes, contiguous: their memory is used in place, nothing is
        copied. `outputs=None` allocates torch tensors. `stream` (see
        `_buffers.stream_handle`): by default torch's current stream when
        torch tensors are passed."""
        handle = self._require_open()
        inputs = _arrange(inputs, self.inputs, "input")
        if outputs is None:
            outputs = self.new_outputs()
        outputs = _arrange(outputs, self.outputs, "output")
        ordinal = self.device.ordinal
        pointers = []
        used_torch = False
        for infos, values, role in ((self.inputs, inputs, "input"),
                                    (self.outputs, outputs, "output")):
            for info, value in zip(infos, values):
                pointer, through_torch = _buffers.device_pointer(
                    value, info, role, ordinal, writable=role == "output")
                used_torch = used_torch or through_torch
                pointers.append((info.name, pointer))
        stream = _buffers.stream_handle(stream, used_torch, ordinal)
        for name, pointer in pointers:
            self._bind(name, pointer)
        self._lib.check(
            self._lib.koptModuleRun(handle,
                                    ctypes.c_void_p(stream) if stream else
                                    None))
        return outputs

    def __call__(self, *inputs, outputs=None, stream=None):
        """run(inputs): the output, or a tuple of outputs."""
        results = self.run(inputs, outputs=outputs, stream=stream)
        return results[0] if len(results) == 1 else tuple(results)

    def close(self):
        self._bound = {}
        super().close()

    def __repr__(self):
        return f"kopt.runtime.Module({self.path!r})"
