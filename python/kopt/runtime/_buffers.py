# ===- _buffers.py - Device pointers of the caller's arrays ---------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Turns what a caller passes for a module input or output into a device
# pointer that libkoptrt binds in place of the module's own buffer, after
# checking it: a CUDA torch.Tensor (its data_ptr()), an object with
# __cuda_array_interface__ (its data pointer), or an object with __dlpack__
# (read through torch.from_dlpack, without a copy). Every mismatch (device,
# dtype, shape, layout) is an Error naming the tensor; nothing is copied or
# converted. Also resolves the stream a run goes on.
#
# ===----------------------------------------------------------------------===#

import sys

from ._capi import Error


def _shape(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _torch():
    """torch when the caller has imported it (a torch.Tensor cannot exist
    otherwise), else None."""
    return sys.modules.get("torch")


def _torch_device(device):
    """The torch.device a module on `device` (a Device, a torch.device or
    an ordinal) takes tensors on."""
    torch_device = getattr(device, "torch_device", None)
    if torch_device is not None:
        return torch_device
    if isinstance(device, int):
        return _torch().device("cuda", device)
    return device


def _from_torch(tensor, info, role, device):
    what = f"{role} '{info.name}'"
    expected = _torch_device(device)
    if tensor.device != expected:
        if expected.type == "cuda" and not tensor.is_cuda:
            raise Error(f"{what} is on {tensor.device}, not {expected}: "
                        "kopt runs on the GPU; move it with .cuda()")
        raise Error(f"{what} is on {tensor.device}, but the module is "
                    f"loaded on {expected}")
    dtype = getattr(_torch(), info.dtype, None)
    if tensor.dtype != dtype:
        raise Error(f"{what} is {tensor.dtype}, the module takes "
                    f"{info.dtype}; nothing is converted")
    if tuple(tensor.shape) != info.shape:
        raise Error(f"{what} has shape {_shape(tensor.shape)}, the module "
                    f"takes {_shape(info.shape)}")
    if not tensor.is_contiguous():
        raise Error(f"{what} is not contiguous (row-major): pass "
                    ".contiguous()")
    return tensor.data_ptr()


def _contiguous_strides(shape, itemsize):
    strides = []
    step = itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def _from_interface(interface, info, role, writable):
    what = f"{role} '{info.name}'"
    if info.typestr is None:
        raise Error(f"{what} is {info.dtype}, which "
                    "__cuda_array_interface__ cannot describe; pass a "
                    "torch.Tensor or a DLPack object")
    typestr = str(interface.get("typestr", ""))
    if typestr[:1] == "=":
        typestr = ("|" if typestr[1:] in ("b1", "i1", "u1") else
                   "<" if sys.byteorder == "little" else ">") + typestr[1:]
    if typestr != info.typestr:
        raise Error(f"{what} has typestr '{typestr}', the module takes "
                    f"'{info.typestr}' ({info.dtype}); nothing is converted")
    shape = tuple(int(s) for s in interface.get("shape", ()))
    if shape != info.shape:
        raise Error(f"{what} has shape {_shape(shape)}, the module takes "
                    f"{_shape(info.shape)}")
    strides = interface.get("strides")
    if strides is not None:
        expected = _contiguous_strides(shape, info.itemsize)
        # A dimension of size 1 may carry any stride.
        if any(size > 1 and int(got) != want
               for size, got, want in zip(shape, strides, expected)):
            raise Error(f"{what} is not contiguous (row-major): strides "
                        f"{_shape(strides)}, expected {_shape(expected)}")
    if interface.get("mask") is not None:
        raise Error(f"{what} has a mask; kopt takes dense arrays only")
    data = interface.get("data")
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise Error(f"{what}: __cuda_array_interface__ has no (pointer, "
                    "read-only) 'data'")
    pointer, read_only = int(data[0] or 0), bool(data[1])
    if writable and read_only:
        raise Error(f"{what} is read-only")
    if pointer == 0 and info.numel > 0:
        raise Error(f"{what} has a null data pointer")
    return pointer


def leading_dim(value):
    """The outermost size of a torch tensor, a __cuda_array_interface__ or
    DLPack object, or None where it has none."""
    shape = getattr(value, "shape", None)
    if shape is None:
        interface = getattr(value, "__cuda_array_interface__", None)
        shape = interface.get("shape") if interface is not None else None
    try:
        return int(shape[0]) if shape is not None and len(shape) else None
    except (TypeError, ValueError):
        return None


def device_pointer(value, info, role, device, writable):
    """The device pointer of `value` for tensor `info` ("input"/"output"
    `role`) of a module on `device` (a Device, or its ordinal), and whether
    it came through
    torch (which decides the default stream). `writable`: the module writes
    it. Raises Error when `value` does not fit."""
    torch = _torch()
    if torch is not None and isinstance(value, torch.Tensor):
        return _from_torch(value, info, role, device), True
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        return _from_interface(interface, info, role, writable), False
    if hasattr(value, "__dlpack__"):
        try:
            import torch
        except ImportError:
            raise Error(f"{role} '{info.name}': reading a DLPack object "
                        "needs torch") from None
        # The tensor views the producer's memory: no copy, and its pointer
        # stays valid while the caller holds `value`.
        return _from_torch(torch.from_dlpack(value), info, role,
                           device), True
    raise Error(f"{role} '{info.name}' is a {type(value).__name__}: pass a "
                "CUDA torch.Tensor or an object with "
                "__cuda_array_interface__ or __dlpack__")


def stream_handle(stream, used_torch, device):
    """The CUstream a run goes on, as an int (0: the device's own stream),
    for a module on `device` (a Device, or its ordinal).
    `stream` may be None, an int handle, a torch.cuda.Stream (cuda_stream),
    an object with __cuda_stream__ or with a `ptr` (CuPy). None means the
    current torch stream of the device when torch tensors are bound, else
    the device's own stream."""
    if stream is None:
        if not used_torch:
            return 0
        if hasattr(device, "stream_function"):
            return int(device.stream_function()())
        return int(_torch().cuda.current_stream(device).cuda_stream)
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attribute in ("cuda_stream", "ptr"):
        handle = getattr(stream, attribute, None)
        if handle is not None:
            return int(handle)
    raise Error(f"cannot take a stream from a {type(stream).__name__}: pass "
                "an int handle, a torch.cuda.Stream or an object with "
                "__cuda_stream__")
