#!/usr/bin/env python3
# ===- count-jobs.py - Jobs done once, none lost ---------------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage: count-jobs.py QUEUE.json WORKER.out...
#
# Reads the queue (`kopt db queue --jobs --json`) and what each worker said
# it did (`kopt serve-worker` output), and prints the figures of the queue
# test: jobs, workers, duplicates (jobs done more than once, by the workers'
# word or by the queue's claim counts) and lost (jobs not done).
#
# ===----------------------------------------------------------------------===#

import collections
import json
import re
import sys

queue = json.load(open(sys.argv[1]))
done = collections.Counter()
per_worker = {}
for path in sys.argv[2:]:
    count = 0
    for line in open(path):
        m = re.match(r"kopt serve-worker: (\S+): job (\d+) \(\w+\) done: ", line)
        if m:
            done[int(m.group(2))] += 1
            count += 1
    per_worker[path] = count

jobs = queue["job_list"]
ids = {job["id"] for job in jobs}
duplicates = sum(1 for n in done.values() if n > 1)
duplicates += sum(1 for job in jobs if job["claims"] > 1)
lost = sum(1 for job in jobs if job["state"] != "done" or done[job["id"]] == 0)
lost += sum(1 for i in done if i not in ids)
busy = sum(1 for n in per_worker.values() if n > 0)
print(
    f"queue test: {len(jobs)} jobs, {len(per_worker)} workers "
    f"({busy} did work), duplicates {duplicates}, lost {lost}"
)
for path, count in sorted(per_worker.items()):
    print(f"  {path.rsplit('/', 1)[-1]}: {count} jobs")
