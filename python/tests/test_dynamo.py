# ===- test_dynamo.py - The torch.compile backend's parts without torch ----===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# What of kopt.dynamo needs no torch: importing it loads nothing, its
# options are checked, the database and the kopt tool are found where
# docs/Python.md says, and a graph goes through the real `kopt compile`
# into a module, or fails with a reason naming the op at fault.
# python/tests/backend/ tests the backend itself, with torch.
#
# Run by ctest (python-runtime) with KOPT_RUNTIME_LIBRARY and KOPT_TOOL set;
# by hand: PYTHONPATH=python python3 -m unittest discover -s python/tests
#
# ===----------------------------------------------------------------------===#

import os
import stat
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import kopt
import kopt.dynamo as kd
import kopt.runtime as rt
from kopt.dynamo import _options, _tool

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# A graph kopt cannot generate code for: an scf.if in a linalg body.
UNSUPPORTED = """
#map = affine_map<(d0) -> (d0)>
func.func @forward(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %t = arith.constant true
  %0 = tensor.empty() : tensor<8xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map],
                       iterator_types = ["parallel"]}
      ins(%arg0 : tensor<8xf32>) outs(%0 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %2 = scf.if %t -> (f32) { scf.yield %in : f32 } else { scf.yield %in : f32 }
    linalg.yield %2 : f32
  } -> tensor<8xf32>
  return %1 : tensor<8xf32>
}
"""


def kopt_tool():
    tool = os.environ.get("KOPT_TOOL",
                          os.path.join(REPO, "build", "bin", "kopt"))
    return tool if os.path.isfile(tool) else None


class ImportTest(unittest.TestCase):

    def test_import_loads_neither_torch_nor_library(self):
        code = ("import sys, kopt, kopt.dynamo\n"
                "from kopt.runtime import _capi\n"
                "b = kopt.backend(tune='never')\n"
                "assert isinstance(b, kopt.dynamo.Backend)\n"
                "assert _capi._library is None\n"
                "assert 'torch' not in sys.modules\n"
                "assert 'torch_mlir' not in sys.modules\n")
        env = dict(os.environ, KOPT_RUNTIME_LIBRARY="/nonexistent/lib.so")
        result = subprocess.run([sys.executable, "-c", code], env=env,
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)


class OptionsTest(unittest.TestCase):

    def test_defaults(self):
        options = kd.Options()
        self.assertEqual((options.tune, options.precision, options.budget,
                          options.fallback), ("missing", "fp32", 60.0, True))

    def test_bad_values_are_refused(self):
        for values, text in (({"tune": "always"}, "tune='always'"),
                             ({"precision": "fp8"}, "precision='fp8'"),
                             ({"budget": -1}, "budget=-1"),
                             ({"tool_args": "--x"}, "tool_args"),
                             ({"importer": 3}, "importer")):
            with self.assertRaises(ValueError) as caught:
                kd.Options(**values)
            self.assertIn(text, str(caught.exception))

    def test_an_unknown_option_names_the_known_ones(self):
        with self.assertRaises(ValueError) as caught:
            kd.Options.from_mapping({"tuning": "never"})
        self.assertIn("unknown option(s) tuning", str(caught.exception))
        self.assertIn("db, tune, precision, budget", str(caught.exception))

    def test_the_factory_checks_its_options(self):
        backend = kopt.backend(tune="never", db="k.db")
        self.assertEqual((backend.options.tune, backend.options.db),
                         ("never", "k.db"))
        backend = kopt.backend(options={"budget": 5}, precision="tf32")
        self.assertEqual((backend.options.budget, backend.options.precision),
                         (5, "tf32"))
        with self.assertRaises(ValueError):
            kopt.backend(tune="sometimes")

    def test_torch_compile_options_override_the_factorys(self):
        options = kd.Options(tune="never", db="a.db")
        merged = options.merged({"db": "b.db", "budget": 1})
        self.assertEqual((merged.tune, merged.db, merged.budget),
                         ("never", "b.db", 1))
        self.assertIs(options.merged(None), options)

    def test_the_command_line(self):
        options = kd.Options(db="k.db", tune="never", precision="tf32",
                             budget=2.5, require_cache_hit=True,
                             tool_args=["--target=abc"])
        self.assertEqual(
            options.command("kopt", "g.mlir", "g.kopt.mlir", "g.kmod"), [
                "kopt", "compile", "g.mlir", "-o", "g.kopt.mlir",
                "--emit-module", "g.kmod", "--db", "k.db", "--tune=never",
                "--budget=2.5", "--precision=tf32", "--report=json",
                "--require-cache-hit", "--target=abc"
            ])


