# ===- test_run_plan.py - Module.run's fast path with torch tensors --------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# kopt.runtime.Module run with torch tensors (its RunPlan, _run.py) and the
# backend's CompiledGraph over it, against test_runtime.py's stand-in for
# libkoptrt, on a device whose tensors are on the CPU: what is bound when,
# which stream a run goes on, that every tensor is still checked (dtype,
# shape, device, layout), and that a dynamic batch follows the tensors.
#
# Needs torch; run with python-backend (test_backend.py says how).
#
# ===----------------------------------------------------------------------===#

import os
import sys
import unittest

import torch

import kopt.runtime as rt
from kopt.dynamo import _compiled
from kopt.runtime import _capi, _objects

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from test_runtime import FakeLibrary  # noqa: E402


class CpuDevice(rt.Device):
    """A device whose tensors are on the CPU and whose stream is 7."""

    @property
    def torch_device(self):
        return torch.device("cpu")

    def stream_function(self):
        return lambda: 7


class TwoOutputs(FakeLibrary):
    """FakeLibrary's module with a second output, 'z'."""

    def koptModuleGetNumOutputs(self, handle, out):
        self._set(out, 2)
        return 0

    def koptModuleGetOutputInfo(self, handle, index, out):
        return self._info([b"y", b"z"][index], out)


