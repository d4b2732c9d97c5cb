# ===- stub.py - kopt.runtime on the CPU, libkoptrt's GPU calls stubbed ---===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# What overhead.py --stub measures the Python side with: the real
# kopt.runtime.Module (and the backend's callable over it) on CPU tensors,
# over a libkoptrt whose calls that need a GPU return at once.
#
# StubLibrary wraps the real library: a "loaded" module is the module file
# opened with koptModuleFileOpen, so it describes itself as the real one
# does (no GPU needed); binding a buffer, running and capturing do nothing
# and succeed; the rest (module files, errors) is the real library's; a
# dynamic batch is set by scaling the batched tensors' outermost dimension.
# CpuDevice is a Device whose tensors live on the CPU and whose current
# stream is 0. install() puts both in place.
#
# ===----------------------------------------------------------------------===#

import ctypes

import torch

import kopt.runtime as rt
from kopt.runtime import _capi, _objects


class StubLibrary(_capi.Library):
    """`real` (a loaded _capi.Library) with the GPU calls stubbed."""

    def __init__(self, real):
        self.path = real.path + " (GPU calls stubbed)"
        self._real = real
        self._batch = {}
        self.koptModuleGetNumInputs = real.koptModuleFileGetNumInputs
        self.koptModuleGetNumOutputs = real.koptModuleFileGetNumOutputs

    def __getattr__(self, name):
        # Module files, databases, errors: the real library's.
        return getattr(self._real, name)

    # Devices and modules.
    def koptDeviceCreate(self, ordinal, out):
        out._obj.value = 1 + ordinal
        return 0

    def koptDeviceDestroy(self, handle):
        pass

    def koptModuleLoad(self, device, path, db, out):
        return self._real.koptModuleFileOpen(path, out)

    def koptModuleDestroy(self, handle):
        self._batch.pop(getattr(handle, "value", handle), None)
        self._real.koptModuleFileClose(handle)

    def koptModuleGetLoadInfo(self, handle, out):
        out._obj.value = b"stub: nothing loaded"
        return 0

    # Descriptions, at the batch set last.
    def _file_batch(self, handle):
        info = _capi.CBatchInfo()
        status = self._real.koptModuleFileGetBatchInfo(handle,
                                                       ctypes.byref(info))
        return status, info

    def koptModuleGetBatchInfo(self, handle, out):
        status = self._real.koptModuleFileGetBatchInfo(handle, out)
        batch = self._batch.get(handle.value)
        if batch is not None:
            out._obj.batch = batch
        return status

    def koptModuleSetBatch(self, handle, batch):
        status, info = self._file_batch(handle)
        if status or not info.dynamic or batch <= 0 or (
                not info.independent and
                batch not in info.sizes[:info.numSizes]):
            return 1
        self._batch[handle.value] = batch
        return 0

    def _scaled(self, handle, out, batched):
        batch = self._batch.get(handle.value)
        if batch is None:
            return 0
        status, info = self._file_batch(handle)
        names = {batched(info)[i] for i in range(len(batched(info)))}
        tensor = out._obj
        if tensor.name in names:
            per_sample = tensor.shape[0] // info.batch
            tensor.bytes = tensor.bytes // tensor.shape[0] * (per_sample *
                                                              batch)
            tensor.shape[0] = per_sample * batch
        return status

    def koptModuleGetInputInfo(self, handle, index, out):
        status = self._real.koptModuleFileGetInputInfo(handle, index, out)
        return status or self._scaled(
            handle, out,
            lambda i: i.batchedInputs[:i.numBatchedInputs])

    def koptModuleGetOutputInfo(self, handle, index, out):
        status = self._real.koptModuleFileGetOutputInfo(handle, index, out)
        return status or self._scaled(
            handle, out,
            lambda i: i.batchedOutputs[:i.numBatchedOutputs])

    # What a run calls: nothing happens.
    @staticmethod
    def koptModuleBindBuffer(handle, name, pointer):
        return 0

    @staticmethod
    def koptModuleSetGraphCapture(handle, enable):
        return 0

    @staticmethod
    def koptModuleRun(handle, stream):
        return 0


class CpuDevice(rt.Device):
    """A Device whose tensors are on the CPU, on stream 0."""

    @property
    def torch_device(self):
        return torch.device("cpu")

    def stream_function(self):
        return lambda: 0


def install():
    """Stubs the loaded libkoptrt and makes device 0 a CpuDevice; returns
    the real library."""
    real = _capi.library()
    _capi.set_library(StubLibrary(real))
    _objects._devices.clear()
    _objects._devices[0] = CpuDevice(0)
    return real
