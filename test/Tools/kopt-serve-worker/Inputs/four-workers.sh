#!/usr/bin/env bash
# ===- four-workers.sh - Four workers drain one queue ---------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage (under test/Support/with-postgres.sh): four-workers.sh OUT KOPT
#
# Queues every task of OUT/graphs from a machine without a GPU
# (kopt warm --enqueue), then runs four `kopt serve-worker` processes at once
# on the queue, each storing results from OUT/entries.jsonl through the
# import path instead of a GPU. Leaves their outputs, the queue and the
# figures (count-jobs.py) in OUT; finally moves the database to SQLite and
# back through export and import.
#
# ===----------------------------------------------------------------------===#
set -euo pipefail
out="$1"
kopt="$2"
db="$KOPT_TEST_POSTGRES_URL"

"$kopt" db init --db "$db" > "$out/init.txt"
"$kopt" warm "$out/graphs" --db "$db" --enqueue > "$out/enqueue.txt" 2>&1
"$kopt" db queue --db "$db" > "$out/queue-before.txt"

start=$(date +%s.%N)
pids=()
for i in 1 2 3 4; do
  "$kopt" serve-worker --db "$db" --once --replay "$out/entries.jsonl" \
    --name "worker$i" --job-delay 0.02 \
    > "$out/worker$i.out" 2> "$out/worker$i.err" &
  pids+=($!)
done
for i in 0 1 2 3; do
  status=0
  wait "${pids[$i]}" || status=$?
  echo "worker$((i + 1)) exit $status" >> "$out/exits.txt"
done
end=$(date +%s.%N)
awk "BEGIN { printf \"wall %.2f s\\n\", $end - $start }" > "$out/wall.txt"

"$kopt" db queue --db "$db" --jobs --json > "$out/queue-after.json"
"$kopt" db queue --db "$db" > "$out/queue-after.txt"
"$kopt" db verify --db "$db" > "$out/verify.txt"

# One backend's export imports into the other, and back, unchanged.
"$kopt" db export --db "$db" -o "$out/postgres.jsonl" > /dev/null
"$kopt" db import "$out/postgres.jsonl" --db "$out/copy.db" > /dev/null
"$kopt" db export --db "$out/copy.db" -o "$out/sqlite.jsonl" > /dev/null
"$kopt" db import "$out/sqlite.jsonl" --db "$db" > "$out/reimport.txt"
cmp "$out/postgres.jsonl" "$out/sqlite.jsonl"
echo "round trip: identical" >> "$out/reimport.txt"
