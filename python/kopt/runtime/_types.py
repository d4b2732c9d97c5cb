# ===- _types.py - Element types and tensor descriptions -------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# The C API's element types (KoptElementType) under the names PyTorch and
# NumPy give them, TensorInfo, a module input's or output's description, and
# BatchInfo, how a module's batch size varies.
#
# ===----------------------------------------------------------------------===#

from dataclasses import dataclass
from typing import Tuple

# KoptElementType -> (dtype name, bytes per element, __cuda_array_interface__
# typestr or None). Booleans (i1) are one byte each, as torch.bool is.
ELEMENT_TYPES = {
    0: ("float16", 2, "<f2"),
    1: ("bfloat16", 2, None),
    2: ("float32", 4, "<f4"),
    3: ("float64", 8, "<f8"),
    4: ("bool", 1, "|b1"),
    5: ("int8", 1, "|i1"),
    6: ("int16", 2, "<i2"),
    7: ("int32", 4, "<i4"),
    8: ("int64", 8, "<i8"),
}
_BY_NAME = {name: (size, typestr) for name, size, typestr in
            ELEMENT_TYPES.values()}


@dataclass(frozen=True)
class TensorInfo:
    """A module input or output: its name, shape and dtype ("float32",
    "int64", "bool", ... as torch.<dtype> and numpy spell them) and its size
    in bytes."""

    name: str
    shape: Tuple[int, ...]
    dtype: str
    nbytes: int

    @property
    def itemsize(self):
        return _BY_NAME.get(self.dtype, (0, None))[0]

    @property
    def numel(self):
        count = 1
        for size in self.shape:
            count *= size
        return count

    @property
    def typestr(self):
        """The __cuda_array_interface__ typestr ("<f4"), or None where it
        has none (bfloat16)."""
        return _BY_NAME.get(self.dtype, (0, None))[1]

    def torch_dtype(self):
        """The torch dtype; imports torch."""
        import torch
        return getattr(torch, self.dtype)

    def __str__(self):
        shape = "x".join(str(s) for s in self.shape) or "scalar"
        return f"{self.name}: {shape} {self.dtype}"


@dataclass(frozen=True)
class BatchInfo:
    """How a module's batch size varies (koptModuleGetBatchInfo). A static
    module has `dynamic` False and nothing else. A dynamic one takes its
    batch as the outermost dimension (times a constant) of the inputs and
    outputs named in `inputs` and `outputs`; `sizes` are the tuned sizes;
    with `independent`, any positive size runs (as chunks of the tuned
    ones), else only the tuned sizes do, for the `reason` given. `batch` is
    the size in effect."""

    dynamic: bool = False
    independent: bool = False
    batch: int = 0
    sizes: Tuple[int, ...] = ()
    inputs: Tuple[str, ...] = ()
    outputs: Tuple[str, ...] = ()
    reason: str = ""

    def accepts(self, batch):
        """Whether the module runs at `batch`."""
        return self.dynamic and batch > 0 and (self.independent or
                                               batch in self.sizes)

    def __str__(self):
        if not self.dynamic:
            return "static batch"
        sizes = ", ".join(str(s) for s in self.sizes)
        return (f"dynamic batch {self.batch} (tuned: {sizes}; " +
                ("any size runs)" if self.independent else
                 f"only those run: {self.reason})"))


def _names(array, count):
    return tuple(array[i].decode("utf-8", "replace") for i in range(count))


def batch_from_c(info):
    """A BatchInfo from a filled KoptBatchInfo."""
    if not info.dynamic:
        return BatchInfo()
    return BatchInfo(
        dynamic=True,
        independent=bool(info.independent),
        batch=int(info.batch),
        sizes=tuple(int(info.sizes[i]) for i in range(info.numSizes)),
        inputs=_names(info.batchedInputs, info.numBatchedInputs),
        outputs=_names(info.batchedOutputs, info.numBatchedOutputs),
        reason=(info.reason or b"").decode("utf-8", "replace"))


def from_c(info):
    """A TensorInfo from a filled KoptTensorInfo."""
    name, _, _ = ELEMENT_TYPES.get(info.elementType,
                                   (f"type{info.elementType}", 0, None))
    return TensorInfo(
        name=info.name.decode("utf-8", "replace") if info.name else "",
        shape=tuple(int(info.shape[d]) for d in range(info.rank)),
        dtype=name,
        nbytes=int(info.bytes))
