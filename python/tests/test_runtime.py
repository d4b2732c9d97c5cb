# ===- test_runtime.py - kopt.runtime without a GPU ------------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# What kopt.runtime does on a machine without a GPU: it imports without
# libkoptrt or torch, finds the library or says where it looked, describes
# a module emitted by `kopt compile --emit-module`, and reports the missing
# driver as an Error. The argument checks and the run path (binding and
# rebinding pointers, the stream) run against a stand-in for libkoptrt.
#
# Run by ctest (python-runtime) with KOPT_RUNTIME_LIBRARY and KOPT_TOOL set;
# by hand: PYTHONPATH=python python3 -m unittest discover -s python/tests
#
# ===----------------------------------------------------------------------===#

import ctypes
import os
import subprocess
import sys
import tempfile
import unittest
import weakref

import kopt.runtime as rt
from kopt.runtime import _buffers, _capi, _objects
from kopt.runtime._types import TensorInfo

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def has_driver():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def kopt_tool():
    tool = os.environ.get("KOPT_TOOL",
                          os.path.join(REPO, "build", "bin", "kopt"))
    return tool if os.path.isfile(tool) else None


class CudaArray:
    """A stand-in for another framework's CUDA array."""

    def __init__(self, shape, typestr="<f4", pointer=0x7f0000001000,
                 strides=None, read_only=False):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape),
            "typestr": typestr,
            "data": (pointer, read_only),
            "strides": strides,
            "version": 3,
        }


class ImportTest(unittest.TestCase):

    def test_import_loads_neither_library_nor_torch(self):
        code = ("import sys, kopt, kopt.runtime\n"
                "from kopt.runtime import _capi\n"
                "assert _capi._library is None\n"
                "assert 'torch' not in sys.modules\n"
                "print(kopt.__version__)\n")
        env = dict(os.environ, KOPT_RUNTIME_LIBRARY="/nonexistent/lib.so")
        result = subprocess.run([sys.executable, "-c", code], env=env,
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "0.1.0")


class FindLibraryTest(unittest.TestCase):

    def setUp(self):
        self.saved = os.environ.get(_capi.ENV_VAR)

    def tearDown(self):
        if self.saved is None:
            os.environ.pop(_capi.ENV_VAR, None)
        else:
            os.environ[_capi.ENV_VAR] = self.saved

    def test_a_wrong_variable_is_an_error_naming_it(self):
        os.environ[_capi.ENV_VAR] = "/nonexistent/libkoptrt.so"
        with self.assertRaises(rt.Error) as caught:
            rt.find_library()
        self.assertEqual(caught.exception.status, "not-found")
        self.assertIn("KOPT_RUNTIME_LIBRARY is '/nonexistent/libkoptrt.so'",
                      str(caught.exception))

    def test_the_variable_may_name_a_folder(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "libkoptrt.so")
            open(path, "w").close()
            os.environ[_capi.ENV_VAR] = folder
            self.assertEqual(rt.find_library(), path)

    def test_the_checkout_is_searched(self):
        paths = _capi.candidate_paths()
        self.assertIn(os.path.join(REPO, "build", "lib", "libkoptrt.so"),
                      paths)
        self.assertIn(os.path.join(REPO, "dist", "lib", "libkoptrt.so"),
                      paths)


