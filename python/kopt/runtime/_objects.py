# ===- _objects.py - Devices, kernel databases and modules ----------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Python objects over libkoptrt's handles: Device (koptDeviceCreate),
# KernelDatabase (koptKernelDbOpen) and describe() (koptModuleFileOpen, no
# device needed); Module is in _module.py. Each frees its handle on close()
# or when collected.
#
# ===----------------------------------------------------------------------===#

import ctypes
import functools
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Tuple

from ._capi import CBatchInfo, CTensorInfo, Error, library
from ._types import BatchInfo, TensorInfo, batch_from_c, from_c


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


def _describe_batch(lib, handle, name):
    """The BatchInfo through `name` (koptModuleGetBatchInfo or its file
    twin); a static one from a library too old to have it."""
    if not lib.has(name):
        return BatchInfo()
    info = CBatchInfo()
    lib.check(getattr(lib, name)(handle, ctypes.byref(info)))
    return batch_from_c(info)


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

    @property
    def torch_device(self):
        """The torch.device of this device (cuda:ORDINAL); imports torch."""
        device = self.__dict__.get("_torch_device")
        if device is None:
            import torch
            device = self._torch_device = torch.device("cuda", self.ordinal)
        return device

    def stream_function(self):
        """A function of no arguments giving torch's current CUDA stream on
        this device as an int handle, the cheapest way torch offers."""
        import torch
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        ordinal = self.ordinal
        if raw is not None:
            # A partial is called without a Python frame, unlike a lambda.
            return functools.partial(raw, ordinal)
        current = torch.cuda.current_stream
        return lambda: current(ordinal).cuda_stream

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
    """A module's inputs and outputs, in argument and result order, and how
    its batch varies (inputs and outputs at `batch.batch`)."""

    inputs: Tuple[TensorInfo, ...]
    outputs: Tuple[TensorInfo, ...]
    batch: BatchInfo = BatchInfo()


def describe(path):
    """Reads and verifies the module at `path` and describes its inputs and
    outputs (at its first tuned batch size, for a dynamic batch) and its
    batch, without a device (no GPU needed)."""
    lib = library()
    handle = ctypes.c_void_p()
    lib.check(lib.koptModuleFileOpen(_path(path), ctypes.byref(handle)))
    try:
        return ModuleInfo(
            _describe(lib, handle, lib.koptModuleFileGetNumInputs,
                      lib.koptModuleFileGetInputInfo),
            _describe(lib, handle, lib.koptModuleFileGetNumOutputs,
                      lib.koptModuleFileGetOutputInfo),
            _describe_batch(lib, handle, "koptModuleFileGetBatchInfo"))
    finally:
        lib.koptModuleFileClose(handle)
