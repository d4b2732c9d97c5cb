#!/usr/bin/env python3
# ===- check-resume.py - A killed tuning run lost nothing it reported ----===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage: check-resume.py FIRST.err SECOND.err EXPORT.jsonl
#
# FIRST.err is the progress (stderr) of a `kopt warm` killed with SIGKILL,
# SECOND.err that of the run after it, EXPORT.jsonl the database after both
# (`kopt db export`). Checks that every candidate the first run reported as
# measured has its attempt in the database, that the second run measured
# none of them again (it reports them as stored, or its task was done), and
# that the database holds one attempt per task and plan. Prints a summary
# line, or the problems and exits 1.
#
# ===----------------------------------------------------------------------===#

import collections
import json
import re
import sys

# `kopt warm: @F (kind, KEY): tuning`
STARTED = re.compile(r"^kopt warm: @(\S+) \(\S+, ([0-9a-f]+)\): tuning$")
# `kopt warm: @F [i/n] proposer/variant: verdict (1.2 s)` or `(stored)`
CANDIDATE = re.compile(
    r"^kopt warm: @(\S+)(?: round \d+)? \[\d+/\d+\] (\S+): .* \((stored|[0-9.]+ s)\)$"
)


def read_progress(path):
    """(measured, stored): sets of (key prefix, plan) the run reported."""
    keys, measured, stored = {}, set(), set()
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if m := STARTED.match(line):
            keys[m.group(1)] = m.group(2)
        elif m := CANDIDATE.match(line):
            entry = (keys[m.group(1)], m.group(2))
            (stored if m.group(3) == "stored" else measured).add(entry)
    return measured, stored


def main():
    first_measured, _ = read_progress(sys.argv[1])
    second_measured, second_stored = read_progress(sys.argv[2])
    attempts = collections.Counter()
    for line in open(sys.argv[3], encoding="utf-8"):
        entry = json.loads(line)
        if entry.get("type") != "attempt":
            continue
        attempt = entry["attempt"]
        plan = attempt["plan"]
        name = plan["proposer"] + "/" + plan["variant"]
        attempts[(attempt["task_key"][:12], name)] += 1
    problems = []
    for entry in sorted(first_measured):
        if entry not in attempts:
            problems.append("reported before the kill, not in the database: %s %s" % entry)
        if entry in second_measured:
            problems.append("measured again after the kill: %s %s" % entry)
    for entry, count in sorted(attempts.items()):
        if count != 1:
            problems.append("%d attempts of %s %s" % ((count,) + entry))
    if not first_measured:
        problems.append("the first run reported no candidate")
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print("ok: %d attempts reported before the kill, all stored; %d taken "
          "again by the next run, %d measured by it, none twice"
          % (len(first_measured), len(second_stored & first_measured),
             len(second_measured)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
