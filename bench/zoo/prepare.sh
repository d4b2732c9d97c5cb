#!/usr/bin/env bash
#===- bench/zoo/prepare.sh - Emit the model zoo's runtime modules ----------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Compiles every graph of test/Inputs/zoo (or the STEMs named) with `kopt
# compile --emit-module` into OUT/STEM.kmod, keeping kopt's report in
# OUT/STEM.compile.log; a dynamic-batch graph (STEM_dynbatch) with
# `--tune-shapes batch=$KOPT_ZOO_BATCHES`, one program per size. A graph
# kopt cannot emit yet leaves only its log, whose first error line
# bench/zoo/run_zoo.py reports; that is no failure of this script, which
# fails only when kopt itself is missing.
#
# Usage: bench/zoo/prepare.sh OUT [DB [STEM...]]
#
#   KOPT             the kopt binary (default: dist/bin/kopt, the portable
#                    build; build/bin/kopt works too)
#   KOPT_ZOO_TUNE    --tune mode (default: never, so the modules use the
#                    database's records where it has them and baseline
#                    plans elsewhere; `missing` tunes on this GPU)
#   KOPT_ZOO_BUDGET  --budget seconds per graph when tuning (default 60)
#   KOPT_ZOO_TIMEOUT seconds per graph before kopt is stopped (default 300)
#   KOPT_ZOO_BATCHES the batch sizes a dynamic-batch graph is specialised
#                    and tuned for (default 1,4; run_zoo.py runs 1, 3, 8)
#   KOPT_ZOO_ARGS    more `kopt compile` arguments (e.g. --module-arch=none
#                    to try it on a machine without a GPU)
#   DB               the kernel database (default: OUT/kopt.db)
#
#===------------------------------------------------------------------------===#
set -uo pipefail
cd "$(dirname "$0")/../.."

if [ $# -lt 1 ]; then
  echo "usage: bench/zoo/prepare.sh OUT [DB [STEM...]]" >&2
  exit 2
fi
out="$1"
db="${2:-$out/kopt.db}"
shift $(($# < 2 ? $# : 2))
graphs=()
for stem in "$@"; do
  if [ ! -f "test/Inputs/zoo/$stem.mlir" ]; then
    echo "prepare.sh: no graph test/Inputs/zoo/$stem.mlir" >&2
    exit 2
  fi
  graphs+=("test/Inputs/zoo/$stem.mlir")
done
[ ${#graphs[@]} -gt 0 ] || graphs=(test/Inputs/zoo/*.mlir)
kopt="${KOPT:-dist/bin/kopt}"
tune="${KOPT_ZOO_TUNE:-never}"
budget="${KOPT_ZOO_BUDGET:-60}"
limit="${KOPT_ZOO_TIMEOUT:-300}"
batches="${KOPT_ZOO_BATCHES:-1,4}"
read -r -a extra <<<"${KOPT_ZOO_ARGS:-}"
if [ ! -x "$kopt" ]; then
  echo "prepare.sh: no kopt at '$kopt' (set KOPT)" >&2
  exit 1
fi
mkdir -p "$out"

emitted=0
total=0
for mlir in "${graphs[@]}"; do
  stem=$(basename "$mlir" .mlir)
  total=$((total + 1))
  rm -f "$out/$stem.kmod"
  shapes=()
  case "$stem" in
  *_dynbatch) shapes=(--tune-shapes "batch=$batches") ;;
  esac
  if timeout "$limit" "$kopt" compile "$mlir" --db "$db" --tune="$tune" \
    --budget="$budget" -o /dev/null --emit-module "$out/$stem.kmod" \
    "${shapes[@]}" "${extra[@]}" \
    >"$out/$stem.compile.log" 2>&1 && [ -f "$out/$stem.kmod" ]; then
    emitted=$((emitted + 1))
    echo "emitted  $stem"
  else
    rm -f "$out/$stem.kmod"
    echo "failed   $stem: $(grep -m1 error "$out/$stem.compile.log")"
  fi
done
echo "$emitted of $total graphs emitted as modules into $out"
