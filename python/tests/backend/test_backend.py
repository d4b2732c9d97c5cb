# ===- test_backend.py - kopt as a torch.compile backend -------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# torch.compile(backend=kopt) on small models with the real kopt tool
# (tune=never): each graph becomes a runtime module whose inputs are the
# graph's inputs and weights; running it without a GPU is a kopt.runtime
# Error that says so (with a GPU, the result matches eager). What kopt
# cannot compile runs eagerly with one warning naming the op; a new static
# shape compiles again. The run path is checked against a stand-in module.
#
# Needs torch; the tests that import through torch-mlir skip without it.
# Run by ctest (python-backend, test/Python/run-torch-tests.sh) with the
# Python of KOPT_TORCH_PYTHON; by hand:
#   PYTHONPATH=python KOPT_TOOL=build/bin/kopt \
#     KOPT_RUNTIME_LIBRARY=build/lib/libkoptrt.so \
#     PYTHON -m unittest discover -s python/tests/backend
#
# ===----------------------------------------------------------------------===#

import ctypes
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

import torch
import torch.nn as nn

import kopt
import kopt.dynamo as kd
import kopt.runtime as rt
from kopt.dynamo import _compiled
from kopt.runtime import ModuleInfo, TensorInfo

REPO = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
HAS_TORCH_MLIR = importlib.util.find_spec("torch_mlir") is not None
needs_torch_mlir = unittest.skipUnless(HAS_TORCH_MLIR, "no torch-mlir")

# A graph of one f32[8] input that kopt cannot generate code for: an scf.if
# in a linalg body.
UNSUPPORTED_OP = ("scf.if %t -> (f32) { scf.yield %in : f32 } "
                  "else { scf.yield %in : f32 }")
UNSUPPORTED = """
#map = affine_map<(d0) -> (d0)>
func.func @forward(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %t = arith.constant true
  %0 = tensor.empty() : tensor<8xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map],
                       iterator_types = ["parallel"]}
      ins(%arg0 : tensor<8xf32>) outs(%0 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %2 = """ + UNSUPPORTED_OP + """
    linalg.yield %2 : f32
  } -> tensor<8xf32>
  return %1 : tensor<8xf32>
}
"""


def has_gpu():
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return torch.cuda.is_available()


GPU = has_gpu()
DEVICE = "cuda" if GPU else "cpu"


def linear_relu():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 8), nn.ReLU()).eval().to(DEVICE)


def conv_net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(8 * 4 * 4, 10)).eval().to(DEVICE)


class Median(nn.Module):

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(16, 8)

    def forward(self, x):
        y = self.linear(x)
        return y.median(1)[0] + 1


def dense_constants(mlir, over_bytes=256):
    """The dense constants of `mlir` larger than `over_bytes`."""
    return [
        blob for blob in re.findall(r'dense<"0x([0-9A-Fa-f]*)"', mlir)
        if len(blob) > 2 * over_bytes
    ] + re.findall(r"dense_resource<", mlir)


class BackendTestCase(unittest.TestCase):

    def setUp(self):
        torch._dynamo.reset()
        self.folder = tempfile.TemporaryDirectory()
        self.work = os.path.join(self.folder.name, "graphs")
        self.db = os.path.join(self.folder.name, "kernels.db")

    def tearDown(self):
        torch._dynamo.reset()
        self.folder.cleanup()

    def backend(self, **options):
        values = dict(tune="never", db=self.db, work_dir=self.work)
        values.update(options)
        return kopt.backend(**values)

    def run_or_expect_no_gpu(self, compiled, *inputs):
        """compiled(*inputs): the result with a GPU; without, the Error that
        says there is none (then None)."""
        if GPU:
            return compiled(*inputs)
        with self.assertRaises(rt.Error) as caught:
            compiled(*inputs)
        self.assertEqual(caught.exception.status, "unavailable")
        self.assertRegex(str(caught.exception),
                         r"^kopt: graph g\d+(_s\d+)? cannot run: .*no GPU")
        return None


