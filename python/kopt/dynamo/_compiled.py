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
# A call passes the other inputs to Module.run (which checks each one's
# dtype, shape, device and layout and binds its pointer where it changed),
# gets fresh outputs and enqueues the module on torch's current stream.
# Nothing is copied. What a call picks from its arguments is worked out
# once; the weights are checked for identity (in one C-level pass where
# there are several). After the first call, a call is one closure over the
# module's run plan (_fast_path): the weights' identity, then the plan's
# fresh runner on Dynamo's arguments; anything it does not take goes the
# long way (_call), through Module.run and its errors.
#
# Specialising serves a graph with symbolic sizes: one CompiledGraph per
# static shape signature, made on the first call with that signature.
#
# ===----------------------------------------------------------------------===#

import operator

from .. import runtime as rt


def _picker(indices):
    """A function of a sequence giving its items at `indices` as a
    tuple."""
    if not indices:
        return lambda args: ()
    if len(indices) == 1:
        index = indices[0]
        return lambda args: (args[index],)
    return operator.itemgetter(*indices)


def is_static_input(value):
    """Whether Dynamo passes `value` as a weight: a parameter, or a tensor
    it marks static (the module's buffers)."""
    import torch
    return isinstance(value, torch.nn.Parameter) or getattr(
        value, "_dynamo_static_input_type", None) is not None


class CompiledGraph:
    """A graph's module (`kmod`, described by `info`), called like the
    graph. `arguments` is the importer's (ImportedGraph.arguments): per
    module input, the graph's input index or a tensor to bind. `example` is
    the graph's example inputs, which tell static inputs and inputs to make
    contiguous apart. `returns`: how the graph returns its results, "tuple",
    "list" or "tensor" (one, bare).

    Every call goes through Module.run's fast path for torch tensors (a
    fresh runner of its run plan, taking the call's arguments as they
    come), which checks each per-call input (dtype, shape, device,
    contiguity: cheap reads, kept although Dynamo's guards check the same)
    and binds its pointer where it changed, allocates the outputs and
    launches the module on torch's current stream. With `cuda_graph`, the
    module runs through a CUDA graph on inputs and outputs of its own
    (_replay)."""

    def __init__(self, name, kmod, info, arguments, example,
                 returns="tuple", cuda_graph=False):
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
        static = [(name, i) for name, i in indexed
                  if is_static_input(example[i]) and
                  example[i].is_contiguous()]
        self._static = static
        self._static_names = [name for name, _ in static]
        self._weights = _picker([i for _, i in static])
        static_indices = {i for _, i in static}
        self._per_call = [i for _, i in indexed if i not in static_indices]
        self._strided = [
            position for position, i in enumerate(self._per_call)
            if not example[i].is_contiguous()
        ]
        self._pick = _picker(self._per_call)
        self._bound = None
        self._returns = returns
        self._cuda_graph = cuda_graph
        self._graph_tensors = None
        # The fast path and the run plan it was made over.
        self._fast = self._fast_plan = None

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
        return module

    def _inputs(self, args):
        inputs = self._pick(args)
        if self._strided:
            inputs = list(inputs)
            for position in self._strided:
                inputs[position] = inputs[position].contiguous()
        return inputs

    def _replay(self, module, inputs):
        """A run through the module's CUDA graph: the same input and output
        tensors every call, so that no binding changes and the graph
        captured on the first run is launched again."""
        tensors = self._graph_tensors
        if tensors is None:
            import torch
            module.set_graph_capture(True)
            tensors = self._graph_tensors = (
                [torch.empty_like(t, memory_format=torch.contiguous_format)
                 for t in inputs], module.new_outputs())
        own_inputs, own_outputs = tensors
        for own, given in zip(own_inputs, inputs):
            own.copy_(given)
        module.run(own_inputs, own_outputs)
        return [output.clone() for output in own_outputs]

    def __call__(self, *args):
        fast = self._fast
        if fast is not None:
            outputs = fast(args)
            if outputs is not None:
                return outputs
        return self._call(args)

    def _call(self, args):
        """A call the long way: loads the module, binds new weights, runs
        through Module.run (whose checked path raises the error naming an
        input that does not fit) and makes the fast path for the next."""
        module = self.module
        if module is None:
            module = self._load(args)
        if self._static:
            weights = self._weights(args)
            if self._bound is None or not all(
                    map(operator.is_, weights, self._bound)):
                module.bind(dict(zip(self._static_names, weights)))
                self._bound = weights
        inputs = self._inputs(args) if self._strided else self._pick(args)
        if self._cuda_graph:
            outputs = self._replay(module, inputs)
        else:
            outputs = module.run(inputs)
            plan = module._plan
            if plan is not None and plan is not self._fast_plan and (
                    not self._strided):
                self._fast, self._fast_plan = self._fast_path(module), plan
        if self._returns == "tuple":
            return tuple(outputs)
        return outputs if self._returns == "list" else outputs[0]

    def _fast_path(self, module):
        """A call as one function over the module's run plan, for as long
        as the module keeps that plan (bind() and a new batch make
        another) and Dynamo passes the bound weights: checks the weights'
        identity, then hands the call's arguments to the plan's fresh
        runner, which picks and checks the per-call inputs itself. Returns
        the graph's results, or None to take the long way."""
        plan = module._plan
        run = plan.fresh_runner(self._per_call)
        form = {"tuple": tuple, "list": None,
                "tensor": operator.itemgetter(0)}[self._returns]
        weights, bound = self._weights, self._bound
        indices = [i for _, i in self._static]
        single = indices[0] if len(indices) == 1 else None
        if single is not None:
            [weight] = bound
        elif not indices:
            weights = None
        is_ = operator.is_

        def fast(args):
            if module._plan is not plan:
                return None
            if single is not None:
                if args[single] is not weight:
                    return None
            elif weights is not None and not all(
                    map(is_, weights(args), bound)):
                return None
            outputs = run(args)
            if outputs is None or form is None:
                return outputs
            return form(outputs)

        return fast


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
