# ===- kopt/__init__.py - The kopt Python package --------------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# kopt.runtime runs kopt's runtime modules on PyTorch tensors through
# libkoptrt (docs/Python.md). Importing kopt loads nothing.
#
# ===----------------------------------------------------------------------===#

__version__ = "0.1.0"
