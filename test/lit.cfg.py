# ===- lit.cfg.py - kopt lit configuration ---------------------*- Python -*-===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "kopt"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kopt_obj_root, "test")
# corpus: the fuzz targets' seed inputs (test/Fuzz), not tests.
config.excludes = ["Inputs", "unit", "corpus", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%kopt_src_root", config.kopt_src_root))
config.substitutions.append(
    ("%examples", os.path.join(config.kopt_src_root, "examples")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.kopt_tools_dir, config.llvm_tools_dir]
tools = ["kopt", "kopt-opt", "kopt-reference-bench", "kopt-run", "llvm-nm",
         "llvm-readobj", "not", "split-file"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# test/Plugin runs kopt's pass plugin in MLIR's own mlir-opt, from the LLVM
# installation kopt is built against; the feature is set where this build
# has the plugin (not in the portable build) and that mlir-opt exists.
mlir_opt = os.path.join(config.llvm_tools_dir, "mlir-opt")
if config.kopt_pass_plugin and os.path.exists(mlir_opt):
    config.available_features.add("kopt-pass-plugin")
    config.substitutions.append(("%mlir_opt", mlir_opt))
    config.substitutions.append(("%kopt_plugin", config.kopt_pass_plugin))

# Tests of the PostgreSQL backend carry `REQUIRES: postgres-backend`; those
# that need a server also `REQUIRES: postgres`, set where the server's
# binaries are installed, and run under %with_postgres, which starts a
# throwaway server and always stops it (test/Support/with-postgres.sh).
if config.kopt_have_postgres in ("ON", "1", "TRUE"):
    config.available_features.add("postgres-backend")
    import glob
    import shutil

    if glob.glob("/usr/lib/postgresql/*/bin/initdb") or shutil.which("initdb"):
        config.available_features.add("postgres")
config.substitutions.append(
    (
        "%with_postgres",
        os.path.join(config.kopt_src_root, "test", "Support", "with-postgres.sh"),
    )
)

# Tests of databases in read-only places run their commands under
# %read_only_dir (test/Support/read-only-dir.sh) and carry
# `REQUIRES: read-only-dir`, set where it can make a folder read-only (as
# root, that needs a mount namespace).
read_only_dir = os.path.join(
    config.kopt_src_root, "test", "Support", "read-only-dir.sh")
config.substitutions.append(("%read_only_dir", read_only_dir))
import subprocess
import tempfile

with tempfile.TemporaryDirectory() as probe:
    if subprocess.call([read_only_dir, probe, "true"],
                       stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL) == 0:
        config.available_features.add("read-only-dir")

# GPU tests carry `REQUIRES: cuda`; the feature is set only when a device
# answers, so machines without one skip them cleanly.
if os.path.exists("/dev/nvidia0") or os.environ.get("KOPT_TEST_CUDA") == "1":
    config.available_features.add("cuda")
