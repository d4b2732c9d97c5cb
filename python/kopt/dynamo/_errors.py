# ===- _errors.py - How the torch.compile backend reports failures ---------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# A graph kopt cannot compile is a CompileError carrying one line of
# reason (the op or construct at fault); with the `fallback` option (the
# default) the graph runs in eager PyTorch instead, with one FallbackWarning
# carrying that reason. Needs no torch.
#
# ===----------------------------------------------------------------------===#

from ..runtime import Error


class CompileError(Error):
    """kopt could not compile a graph. `reason` is one line naming the op or
    construct at fault; `log` the path of the tool's full report, if any."""

    def __init__(self, reason, log=None):
        super().__init__(reason, "unsupported")
        self.reason = reason
        self.log = log


class FallbackWarning(UserWarning):
    """A graph runs in eager PyTorch because kopt could not compile it; the
    message names the graph and the reason."""