@needs_torch_mlir
class CompileTest(BackendTestCase):

    def compile_and_run(self, model, x):
        backend = self.backend()
        compiled = torch.compile(model, backend=backend)
        with torch.no_grad():
            output = self.run_or_expect_no_gpu(compiled, x)
            if output is not None:
                torch.testing.assert_close(output, model(x), rtol=1e-4,
                                           atol=1e-4)
        self.assertEqual(len(backend.graphs), 1)
        record = backend.graphs[0]
        self.assertIsNone(record.reason)
        self.assertIsNotNone(record.compiled)
        self.assertEqual(record.totals["hits"], 0)
        with open(os.path.join(self.work, f"{record.name}.mlir")) as f:
            mlir = f.read()
        return record, mlir

    def assert_weights_are_inputs(self, model, record, mlir, x):
        """Every weight is a module input (not a constant), bound once."""
        self.assertEqual(dense_constants(mlir), [])
        weights = [t for t in model.state_dict().values()
                   if t.is_floating_point()]
        shapes = sorted(t.shape for t in record.compiled.info.inputs)
        self.assertEqual(shapes,
                         sorted([tuple(x.shape)] +
                                [tuple(w.shape) for w in weights]))
        self.assertEqual(len(record.compiled._static), len(weights))
        self.assertEqual(len(record.compiled._per_call), 1)

    def test_linear_relu(self):
        model, x = linear_relu(), torch.randn(4, 16, device=DEVICE)
        record, mlir = self.compile_and_run(model, x)
        self.assert_weights_are_inputs(model, record, mlir, x)
        self.assertEqual([t.shape for t in record.compiled.info.outputs],
                         [(4, 8)])
        self.assertTrue(os.path.isfile(record.compiled.kmod))

    def test_conv_net(self):
        model, x = conv_net(), torch.randn(2, 3, 8, 8, device=DEVICE)
        record, mlir = self.compile_and_run(model, x)
        self.assert_weights_are_inputs(model, record, mlir, x)
        self.assertIn("linalg.conv_2d", mlir)
        self.assertEqual([t.shape for t in record.compiled.info.outputs],
                         [(2, 10)])

    def test_options_through_torch_compile(self):
        compiled = torch.compile(linear_relu(), backend=kopt.backend,
                                 options={"tune": "never", "db": self.db,
                                          "work_dir": self.work})
        with torch.no_grad():
            self.run_or_expect_no_gpu(compiled, torch.randn(4, 16,
                                                            device=DEVICE))
        self.assertTrue(os.path.isfile(self.db))
        [log] = glob.glob(os.path.join(self.work, "g*.log"))
        with open(log) as f:
            self.assertIn(f"--db {self.db} --tune=never", f.readline())

    def test_a_new_static_shape_compiles_again(self):
        compiled = kopt.compile(linear_relu(), tune="never", db=self.db,
                                work_dir=self.work)
        with torch.no_grad():
            for batch in (4, 5, 4):
                self.run_or_expect_no_gpu(
                    compiled, torch.randn(batch, 16, device=DEVICE))
        modules = sorted(glob.glob(os.path.join(self.work, "*.kmod")))
        self.assertEqual(len(modules), 2)
        self.assertEqual(
            sorted(rt.describe(path).inputs[2].shape for path in modules),
            [(4, 16), (5, 16)])

    def test_symbolic_sizes_compile_per_static_shape(self):
        backend = self.backend()
        compiled = torch.compile(linear_relu(), backend=backend, dynamic=True)
        with torch.no_grad():
            for batch in (4, 5, 4):
                self.run_or_expect_no_gpu(
                    compiled, torch.randn(batch, 16, device=DEVICE))
        self.assertEqual(len(backend.graphs), 1)
        name = backend.graphs[0].name
        modules = sorted(
            os.path.basename(p)
            for p in glob.glob(os.path.join(self.work, "*.kmod")))
        self.assertEqual(modules, [f"{name}_s0.kmod", f"{name}_s1.kmod"])
        self.assertEqual(rt.describe(os.path.join(
            self.work, f"{name}_s1.kmod")).inputs[2].shape, (5, 16))

    def test_the_backend_name_is_an_entry_point(self):
        """torch.compile(backend="kopt") with the package installed as pip
        installs it (a wheel on the path)."""
        # pip builds in place: from a copy, as check-wheel.sh does.
        source = os.path.join(self.folder.name, "src")
        shutil.copytree(os.path.join(REPO, "python"), source,
                        ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                      "tests", "__pycache__"))
        wheels = os.path.join(self.folder.name, "wheels")
        build = subprocess.run([
            sys.executable, "-m", "pip", "wheel", "--no-deps",
            "--no-build-isolation", "--no-index", "-q", "-w", wheels, source
        ], capture_output=True, text=True, cwd=self.folder.name)
        if build.returncode != 0:
            self.skipTest(f"pip cannot build the wheel: {build.stderr}")
        [wheel] = glob.glob(os.path.join(wheels, "kopt-*.whl"))
        code = ("import sys, torch, kopt.runtime as rt\n"
                "m = torch.nn.Linear(16, 8).eval()\n"
                "c = torch.compile(m, backend='kopt', options={\n"
                f"    'tune': 'never', 'db': {self.db!r}}})\n"
                "with torch.no_grad():\n"
                "    try:\n"
                "        c(torch.randn(4, 16))\n"
                "    except rt.Error as e:\n"
                "        print('error:', e.status)\n"
                "import kopt\n"
                "print(kopt.__file__)\n")
        env = dict(os.environ, PYTHONPATH=wheel)
        result = subprocess.run([sys.executable, "-c", code], env=env,
                                capture_output=True, text=True,
                                cwd=self.folder.name)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        if not GPU:
            self.assertEqual(lines[0], "error: unavailable")
        self.assertTrue(lines[-1].startswith(wheel), lines)


