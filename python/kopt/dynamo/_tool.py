# ===- _tool.py - One graph through `kopt compile --emit-module` -----------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Runs the kopt tool on a graph's MLIR file and keeps its report beside it
# (STEM.log); a failure becomes a CompileError whose reason is kopt's first
# error line, which names the op it cannot handle ("no CUDA translation for
# 'math.fpowi'"), with the Python source line where the MLIR carries one.
# Needs no torch.
#
# ===----------------------------------------------------------------------===#

import json
import os
import re
import subprocess
from dataclasses import dataclass
from typing import Optional

from ._errors import CompileError
from ._options import find_tool

# "FILE:LINE:COL: error: MESSAGE", as MLIR's diagnostics print a location.
_LOCATED = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): "
                      r"error: (?P<message>.*)$")
_MAX_REASON = 300


@dataclass(frozen=True)
class Compiled:
    """What `kopt compile` wrote for one graph."""

    kmod: str
    log: str
    # The tune report's totals (groups, hits, tuned, missed, seconds), or
    # None when the report could not be read.
    totals: Optional[dict]


def first_error(log):
    """kopt's first error line in `log`, without the tool's prefix. A
    location in a Python file (the graph's source line) is kept as
    FILE:LINE; one in the MLIR file kopt was given is dropped."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line] or lines
    if not errors:
        return "kopt failed without a message"
    line = errors[0]
    match = _LOCATED.match(line)
    if match:
        line = match.group("message")
        if not match.group("file").endswith(".mlir"):
            line = (f"{os.path.basename(match.group('file'))}:"
                    f"{match.group('line')}: {line}")
    for prefix in ("kopt: error: ", "error: "):
        if line.startswith(prefix):
            line = line[len(prefix):]
    return line if len(line) <= _MAX_REASON else line[:_MAX_REASON - 3] + "..."


def _totals(log):
    """The totals of the JSON tune report in kopt's output, or None."""
    match = re.search(r"^\{", log, re.MULTILINE)
    if not match:
        return None
    try:
        report, _ = json.JSONDecoder().raw_decode(log, match.start())
    except ValueError:
        return None
    totals = report.get("totals") if isinstance(report, dict) else None
    return totals if isinstance(totals, dict) else None


def compile_module(options, mlir, stem):
    """Compiles `mlir` into STEM.kmod beside it with `options`; returns a
    Compiled, or raises CompileError with kopt's first error line (or Error
    when there is no kopt tool)."""
    tool = find_tool(options.tool)
    folder = os.path.dirname(mlir)
    kmod = os.path.join(folder, f"{stem}.kmod")
    rewritten = os.path.join(folder, f"{stem}.kopt.mlir")
    log = os.path.join(folder, f"{stem}.log")
    command = options.command(tool, mlir, rewritten, kmod)
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                errors="replace")
    except OSError as error:
        raise CompileError(f"cannot run {tool}: {error}") from None
    with open(log, "w") as f:
        f.write("$ " + " ".join(command) + "\n" + result.stderr +
                result.stdout)
    if result.returncode != 0 or not os.path.isfile(kmod):
        reason = first_error(result.stderr)
        raise CompileError(f"kopt: {reason}", log)
    return Compiled(kmod, log, _totals(result.stderr + result.stdout))
