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
# shapes, the torch device, the C functions, how to read the current
# stream. A call then checks each tensor with a few attribute reads (dtype,
# shape, device, contiguity: what the checked path checks, compared
# exactly), binds only the pointers that changed and launches; a tensor
# that does not fit hands the call to Module's checked path, which raises
# the error naming it (or sets a new batch).
#
# The calls are closures over those values (fresh_runner, runner), so
# that a call looks up no attribute: at a few microseconds a call, each
# lookup shows. The backend's callable takes a fresh runner of its own,
# which picks the per-call inputs out of Dynamo's arguments itself. A
# fresh output is torch.empty_like of a one-element tensor expanded to its
# shape, which costs about a third less than torch.empty with a dtype and
# a device.
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
    """Module.run's fast path for `module` in its present binding state:
    run_fresh(inputs) and run(inputs, outputs, stream), closures made by
    fresh_runner() and runner(). Their loops index parallel tuples rather
    than zip them: a call allocates no more than its lists of outputs."""

    def __init__(self, module, torch):
        device = module.device
        torch_device = device.torch_device
        pinned = module._pinned
        self._module = module
        self._torch = torch
        self._torch_device = torch_device
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
        self._likes = None
        self.run_fresh = self.fresh_runner()

    def run(self, inputs, outputs, stream):
        """Module.run with `outputs` or `stream` (see runner()); made on
        the first such call, since most modules never see one."""
        self.run = self.runner()
        return self.run(inputs, outputs, stream)

    def _likes_now(self):
        """Per output, a one-element tensor of its dtype on the device,
        expanded to its shape: torch.empty_like of it in the contiguous
        format is a fresh output. Made on the first allocation, not with
        the plan: a plan is also made where no tensor can be on the device
        (its runs then refuse the caller's tensors)."""
        if self._likes is None:
            slots, torch = self._outputs, self._torch
            self._likes = tuple(
                torch.empty((), dtype=slots.dtypes[i],
                            device=self._torch_device).expand(slots.shapes[i])
                for i in range(slots.count))
        return self._likes

    def _in_module_order(self):
        """A function of the outputs a run passes or allocates giving the
        module's outputs (those bound by bind() in their place), or None
        where bind() bound none."""
        if not any(self._output_pinned):
            return None
        held, names, pinned = (self._module._held, self._names,
                               self._output_pinned)

        def in_module_order(outputs):
            passed = iter(outputs)
            return [
                held[name] if pinned[i] else next(passed)
                for i, name in enumerate(names)
            ]

        return in_module_order

    def _binder(self, slots, hold):
        """A function binding the pointers of tensors for `slots` (the i-th
        at args[where[i]]) that changed; with `hold`, the module holds
        them until they are bound again."""
        module = self._module
        bound, held, through_torch = (module._pointers, module._held,
                                      module._through_torch)
        get = bound.get
        lib = module._lib
        bind, handle, check = lib.koptModuleBindBuffer, module._handle, (
            lib.check)
        names, encoded, loop = slots.names, slots.encoded, range(slots.count)

        def bind_changed(args, where):
            for i in loop:
                tensor = args[where[i]]
                name, pointer = names[i], tensor.data_ptr()
                if get(name) != pointer:
                    status = bind(handle, encoded[i], pointer)
                    if status:
                        check(status)
                    bound[name] = pointer
                    through_torch[name] = True
                if hold:
                    held[name] = tensor

        return bind_changed

    def _fitter(self, slots):
        """A function of (args, where): whether the tensors for `slots`
        (the i-th at args[where[i]]) are torch tensors that fit them."""
        tensor_type, device = self._torch.Tensor, self._torch_device
        dtypes, shapes, loop = slots.dtypes, slots.shapes, range(slots.count)

        def fits(args, where):
            for i in loop:
                tensor = args[where[i]]
                if (not isinstance(tensor, tensor_type) or
                        tensor.dtype is not dtypes[i] or
                        tensor.shape != shapes[i] or
                        tensor.device != device or
                        not tensor.is_contiguous()):
                    return False
            return True

        return fits

    def fresh_runner(self, positions=None):
        """run(inputs, None, None), the common call, as a function of
        `args`: checks the inputs (the i-th is args[positions[i]], or
        args[i] without `positions`, where `args` must hold no more),
        allocates the outputs, binds what changed and launches on torch's
        current stream. Returns the outputs, or None (having bound
        nothing) when an input does not fit.

        One function, the checks and bindings written out: the backend
        calls it for every graph call."""
        slots = self._inputs
        count = slots.count
        exact = positions is None
        where = tuple(range(count)) if exact else tuple(positions)
        if len(where) != count:
            raise ValueError(f"{len(where)} positions for {count} inputs")
        loop = range(count)
        dtypes, shapes = slots.dtypes, slots.shapes
        names, encoded = slots.names, slots.encoded
        tensor_type, device = self._torch.Tensor, self._torch_device
        module = self._module
        bound, held, through_torch = (module._pointers, module._held,
                                      module._through_torch)
        get = bound.get
        lib = module._lib
        bind, launch, check = (lib.koptModuleBindBuffer, lib.koptModuleRun,
                               lib.check)
        handle, stream = module._handle, module.device.stream_function()
        outs = self._outputs
        out_loop, out_names, out_encoded = (range(outs.count), outs.names,
                                            outs.encoded)
        empty_like, contiguous = (self._torch.empty_like,
                                  self._torch.contiguous_format)
        likes_now = self._likes_now
        likes = None
        in_module_order = self._in_module_order()

        def run_fresh(args):
            nonlocal likes
            if exact and len(args) != count:
                return None
            # Every tensor is checked before anything is bound.
            for i in loop:
                tensor = args[where[i]]
                if (not isinstance(tensor, tensor_type) or
                        tensor.dtype is not dtypes[i] or
                        tensor.shape != shapes[i] or
                        tensor.device != device or
                        not tensor.is_contiguous()):
                    return None
            for i in loop:
                tensor = args[where[i]]
                name, pointer = names[i], tensor.data_ptr()
                if get(name) != pointer:
                    status = bind(handle, encoded[i], pointer)
                    if status:
                        check(status)
                    bound[name] = pointer
                    through_torch[name] = True
                held[name] = tensor
            # Fresh outputs belong to the caller alone, unheld: once
            # dropped, torch's allocator (stream-ordered) hands the memory
            # to the next call's outputs, whose pointers then need no
            # binding.
            if likes is None:
                likes = likes_now()
            outputs = []
            for i in out_loop:
                tensor = empty_like(likes[i], memory_format=contiguous)
                name, pointer = out_names[i], tensor.data_ptr()
                if get(name) != pointer:
                    status = bind(handle, out_encoded[i], pointer)
                    if status:
                        check(status)
                    bound[name] = pointer
                outputs.append(tensor)
            status = launch(handle, stream() or None)
            if status:
                check(status)
            if in_module_order is None:
                return outputs
            return in_module_order(outputs)

        return run_fresh

    def runner(self):
        """Module.run's call with torch tensors, as a function of (inputs,
        outputs, stream): runs the module and returns its outputs, or
        returns None (having bound nothing) when the arguments are not what
        this plan takes."""
        ins, outs = self._inputs, self._outputs
        in_count, out_count = ins.count, outs.count
        in_where, out_where = tuple(range(in_count)), tuple(range(out_count))
        fit_inputs, fit_outputs = self._fitter(ins), self._fitter(outs)
        bind_inputs = self._binder(ins, True)
        bind_passed, bind_fresh = (self._binder(outs, True),
                                   self._binder(outs, False))
        module = self._module
        launch, check = module._lib.koptModuleRun, module._lib.check
        handle, kopt_device = module._handle, module.device
        current = kopt_device.stream_function()
        stream_handle = _buffers.stream_handle
        empty_like, contiguous = (self._torch.empty_like,
                                  self._torch.contiguous_format)
        likes_now = self._likes_now
        in_module_order = self._in_module_order()

        def run(inputs, outputs, stream):
            # Every tensor is checked before anything is bound.
            if len(inputs) != in_count or not fit_inputs(inputs, in_where):
                return None
            fresh = outputs is None
            if fresh:
                likes = likes_now()
                outputs = [
                    empty_like(likes[i], memory_format=contiguous)
                    for i in range(out_count)
                ]
            elif len(outputs) != out_count or not fit_outputs(
                    outputs, out_where):
                return None
            stream = (current() if stream is None else
                      stream_handle(stream, True, kopt_device))
            bind_inputs(inputs, in_where)
            # Fresh outputs are not held (see run_fresh).
            (bind_fresh if fresh else bind_passed)(outputs, out_where)
            status = launch(handle, stream or None)
            if status:
                check(status)
            if in_module_order is None:
                return outputs if fresh else list(outputs)
            return in_module_order(outputs)

        return run