class LibraryTest(unittest.TestCase):
    """Against the real libkoptrt, on this machine."""

    @classmethod
    def setUpClass(cls):
        _capi.set_library(None)
        cls.folder = tempfile.TemporaryDirectory()
        cls.kmod = None
        tool = kopt_tool()
        if tool:
            cls.kmod = os.path.join(cls.folder.name, "torch_mlp.kmod")
            subprocess.run([
                tool, "compile",
                os.path.join(REPO, "test", "Inputs", "frontend",
                             "torch_mlp.mlir"), "--tune=never", "--db",
                os.path.join(cls.folder.name, "kopt.db"), "-o", os.devnull,
                "--emit-module", cls.kmod
            ], check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        cls.folder.cleanup()

    def require_module(self):
        if not self.kmod:
            self.skipTest("no kopt tool (set KOPT_TOOL)")
        return self.kmod

    def test_describes_an_emitted_module_without_a_device(self):
        info = rt.describe(self.require_module())
        self.assertEqual(
            [(t.name, t.shape, t.dtype) for t in info.inputs],
            [("arg0", (8, 256), "float32"), ("arg1", (1024, 256), "float32"),
             ("arg2", (1024,), "float32"), ("arg3", (256, 1024), "float32"),
             ("arg4", (256,), "float32")])
        self.assertEqual(info.outputs,
                         (TensorInfo("out0", (8, 256), "float32", 8192),))
        self.assertEqual(str(info.inputs[2]), "arg2: 1024 float32")

    def test_describes_a_dynamic_batch(self):
        tool = kopt_tool() or self.skipTest("no kopt tool (set KOPT_TOOL)")
        inputs = os.path.join(REPO, "test", "Tools", "kopt-compile", "Inputs",
                              "dynbatch")
        found = {}
        for stem, sizes in (("mlp", "4,1"), ("batch_sum", "2,4")):
            kmod = os.path.join(self.folder.name, f"{stem}.kmod")
            subprocess.run([
                tool, "compile", os.path.join(inputs, f"{stem}.mlir"),
                "--tune=never", "--module-arch=none", "--db",
                os.path.join(self.folder.name, "kopt.db"), "-o", os.devnull,
                "--emit-module", kmod, f"--tune-shapes=batch={sizes}"
            ], check=True, capture_output=True)
            found[stem] = rt.describe(kmod)
        mlp = found["mlp"]
        self.assertEqual(mlp.batch,
                         rt.BatchInfo(True, True, 1, (1, 4), ("x",), ("y",),
                                      ""))
        self.assertEqual([(t.name, t.shape) for t in mlp.inputs],
                         [("x", (1, 16, 64)), ("w", (64, 32)), ("b", (32,))])
        self.assertEqual(mlp.outputs[0].shape, (1, 16, 32))
        total = found["batch_sum"].batch
        self.assertEqual((total.dynamic, total.independent, total.sizes),
                         (True, False, (2, 4)))
        self.assertNotEqual(total.reason, "")
        self.assertFalse(total.accepts(3))
        self.assertEqual(rt.describe(self.require_module()).batch,
                         rt.BatchInfo())

    def test_a_file_that_is_no_module_is_an_error(self):
        path = os.path.join(self.folder.name, "not-a-module.kmod")
        with open(path, "wb") as f:
            f.write(b"\x93NUMPY" + bytes(64))
        with self.assertRaises(rt.Error) as caught:
            rt.describe(path)
        self.assertEqual(caught.exception.status, "invalid-argument")
        self.assertIn("not a kopt runtime module", str(caught.exception))
        with self.assertRaises(rt.Error) as caught:
            rt.describe(os.path.join(self.folder.name, "missing.kmod"))
        self.assertEqual(caught.exception.status, "io-error")
        self.assertIn("missing.kmod", str(caught.exception))

    def test_no_gpu_is_an_error_that_says_so(self):
        if has_driver():
            self.skipTest("this machine has a CUDA driver")
        with self.assertRaises(rt.Error) as caught:
            rt.Device(0)
        self.assertEqual(caught.exception.status, "unavailable")
        self.assertIn("no CUDA driver", str(caught.exception))
        self.assertIn("this machine has no GPU", str(caught.exception))
        with self.assertRaises(rt.Error) as caught:
            rt.Module(self.require_module())
        self.assertEqual(caught.exception.status, "unavailable")

    def test_a_database_is_never_created(self):
        path = os.path.join(self.folder.name, "absent.db")
        with self.assertRaises(rt.Error):
            rt.KernelDatabase(path)
        self.assertFalse(os.path.exists(path))


class BufferTest(unittest.TestCase):
    info = TensorInfo("x", (2, 3), "float32", 24)

    def pointer(self, value, writable=False, info=None):
        return _buffers.device_pointer(value, info or self.info, "input", 0,
                                       writable)

    def assert_refused(self, value, text, writable=False, info=None):
        with self.assertRaises(rt.Error) as caught:
            self.pointer(value, writable, info)
        self.assertIn(text, str(caught.exception))

    def test_takes_the_pointer_of_a_cuda_array(self):
        self.assertEqual(self.pointer(CudaArray((2, 3))),
                         (0x7f0000001000, False))
        self.assertEqual(self.pointer(CudaArray((2, 3), strides=(12, 4)))[0],
                         0x7f0000001000)
        self.assertEqual(self.pointer(CudaArray((2, 3), typestr="=f4"))[0],
                         0x7f0000001000)

    def test_refuses_what_does_not_fit(self):
        self.assert_refused(CudaArray((3, 2)),
                            "input 'x' has shape [3, 2], the module takes "
                            "[2, 3]")
        self.assert_refused(CudaArray((2, 3), typestr="<f8"),
                            "has typestr '<f8', the module takes '<f4'")
        self.assert_refused(CudaArray((2, 3), strides=(4, 8)),
                            "is not contiguous")
        self.assert_refused(CudaArray((2, 3), read_only=True), "read-only",
                            writable=True)
        self.assert_refused(CudaArray((2, 3), pointer=0), "null data pointer")
        self.assert_refused([[1.0] * 3] * 2, "is a list: pass a CUDA "
                            "torch.Tensor")
        self.assert_refused(CudaArray((2, 3)), "cannot describe",
                            info=TensorInfo("x", (2, 3), "bfloat16", 12))

    def test_refuses_host_tensors(self):
        try:
            import torch
        except ImportError:
            self.skipTest("no torch")
        self.assert_refused(torch.zeros(2, 3),
                            "input 'x' is on cpu, not cuda:0")

    def test_streams(self):
        self.assertEqual(_buffers.stream_handle(None, False, 0), 0)
        self.assertEqual(_buffers.stream_handle(1234, False, 0), 1234)

        class TorchLike:
            cuda_stream = 77

        class Protocol:

            def __cuda_stream__(self):
                return (0, 88)

        self.assertEqual(_buffers.stream_handle(TorchLike(), False, 0), 77)
        self.assertEqual(_buffers.stream_handle(Protocol(), False, 0), 88)
        with self.assertRaises(rt.Error):
            _buffers.stream_handle("stream", False, 0)


class FakeLibrary(_capi.Library):
    """libkoptrt as far as Module needs it: one device, one module with the
    inputs `a`, `b` and the output `y`, each 2x3 float32, calls recorded.
    With `sizes`, the batch is dynamic: `a` and `y` are BATCHx3, tuned for
    `sizes`, any size running when `independent`."""

    def __init__(self, sizes=(), independent=True):
        self.path = "fake"
        self.calls = []
        self.error = b""
        self.fail_run = False
        self.sizes = tuple(sizes)
        self.independent = independent
        self.batch = self.sizes[0] if sizes else 2
        self._keep = []

    @staticmethod
    def _set(reference, value):
        reference._obj.value = value

    def koptGetLastError(self):
        return self.error

    def koptDeviceCreate(self, ordinal, out):
        self._set(out, 100 + ordinal)
        return 0

    def koptDeviceDestroy(self, handle):
        self.calls.append(("device-destroy",))

    def koptModuleLoad(self, device, path, db, out):
        self.calls.append(("load", path))
        self._set(out, 7)
        return 0

    def koptModuleDestroy(self, handle):
        self.calls.append(("destroy",))

    def koptModuleGetNumInputs(self, handle, out):
        self._set(out, 2)
        return 0

    def koptModuleGetNumOutputs(self, handle, out):
        self._set(out, 1)
        return 0

    def _info(self, name, out):
        info = out._obj
        info.name = name
        info.elementType = 2
        info.rank = 2
        rows = self.batch if self.sizes and name != b"b" else 2
        info.shape[0], info.shape[1] = rows, 3
        info.bytes = 12 * rows
        return 0

    def koptModuleGetBatchInfo(self, handle, out):
        info = out._obj
        info.dynamic = int(bool(self.sizes))
        if not self.sizes:
            return 0
        sizes = (ctypes.c_int64 * len(self.sizes))(*self.sizes)
        inputs = (ctypes.c_char_p * 1)(b"a")
        outputs = (ctypes.c_char_p * 1)(b"y")
        self._keep += [sizes, inputs, outputs]
        info.independent = int(self.independent)
        info.batch = self.batch
        info.numSizes = len(self.sizes)
        info.sizes = ctypes.cast(sizes, ctypes.POINTER(ctypes.c_int64))
        info.numBatchedInputs = info.numBatchedOutputs = 1
        info.batchedInputs = ctypes.cast(inputs,
                                         ctypes.POINTER(ctypes.c_char_p))
        info.batchedOutputs = ctypes.cast(outputs,
                                          ctypes.POINTER(ctypes.c_char_p))
        info.reason = b"" if self.independent else b"a sum over the batch"
        return 0

    def koptModuleSetBatch(self, handle, batch):
        self.calls.append(("batch", batch))
        if not self.sizes or batch <= 0 or (not self.independent and
                                            batch not in self.sizes):
            self.error = b"batch 3 is not one of the tuned sizes 2, 4"
            return 1
        self.batch = batch
        return 0

    def koptModuleGetInputInfo(self, handle, index, out):
        return self._info([b"a", b"b"][index], out)

    def koptModuleGetOutputInfo(self, handle, index, out):
        return self._info(b"y", out)

    def koptModuleBindBuffer(self, handle, name, pointer):
        self.calls.append(("bind", name, pointer))
        return 0

    def koptModuleSetGraphCapture(self, handle, enable):
        self.calls.append(("graph", enable))
        return 0

    def koptModuleRun(self, handle, stream):
        if isinstance(stream, ctypes.c_void_p):
            stream = stream.value
        self.calls.append(("run", stream))
        if self.fail_run:
            self.error = b"step 3 (@g2): CUDA_ERROR_ILLEGAL_ADDRESS"
            return 6
        return 0


class ModuleRunTest(unittest.TestCase):

    def setUp(self):
        self.lib = FakeLibrary()
        _capi.set_library(self.lib)
        _objects._devices.clear()

    def tearDown(self):
        _capi.set_library(None)
        _objects._devices.clear()

    def calls(self, kind):
        return [c for c in self.lib.calls if c[0] == kind]

    def test_binds_pointers_once_and_runs_on_the_stream(self):
        module = rt.Module("m.kmod", graph=True)
        self.assertEqual([t.name for t in module.inputs], ["a", "b"])
        self.assertEqual(self.calls("graph"), [("graph", 1)])
        a, b, y = (CudaArray((2, 3), pointer=p) for p in (0x1000, 0x2000,
                                                           0x3000))
        self.assertEqual(module.run([a, b], [y], stream=55), [y])
        self.assertEqual(self.calls("bind"), [("bind", b"a", 0x1000),
                                              ("bind", b"b", 0x2000),
                                              ("bind", b"y", 0x3000)])
        self.assertEqual(self.calls("run")[0][1], 55)
        # The same pointers again: nothing is bound again (a captured
        # graph stays); a new one is bound alone.
        del self.lib.calls[:]
        c = CudaArray((2, 3), pointer=0x4000)
        module.run({"b": b, "a": c}, {"y": y})
        self.assertEqual(self.calls("bind"), [("bind", b"a", 0x4000)])
        self.assertEqual(self.calls("run"), [("run", None)])
        self.assertIs(module(a, b, outputs=[y]), y)

    def test_refuses_wrong_arguments_before_binding(self):
        module = rt.Module("m.kmod")
        a = CudaArray((2, 3))
        with self.assertRaises(rt.Error) as caught:
            module.run([a], [a])
        self.assertIn("the module takes 2 inputs (a, b), not 1",
                      str(caught.exception))
        with self.assertRaises(rt.Error) as caught:
            module.run({"a": a, "c": a}, [a])
        self.assertIn("the module has no input or output 'c' (it has a, b, "
                      "y)", str(caught.exception))
        with self.assertRaises(rt.Error) as caught:
            module.run({"a": a}, [a])
        self.assertIn("input 'b' is not passed, nor bound by bind()",
                      str(caught.exception))
        with self.assertRaises(rt.Error) as caught:
            module.run([a, CudaArray((3, 3))], [a])
        self.assertIn("input 'b' has shape [3, 3]", str(caught.exception))
        self.assertEqual(self.calls("bind"), [])
        self.assertEqual(self.calls("run"), [])

    def test_bound_values_stay_bound_and_alive(self):
        module = rt.Module("m.kmod")
        weight = CudaArray((2, 3), pointer=0x2000)
        alive = weakref.ref(weight)
        module.bind({"b": weight})
        del weight
        self.assertIsNotNone(alive())
        with self.assertRaises(rt.Error) as caught:
            module.run([], [CudaArray((2, 3))])
        self.assertIn("the module takes 1 inputs (a; 1 more bound by "
                      "bind()), not 0", str(caught.exception))
        y = CudaArray((2, 3), pointer=0x3000)
        for pointer in (0x1000, 0x1000, 0x4000):
            module.run([CudaArray((2, 3), pointer=pointer)], [y])
        self.assertEqual(self.calls("bind"), [("bind", b"b", 0x2000),
                                              ("bind", b"a", 0x1000),
                                              ("bind", b"y", 0x3000),
                                              ("bind", b"a", 0x4000)])
        self.assertEqual(len(self.calls("run")), 3)
        with self.assertRaises(rt.Error) as caught:
            module.bind([y])
        self.assertIn("takes a mapping", str(caught.exception))

    def test_a_failed_run_raises_the_librarys_message(self):
        module = rt.Module("m.kmod")
        self.lib.fail_run = True
        a = CudaArray((2, 3))
        with self.assertRaises(rt.Error) as caught:
            module.run([a, a], [CudaArray((2, 3), pointer=0x9000)])
        self.assertEqual(caught.exception.status, "internal")
        self.assertEqual(str(caught.exception),
                         "step 3 (@g2): CUDA_ERROR_ILLEGAL_ADDRESS")

    def test_closing_the_device_frees_its_modules_first(self):
        device = rt.Device(0)
        module = rt.Module("m.kmod", device=device)
        device.close()
        self.assertEqual(self.lib.calls[-2:], [("destroy",),
                                               ("device-destroy",)])
        self.assertTrue(module.closed)
        with self.assertRaises(rt.Error) as caught:
            module.run([], [])
        self.assertIn("the Module is closed", str(caught.exception))


class DynamicBatchTest(unittest.TestCase):
    """A module with a dynamic batch, against FakeLibrary: `a` and `y`
    carry the batch, `b` is a weight."""

    def setUp(self):
        _objects._devices.clear()

    def tearDown(self):
        _capi.set_library(None)
        _objects._devices.clear()

    def module(self, sizes=(1, 4), independent=True):
        self.lib = FakeLibrary(sizes, independent)
        _capi.set_library(self.lib)
        return rt.Module("m.kmod")

    def calls(self, kind):
        return [c for c in self.lib.calls if c[0] == kind]

    def test_describes_the_batch(self):
        module = self.module()
        self.assertEqual(module.batch_info,
                         rt.BatchInfo(True, True, 1, (1, 4), ("a",), ("y",),
                                      ""))
        self.assertEqual(module.batch, 1)
        self.assertEqual([t.shape for t in module.inputs], [(1, 3), (2, 3)])
        self.assertEqual(str(module.batch_info),
                         "dynamic batch 1 (tuned: 1, 4; any size runs)")
        self.assertTrue(module.batch_info.accepts(7))
        static = self.module(sizes=())
        self.assertEqual(static.batch_info, rt.BatchInfo())
        self.assertFalse(static.batch_info.accepts(1))

    def test_the_batch_follows_the_tensors(self):
        module = self.module()
        weight = CudaArray((2, 3), pointer=0x2000)
        module.bind({"b": weight})
        for rows, pointer in ((5, 0x1000), (5, 0x1000), (3, 0x3000)):
            y = CudaArray((rows, 3), pointer=pointer + 0x100)
            self.assertEqual(
                module.run([CudaArray((rows, 3), pointer=pointer)], [y]),
                [y])
            self.assertEqual(module.batch, rows)
            self.assertEqual(module.inputs[0].shape, (rows, 3))
            self.assertEqual(module.outputs[0].shape, (rows, 3))
        self.assertEqual(self.calls("batch"), [("batch", 5), ("batch", 3)])
        # The weight is bound once; the batched tensors again after each
        # new batch (which dropped their bindings).
        self.assertEqual(self.calls("bind"), [("bind", b"b", 0x2000),
                                              ("bind", b"a", 0x1000),
                                              ("bind", b"y", 0x1100),
                                              ("bind", b"a", 0x3000),
                                              ("bind", b"y", 0x3100)])
        self.assertEqual(len(self.calls("run")), 3)

    def test_an_explicit_batch(self):
        module = self.module()
        module.set_batch(4)
        module.set_batch(4)
        self.assertEqual(self.calls("batch"), [("batch", 4)])
        self.assertEqual(module.outputs[0].shape, (4, 3))
        arrays = [CudaArray((2, 3)) for _ in range(3)]
        module.run(arrays[:2], arrays[2:], batch=2)
        self.assertEqual(module.batch, 2)
        with self.assertRaises(rt.Error) as caught:
            module.run([CudaArray((6, 3)), arrays[1]], arrays[2:], batch=2)
        self.assertIn("input 'a' has shape [6, 3], the module takes [2, 3]",
                      str(caught.exception))

    def test_a_new_batch_unbinds_the_batched_tensors(self):
        module = self.module()
        module.bind({"a": CudaArray((4, 3)), "b": CudaArray((2, 3))})
        self.assertEqual(module.batch, 4)
        y = CudaArray((4, 3), pointer=0x5000)
        module.run([], [y])
        module.set_batch(1)
        with self.assertRaises(rt.Error) as caught:
            module.run([], [CudaArray((1, 3))])
        self.assertIn("the module takes 1 inputs (a; 1 more bound by bind())",
                      str(caught.exception))

    def test_sizes_the_module_cannot_run_are_refused(self):
        module = self.module(sizes=(2, 4), independent=False)
        self.assertEqual(module.batch_info.reason, "a sum over the batch")
        with self.assertRaises(rt.Error) as caught:
            module.run([CudaArray((3, 3)), CudaArray((2, 3))])
        self.assertIn("not one of the tuned sizes", str(caught.exception))
        with self.assertRaises(rt.Error) as caught:
            module.run([CudaArray((2, 3))] * 2, [CudaArray((2, 5))],
                       batch=2)
        self.assertIn("has shape [2, 5]", str(caught.exception))
        static = self.module(sizes=())
        with self.assertRaises(rt.Error):
            static.set_batch(2)


if __name__ == "__main__":
    unittest.main()
