# ===- _run.py - A module's run with torch tensors, made cheap -------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# RunPlan is what Module.run needs for the common call: torch tensors for
# the inputs bind() did not bind, in the module's order, and fresh or
# passed outputs, on torch's current stream. Everything that does not
# change between calls is worked out once, when the plan is made (after
# each bind() and batch change): the slots' names as C strings, dtypes,
# shapes, the device's index, the C functions, how to read the current
# stream. A call then checks each tensor with a few attribute reads (dtype,
# shape, device, contiguity), binds only the pointers that changed and
# launches; a tensor that does not fit hands the call to Module's checked
# path, which raises the error naming it (or sets a new batch).
#
# ===----------------------------------------------------------------------===#

from . import _buffers


class _Slots:
    """Inputs or outputs a run passes, as parallel tuples: names, names as
    C strings, torch dtypes, shapes."""

    def __init__(self, infos, torch):
        self.names = tuple(info.name for info in infos)
        self.encoded = tuple(name.encode() for name in self.names)
        self.dtypes = tuple(getattr(torch, info.dtype) for info in infos)
        self.shapes = tuple(info.shape for info in infos)
        self.count = len(infos)


class RunPlan:
    """Module.run's fast path for `module` in its present binding state.
    The loops index parallel tuples rather than zip them: a call allocates
    no more than its lists of pointers and outputs."""

    def __init__(self, module, torch):
        device = module.device
        torch_device = device.torch_device
        pinned = module._pinned
        self._module = module
        self._device = device
        self._torch_device = torch_device
        self._cuda = torch_device.type == "cuda"
        self._index = torch_device.index or 0 if self._cuda else -1
        self._inputs = _Slots(
            [info for info in module.inputs if info.name not in pinned],
            torch)
        self._outputs = _Slots(
            [info for info in module.outputs if info.name not in pinned],
            torch)
        self._names = tuple(info.name for info in module.outputs)
        self._no_pinned_outputs = self._outputs.count == len(module.outputs)
        self._handle = module._handle
        self._bind = module._lib.koptModuleBindBuffer
        self._launch = module._lib.koptModuleRun
        self._check = module._lib.check
        self._stream = device.stream_function()
        self._tensor = torch.Tensor
        self._empty = torch.empty

    def _fits(self, slots, tensors):
        """The tensors' pointers, or None when one is no torch tensor or
        does not fit its slot."""
        count = slots.count
        if len(tensors) != count:
            return None
        tensor_type, cuda, index = self._tensor, self._cuda, self._index
        dtypes, shapes = slots.dtypes, slots.shapes
        pointers = []
        for i in range(count):
            tensor = tensors[i]
            if (not isinstance(tensor, tensor_type) or
                    tensor.dtype is not dtypes[i] or
                    tensor.shape != shapes[i] or
                    tensor.is_cuda is not cuda or
                    tensor.get_device() != index or
                    not tensor.is_contiguous()):
                return None
            pointers.append(tensor.data_ptr())
        return pointers

    def _bind_changed(self, slots, tensors, pointers):
        module = self._module
        bound, held = module._pointers, module._held
        names, encoded = slots.names, slots.encoded
        for i in range(slots.count):
            name, pointer = names[i], pointers[i]
            if bound.get(name) != pointer:
                status = self._bind(self._handle, encoded[i], pointer)
                if status:
                    self._check(status)
                bound[name] = pointer
                module._through_torch[name] = True
            held[name] = tensors[i]

    def run(self, inputs, outputs, stream):
        """Runs the module as Module.run does and returns its outputs, or
        returns None (having bound nothing) when the arguments are not what
        this plan takes."""
        pointers = self._fits(self._inputs, inputs)
        if pointers is None:
            return None
        slots = self._outputs
        if outputs is None:
            empty, device = self._empty, self._torch_device
            dtypes, shapes = slots.dtypes, slots.shapes
            outputs, out_pointers = [], []
            for i in range(slots.count):
                tensor = empty(shapes[i], dtype=dtypes[i], device=device)
                outputs.append(tensor)
                out_pointers.append(tensor.data_ptr())
        else:
            out_pointers = self._fits(slots, outputs)
            if out_pointers is None:
                return None
        if stream is None:
            stream = self._stream()
        else:
            stream = _buffers.stream_handle(stream, True, self._device)
        self._bind_changed(self._inputs, inputs, pointers)
        self._bind_changed(slots, outputs, out_pointers)
        status = self._launch(self._handle, stream or None)
        if status:
            self._check(status)
        if self._no_pinned_outputs:
            return list(outputs)
        held = self._module._held
        return [held[name] for name in self._names]
