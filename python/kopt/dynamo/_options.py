# ===- _options.py - The torch.compile backend's options -------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# What the backend is told (torch.compile(..., options={...}) or
# kopt.backend(**options)), checked once, and where its defaults come from:
# the kernel database's per-user path and the kopt tool. Needs no torch.
#
# ===----------------------------------------------------------------------===#

import dataclasses
import os
import shutil
from typing import Any, Callable, Optional, Tuple

from ..runtime import Error

TUNE_MODES = ("never", "missing")
PRECISIONS = ("fp32", "tf32", "bf16")
TOOL_ENV_VAR = "KOPT_TOOL"
CACHE_ENV_VAR = "KOPT_CACHE_DIR"
DB_FILE = "kernels.db"


def cache_dir():
    """The per-user folder of the backend's kernel database: $KOPT_CACHE_DIR,
    else $XDG_CACHE_HOME/kopt, else ~/.cache/kopt."""
    configured = os.environ.get(CACHE_ENV_VAR)
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kopt")


def default_db_path():
    """The kernel database used when no `db` option is given:
    `kernels.db` in cache_dir()."""
    return os.path.join(cache_dir(), DB_FILE)


def _checkout_tools():
    """kopt in the build tree and the portable build, for a package used
    from a kopt checkout (as kopt.runtime looks for libkoptrt)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    checkout = os.path.dirname(os.path.dirname(package))
    if not os.path.isfile(
            os.path.join(checkout, "include", "kopt-c", "Runtime.h")):
        return []
    return [
        os.path.join(checkout, "build", "bin", "kopt"),
        os.path.join(checkout, "dist", "bin", "kopt"),
    ]


def find_tool(configured=None):
    """The kopt binary: `configured` (the `tool` option), else $KOPT_TOOL,
    else `kopt` on PATH, else the checkout's build/bin/kopt or
    dist/bin/kopt. Raises Error (status "not-found") when there is none."""
    for origin, path in (("the tool option", configured),
                         (TOOL_ENV_VAR, os.environ.get(TOOL_ENV_VAR))):
        if path:
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise Error(f"{origin} is '{path}', which is not an "
                            "executable kopt", "not-found")
            return path
    on_path = shutil.which("kopt")
    if on_path:
        return on_path
    tried = _checkout_tools()
    for path in tried:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise Error(
        "the kopt tool was not found: pass options={'tool': PATH}, set " +
        TOOL_ENV_VAR + ", or put kopt on PATH" +
        (" (tried " + ", ".join(tried) + ")" if tried else ""), "not-found")


@dataclasses.dataclass(frozen=True)
class Options:
    """The backend's options (docs/Python.md):

    db                 kernel database (a file or a postgresql:// URL);
                       default: default_db_path()
    tune               "never" (look up only: misses keep baseline plans)
                       or "missing" (tune what the database misses, on this
                       machine's GPU); default "missing"
    precision          "fp32" (default), "tf32" or "bf16"
    budget             seconds of tuning per graph (0: no limit); default 60
    require_cache_hit  any miss fails the graph (pinned builds)
    fallback           run a graph kopt cannot compile in eager PyTorch, with
                       one warning (default); False raises CompileError
    tool               the kopt binary (default: find_tool())
    tool_args          more `kopt compile` arguments, e.g. ("--target=...",)
    work_dir           keep each graph's MLIR, module and log here (default:
                       a temporary folder removed at exit)
    importer           turns a graph into MLIR (default: torch-mlir's FX
                       importer); see kopt.dynamo.ImportedGraph
    cuda_graph         replay each module as one CUDA graph: a call copies
                       its inputs into the graph's own and returns copies
                       of its outputs (default False)
    """

    db: Optional[str] = None
    tune: str = "missing"
    precision: str = "fp32"
    budget: float = 60.0
    require_cache_hit: bool = False
    fallback: bool = True
    tool: Optional[str] = None
    tool_args: Tuple[str, ...] = ()
    work_dir: Optional[str] = None
    importer: Optional[Callable[..., Any]] = None
    cuda_graph: bool = False

    def __post_init__(self):
        if self.tune not in TUNE_MODES:
            raise ValueError(f"kopt: tune={self.tune!r}: expected one of "
                             f"{', '.join(TUNE_MODES)}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"kopt: precision={self.precision!r}: expected "
                             f"one of {', '.join(PRECISIONS)}")
        if not isinstance(self.budget, (int, float)) or self.budget < 0:
            raise ValueError(f"kopt: budget={self.budget!r}: expected "
                             "seconds, at least 0")
        if isinstance(self.tool_args, str):
            raise ValueError("kopt: tool_args is a sequence of arguments, "
                             "not a string")
        object.__setattr__(self, "tool_args", tuple(self.tool_args))
        if self.db is not None:
            object.__setattr__(self, "db", os.fspath(self.db))
        if self.importer is not None and not callable(self.importer):
            raise ValueError("kopt: importer must be callable")

    @classmethod
    def from_mapping(cls, mapping):
        """Options from a dict such as torch.compile's `options`; an
        unknown key is a ValueError naming the known ones."""
        mapping = dict(mapping or {})
        known = [field.name for field in dataclasses.fields(cls)]
        unknown = sorted(set(mapping) - set(known))
        if unknown:
            raise ValueError(f"kopt: unknown option(s) {', '.join(unknown)}; "
                             f"the options are {', '.join(known)}")
        return cls(**mapping)

    def merged(self, mapping):
        """These options with those of `mapping` replacing them."""
        if not mapping:
            return self
        values = {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
        }
        values.update(dict(mapping))
        return Options.from_mapping(values)

    def database(self):
        """The database path or URL to pass to kopt; a file's folder is
        made."""
        if self.db is not None:
            return self.db
        path = default_db_path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def command(self, tool, mlir, rewritten, kmod):
        """The `kopt compile` command line for one graph."""
        command = [
            tool, "compile", mlir, "-o", rewritten, "--emit-module", kmod,
            "--db",
            self.database(), f"--tune={self.tune}", f"--budget={self.budget:g}",
            f"--precision={self.precision}", "--report=json"
        ]
        if self.require_cache_hit:
            command.append("--require-cache-hit")
        return command + list(self.tool_args)
