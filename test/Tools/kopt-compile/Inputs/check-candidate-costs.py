#!/usr/bin/env python3
# ===- check-candidate-costs.py - The report's candidates -----*- Python -*-===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
"""Summarises the `candidates` of a kopt.tune-report/1 document's tuned
groups, for candidate-costs.test."""
import json
import sys

report = json.load(open(sys.argv[1]))
groups = [g for g in report["groups"] if g.get("candidates")]
assert groups, "no group lists its candidates"
for group in groups:
    first, later = group["candidates"][0], group["candidates"][1:]
    print("first:", first["name"], "reference_s:",
          "yes" if first.get("reference_s", 0) > 0 else "no")
    print("later reference_s:",
          "none" if all("reference_s" not in c for c in later) else "some")
    print("phases:",
          "none" if all("phases" not in c for c in group["candidates"])
          else "some")
    print("seconds:",
          "all" if all(c["seconds"] > 0 for c in group["candidates"])
          else "missing")
