# ===- kopt/runtime/__init__.py - libkoptrt from Python --------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Runs kopt runtime modules (`kopt compile --emit-module`) on the caller's
# CUDA tensors with zero copies, on the caller's stream:
#
#   import torch, kopt.runtime as rt
#   module = rt.Module("model.kmod")            # device 0
#   y = module(x, w)                            # torch tensors in, out
#
# A module with a dynamic batch runs at the batch of the tensors passed
# (module.set_batch(n) sets it explicitly).
#
# Pure Python over libkoptrt's C API (ctypes); no LLVM, MLIR or compiled
# extension. libkoptrt is found on first use ($KOPT_RUNTIME_LIBRARY, beside
# the package, or the kopt build tree); torch is imported only when needed.
# Every failure raises Error with libkoptrt's message.
#
# ===----------------------------------------------------------------------===#

from ._capi import Error, find_library
from ._module import Module
from ._objects import Device, KernelDatabase, ModuleInfo, describe
from ._types import BatchInfo, TensorInfo

__all__ = [
    "BatchInfo",
    "Device",
    "Error",
    "KernelDatabase",
    "Module",
    "ModuleInfo",
    "TensorInfo",
    "describe",
    "find_library",
]