class FallbackTest(BackendTestCase):

    def assert_one_warning(self, caught, *texts):
        fallbacks = [w for w in caught if w.category is kd.FallbackWarning]
        self.assertEqual(len(fallbacks), 1, [str(w.message) for w in caught])
        message = str(fallbacks[0].message)
        self.assertRegex(message, r"^kopt: graph g\d+ \(\d+ ops")
        for text in texts:
            self.assertIn(text, message)
        return fallbacks[0]

    @needs_torch_mlir
    def test_an_op_torch_mlir_cannot_lower(self):
        model = Median().eval()
        x = torch.randn(4, 16)
        compiled = torch.compile(model, backend=self.backend())
        with warnings.catch_warnings(record=True) as caught, torch.no_grad():
            warnings.simplefilter("always")
            for _ in range(3):
                torch.testing.assert_close(compiled(x), model(x))
        warning = self.assert_one_warning(
            caught, "runs in eager PyTorch: torch-mlir cannot lower "
            "torch.aten.median.dim (at test_backend.py:")
        # Shown at the graph's source line, in this file.
        self.assertEqual(os.path.basename(warning.filename),
                         "test_backend.py")

    def test_an_op_kopt_cannot_compile(self):

        def importer(gm, args):
            return kd.ImportedGraph(UNSUPPORTED, (0,))

        backend = self.backend(importer=importer)
        compiled = torch.compile(lambda x: x * 2, backend=backend)
        x = torch.randn(8)
        with warnings.catch_warnings(record=True) as caught, torch.no_grad():
            warnings.simplefilter("always")
            for _ in range(2):
                torch.testing.assert_close(compiled(x), x * 2)
        self.assert_one_warning(caught, "'scf.yield', which kopt cannot "
                                "generate code for")
        self.assertIn("scf.yield", backend.graphs[0].reason)
        self.assertIsNone(backend.graphs[0].compiled)

    def test_one_warning_for_every_shape_of_a_graph(self):

        def importer(gm, args):
            raise kd.CompileError("nothing today")

        backend = self.backend(importer=importer)
        compiled = torch.compile(lambda x: x * 2, backend=backend,
                                 dynamic=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for size in (3, 4, 5):
                compiled(torch.randn(size))
        self.assert_one_warning(caught, "nothing today")

    def test_a_failing_importer_is_a_reason(self):

        def importer(gm, args):
            raise ValueError("no such thing\nmore")

        compiled = torch.compile(lambda x: x + 1,
                                 backend=self.backend(importer=importer))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled(torch.randn(3))
        self.assert_one_warning(
            caught, "the importer failed: ValueError: no such thing")

    def test_without_fallback_the_error_is_raised(self):

        def importer(gm, args):
            raise kd.CompileError("nothing today")

        compiled = torch.compile(lambda x: x * 2, backend=self.backend(
            importer=importer, fallback=False))
        with self.assertRaises(Exception) as caught:
            compiled(torch.randn(3))
        error = caught.exception
        while error is not None and not isinstance(error, kd.CompileError):
            error = getattr(error, "inner_exception", None) or error.__cause__
        self.assertIsInstance(error, kd.CompileError)
        self.assertEqual(error.reason, "nothing today")

    def test_a_graph_that_needs_grad_runs_eagerly(self):
        model = nn.Linear(16, 8)
        compiled = torch.compile(model, backend=self.backend())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled(torch.randn(4, 16)).sum().backward()
        self.assert_one_warning(caught, "inference only")
        self.assertIsNotNone(model.weight.grad)

    def test_a_module_that_does_not_fit_is_refused(self):

        def importer(gm, args):
            # A module of one f32[8] input bound to an int64 tensor.
            return kd.ImportedGraph(
                UNSUPPORTED.replace(UNSUPPORTED_OP, "arith.addf %in, %in : f32"),
                (0,))

        compiled = torch.compile(lambda x: x * 2,
                                 backend=self.backend(importer=importer))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled(torch.arange(8))
        self.assert_one_warning(caught, "module input arg0: 8 float32 does "
                                "not fit the graph's int64[8]")

    def test_a_module_with_other_outputs_is_refused(self):
        addf = UNSUPPORTED.replace(UNSUPPORTED_OP, "arith.addf %in, %in : f32")
        for graph, text in (
            (lambda x: (x * 2, x + 1), "the module has 1 outputs, the graph "
             "returns 2 values"),
            (lambda x: (x * 2).double(), "module output out0: 8 float32 is "
             "not the graph's float64[8]"),
        ):
            torch._dynamo.reset()
            compiled = torch.compile(graph, backend=self.backend(
                importer=lambda gm, args: kd.ImportedGraph(addf, (0,))))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                compiled(torch.randn(8))
            self.assert_one_warning(caught, text)


@needs_torch_mlir
class ImporterTest(unittest.TestCase):

    def test_tensor_attributes_become_inputs(self):

        class Scaled(nn.Module):

            def __init__(self):
                super().__init__()
                self.register_buffer("scale", torch.randn(64))
                self.offset = torch.randn(64)

            def forward(self, x):
                return (x * self.scale + self.offset,)

        model = Scaled()
        gm = torch.fx.symbolic_trace(model)
        imported = kd.fx_importer(gm, [torch.randn(2, 64)])
        self.assertEqual(imported.arguments[0], 0)
        self.assertEqual(len(imported.arguments), 3)
        self.assertEqual({id(t) for t in imported.arguments[1:]},
                         {id(model.scale), id(model.offset)})
        self.assertEqual(dense_constants(imported.mlir, 64), [])
        self.assertEqual(imported.mlir.count("tensor<64xf32>,"), 1)

    def test_a_graph_that_writes_its_input_is_refused(self):

        def f(x):
            x.add_(1)
            return (x * 2,)

        with self.assertRaises(kd.CompileError) as caught:
            kd.fx_importer(torch.fx.symbolic_trace(f), [torch.randn(4)])
        self.assertIn("writes its input", caught.exception.reason)


class FakeModule:
    """A stand-in for kopt.runtime.Module that records binds and runs."""

    instances = []

    def __init__(self, path, device=0):
        self.path, self.device = path, device
        self.bound, self.runs = [], []
        self._plan = None
        FakeModule.instances.append(self)

    def bind(self, values):
        self.bound.append(dict(values))

    def run(self, inputs):
        self.runs.append(list(inputs))
        return [torch.zeros(2)]


class CompiledGraphTest(unittest.TestCase):
    """The run path, against FakeModule."""

    def setUp(self):
        self.saved = rt.Module
        rt.Module = FakeModule
        FakeModule.instances = []

    def tearDown(self):
        rt.Module = self.saved

    def make(self, example, arguments, returns="tuple"):
        names = [f"arg{i}" for i in range(len(arguments))]
        info = ModuleInfo(
            tuple(TensorInfo(n, (2,), "float32", 8) for n in names),
            (TensorInfo("out0", (2,), "float32", 8),))
        return _compiled.CompiledGraph("g", "g.kmod", info, arguments,
                                       example, returns)

    def test_weights_are_bound_once_and_inputs_every_call(self):
        weight = nn.Parameter(torch.ones(2))
        buffer = torch.ones(2)
        buffer._dynamo_static_input_type = "unguarded"
        constant = torch.ones(2)
        x = torch.zeros(2)
        # The module's inputs: x, the constant, the buffer, the weight.
        graph = self.make([weight, x, buffer], (1, constant, 2, 0))
        for _ in range(3):
            result = graph(weight, x, buffer)
        [module] = FakeModule.instances
        self.assertIsInstance(result, tuple)
        self.assertEqual([list(b) for b in module.bound],
                         [["arg1"], ["arg2", "arg3"]])
        self.assertIs(module.bound[0]["arg1"], constant)
        self.assertIs(module.bound[1]["arg3"], weight)
        self.assertEqual(len(module.runs), 3)
        self.assertTrue(all(r[0] is x for r in module.runs))

    def test_a_new_weight_object_is_bound_again(self):
        weight = nn.Parameter(torch.ones(2))
        x = torch.zeros(2)
        graph = self.make([x, weight], (0, 1), returns="list")
        self.assertIsInstance(graph(x, weight), list)
        other = nn.Parameter(torch.ones(2))
        graph(x, other)
        graph(x, other)
        [module] = FakeModule.instances
        self.assertEqual([b["arg1"] for b in module.bound[1:]],
                         [weight, other])

    def test_a_strided_input_is_made_contiguous(self):
        strided = torch.zeros(2, 2).t()[0]
        graph = self.make([strided], (0,), returns="tensor")
        self.assertIsInstance(graph(strided), torch.Tensor)
        [module] = FakeModule.instances
        self.assertTrue(module.runs[0][0].is_contiguous())
        self.assertFalse(module.runs[0][0] is strided)

    def test_specialising_compiles_once_per_signature(self):
        made = []

        def make(args):
            made.append(tuple(args[0].shape))
            return lambda *a: a[0].shape

        graph = _compiled.Specialising(make)
        for size in (2, 3, 2, 3):
            self.assertEqual(graph(torch.zeros(size), size), (size,))
        self.assertEqual(made, [(2,), (3,)])


if __name__ == "__main__":
    unittest.main()
