#!/usr/bin/env bash
#===- bench/compile_hit_bench.sh - kopt compile when every group hits ------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Usage: bench/compile_hit_bench.sh [KOPT] [LAYERS] [RUNS] [OTHER_TASKS]
#
# Writes a graph of LAYERS layers (bench/gen_large_graph.py; 18 layers are
# 198 linalg ops), fills a fresh kernel database with an entry for each of
# its groups through `kopt warm --replay` (the entries come from
# `kopt plan --emit-dir` and scripts/make-replay-entries.py; no GPU is
# needed), then times RUNS runs of
#
#   kopt compile GRAPH --db DB --tune=never --require-cache-hit -o OUT
#
# and prints each wall time. KOPT defaults to build/bin/kopt. OTHER_TASKS
# (default 0, a multiple of 50) adds that many records of other tasks to
# the database first, to see what a large database costs.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kopt="${1:-$root/build/bin/kopt}"
layers="${2:-18}"
runs="${3:-3}"
others="${4:-0}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ "$others" -gt 0 ]; then
  python3 "$root/test/Tools/kopt-warm/Inputs/gen-graphs.py" "$work/others" \
    $((others / 50)) 50
  "$kopt" plan "$work"/others/*.mlir --emit-dir "$work/other-plans" > /dev/null
  python3 "$root/scripts/make-replay-entries.py" "$work/other-plans" \
    -o "$work/others.jsonl" 2> /dev/null
  "$kopt" warm "$work/others" --db "$work/kopt.db" \
    --replay="$work/others.jsonl" 2> /dev/null | tail -n 1
fi
python3 "$root/bench/gen_large_graph.py" --layers "$layers" \
  -o "$work/graph.mlir"
"$kopt" plan "$work/graph.mlir" --emit-dir "$work/plans" > /dev/null
python3 "$root/scripts/make-replay-entries.py" "$work/plans" \
  -o "$work/entries.jsonl" 2> /dev/null
"$kopt" warm "$work/graph.mlir" --db "$work/kopt.db" \
  --replay="$work/entries.jsonl" 2> /dev/null | tail -n 1

ops=$(grep -cE 'linalg\.(generic|matmul|fill)' "$work/graph.mlir" || true)
echo "graph: $layers layers, $ops linalg ops"
for run in $(seq "$runs"); do
  start=$(date +%s.%N)
  "$kopt" compile "$work/graph.mlir" --db "$work/kopt.db" --tune=never \
    --require-cache-hit -o "$work/out.mlir" > "$work/report.txt"
  end=$(date +%s.%N)
  seconds=$(awk "BEGIN { printf \"%.3f\", $end - $start }")
  echo "run $run: $seconds s wall; $(tail -n 1 "$work/report.txt")"
done
