#!/usr/bin/env python3
# ===- count-by-arch.py - Records and attempts per architecture -----------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Reads `kopt db export` lines on stdin and prints, per compute capability
# of the fingerprints, how many records and attempts carry it.
#
# ===----------------------------------------------------------------------===#

import collections
import json
import sys


def main():
    records = collections.Counter()
    attempts = collections.Counter()
    for line in sys.stdin:
        entry = json.loads(line)
        if entry["type"] == "kernel":
            records[entry["record"]["fingerprint"]["compute_capability"]] += 1
        elif entry["type"] == "attempt":
            attempts[entry["attempt"]["fingerprint"]["compute_capability"]] += 1
    for arch in sorted(set(records) | set(attempts)):
        print(f"{arch}: {records[arch]} records, {attempts[arch]} attempts")


if __name__ == "__main__":
    main()
