#!/usr/bin/env python3
# ===- gen-deep.py - Deeply nested inputs for the limits' tests -----------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage: gen-deep.py KIND DEPTH FILE
#
# KIND is one of
#   regions    a function with DEPTH nested scf.execute_region ops
#   attribute  a module attribute of DEPTH nested arrays
#   tuple      a function argument of DEPTH nested tuple types
#   affine     an affine map whose result is DEPTH nested parentheses
#   json       a replay line ('kopt db export' form) holding DEPTH nested
#              JSON arrays
#
# Each is valid syntax that a recursive parser needs one stack frame (or
# more) per level to read.
#
# ===----------------------------------------------------------------------===#

import sys


def regions(depth):
    lines = ["func.func @deep() {"]
    for i in range(depth):
        lines.append("  " * (i + 1) + "scf.execute_region {")
    for i in reversed(range(depth)):
        lines.append("  " * (i + 2) + "scf.yield")
        lines.append("  " * (i + 1) + "}")
    lines += ["  return", "}", ""]
    return "\n".join(lines)


def attribute(depth):
    return ("module attributes {kopt.deep = " + "[" * depth + "]" * depth +
            "} {\n  func.func private @f()\n}\n")


def tuple_type(depth):
    return ("func.func private @f(" + "tuple<" * depth + "i32" +
            ">" * depth + ")\n")


def affine(depth):
    return ("#map = affine_map<(d0) -> (" + "(" * depth + "d0" +
            ")" * depth + ")>\nfunc.func private @f() attributes "
            "{kopt.map = #map}\n")


def json(depth):
    return ('{"type": "kernel", "record": ' + "[" * depth + "]" * depth +
            "}\n")


KINDS = {"regions": regions, "attribute": attribute, "tuple": tuple_type,
         "affine": affine, "json": json}

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in KINDS:
        sys.exit("usage: gen-deep.py {%s} DEPTH FILE" % ",".join(KINDS))
    with open(sys.argv[3], "w") as out:
        out.write(KINDS[sys.argv[1]](int(sys.argv[2])))
