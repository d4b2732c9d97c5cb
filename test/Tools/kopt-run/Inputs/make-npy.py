# Writes a .npy file of zeros without NumPy: make-npy.py FILE DESCR SHAPE
# (SHAPE like 512x1024, or "" for a scalar), optionally "fortran" or
# "truncate" as a fourth argument to write a broken file, or "fill=V" to
# fill a float file ('<f4' or '<f8') with V instead of zeros.
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
import struct
import sys

path, descr, shape = sys.argv[1], sys.argv[2], sys.argv[3]
mode = sys.argv[4] if len(sys.argv) > 4 else ""
dims = [int(d) for d in shape.split("x")] if shape else []
count = 1
for d in dims:
    count *= d
text = "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
order = "True" if mode == "fortran" else "False"
header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, order, text)
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
data = bytes(count * int(descr[2:]))
if mode.startswith("fill="):
    data = struct.pack("<" + "fd"[descr == "<f8"], float(mode[5:])) * count
if mode == "truncate":
    data = data[: len(data) // 2]
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)
