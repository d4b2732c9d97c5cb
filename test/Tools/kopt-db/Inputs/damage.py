#!/usr/bin/env python3
# ===- damage.py - Overwrite part of a file with garbage -------*- Python -*-===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage: damage.py FILE BEGIN END
# Overwrites bytes [BEGIN, END) of FILE with garbage; negative offsets count
# from the end of the file, as Python slices do.
#
# ===----------------------------------------------------------------------===#

import sys

path, begin, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = bytearray(open(path, "rb").read())
for i in range(*slice(begin, end).indices(len(data))):
    data[i] = (i * 7 + 3) % 256
open(path, "wb").write(bytes(data))
