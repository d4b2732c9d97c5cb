#!/bin/sh
# ===- every-command.sh - What CI runs on every graph ----------*- sh -*-===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage: every-command.sh STEPS KOPT KOPT_OPT KOPT_RUN DIR GRAPH...
#
# Runs on each graph the commands CI promises every graph goes through
# (docs/ModelZoo.md): with STEPS `module`, `kopt analyze`, then
# `kopt compile --tune=never --emit-module` (no binaries) and
# `kopt-run --list` on the module; with STEPS `plan`, `kopt plan --compile`
# (every plan of every group compiles with NVRTC); `all` does both. A
# runtime module holds one function, so a graph with several public
# functions makes one module per function (the others made private and
# dropped with kopt-opt). DIR holds the outputs. Prints one line per graph
# (`ok NAME: ...`); on a failure, the command and its output, and exits 1
# after the other graphs.
#
# ===----------------------------------------------------------------------===#

steps=$1 kopt=$2 kopt_opt=$3 kopt_run=$4 dir=$5
shift 5
status=0

# run LOG COMMAND...: runs COMMAND into LOG; reports a failure.
run() {
  log=$1
  shift
  if "$@" > "$log" 2>&1; then
    return 0
  fi
  echo "FAIL: $*"
  cat "$log"
  status=1
  return 1
}

for graph in "$@"; do
  name=$(basename "$(dirname "$graph")")/$(basename "$graph" .mlir)
  mkdir -p "$dir/$(dirname "$name")"
  summary=""
  if [ "$steps" != plan ]; then
    run "$dir/$name.analyze" "$kopt" analyze "$graph" || continue
    summary="$(grep -m 1 'fusion group' "$dir/$name.analyze" | sed 's/.*: //')"
    functions=$(sed -n 's/^ *func\.func @\([A-Za-z0-9_]*\).*/\1/p' "$graph")
    count=$(echo "$functions" | wc -w)
    modules=0
    for function in $functions; do
      one="$graph"
      if [ "$count" -gt 1 ]; then
        one="$dir/$name.$function.mlir"
        run "$dir/$name.$function.opt" "$kopt_opt" "$graph" \
          --symbol-privatize="exclude=$function" --symbol-dce -o "$one" ||
          continue
      fi
      run "$dir/$name.$function.compile" "$kopt" compile "$one" \
        --tune=never --db "$dir/kopt.db" --module-arch=none \
        --emit-module "$dir/$name.$function.kmod" -o "$dir/$name.out.mlir" ||
        continue
      run "$dir/$name.$function.list" "$kopt_run" \
        "$dir/$name.$function.kmod" --list || continue
      modules=$((modules + 1))
    done
    summary="$summary, $modules of $count modules listed"
  fi
  if [ "$steps" != module ]; then
    run "$dir/$name.plan" "$kopt" plan --compile "$graph" || continue
    summary="$summary, $(grep -c ': ok$' "$dir/$name.plan") plans compiled"
  fi
  echo "ok $name: ${summary#, }"
done
exit $status
