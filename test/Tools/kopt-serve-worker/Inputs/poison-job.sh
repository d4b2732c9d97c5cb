#!/usr/bin/env bash
# ===- poison-job.sh - Jobs that crash or hang the compile ----------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage (under test/Support/with-postgres.sh): poison-job.sh OUT KOPT
#
# A build machine queues two graphs' groups. Worker "w1" drains the queue;
# the first job crashes its compile child (SIGSEGV, through the hidden
# --fault option) every time: it is put back once, then failed for good
# after its second attempt, while w1 lives on and does the other jobs.
# Worker "w2" then finds nothing to claim: the failed job is never claimed
# again. Worker "w3" meets a job whose compile hangs: the child is killed at
# --job-timeout and the job failed after its one attempt. Writes every
# step's output, in order, to OUT/log.txt.
#
# ===----------------------------------------------------------------------===#
set -euo pipefail
out="$1"
kopt="$2"
db="$KOPT_TEST_POSTGRES_URL"
log="$out/log.txt"
: > "$log"
step() { echo "== $*" >> "$log"; }
first_queued_key() {
  "$kopt" db queue --db "$db" --jobs --json | python3 -c '
import json, sys
print(next(j["task_key"] for j in json.load(sys.stdin)["job_list"]
           if j["state"] == "queued"))'
}

step enqueue
"$kopt" compile "$out/graphs/graph000.mlir" --db "$db" --tune=enqueue \
  -o "$out/enqueued.mlir" >> "$log" 2>&1
poison=$(first_queued_key)

step w1
"$kopt" serve-worker --db "$db" --replay "$out/entries.jsonl" --name w1 \
  --once --max-attempts 2 --fault crash --fault-key "$poison" \
  > "$out/w1.out" 2> "$out/w1.err"
echo "w1 exit $?" >> "$log"
cat "$out/w1.out" >> "$log"
step w1 stderr
cat "$out/w1.err" >> "$log"
step queue after w1
"$kopt" db queue --db "$db" --jobs >> "$log"
step w2
"$kopt" serve-worker --db "$db" --replay "$out/entries.jsonl" --name w2 \
  --once --max-attempts 2 >> "$log" 2>&1

step enqueue hanging
"$kopt" compile "$out/graphs/graph001.mlir" --db "$db" --tune=enqueue \
  -o "$out/enqueued.mlir" >> "$log" 2>&1
hang=$(first_queued_key)
step w3
"$kopt" serve-worker --db "$db" --replay "$out/entries.jsonl" --name w3 \
  --once --max-attempts 1 --job-timeout 2 --fault hang --fault-key "$hang" \
  >> "$log" 2>&1
step queue at the end
"$kopt" db queue --db "$db" --jobs >> "$log"
