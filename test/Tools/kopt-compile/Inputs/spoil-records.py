#!/usr/bin/env python3
# ===- spoil-records.py - Kernel records a build cannot use ----*- Python -*-===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage: spoil-records.py foreign KEY_PREFIX < records.jsonl > out.jsonl
#   The record of the task whose key starts with KEY_PREFIX gets a plan for
#   its key whose one launch passes no tensor (`args: []`), and loses the
#   task it carries, so that an import cannot tell.
# Usage: spoil-records.py no-steps KEY_PREFIX DB
#   In the SQLite file DB, that record's stored plan loses `steps` and its
#   content hash, as a record stored before records were checked.
#
# ===----------------------------------------------------------------------===#

import json
import sqlite3
import sys


def foreign_plan(key):
    return {
        "schema": "kopt.plan/1",
        "task_key": key,
        "proposer": "builtin",
        "variant": "foreign",
        "sources": [{"id": "main", "code": "extern \"C\" __global__ void k() {}"}],
        "steps": [{"kind": "launch", "source": "main", "entry": "k",
                   "grid": ["1", "1", "1"], "block": ["32", "1", "1"],
                   "args": []}],
    }


def main():
    mode, prefix = sys.argv[1], sys.argv[2]
    if mode == "foreign":
        for line in sys.stdin:
            value = json.loads(line)
            record = value.get("record")
            if record and record["task_key"].startswith(prefix):
                record["plan"] = foreign_plan(record["task_key"])
                record["validation"].pop("task", None)
            sys.stdout.write(json.dumps(value, separators=(",", ":")) + "\n")
        return
    db = sqlite3.connect(sys.argv[3])
    db.execute("UPDATE kernels SET content_hash = NULL, record = "
               "json_remove(record, '$.plan.steps') WHERE task_key LIKE ?",
               (prefix + "%",))
    db.commit()


if __name__ == "__main__":
    main()
