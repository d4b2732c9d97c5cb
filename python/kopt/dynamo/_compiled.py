# ===- _compiled.py - What the backend returns to TorchDynamo --------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# CompiledGraph runs one graph's runtime module through kopt.runtime. The
# module is loaded on the first call, on the device of the call's tensors;
# the graph's static inputs (the parameters and buffers Dynamo passes as
# inputs) and the tensors the importer bound are bound then, once, by
# pointer, and bound again only when Dynamo passes another tensor object.
# A call binds the other inputs (checked by kopt.runtime on the first call,
# by Dynamo's guards on later ones), allocates the outputs and enqueues the
# module on torch's current stream. Nothing is copied.
#
# Specialising serves a graph with symbolic sizes: one CompiledGraph per
# static shape signature, made on the first call with that signature.
#
# ===----------------------------------------------------------------------===#

from .. import runtime as rt


def is_static_input(value):
    """Whether Dynamo passes `value` as a weight: a parameter, or a tensor
    it marks static (the module's buffers)."""
    import torch
    return isinstance(value, torch.nn.Parameter) or getattr(
        value, "_dynamo_static_input_type", None) is not None


def _stream_function():
    """A function of a device ordinal giving torch's current CUDA stream
    there as an int, the cheapest way torch offers."""
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda ordinal: torch.cuda.current_stream(ordinal).cuda_stream


class CompiledGraph:
    """A graph's module (`kmod`, described by `info`), called like the
    graph. `arguments` is the importer's (ImportedGraph.arguments): per
    module input, the graph's input index or a tensor to bind. `example` is
    the graph's example inputs, which tell static inputs and inputs to make
    contiguous apart. `returns`: how the graph returns its results, "tuple",
    "list" or "tensor" (one, bare).

    The first call goes through Module.run, which checks every tensor. Later
    calls with CUDA tensors take a hot path without those checks: Dynamo's
    guards have checked each input's dtype, shape, device and strides (and
    Specialising keys by them), so a call binds each input's pointer where
    it changed, allocates the outputs and launches the module on torch's
    current stream."""

    def __init__(self, name, kmod, info, arguments, example,
                 returns="tuple"):
        self.name = name
        self.kmod = kmod
        self.info = info
        self.module = None
        names = [tensor.name for tensor in info.inputs]
        self._constants = {
            name: source
            for name, source in zip(names, arguments)
            if not isinstance(source, int)
        }
        indexed = [(name, source)
                   for name, source in zip(names, arguments)
                   if isinstance(source, int)]
        # A strided input is made contiguous at each call; Dynamo guards on
        # strides, so the example tells which inputs are.
        self._static = [(name, i) for name, i in indexed
                        if is_static_input(example[i]) and
                        example[i].is_contiguous()]
        static = {i for _, i in self._static}
        self._per_call = [i for _, i in indexed if i not in static]
        self._per_call_names = [(name, name.encode(), i)
                                for name, i in indexed if i not in static]
        self._strided = {
            i for i in self._per_call if not example[i].is_contiguous()
        }
        self._bound = ()
        self._returns = returns
        self._hot = None

    def _load(self, args):
        cuda = next((a for a in args if getattr(a, "is_cuda", False)), None)
        ordinal = (cuda.device.index or 0) if cuda is not None else 0
        try:
            module = rt.Module(self.kmod, device=ordinal)
        except rt.Error as error:
            raise rt.Error(f"kopt: graph {self.name} cannot run: "
                           f"{error.message}", error.status) from None
        module.bind(self._constants)
        self.module = module
        return module, cuda is not None

    def _bind_static(self, module, args):
        bound = tuple(args[i] for _, i in self._static)
        module.bind({name: args[i] for name, i in self._static})
        self._bound = bound

    def _inputs(self, args):
        if self._strided:
            return [
                args[i].contiguous() if i in self._strided else args[i]
                for i in self._per_call
            ]
        return [args[i] for i in self._per_call]

    def _make_hot(self, module):
        """The state of the hot path: the C API, the module's handle, the
        outputs' names, shapes and dtypes, the device, the stream."""
        import torch
        outputs = [(info.name, info.name.encode(), info.shape,
                    info.torch_dtype()) for info in self.info.outputs]
        ordinal = module.device.ordinal
        return (module._lib, module._handle, outputs,
                torch.device("cuda", ordinal), ordinal, _stream_function(),
                torch.empty)

    def _run_hot(self, module, args):
        lib, handle, outputs, device, ordinal, stream, empty = self._hot
        pointers, held = module._pointers, module._held
        strided = self._strided
        for name, encoded, i in self._per_call_names:
            tensor = args[i]
            if strided and i in strided:
                tensor = tensor.contiguous()
            pointer = tensor.data_ptr()
            if pointers.get(name) != pointer:
                lib.check(lib.koptModuleBindBuffer(handle, encoded, pointer))
                pointers[name] = pointer
            held[name] = tensor
        results = []
        for name, encoded, shape, dtype in outputs:
            tensor = empty(shape, dtype=dtype, device=device)
            pointer = tensor.data_ptr()
            if pointers.get(name) != pointer:
                lib.check(lib.koptModuleBindBuffer(handle, encoded, pointer))
                pointers[name] = pointer
            held[name] = tensor
            results.append(tensor)
        lib.check(lib.koptModuleRun(handle, stream(ordinal) or None))
        return results

    def __call__(self, *args):
        module = self.module
        first = module is None
        if first:
            module, cuda = self._load(args)
        bound = self._bound
        if len(bound) != len(self._static) or any(
                args[i] is not held
                for (_, i), held in zip(self._static, bound)):
            self._bind_static(module, args)
        if self._hot is not None:
            outputs = self._run_hot(module, args)
        else:
            # Checked: every tensor, once (and every call off the GPU).
            outputs = module.run(self._inputs(args))
            if first and cuda:
                self._hot = self._make_hot(module)
        if self._returns == "tuple":
            return tuple(outputs)
        return outputs if self._returns == "list" else outputs[0]


def signature(args):
    """What a static specialisation is keyed by: each tensor's shape, dtype,
    device and contiguity, each other input's value."""
    import torch
    return tuple((tuple(a.shape), a.dtype, a.device, a.is_contiguous())
                 if isinstance(a, torch.Tensor) else a for a in args)


class Specialising:
    """A graph with symbolic sizes: `make(args)` compiles it for the static
    shapes of `args` (a CompiledGraph, or the eager graph where kopt cannot
    compile it), once per signature()."""

    def __init__(self, make):
        self._make = make
        self.cache = {}

    def __call__(self, *args):
        key = signature(args)
        compiled = self.cache.get(key)
        if compiled is None:
            compiled = self.cache[key] = self._make(args)
        return compiled(*args)
