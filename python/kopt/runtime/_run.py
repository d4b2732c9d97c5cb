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
        # Per output, whether bind() bound it.
        self._output_pinned = tuple(info.name in pinned
                                    for info in module.outputs)
        self._names = tuple(info.name for info in module.outputs)
        self._no_pinned_outputs = not any(self._output_pinned)
        self._handle = module._handle
        self._bind = module._lib.koptModuleBindBuffer
        self._launch = module._lib.koptModuleRun
        self._check = module._lib.check
        self._stream = device.stream_function()
        self._tensor = torch.Tensor
        self._empty = torch.empty

    def _fit(self, slots, tensors):
        """Whether `tensors` are torch tensors that fit `slots`."""
        count = slots.count
        if len(tensors) != count:
            return False
        tensor_type, cuda, index = self._tensor, self._cuda, self._index
        dtypes, shapes = slots.dtypes, slots.shapes
        for i in range(count):
            tensor = tensors[i]
            if (not isinstance(tensor, tensor_type) or
                    tensor.dtype is not dtypes[i] or
                    tensor.shape != shapes[i] or
                    tensor.is_cuda is not cuda or
                    tensor.get_device() != index or
                    not tensor.is_contiguous()):
                return False
        return True

    def _bind_changed(self, slots, tensors, hold):
        """Binds the tensors' pointers that changed; with `hold`, the
        module holds the tensors until they are bound again."""
        module = self._module
        bound, held = module._pointers, module._held
        bind, handle = self._bind, self._handle
        names, encoded = slots.names, slots.encoded
        for i in range(slots.count):
            tensor = tensors[i]
            name, pointer = names[i], tensor.data_ptr()
            if bound.get(name) != pointer:
                status = bind(handle, encoded[i], pointer)
                if status:
                    self._check(status)
                bound[name] = pointer
                module._through_torch[name] = True
            if hold:
                held[name] = tensor

    def run_fresh(self, inputs):
        """run(inputs, None, None), the common call, written out in one
        function: checks the inputs, allocates the outputs, binds what
        changed and launches on torch's current stream."""
        slots = self._inputs
        count = slots.count
        if len(inputs) != count:
            return None
        tensor_type, cuda, index = self._tensor, self._cuda, self._index
        dtypes, shapes = slots.dtypes, slots.shapes
        for i in range(count):
            tensor = inputs[i]
            if (not isinstance(tensor, tensor_type) or
                    tensor.dtype is not dtypes[i] or
                    tensor.shape != shapes[i] or
                    tensor.is_cuda is not cuda or
                    tensor.get_device() != index or
                    not tensor.is_contiguous()):
                return None
        module = self._module
        bound, held = module._pointers, module._held
        bind, handle = self._bind, self._handle
        names, encoded = slots.names, slots.encoded
        for i in range(count):
            tensor = inputs[i]
            name, pointer = names[i], tensor.data_ptr()
            if bound.get(name) != pointer:
                status = bind(handle, encoded[i], pointer)
                if status:
                    self._check(status)
                bound[name] = pointer
                module._through_torch[name] = True
            held[name] = tensor
        slots = self._outputs
        empty, device = self._empty, self._torch_device
        dtypes, shapes = slots.dtypes, slots.shapes
        names, encoded = slots.names, slots.encoded
        outputs = []
        for i in range(slots.count):
            tensor = empty(shapes[i], dtype=dtypes[i], device=device)
            name, pointer = names[i], tensor.data_ptr()
            if bound.get(name) != pointer:
                status = bind(handle, encoded[i], pointer)
                if status:
                    self._check(status)
                bound[name] = pointer
            outputs.append(tensor)
        status = self._launch(handle, self._stream() or None)
        if status:
            self._check(status)
        if self._no_pinned_outputs:
            return outputs
        return self._in_module_order(outputs)

    def _in_module_order(self, outputs):
        """The module's outputs: those bound by bind(), and `outputs` for
        the others."""
        held, passed = self._module._held, iter(outputs)
        return [
            held[name] if pinned else next(passed)
            for name, pinned in zip(self._names, self._output_pinned)
        ]

    def run(self, inputs, outputs, stream):
        """Runs the module as Module.run does and returns its outputs, or
        returns None (having bound nothing) when the arguments are not what
        this plan takes."""
        # Every tensor is checked before anything is bound.
        if not self._fit(self._inputs, inputs):
            return None
        slots = self._outputs
        fresh = outputs is None
        if fresh:
            empty, device = self._empty, self._torch_device
            dtypes, shapes = slots.dtypes, slots.shapes
            outputs = [
                empty(shapes[i], dtype=dtypes[i], device=device)
                for i in range(slots.count)
            ] if slots.count != 1 else [
                empty(shapes[0], dtype=dtypes[0], device=device)
            ]
        elif not self._fit(slots, outputs):
            return None
        if stream is None:
            stream = self._stream()
        else:
            stream = _buffers.stream_handle(stream, True, self._device)
        self._bind_changed(self._inputs, inputs, True)
        # Fresh outputs belong to the caller alone: once dropped, torch's
        # allocator (stream-ordered) hands the memory to the next call's
        # outputs, whose pointers then need no binding.
        self._bind_changed(slots, outputs, not fresh)
        status = self._launch(self._handle, stream or None)
        if status:
            self._check(status)
        if self._no_pinned_outputs:
            return outputs if fresh else list(outputs)
        return self._in_module_order(outputs)