class RunPlanTest(unittest.TestCase):

    def setUp(self):
        _objects._devices.clear()

    def tearDown(self):
        _capi.set_library(None)
        _objects._devices.clear()

    def module(self, sizes=(), lib=FakeLibrary):
        self.lib = lib(sizes)
        _capi.set_library(self.lib)
        _objects._devices[0] = CpuDevice(0)
        return rt.Module("m.kmod")

    def calls(self, kind):
        return [c for c in self.lib.calls if c[0] == kind]

    def test_binds_what_changed_and_runs_on_torchs_stream(self):
        module = self.module()
        a, b, c = (torch.randn(2, 3) for _ in range(3))
        first = module.run([a, b])
        self.assertIsNotNone(module._plan)
        [y] = first
        self.assertEqual((y.shape, y.dtype, y.device),
                         (torch.Size([2, 3]), torch.float32,
                          torch.device("cpu")))
        del self.lib.calls[:]
        second = module.run((a, c))
        binds = self.calls("bind")
        self.assertEqual(binds[0], ("bind", b"b", c.data_ptr()))
        self.assertEqual([n for _, n, _ in binds if n != b"y"], [b"b"])
        self.assertEqual(self.calls("run"), [("run", 7)])
        self.assertIs(module._held["b"], c)
        # Fresh outputs are the caller's alone; passed ones are held.
        self.assertNotIn("y", module._held)
        # Outputs passed are bound in place; a stream given is used.
        y = torch.empty(2, 3)
        self.assertIs(module.run([a, c], [y], stream=55)[0], y)
        self.assertEqual(self.calls("run")[-1], ("run", 55))
        self.assertEqual(module._pointers["y"], y.data_ptr())
        self.assertIs(module._held["y"], y)
        self.assertIsNot(second[0], first[0])
        # An output bound by bind() is returned by every run.
        module.bind({"y": y})
        self.assertIs(module.run([a, c])[0], y)
        self.assertIs(module.run([a, c], [])[0], y)

    def test_every_tensor_is_still_checked(self):
        module = self.module()
        a = torch.randn(2, 3)
        cases = [
            (torch.randn(2, 3, dtype=torch.float64), "is torch.float64, the "
             "module takes float32"),
            (torch.randn(3, 2), "has shape [3, 2], the module takes [2, 3]"),
            (torch.randn(3, 2).t(), "is not contiguous"),
            (torch.empty(2, 3, device="meta"), "is on meta, but the module "
             "is loaded on cpu"),
            (1.5, "is a float: pass a CUDA torch.Tensor"),
        ]
        for b, message in cases:
            with self.assertRaises(rt.Error) as caught:
                module.run([a, b])
            self.assertIn(f"input 'b' {message}", str(caught.exception))
        with self.assertRaises(rt.Error) as caught:
            module.run([a, a], [torch.zeros(2, 3, dtype=torch.int32)])
        self.assertIn("output 'y' is torch.int32", str(caught.exception))
        with self.assertRaises(rt.Error) as caught:
            module.run([a])
        self.assertIn("takes 2 inputs (a, b), not 1", str(caught.exception))
        self.assertEqual(self.lib.calls.count(("run", 7)), 0)
        self.assertEqual(self.calls("bind"), [])

    def test_fresh_outputs_are_tensors_of_their_own(self):
        module = self.module(lib=TwoOutputs)
        a, b = torch.randn(2, 3), torch.randn(2, 3)
        first = module.run([a, b])
        del self.lib.calls[:]
        second = module.run((a, b))
        fresh = first + second
        self.assertEqual(len({t.data_ptr() for t in fresh + [a, b]}), 6)
        for tensor in fresh:
            self.assertEqual((tensor.shape, tensor.dtype, tensor.device),
                             (torch.Size([2, 3]), torch.float32,
                              torch.device("cpu")))
            self.assertTrue(tensor.is_contiguous())
            # Not a view: storage of its own, of exactly its size.
            self.assertIsNone(tensor._base)
            self.assertEqual(tensor.untyped_storage().nbytes(), 24)
        # The first outputs are still alive: both are bound anew.
        self.assertEqual(self.calls("bind"),
                         [("bind", b"y", second[0].data_ptr()),
                          ("bind", b"z", second[1].data_ptr())])
        self.assertNotIn("y", module._held)
        self.assertNotIn("z", module._held)
        # Outputs passed are used in place, in the order given.
        y, z = torch.empty(2, 3), torch.empty(2, 3)
        results = module.run([a, b], [y, z])
        self.assertEqual([r is t for r, t in zip(results, (y, z))],
                         [True, True])

    def test_host_tensors_are_refused_on_a_gpu(self):
        self.module()
        _objects._devices.clear()
        module = rt.Module("m.kmod", device=rt.Device(0))
        with self.assertRaises(rt.Error) as caught:
            module.run([torch.randn(2, 3)] * 2)
        self.assertIn("input 'a' is on cpu, not cuda:0: kopt runs on the "
                      "GPU", str(caught.exception))
        self.assertEqual(self.calls("run"), [])

    def test_bind_takes_inputs_out_of_the_call(self):
        module = self.module()
        b = torch.randn(2, 3)
        module.bind({"b": b})
        a = torch.randn(2, 3)
        for _ in range(3):
            module.run([a])
        self.assertEqual([c[1] for c in self.calls("bind")].count(b"b"), 1)
        self.assertEqual(len(self.calls("run")), 3)

    def test_a_dynamic_batch_follows_the_tensors(self):
        module = self.module(sizes=(1, 4))
        b = torch.randn(2, 3)
        module.bind({"b": b})
        for rows in (4, 4, 5, 1):
            [y] = module.run([torch.randn(rows, 3)])
            self.assertEqual(tuple(y.shape), (rows, 3))
        self.assertEqual(self.calls("batch"),
                         [("batch", 4), ("batch", 5), ("batch", 1)])
        self.assertEqual([c[1] for c in self.calls("bind")].count(b"b"), 1)
        [y] = module.run([torch.randn(2, 3)], batch=2)
        self.assertEqual(module.batch, 2)

    def test_the_backends_callable_over_a_module(self):
        described = self.module()
        info = _objects.ModuleInfo(described.inputs, described.outputs)
        weight = torch.nn.Parameter(torch.randn(2, 3))
        x = torch.randn(2, 3)
        graph = _compiled.CompiledGraph("g", "m.kmod", info, (0, 1),
                                        [x, weight], returns="tensor")
        del self.lib.calls[:]
        results = [graph(x, weight) for _ in range(3)]
        binds = [c[1] for c in self.calls("bind")]
        self.assertEqual(binds.count(b"b"), 1)
        self.assertEqual(binds.count(b"a"), 1)
        self.assertEqual(len(self.calls("run")), 3)
        self.assertTrue(all(isinstance(r, torch.Tensor) for r in results))
        other = torch.nn.Parameter(torch.randn(2, 3))
        graph(x, other)
        self.assertEqual(self.calls("bind")[-2:][0],
                         ("bind", b"b", other.data_ptr()))

    def test_the_backends_fast_path_checks_every_input(self):
        described = self.module()
        info = _objects.ModuleInfo(described.inputs, described.outputs)
        weight = torch.nn.Parameter(torch.randn(2, 3))
        x = torch.randn(2, 3)
        graph = _compiled.CompiledGraph("g", "m.kmod", info, (0, 1),
                                        [x, weight], returns="tensor")
        graph(x, weight)
        fast = graph._fast
        self.assertIsNotNone(fast)
        del self.lib.calls[:]
        cases = [
            (torch.randn(2, 3, dtype=torch.float64), "is torch.float64, the "
             "module takes float32"),
            (torch.randn(3, 2), "has shape [3, 2], the module takes [2, 3]"),
            (torch.randn(3, 2).t(), "is not contiguous"),
            (torch.empty(2, 3, device="meta"), "is on meta, but the module "
             "is loaded on cpu"),
            ("x", "is a str: pass a CUDA torch.Tensor"),
        ]
        for bad, message in cases:
            with self.assertRaises(rt.Error) as caught:
                graph(bad, weight)
            self.assertIn(f"input 'a' {message}", str(caught.exception))
        self.assertEqual(self.lib.calls, [])
        # A fitting call takes the fast path again: one run, and no input
        # bound again (the output may land elsewhere).
        y = graph(x, weight)
        self.assertIs(graph._fast, fast)
        self.assertEqual([c for c in self.lib.calls if c[:2] != ("bind",
                                                                b"y")],
                         [("run", 7)])
        self.assertEqual(y.shape, torch.Size([2, 3]))
        # A new weight object is bound, with a new plan and fast path.
        other = torch.nn.Parameter(torch.randn(2, 3))
        del self.lib.calls[:]
        graph(x, other)
        self.assertIsNot(graph._fast, fast)
        self.assertEqual(self.calls("bind")[0],
                         ("bind", b"b", other.data_ptr()))
        # A closed module is not run by a fast path made before.
        graph.module.close()
        with self.assertRaises(rt.Error) as caught:
            graph(x, other)
        self.assertIn("closed", str(caught.exception))

    def test_the_backends_callable_through_a_cuda_graph(self):
        described = self.module()
        info = _objects.ModuleInfo(described.inputs, described.outputs)
        weight = torch.nn.Parameter(torch.randn(2, 3))
        graph = _compiled.CompiledGraph("g", "m.kmod", info, (0, 1),
                                        [torch.randn(2, 3), weight],
                                        cuda_graph=True)
        del self.lib.calls[:]
        xs = [torch.randn(2, 3) for _ in range(3)]
        results = [graph(x, weight)[0] for x in xs]
        self.assertEqual(self.calls("graph"), [("graph", 1)])
        self.assertEqual(len(self.calls("run")), 3)
        # Bound once: the graph's own input and output, and the weight.
        self.assertEqual(sorted(c[1] for c in self.calls("bind")),
                         [b"a", b"b", b"y"])
        own_inputs, own_outputs = graph._graph_tensors
        self.assertTrue(torch.equal(own_inputs[0], xs[-1]))
        self.assertTrue(all(r.data_ptr() != own_outputs[0].data_ptr()
                            for r in results))


if __name__ == "__main__":
    unittest.main()