class PlacesTest(unittest.TestCase):

    def environment(self, **values):
        names = ("KOPT_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "KOPT_TOOL",
                 "PATH")
        env = {k: v for k, v in os.environ.items() if k not in names}
        env.update(values)
        return mock.patch.dict(os.environ, env, clear=True)

    def test_the_database_lives_in_the_cache_folder(self):
        with self.environment(HOME="/home/u"):
            self.assertEqual(kd.default_db_path(),
                             "/home/u/.cache/kopt/kernels.db")
        with self.environment(HOME="/home/u", XDG_CACHE_HOME="/xdg"):
            self.assertEqual(kd.default_db_path(), "/xdg/kopt/kernels.db")
        with self.environment(HOME="/home/u", XDG_CACHE_HOME="/xdg",
                              KOPT_CACHE_DIR="/cache"):
            self.assertEqual(kd.default_db_path(), "/cache/kernels.db")

    def test_the_default_database_folder_is_made(self):
        with tempfile.TemporaryDirectory() as folder:
            cache = os.path.join(folder, "a", "b")
            with self.environment(KOPT_CACHE_DIR=cache):
                self.assertEqual(kd.Options().database(),
                                 os.path.join(cache, "kernels.db"))
                self.assertTrue(os.path.isdir(cache))

    def test_the_tool_is_found_in_order(self):
        with tempfile.TemporaryDirectory() as folder:
            tools = []
            for name in ("option", "env", "path"):
                os.makedirs(os.path.join(folder, name))
                tool = os.path.join(folder, name, "kopt")
                with open(tool, "w") as f:
                    f.write("#!/bin/sh\n")
                os.chmod(tool, stat.S_IRWXU)
                tools.append(tool)
            path = os.path.dirname(tools[2])
            with self.environment(PATH=path, KOPT_TOOL=tools[1]):
                self.assertEqual(kd.find_tool(tools[0]), tools[0])
                self.assertEqual(kd.find_tool(), tools[1])
            with self.environment(PATH=path):
                self.assertEqual(kd.find_tool(), tools[2])

    def test_a_wrong_tool_is_an_error_naming_it(self):
        with self.environment(PATH="", KOPT_TOOL="/nonexistent/kopt"):
            with self.assertRaises(rt.Error) as caught:
                kd.find_tool()
        self.assertEqual(caught.exception.status, "not-found")
        self.assertIn("KOPT_TOOL is '/nonexistent/kopt'",
                      str(caught.exception))

    def test_the_checkout_is_searched_last(self):
        with self.environment(PATH=""):
            with mock.patch.object(os, "access", return_value=False):
                with self.assertRaises(rt.Error) as caught:
                    kd.find_tool()
        self.assertIn(os.path.join(REPO, "build", "bin", "kopt"),
                      str(caught.exception))


class FirstErrorTest(unittest.TestCase):

    def test_reasons(self):
        for log, reason in (
            ("kopt: error: baseline: linalg.generic{math.fpowi}: no CUDA "
             "translation for 'math.fpowi'\n",
             "baseline: linalg.generic{math.fpowi}: no CUDA translation "
             "for 'math.fpowi'"),
            ("/tmp/x/g0.mlir:3:5: error: custom op 'foo.bar' is unknown\n"
             "  %0 = foo.bar\n", "custom op 'foo.bar' is unknown"),
            ("note: first\n/src/model.py:42:0: error: no way\n",
             "model.py:42: no way"),
            ("", "kopt failed without a message"),
        ):
            self.assertEqual(_tool.first_error(log), reason)


@unittest.skipUnless(kopt_tool(), "no kopt tool (set KOPT_TOOL)")
class CompileModuleTest(unittest.TestCase):

    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.options = kd.Options(tool=kopt_tool(), tune="never",
                                  db=os.path.join(self.folder.name, "k.db"))

    def tearDown(self):
        self.folder.cleanup()

    def test_a_graph_becomes_a_module(self):
        mlir = os.path.join(self.folder.name, "g.mlir")
        with open(os.path.join(REPO, "test", "Inputs", "frontend",
                               "torch_mlp.mlir")) as f, open(mlir, "w") as g:
            g.write(f.read())
        compiled = _tool.compile_module(self.options, mlir, "g")
        self.assertEqual(compiled.kmod, os.path.join(self.folder.name,
                                                     "g.kmod"))
        self.assertEqual(compiled.totals["groups"], 2)
        self.assertEqual(compiled.totals["hits"], 0)
        with open(compiled.log) as f:
            self.assertIn("--tune=never", f.readline())

    def test_a_failure_names_the_op(self):
        mlir = os.path.join(self.folder.name, "g.mlir")
        with open(mlir, "w") as f:
            f.write(UNSUPPORTED)
        with self.assertRaises(kd.CompileError) as caught:
            _tool.compile_module(self.options, mlir, "g")
        self.assertIsInstance(caught.exception, rt.Error)
        self.assertIn("'scf.yield'", caught.exception.reason)
        self.assertTrue(caught.exception.reason.startswith("kopt: "))
        self.assertFalse(
            os.path.exists(os.path.join(self.folder.name, "g.kmod")))
        with open(caught.exception.log) as f:
            self.assertIn("scf.yield", f.read())


if __name__ == "__main__":
    unittest.main()
