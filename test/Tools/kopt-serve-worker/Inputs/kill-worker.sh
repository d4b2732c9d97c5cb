#!/usr/bin/env bash
# ===- kill-worker.sh - A worker killed mid-job ---------------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage (under test/Support/with-postgres.sh): kill-worker.sh OUT KOPT
#
# A build machine without a GPU queues one graph's groups
# (kopt compile --tune=enqueue). Worker "doomed" claims a job and works on
# it for a minute under a 2 s lease, renewing it; meanwhile worker
# "bystander" drains the queue and must leave that job alone. Then "doomed"
# is killed with SIGKILL: once its lease has expired, worker "rescuer" takes
# the job over and finishes it, and the build machine's next compile finds
# every group. Writes every step's output, in order, to OUT/log.txt.
#
# ===----------------------------------------------------------------------===#
set -euo pipefail
out="$1"
kopt="$2"
db="$KOPT_TEST_POSTGRES_URL"
log="$out/log.txt"
: > "$log"
step() { echo "== $*" >> "$log"; }

step enqueue
"$kopt" compile "$out/graphs/graph000.mlir" --db "$db" --tune=enqueue \
  -o "$out/enqueued.mlir" >> "$log" 2>&1
step enqueue again
"$kopt" compile "$out/graphs/graph000.mlir" --db "$db" --tune=enqueue \
  -o "$out/enqueued.mlir" >> "$log" 2>&1

"$kopt" serve-worker --db "$db" --replay "$out/entries.jsonl" --name doomed \
  --lease 2 --job-delay 60 > "$out/doomed.out" 2>&1 &
doomed=$!
for _ in $(seq 200); do
  grep -q 'claimed job' "$out/doomed.out" && break
  sleep 0.1
done
# Longer than the lease: only the renewals keep the job doomed's.
sleep 3
step bystander
"$kopt" serve-worker --db "$db" --replay "$out/entries.jsonl" --name bystander \
  --once >> "$log" 2>&1
step queue while doomed works
"$kopt" db queue --db "$db" >> "$log"

kill -9 "$doomed"
wait "$doomed" || true
step doomed
cat "$out/doomed.out" >> "$log"
sleep 3
step queue after the kill
"$kopt" db queue --db "$db" >> "$log"
step rescuer
"$kopt" serve-worker --db "$db" --replay "$out/entries.jsonl" --name rescuer \
  --once >> "$log" 2>&1
step queue at the end
"$kopt" db queue --db "$db" --jobs >> "$log"
step build
"$kopt" compile "$out/graphs/graph000.mlir" --db "$db" --tune=never \
  --require-cache-hit -o "$out/built.mlir" >> "$log" 2>&1
